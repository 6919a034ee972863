"""`kbc run negated`: negated and misprimed Google-RE through the runner, checked against the prediction files."""

from __future__ import annotations

import json
import shutil

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)
from scipy import stats

from bridge.experiments.negated import NegatedExperiment


def _rows(out, predictor):
    rows = json.loads((out / "summary.json").read_text())
    return {(r["group"], r["metric"]): r["value"] for r in rows if r["predictor"] == predictor and r["scope"] == "own"}


def test_negated_google_re(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    bert = tiny_models("bert-cased")
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-google_re", "--relations", "date_of_birth",
                            "place_of_death", "--predictors", "freq", f"bert={bert}", "--misprimes", "high_ranked",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    freq = _rows(out, "freq")
    # Freq answers every sentence of a relation alike: the negated query keeps its top answer, a right answer
    # stays right; a high-ranked prime is Freq's top answer for 1 of the 25 birth dates
    assert freq["date_of_birth", "p@1"] == 32.0  # 8 of 25
    assert freq["place_of_death", "p@1"] == pytest.approx(1500 / 88, abs=1e-12)  # 15 of 88
    assert (freq["all", "overlap"], freq["all", "p@1-drop"]) == (100.0, 0.0)
    # the negated query gets the very same scores: the two top-10 lists correlate perfectly
    assert (freq["date_of_birth", "spearman"], freq["place_of_death", "spearman"], freq["all", "spearman"]) == (
        1.0, 1.0, 1.0)
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Cells: value alone; these rows carry no standard error or interval (`Total 95% CI`: -)." in summary
    assert "± standard error" not in summary and " ± " not in summary

    # every measure of both predictors, recomputed from the prediction files
    for name in ("freq", "bert"):
        records = {}
        for rel in ("date_of_birth", "place_of_death"):
            path = out / "predictions" / "negated-google_re" / name / f"{rel}.jsonl"
            records.update({r["uid"]: r for r in map(json.loads, path.read_text().splitlines())})
        facts = [r for r in records.values() if r["probe"] == "positive"]
        assert len(facts) == 25 + 88 and len(records) == 3 * (25 + 88)
        top = {uid: r["answers"][0][0] for uid, r in records.items()}
        got = _rows(out, name)
        counts = {(r["group"], r["metric"]): r["n_facts"] for r in json.loads((out / "summary.json").read_text())
                  if r["predictor"] == name and r["scope"] == "own"}
        for rel in ("date_of_birth", "place_of_death"):
            mine = [r for r in facts if r["relation"] == rel]
            same = sum(top[r["uid"]] == top[f"{r['uid']}:negated"] for r in mine)
            primed = sum(top[f"{r['uid']}:misprimed"].casefold() == records[f"{r['uid']}:misprimed"]["prime"].casefold()
                         for r in mine)
            assert got[rel, "overlap"] == pytest.approx(100 * same / len(mine), abs=1e-12)
            assert got[rel, "became-prime"] == pytest.approx(100 * primed / len(mine), abs=1e-12)
            rhos = [_shared_rho(r["answers"], records[f"{r['uid']}:negated"]["answers"]) for r in mine]
            rhos = [rho for rho in rhos if rho is not None]
            assert got[rel, "spearman"] == pytest.approx(sum(rhos) / len(rhos), abs=1e-12)
            assert counts[rel, "spearman"] == len(rhos)
        assert got["all", "overlap"] == pytest.approx(
            (got["date_of_birth", "overlap"] + got["place_of_death", "overlap"]) / 2, abs=1e-12)
        _facts_table_recomputes(out, name, got)
    assert freq["date_of_birth", "became-prime"] == 4.0 and freq["place_of_death", "became-prime"] == 0.0
    assert records["google_re/place_of_death:4:misprimed"]["prompt"].endswith("? Honoré Tournély died in the city of "
                                                                             "[MASK] .")


def _facts_table_recomputes(out, name, got):
    """`instances.parquet` has a row per fact with typed ranks, its top answer and whether it is right: P@1, overlap
    and p@1-drop per relation are means over its rows."""
    import pandas as pd

    facts = pd.read_parquet(out / "instances.parquet")
    facts = facts[facts.predictor == name]
    assert str(facts.rank_raw.dtype) == "Int64" and str(facts.correct_raw.dtype) == "boolean"
    answered = facts[facts["dropped"].isna()] if "dropped" in facts else facts
    assert len(answered) == 25 + 88
    for rel, rows in answered.groupby("relation"):
        assert got[rel, "p@1"] == pytest.approx(100 * rows.correct_raw.mean(), abs=1e-12)
        negated = rows[rows.top_negated.notna()]
        assert got[rel, "overlap"] == pytest.approx(100 * (negated.top1 == negated.top_negated).mean(), abs=1e-12)
        right = rows[rows.top_misprimed.notna() & (rows.top1 == rows.gold)]
        assert len(right) > 0 or (rel, "p@1-drop") not in got
        if len(right):
            assert got[rel, "p@1-drop"] == pytest.approx(100 * (right.top_misprimed != right.gold).mean(), abs=1e-12)


def _shared_rho(positive, negated):
    """Spearman's rho (scipy) over the labels both top lists hold; None where it is undefined."""
    pos, neg = {}, {}
    for answers, scores in ((positive, pos), (negated, neg)):
        for label, score, *_ in answers:
            scores.setdefault(label, score)
    shared = [k for k in pos if k in neg]
    if len(shared) < 2 or len({pos[k] for k in shared}) == 1 or len({neg[k] for k in shared}) == 1:
        return None
    return float(stats.spearmanr([pos[k] for k in shared], [neg[k] for k in shared]).statistic)


def test_spearman_row_over_the_shared_top_answers():
    """Hand-computed: fact 1 shares a, b, c (ranks 1 2 3 vs 3 1 2: rho = 1 - 6*6/24 = -0.5), fact 2 shares x, y
    in the same order (rho 1), fact 3 shares one answer only (no rho); R1's mean 0.25, R2 has none."""
    exp = NegatedExperiment()
    done = {
        "f1": {"uid": "f1", "relation": "R1", "probe": "positive", "rank_raw": 1, "gold": "a",
               "answers": [["a", -0.1, None], ["b", -0.2, None], ["c", -0.3, None], ["d", -0.4, None]]},
        "f1:negated": {"probe": "negated", "answers": [["b", -0.1, None], ["c", -0.2, None], ["a", -0.3, None],
                                                       ["e", -0.4, None]]},
        "f2": {"uid": "f2", "relation": "R1", "probe": "positive", "rank_raw": 2, "gold": "y",
               "answers": [["x", -1.0, None], ["y", -2.0, None]]},
        "f2:negated": {"probe": "negated", "answers": [["z", -0.5, None], ["x", -1.5, None], ["y", -2.5, None]]},
        "f3": {"uid": "f3", "relation": "R2", "probe": "positive", "rank_raw": 1, "gold": "p",
               "answers": [["p", -1.0, None], ["q", -2.0, None]]},
        "f3:negated": {"probe": "negated", "answers": [["p", -1.0, None], ["s", -2.0, None]]},
    }
    rows, _ = exp.summarize(list(exp.instances({"": done}).values()), {}, None)
    got = {(r["group"], r["metric"]): r["value"] for r in rows}
    n_facts = {(r["group"], r["metric"]): r["n_facts"] for r in rows}
    assert (n_facts["R1", "spearman"], n_facts["all", "spearman"], n_facts["all", "overlap"]) == (2, 2, 3)
    assert got["R1", "spearman"] == pytest.approx(0.25, abs=1e-12) and ("R2", "spearman") not in got
    assert got["all", "spearman"] == pytest.approx(0.25, abs=1e-12)
    assert (got["R1", "overlap"], got["R2", "overlap"], got["all", "overlap"]) == (0.0, 100.0, 50.0)


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "lama", "--corpus", "negated-trex", "--predictors", "freq"],
     "error: --corpus negated-trex is negated/misprimed LAMA: run it with `kbc run negated`\n"),
    (["run", "negated", "--corpus", "google_re", "--predictors", "freq"],
     "error: --corpus google_re: `kbc run negated` asks negated-trex, negated-google_re, negated-conceptnet, "
     "negated-squad only\n"),
    # no default corpus: the error names those it takes
    (["run", "negated", "--predictors", "freq"],
     "error: missing --corpus (on the command line or in --config); choose one or more of negated-trex, "
     "negated-google_re, negated-conceptnet, negated-squad\n"),
])
def test_refusals(lama_dir, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc([*argv, "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert (code, err) == (2, message)


def test_the_api_names_the_corpora_too(lama_dir, tmp_path, monkeypatch):
    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    with pytest.raises(kbcompare.ConfigError) as caught:
        kbcompare.run("negated", predictors=["freq"], data_dir=str(lama_dir), out=str(tmp_path / "run"))
    assert str(caught.value) == ("missing --corpus (on the command line or in --config); choose one or more of "
                                 "negated-trex, negated-google_re, negated-conceptnet, negated-squad")


def test_loader_names_the_misprime_variant_and_gold_says_why_it_drops(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P159", "P19",
                            "--predictors", "freq", "gold", "--misprimes", "high_ranked", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert ("  trex/P159 positive facts (from random/P159_random.jsonl; every --misprimes variant holds the same "
            "facts): read 336, kept 336, dropped 0; 336 facts have no negated sentence (it equals the positive "
            "one)\n") in err
    folder = lama_dir.parent / "negated_misprimed_lama" / "TREx" / "high_ranked"
    assert err.count(f"negated-trex: negated and misprimed sentences from {folder}/\n") == 1
    dropped = json.loads((out / "dropped.json").read_text())
    reason = ("a negated or misprimed probe is a sentence, not a (subject, relation) lookup: the gold KB answers "
              "no probes")
    assert [(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped] == [
        ("gold", "P159", reason, 336), ("gold", "P19", reason, 210)]


def test_dropped_facts_count_once_not_per_query(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36", "P101",
                            "--predictors", f"bert={tiny_models('bert-uncased')}", "--misprimes", "high_ranked",
                            "--limit", "10", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    config = json.loads((out / "config.json").read_text())
    counts = [(d["relation"], d["n"]) for d in dropped]
    assert counts == [("P19", 3), ("P36", 3)]  # one per fact, though each fact is three dropped queries
    assert "dropped 6 facts (18 queries) it cannot answer (object is not in the candidate vocabulary: 6); per " \
        "relation: P19 3, P36 3" in err
    why = "object is not in the candidate vocabulary"
    assert config["predictor_configs"]["negated-trex"]["bert"]["dropped_facts"] == {"P19": {why: 3}, "P36": {why: 3}}
    assert f"| negated-trex | bert | P19 | {why} | 3 |" in (out / "summary.md").read_text()


def test_a_linked_data_dir_reads_the_negated_data_beside_the_link(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for variant in ("random", "high_ranked"):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / variant, copy / variant)
    lines = (copy / "high_ranked" / "P19.jsonl").read_text().splitlines(keepends=True)
    lines[4] = '{"broken": \n'
    (copy / "high_ranked" / "P19.jsonl").write_text("".join(lines))
    argv = ["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--predictors", "freq", "--misprimes",
            "high_ranked", "--data-dir", str(tmp_path / "lama"), "--limit", "5", "--quiet"]
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "bad")], capsys)
    bad = f"error: {copy}/high_ranked/P19.jsonl:5: malformed JSON (Expecting value at the end of the line)"
    assert (code, err.splitlines()[-1]) == (2, bad)
    shutil.copy(shared_data / "negated_misprimed_lama" / "TREx" / "high_ranked" / "P19.jsonl", copy / "high_ranked")
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "good")], capsys)
    assert code == 0, err
    assert f"negated-trex: negated and misprimed sentences from {copy}/high_ranked/\n" in err


