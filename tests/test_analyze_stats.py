"""Per-fact statistics: co-occurrence counts against a brute-force scan of the paragraphs, the same
counts from tantivy and the Elasticsearch-API emulator, and the columns joined to `instances.parquet`."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from analyze_support import call_kbc, check_pristine, check_socs_column, copy_run, run_kbc, small_run  # noqa: F401

from kb.text.analyzer import tokens
from kb.text.cooccur import ScanIndex, mention_of
from kb.text.fact_stats import fact_text_stats, sentences
from kb.text.index import build_index, open_index

STAT_COLUMNS = ["corpus", "uid", "relation", "sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs"]


def _twenty(small) -> list:
    """20 real facts of T-REx and Google-RE."""
    return small.facts["trex"][::40][:15] + small.facts["google_re"][::100][:5]


def _has(toks: list[str], phrase: tuple[str, ...]) -> bool:
    return any(tuple(toks[i:i + len(phrase)]) == phrase for i in range(len(toks)))


def _brute(paragraphs, fact) -> dict:
    """Scan every paragraph and every sentence of `paragraphs` (pairs of token lists), no index."""
    a, b = mention_of(fact.subject).token_phrases(), mention_of(fact.object).token_phrases()
    sm = om = both = sent = 0
    for toks, sentence_tokens in paragraphs:
        has_a, has_b = any(_has(toks, x) for x in a), any(_has(toks, x) for x in b)
        sm, om, both = sm + has_a, om + has_b, both + (has_a and has_b)
        if has_a and has_b:
            sent += sum(any(_has(st, x) for x in a) and any(_has(st, x) for x in b) for st in sentence_tokens)
    return {"sm": sm, "om": om, "cooc_paragraphs": both, "cooc_sentences": sent}


def test_counts_equal_a_brute_force_scan_for_20_facts(small_run):  # noqa: F811
    facts = _twenty(small_run)
    index = open_index("tantivy", small_run.index)
    got = fact_text_stats(facts, index)
    scanned = fact_text_stats(facts, ScanIndex(small_run.paragraphs))
    assert len(got) == 20
    tokenized = [(tokens(p.text), [tokens(x) for x in sentences(p.text)]) for p in small_run.paragraphs]
    for fact, row, scan_row in zip(facts, got, scanned):
        expected = _brute(tokenized, fact)
        assert {k: row[k] for k in expected} == expected, fact.uid
        assert scan_row == row
    assert sum(r["cooc_paragraphs"] > 0 for r in got) >= 10


def test_sentences_split_between_sentences_only():
    assert sentences("Dante was born in Florence. He died in Ravenna! Was he? 1300 was a year") == [
        "Dante was born in Florence.", "He died in Ravenna!", "Was he?", "1300 was a year"]
    assert sentences("The U.S. Army and Mr. Smith left. J. R. R. Tolkien wrote.") == [
        "The U.S. Army and Mr. Smith left.", "J. R. R. Tolkien wrote."]


def test_tantivy_and_the_elasticsearch_emulator_count_the_same(small_run, emulator_url, tmp_path):  # noqa: F811
    facts = _twenty(small_run)
    wanted = {f.uid for f in facts}
    paragraphs = [p for p in small_run.paragraphs if wanted & set(p.facts)]
    paragraphs += [p for p in small_run.paragraphs if not wanted & set(p.facts)][:80]
    tantivy = build_index(paragraphs, "tantivy", tmp_path / "t")
    es = build_index(paragraphs, "elasticsearch", "kbc-fact-stats", es_url=emulator_url)
    try:
        a, b = fact_text_stats(facts, tantivy), fact_text_stats(facts, es)
    finally:
        es.close()
    assert a == b
    assert sum(r["cooc_sentences"] for r in a) > 0


def test_missing_elasticsearch_index_says_how_to_build_it(small_run, emulator_url):  # noqa: F811
    code, out = call_kbc(["analyze", "stats", str(small_run.run), "--backend", "elasticsearch", "--es-url",
                          emulator_url, "--index", "kbc-no-such-index", "--quiet"])
    assert code == 2, out
    assert out.strip().splitlines()[-1].startswith("error: ")
    assert f"kbc index build --backend elasticsearch --es-url {emulator_url} --out kbc-no-such-index" in out
    assert out.count("kbc index build") == 1


def test_stats_command_writes_the_columns_and_joins_them(small_run, tmp_path):  # noqa: F811
    run = copy_run(small_run, tmp_path)  # the command writes RUN/analysis/ and the columns into its instances
    code, out = call_kbc(["analyze", "stats", str(run), "--index", str(small_run.index), "--quiet"])
    assert code == 0, out
    assert "facts in" in out and "SOCS left out" in out and "LPFP" not in out
    stats = pd.read_parquet(run / "analysis" / "fact_stats.parquet")
    assert list(stats.columns) == STAT_COLUMNS
    assert stats["swp"].notna().all() and stats["socs"].isna().all()
    table = pd.read_parquet(run / "instances.parquet")
    for column in (*STAT_COLUMNS[3:], "lpfp"):
        assert column in table.columns
    kb = table[table["predictor"].isin(["freq", "retrieval"])]
    assert kb["lpfp"].isna().all()  # their scores are counts and BM25, not log-probabilities
    lm = table[(table["predictor"] == "bert") & table["dropped"].isna()]
    first = lm["answers"].map(lambda a: json.loads(a)[0][1])
    assert (lm["lpfp"] == first).all() and (lm["lpfp"] < 0).all()
    row = table[table["uid"] == stats["uid"].iloc[0]].iloc[0]
    assert row["sm"] == stats["sm"].iloc[0]
    # the end of every `kbc run` (a rerun included) rewrites the table; the columns stay
    from bridge.run.summaries import collect

    collect(run)
    assert "cooc_sentences" in pd.read_parquet(run / "instances.parquet").columns


def test_socs_from_a_masked_lms_input_embeddings(small_run, tmp_path):  # noqa: F811
    from bridge.analysis.stats import InputEmbeddings, cosine

    emb = InputEmbeddings(small_run.model)
    a, b = emb.vector("Paris"), emb.vector("France")
    assert cosine(a, a) == pytest.approx(1.0)
    assert -1.0 <= cosine(a, b) <= 1.0
    check_socs_column(small_run, small_run.model, tmp_path)


def test_socs_from_wikipedia2vec_vectors(tmp_path):
    import numpy as np

    from bridge.analysis.stats import Wikipedia2vecVectors, cosine
    from lm.entities.embeddings import EntityEmbeddings, save_npz

    words = np.array([[1.0, 0.0], [0.0, 1.0]])
    entities = np.array([[1.0, 1.0]])
    save_npz(EntityEmbeddings(["new", "york"], words, ["Paris"], entities, lowercase=True), tmp_path / "w.npz")
    vectors = Wikipedia2vecVectors(tmp_path / "w.npz")
    assert cosine(vectors.vector("Paris"), vectors.vector("New York")) == pytest.approx(1.0)
    assert cosine(vectors.vector("Paris"), vectors.vector("New")) == pytest.approx(2 ** -0.5)
    assert vectors.vector("Atlantis") is None


def _refusal(run, changed: str = "instances.parquet") -> str:
    return (f"{run}: its {changed} is not the one its scoring wrote (edited or replaced); rerun the same `kbc run` "
            "command to rescore it")


def _readers(run, capsys) -> tuple[str, str]:
    """What `kbc leaderboard`, `kbc report`, `kbc serve --run` and `kbcompare.load_run` make of the run: the board
    and the report's score table; any refusal raises (the CLI's as its error line)."""
    from bridge.serve.runs import Runs
    from kbcompare import load_run

    code, board, err = run_kbc(["leaderboard", str(run)], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    Runs([run])
    table = load_run(run).table(scope="own").to_csv()
    return board, md[md.index("| corpus | predictor |"):].split("\n\n")[0] + table


def test_analysing_a_run_keeps_it_readable_and_tampering_refused(small_run, tmp_path, capsys,  # noqa: F811
                                                                  monkeypatch):
    """`kbc analyze stats` rewrites the per-fact table with its columns and records it as scoring does: every reader
    still reads the run, with the same scores, and a rerun reads the summaries back; a table edited after is
    refused by all of them."""
    import shutil

    import bridge.run.summaries as summaries
    from bridge.run.summaries import collect
    from eval.errors import DataError
    from kbcompare import load_run

    run = tmp_path / "run"
    shutil.copytree(small_run.run, run, ignore=shutil.ignore_patterns("analysis", "report"))
    summary = (run / "summary.json").read_bytes()
    before = _readers(run, capsys)
    scored = pd.read_parquet(run / "instances.parquet")
    scored = scored[[c for c in scored.columns if c not in (*STAT_COLUMNS[3:], "lpfp")]]
    code, out, err = run_kbc(["analyze", "stats", str(run), "--index", str(small_run.index), "--quiet"], capsys)
    assert code == 0, err
    assert f"written: {run / 'analysis' / 'fact_stats.parquet'}, {run / 'instances.parquet'} (stat columns)" in out
    table = pd.read_parquet(run / "instances.parquet")
    assert table["sm"].notna().all()
    pd.testing.assert_frame_equal(table[list(scored.columns)], scored)
    assert _readers(run, capsys) == before
    assert (run / "summary.json").read_bytes() == summary

    def refuse(*args, **kwargs):
        raise AssertionError("scored again")

    with monkeypatch.context() as patch:  # the record is true: a rerun reads the summaries back
        patch.setattr(summaries, "scored_rows", refuse)
        assert collect(run) == json.loads(summary)

    table.loc[0, "correct_raw"] = not table.loc[0, "correct_raw"]
    table.to_parquet(run / "instances.parquet", index=False)
    for argv in (["leaderboard", str(run)], ["report", str(run)]):
        code, _, err = run_kbc(argv, capsys)
        assert (code, err) == (2, f"error: {_refusal(run)}\n"), argv
    with pytest.raises(DataError) as refused:
        load_run(run)
    assert str(refused.value) == _refusal(run)


def test_analysing_a_tampered_run_leaves_it_refused(small_run, tmp_path, capsys):  # noqa: F811
    """A run whose summary was edited before the analysis: its table is left as it was, and the run stays refused
    (an analysis never makes a changed run look scored)."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(small_run.run, run, ignore=shutil.ignore_patterns("analysis", "report"))
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    rows[0]["value"] = 99.9
    (run / "summary.json").write_text(json.dumps(rows), encoding="utf-8")
    table = (run / "instances.parquet").read_bytes()
    stamp = (run / ".kbc-summaries").read_bytes()
    code, out, err = run_kbc(["analyze", "stats", str(run), "--index", str(small_run.index), "--quiet"], capsys)
    assert code == 0, err
    assert f"note: {run / 'instances.parquet'} is left without the statistic columns: its summary.json is" in err
    assert f"written: {run / 'analysis' / 'fact_stats.parquet'}\n" in out
    assert (run / "instances.parquet").read_bytes() == table and (run / ".kbc-summaries").read_bytes() == stamp
    code, _, err = run_kbc(["leaderboard", str(run)], capsys)
    assert (code, err) == (2, f"error: {_refusal(run, 'summary.json')}\n")