def test_shared_rows_are_over_the_facts_every_predictor_answered_on_that_metric(tiny_models, lama_dir, tmp_path,  # noqa: F811
                                                                                 monkeypatch, capsys):
    """Tiny T5 gives one negated query no answer and a defined rho for 1 fact; GPT-2 has all 5: each shared row of a
    metric is over the facts both have it for (overlap 4, Spearman 1), the same count for both, not each one's own."""
    from lm_fixtures import tiny_t5_dir

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--predictors",
                            f"gpt2={tiny_models('gpt2')}", f"t5={tiny_t5_dir(tmp_path / 'models')}", "--relations",
                            "P19", "--limit", "5", "--data-dir", str(lama_dir), "--out", str(out), "--bootstrap", "50",
                            "--quiet"], capsys)
    assert code == 0, err
    rows = {(r["predictor"], r["scope"], r["metric"]): (r["n_facts"], round(r["value"], 4))
            for r in json.loads((out / "summary.json").read_text()) if r["group"] == "all"
            and r["metric"] in NegatedExperiment.metrics}
    assert rows == {
        ("gpt2", "own", "p@1"): (5, 0.0), ("gpt2", "own", "overlap"): (5, 0.0), ("gpt2", "own", "spearman"): (5, 0.28),
        ("gpt2", "own", "became-prime"): (5, 0.0),
        ("gpt2", "shared", "p@1"): (5, 0.0), ("gpt2", "shared", "overlap"): (4, 0.0),
        ("gpt2", "shared", "spearman"): (1, 0.5), ("gpt2", "shared", "became-prime"): (4, 0.0),
        ("t5", "own", "p@1"): (5, 0.0), ("t5", "own", "overlap"): (4, 75.0), ("t5", "own", "spearman"): (1, 1.0),
        ("t5", "own", "became-prime"): (4, 0.0),
        ("t5", "shared", "p@1"): (5, 0.0), ("t5", "shared", "overlap"): (4, 75.0),
        ("t5", "shared", "spearman"): (1, 1.0), ("t5", "shared", "became-prime"): (4, 0.0)}
    board = run_kbc(["leaderboard", str(out), "--metric", "overlap", "--format", "json"], capsys)
    assert board[0] == 0, board[2]
    # a negated query that keeps the positive one's top answer is a failure: the least overlap ranks first
    assert [(r["rank"], r["predictor"], r["n_facts"], r["value"]) for r in json.loads(board[1])] == [
        (1, "gpt2", 4, 0.0), (2, "t5", 4, 75.0)]
    board = run_kbc(["leaderboard", str(out), "--metric", "overlap"], capsys)
    assert board[0] == 0 and "negated-trex, overlap (raw, shared facts; lower is better)" in board[1]
    assert run_kbc(["leaderboard", str(out), "--metric", "answer_space"], capsys)[1:] == (
        "", "error: --metric answer_space counts the candidates it ranks, not how well it answers: nothing to rank "
            "by; rank by --metric overlap\n")


def test_the_sample_is_on_the_total_line_and_a_relation_without_negations_is_said_to_have_none(
        lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--predictors", "freq", "--relations", "P19",
                            "P159", "--limit", "3", "--data-dir", str(lama_dir), "--out", str(out)], capsys)
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0] == ("negated-trex: 2 relations, read 546, kept 546, dropped 0; asking a sample of 6 (--limit 3, "
                        "seed 0)")
    assert lines[1].endswith("336 facts have no negated sentence (it equals the positive one)")
    assert ("- `-` under P159 for every predictor: no fact of it has an answered negated sentence (the overlap is "
            "taken over those facts; a relation whose data has no negated sentence, as T-REx P159 whose negations "
            "equal the positive sentence, has none).") in (out / "summary.md").read_text().splitlines()
    assert "answered none" not in (out / "summary.md").read_text()


@pytest.mark.parametrize(("variant", "file"), [("high_ranked", "P19.jsonl"), ("random", "P19_random.jsonl")])
def test_an_edited_misprime_file_is_other_data_for_its_relation(shared_data, tmp_path, monkeypatch, capsys, variant,
                                                                 file):
    """The negated and misprimed sentences come from the `--misprimes` folder: an edit there refuses a rerun into
    the directory of the old sentences, as an edited fact does, rather than reusing records asked otherwise."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for folder in dict.fromkeys(("random", variant)):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / folder, copy / folder)
    out = tmp_path / "run"
    argv = ["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36", "--predictors", "freq",
            "--misprimes", variant, "--data-dir", str(tmp_path / "lama"), "--limit", "5", "--out", str(out),
            "--quiet"]
    assert run_kbc(argv, capsys)[0] == 0
    assert run_kbc(argv, capsys)[0] == 0  # unchanged: resumed
    path = copy / variant / file
    text = path.read_text(encoding="utf-8")
    assert text.count("Christina Rossetti was not born in") == 1
    path.write_text(text.replace("Christina Rossetti was not born in", "Christina Rossetti was never born in"),
                    encoding="utf-8")
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds negated-trex results of other data for P19 (the data files changed); use another --out")