def test_the_shared_run_is_left_as_built(small_run):  # noqa: F811
    """Run after the tests above: none wrote into the run every analysis test shares."""
    check_pristine(small_run)


def test_squad_facts_have_no_subject_statistics():
    """SQuAD's placeholder subject "Squad" is no subject: its mentions and tokens would be the same for every fact
    and its co-occurrence with the object is noise, so only the object's count is kept."""
    from bridge.analysis.stats import fact_stats_frame
    from eval.types import Entity, Fact
    from kb.text.paragraphs import Paragraph

    class Pieces:
        def tokenize(self, text: str) -> list[str]:
            return text.split()

    paragraphs = [Paragraph("a", "A", 0, "The Squad of Denver played in Denver."),
                  Paragraph("b", "B", 0, "Dante Alighieri was born in Florence.")]
    squad = Fact("s1", "squad", "squad", Entity("Squad"), Entity("Denver"), cloze="The Broncos play in [Y] .")
    dante = Fact("t1", "trex", "P19", Entity("Dante Alighieri", "Q1"), Entity("Florence", "Q2"))
    frame = fact_stats_frame({"squad": [squad], "trex": [dante]}, ScanIndex(paragraphs), Pieces()).set_index("uid")
    assert frame.loc["s1", "om"] == 1
    assert frame.loc["s1", ["sm", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs"]].isna().all()
    assert frame.loc["t1", ["sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp"]].tolist() == [1, 1, 1, 1,
                                                                                                        2, 2]


def test_squad_statistics_of_the_placeholder_subject_are_computed_again():
    from bridge.analysis.stats import covers

    frame = pd.DataFrame({"corpus": ["squad"], "uid": ["s1"]})
    stats = pd.DataFrame({"corpus": ["squad"], "uid": ["s1"], "relation": ["squad"], "sm": [176], "om": [3],
                          "cooc_paragraphs": [1], "cooc_sentences": [1], "st": [1], "swp": [1], "socs": [None]})
    assert not covers(stats, frame)
    cleared = stats.assign(sm=None, cooc_paragraphs=None, cooc_sentences=None, st=None, swp=None)
    assert covers(cleared, frame)


def test_swp_defaults_to_the_runs_masked_lm(tmp_path):
    """The run's masked LM is named by its folder (`model`); `path` is how it scores, not where it is."""
    from bridge.analysis.stats import default_tokenizer

    model = tmp_path / "bert"
    model.mkdir()
    described = {"kind": "masked-lm", "model": str(model), "path": "last-layer+head-at-mask"}
    config = {"predictor_configs": {"trex": {"freq": {"predictor": "freq"}, "bert": described}}}
    assert default_tokenizer(config, None) == model
    assert default_tokenizer({"predictor_configs": {"trex": {"bert": {**described, "model": "org/hub-id"}}}},
                             None) is None
