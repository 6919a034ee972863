"""E-BERT end to end on a tiny random BERT with the real bert-base-cased vocabulary and wikipedia2vec
trained on the real sample dump: inputs (REPLACE, CONCAT), fallback, AVG, and `kbc run lama`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_entities_support import tiny_bert, trained_w2v

from bridge.predictors.registry import PredictorContext, build
from eval.types import Entity, Query
from lm.entities.ebert import InputBuilder, MaskedScorer, render, top_candidates
from lm.entities.model import candidates, load_masked_lm

NATIVE = "The native language of [X] is [Y] ."


def _query(label: str, template: str = NATIVE, uid: str = "q") -> Query:
    return Query(uid, uid, "trex", "P103", Entity(label), "object", template)


@pytest.fixture(scope="module")
def bert_dir(shared_data):
    return tiny_bert(shared_data)


@pytest.fixture(scope="module")
def lm(bert_dir):
    return load_masked_lm(str(bert_dir))


@pytest.fixture(scope="module")
def ctx(shared_data, lama_dir, bert_dir, tmp_path_factory):
    from eval.lama import load_trex

    corpus = load_trex(lama_dir, ["P36"])
    options = {"model": str(bert_dir), "wikipedia2vec": str(trained_w2v(shared_data))}
    return PredictorContext(corpus, None, tmp_path_factory.mktemp("cache"), lama_dir, batch_size=8, options=options)


def test_render_spans_with_the_mask_first():
    text, spans = render(_query("France", "[Y] is the capital of [X] ."), "[MASK]")
    assert text == "[MASK] is the capital of France ."
    assert [text[a:b] for a, b in spans] == ["France"]


def test_replace_and_concat_ids(lm):
    tok = lm.tokenizer
    builder = InputBuilder(tok)
    plain = builder.plain(_query("Jean Marais"))
    pieces = tok.convert_ids_to_tokens(plain.ids)
    assert pieces == ["[CLS]", "The", "native", "language", "of", "Jean", "Mara", "##is", "is", "[MASK]", ".",
                      "[SEP]"]  # E-BERT §3's example segmentation
    assert plain.subject_span == (5, 8) and plain.mask_pos == 9
    rep = builder.build(_query("Jean Marais"), "replace", 7)
    assert rep.ids == plain.ids[:5] + (tok.unk_token_id,) + plain.ids[8:]
    assert (rep.entity_pos, rep.entity_row, rep.mask_pos) == (5, 7, 7)
    con = builder.build(_query("Jean Marais"), "concat", 7)
    assert tok.convert_ids_to_tokens(con.ids[5:10]) == ["[UNK]", "/", "Jean", "Mara", "##is"]
    assert con.entity_pos == 5 and con.mask_pos == 11
    assert builder.build(_query("Jean Marais"), "replace", None) == plain  # no vector: plain BERT
    no_subject = Query("c", "c", "squad", "x", Entity("Jean Marais"), "object", "Paris is in [Y] .")
    assert builder.build(no_subject, "replace", 7) == builder.plain(no_subject)


def test_replace_changes_input_embeddings_only_at_the_subject_span(lm):
    tok = lm.tokenizer
    builder = InputBuilder(tok)
    mapped = np.random.default_rng(0).normal(size=(10, lm.model.config.hidden_size)).astype(np.float32)
    scorer = MaskedScorer(lm.model, mapped, tok.pad_token_id)
    plain = builder.plain(_query("Jean Marais"))
    rep = builder.build(_query("Jean Marais"), "replace", 3)
    _, att, emb = scorer.embed([plain, rep])
    a, b = plain.subject_span
    n = len(rep.ids)
    assert torch.equal(emb[1, :a], emb[0, :a])
    assert torch.allclose(emb[1, a], torch.from_numpy(mapped[3]))
    assert torch.equal(emb[1, a + 1:n], emb[0, b:len(plain.ids)])
    assert att[1].sum().item() == n == len(plain.ids) - (b - a) + 1
    word = lm.model.get_input_embeddings().weight
    assert torch.equal(emb[0, :len(plain.ids)], word[list(plain.ids)])
    # the inputs_embeds path computes exactly what the input_ids path does
    with torch.inference_mode():
        by_ids = lm.model(input_ids=torch.tensor([plain.ids])).logits
    probs, _ = scorer.run([plain])
    assert np.allclose(probs[0], torch.softmax(by_ids[0, plain.mask_pos], -1).numpy(), atol=1e-6)


def test_candidates_cover_the_lama_vocabulary(lm, lama_dir):
    ids, labels, missing = candidates(lm.tokenizer, lama_dir / "common_vocab_cased.txt")
    # E-BERT App. B: the cased BERT vocabulary is a superset of LAMA's 21,018 common words
    assert (len(ids), missing) == (21018, 0)
    assert lm.tokenizer.convert_ids_to_tokens(ids[labels.index("Paris")]) == "Paris"


def test_top_candidates_order():
    probs = np.array([[0.1, 0.5, 0.2, 0.2]])
    (top,) = top_candidates(probs, [0, 1, 2], ["a", "b", "c"], 2)
    assert [lab for lab, _ in top] == ["b", "c"]
    assert [s for _, s in top] == pytest.approx([0.5, 0.2])


def test_predictors_fallback_and_avg(ctx):
    linked, unlinked = _query("Alaska", uid="a"), _query("Nobody Knows This Name", uid="b")
    ebert = build("ebert", ctx)
    preds = ebert.predict([linked, unlinked], 10)
    assert preds[0].extra == {"entity": "Alaska", "link": "title", "prompt": "The native language of [E:Alaska] is "
                                                                           "[MASK] ."}
    assert preds[1].extra == {"entity": None, "link": "fallback"}
    bert_probs = ebert.scorer.run([ebert.builder.plain(q) for q in (linked, unlinked)])[0]
    bert_top = top_candidates(bert_probs, ebert.cand_ids, ebert.labels, 10)
    assert [a.label for a in preds[1].answers] == [lab for lab, _ in bert_top[1]]  # fallback is BERT
    ebert_probs = ebert.scorer.run([ebert.builder.build(linked, "replace", ebert.links(linked.known).row)])[0]
    assert not np.allclose(ebert_probs[0], bert_probs[0])
    avg = build("ebert-avg", ctx).predict([linked], 10)[0]
    expected = top_candidates(0.5 * (bert_probs[:1] + ebert_probs), ebert.cand_ids, ebert.labels, 10)[0]
    assert [a.label for a in avg.answers] == [lab for lab, _ in expected]
    assert np.allclose([a.score for a in avg.answers], [s for _, s in expected], rtol=1e-5)
    concat = build("ebert-concat", ctx).predict([linked], 5)[0]
    assert len(concat.answers) == 5 and concat.extra["entity"] == "Alaska"
    assert concat.extra["prompt"] == "The native language of [E:Alaska] / Alaska is [MASK] ."
    described = ebert.describe()
    assert described["coverage"]["subjects"] == len({f.subject.key for f in ctx.corpus.facts})
    assert described["map"]["n_words"] > 1000 and described["candidates"] == 21018


def test_missing_options_are_config_errors(ctx):
    from eval.errors import ConfigError

    bare = PredictorContext(ctx.corpus, None, ctx.cache_dir, ctx.data_dir, options={"model": "x"})
    with pytest.raises(ConfigError, match="wikipedia2vec=PATH"):
        build("ebert", bare)


def test_kbc_run_lama_with_ebert_predictors(ctx, lama_dir, tmp_path, monkeypatch, capsys):
    from bridge.cli import main

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    main(["run", "lama", "--corpus", "trex", "google_re", "--predictors", "ebert", "ebert-avg", "ebert-concat",
          "bert-entity", "ebert-entity", "--relations", "P36", "place_of_birth", "--limit", "4", "--quiet",
          "--data-dir", str(lama_dir), "--out", str(out), "--set", f"model={ctx.options['model']}",
          "--set", f"wikipedia2vec={ctx.options['wikipedia2vec']}", "--batch-size", "4"])
    rows = json.loads((out / "summary.json").read_text())
    seen = {(r["corpus"], r["predictor"]) for r in rows}
    names = ("ebert", "ebert-avg", "ebert-concat", "bert-entity", "ebert-entity")
    assert seen == {(c, p) for c in ("trex", "google_re") for p in names}
    config = json.loads((out / "config.json").read_text())
    cov = config["predictor_configs"]["google_re"]["ebert"]["coverage"]
    # coverage is over the subjects of the corpus (its chosen relations), not only the --limit sample
    from eval.corpora import load_corpus

    subjects = {f.subject.key for f in load_corpus("google_re", lama_dir, ["place_of_birth"]).facts}
    assert cov["subjects"] == len(subjects) and set(cov) >= {"linked", "coverage_percent", "title", "mention"}
    record = json.loads((out / "predictions/trex/ebert-entity/P36.jsonl").read_text().splitlines()[0])
    assert len(record["answers"]) > 0 and "extra" in record
    # where docs/entities.md says an E-BERT record holds its linked entity: under `extra`, not at the top level
    record = json.loads((out / "predictions/trex/ebert/P36.jsonl").read_text().splitlines()[0])
    assert sorted(record["extra"]) == ["entity", "link"] and not {"entity", "link"} & set(record)
    page = " ".join((Path(__file__).parents[1] / "docs" / "entities.md").read_text().split())
    assert "`extra.entity`" in page and "`extra.link`" in page


def test_token_predictors_drop_what_bert_drops_entity_predictors_keep_all(ctx):
    from eval.types import Fact
    from lm.vocab import NOT_CANDIDATE, NOT_SINGLE_TOKEN

    def fact(obj: str) -> Fact:
        return Fact(obj, "trex", "P36", Entity("Alaska"), Entity(obj))

    facts = [fact("Paris"), fact("Barack Obama"), fact("fifteen")]  # "fifteen": one token, not a LAMA word
    kept, dropped = build("ebert", ctx).filter_facts(facts)
    assert [f.object.label for f in kept] == ["Paris"]
    assert dropped == {NOT_SINGLE_TOKEN: 1, NOT_CANDIDATE: 1}
    assert build("ebert-entity", ctx).filter_facts(facts) == (facts, {})


def test_results_are_cached_on_disk(ctx):
    ebert = build("ebert-concat", ctx)
    queries = [_query("Alaska", uid="a"), _query("Nobody Knows This Name", uid="b")]
    first = ebert.predict(queries, 7)
    hits = ebert.cache.hits
    again = ebert.predict(queries, 7)
    assert ebert.cache.hits == hits + 2
    assert [p.answers for p in again] == [p.answers for p in first]
    assert [p.answers for p in ebert.predict(queries, 3)] == [p.answers[:3] for p in first]


def test_uncased_bert_compares_lowercased_answers(shared_data, lama_dir, tmp_path):
    import lm_fixtures

    from eval.lama import load_trex

    bert = lm_fixtures.tiny_model_dir("bert-uncased", tmp_path)
    corpus = load_trex(lama_dir, ["P36"])
    options = {"model": str(bert), "wikipedia2vec": str(trained_w2v(shared_data))}
    ebert = build("ebert", PredictorContext(corpus, None, tmp_path / "cache", lama_dir, batch_size=8,
                                            options=options))
    assert ebert.uncased and all(label == label.lower() for label in ebert.labels)
    facts = [f for f in corpus.facts if f.object.label in ("Paris", "Berlin")]
    kept, dropped = ebert.filter_facts(facts)
    assert kept == facts and dropped == {}  # "Paris" is answerable as "paris"
    (pred,) = ebert.predict([_query("France", "[X] has the capital [Y] .")], 5)
    assert pred.lowercased and len(pred.answers) == 5


def test_non_finite_probabilities_name_the_fact(ctx, tmp_path):
    from eval.errors import KbcError

    fresh = PredictorContext(ctx.corpus, None, tmp_path / "cache", ctx.data_dir, batch_size=8, options=ctx.options)
    ebert = build("ebert", fresh)
    (token,) = ebert.builder.tokenizer("Nobody", add_special_tokens=False)["input_ids"]

    def nan_at_token(module, args, output):  # as a NaN row of an untied embedding matrix would
        return output.masked_fill((args[0] == token).unsqueeze(-1), float("nan"))

    handle = ebert.scorer.model.get_input_embeddings().register_forward_hook(nan_at_token)
    try:
        with pytest.raises(KbcError) as exc:
            ebert.predict([_query("Alaska", uid="a"), _query("Nobody Knows This Name", uid="b")], 10)
    finally:
        handle.remove()
    assert str(exc.value) == (f"{ctx.options['model']}: non-finite score (NaN or infinity) for fact b (P103) (1 of 2 "
                              "inputs scored together); no rank can be given to it (check the checkpoint, or use "
                              "--dtype float32)")


def test_show_says_which_scale_each_predictors_scores_are_on(ctx, lama_dir, tmp_path, monkeypatch, capsys):
    from cli_support import run_kbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "bert", "ebert", "ebert-avg",
                            "ebert-entity", "--relations", "P36", "--limit", "1", "--quiet", "--data-dir",
                            str(lama_dir), "--out", str(out), "--set", f"model={ctx.options['model']}",
                            "--set", f"wikipedia2vec={ctx.options['wikipedia2vec']}", "--batch-size", "4"], capsys)
    assert code == 0, err
    scales = {"bert": "log-prob", "ebert": "probability", "ebert-avg": "probability", "ebert-entity": "logit"}
    configs = json.loads((out / "config.json").read_text())["predictor_configs"]["trex"]
    assert {name: configs[name]["scores"] for name in scales} == scales
    uid = json.loads((out / "predictions/trex/bert/P36.jsonl").read_text().splitlines()[0])["uid"]
    code, text, err = run_kbc(["show", str(out), "--uid", uid], capsys)
    assert code == 0, err
    heads = {line.split()[0]: line for line in text.splitlines() if line.startswith("  ") and line.split()[0] in scales}
    assert {name: line.rsplit(" (score: ", 1)[-1] for name, line in heads.items()} == {
        name: f"{scale})" for name, scale in scales.items()}
    code, text, err = run_kbc(["show", str(out), "--uid", uid, "--json"], capsys)
    shown = json.loads(text)["facts"][0]["predictors"]
    assert {name: shown[name]["score_scale"] for name in scales} == scales


def test_records_hold_the_input_scored_and_the_summary_the_plain_bert_share(ctx, lama_dir, tmp_path, monkeypatch,
                                                                             capsys):
    from cli_support import run_kbc

    from bridge.predictors.entities import LinkCache, resources
    from bridge.run.config import sample
    from eval.corpora import load_corpus

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv = ["run", "lama", "--corpus", "trex", "--predictors", "ebert", "ebert-concat", "--relations", "P36", "P19",
            "--limit", "6", "--quiet", "--data-dir", str(lama_dir), "--set", f"model={ctx.options['model']}",
            "--set", f"wikipedia2vec={ctx.options['wikipedia2vec']}", "--batch-size", "4"]
    out = tmp_path / "run"
    code, _, err = run_kbc([*argv, "--out", str(out)], capsys)
    assert code == 0, err
    corpus = load_corpus("trex", lama_dir, ["P36", "P19"])
    asked = sample(corpus.facts, 6, 0)
    links = LinkCache(resources(ctx).linker)
    linked = sum(1 for f in asked if links(f.subject))
    subjects = {f.subject.key: f.subject for f in corpus.facts}
    with_vector = sum(1 for s in subjects.values() if links(s))
    records = {}
    for name in ("ebert", "ebert-concat"):
        for rel in ("P19", "P36"):
            for line in (out / "predictions" / "trex" / name / f"{rel}.jsonl").read_text().splitlines():
                r = json.loads(line)
                records[(name, r["uid"])] = r
    by_uid = {f.uid: f for f in asked}
    scored = [by_uid[uid] for (name, uid), r in records.items() if name == "ebert" and "dropped" not in r]
    linked_scored = sum(1 for f in scored if links(f.subject))
    assert (len(asked), linked, len(scored), linked_scored, len(subjects), with_vector) == (12, 2, 12, 2, 1637, 161)
    assert ("trex ebert: facts scored whose subject has an entity vector 2/12 (16.67%), the rest asked as plain "
            "BERT; subjects of the chosen relations with an entity vector 161/1637 (9.84%)") in err.splitlines()
    fallback = {name: 0 for name in ("ebert", "ebert-concat")}
    for (name, uid), r in records.items():
        fact = by_uid[uid]
        plain = corpus.relations[fact.relation].template.replace("[X]", fact.subject.label).replace("[Y]", "[MASK]")
        title = r["extra"]["entity"]
        if title is None:
            fallback[name] += 1
            assert r["prompt"] == plain
        else:
            entity = f"[E:{title.replace(' ', '_')}]"
            shown = entity if name == "ebert" else f"{entity} / {fact.subject.label}"
            assert r["prompt"] == plain.replace(fact.subject.label, shown, 1) != plain
    n = {name: sum(1 for key in records if key[0] == name) for name in fallback}
    assert fallback == {"ebert": 10, "ebert-concat": 10} and n == {"ebert": 12, "ebert-concat": 12}
    assert ("- trex: scored queries E-BERT answered as plain BERT (no entity vector for the subject, or no subject "
            "in the prompt): ebert 10 of 12 (83.33%), ebert-concat 10 of 12 (83.33%).\n"
            ) in (out / "summary.md").read_text()
    # a rerun asking the records left is byte-identical to the fresh run; a folder whose records hold the template
    # (an earlier kbc version) is refused, naming why
    path = out / "predictions" / "trex" / "ebert" / "P36.jsonl"
    whole = path.read_bytes()
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:2]))
    code, _, err = run_kbc([*argv, "--out", str(out)], capsys)
    assert code == 0, err
    assert path.read_bytes() == whole
    config = json.loads((out / "config.json").read_text())
    for ident in config["predictor_specs"].values():
        assert ident.pop("prompt") == "the input scored"
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc([*argv, "--out", str(out)], capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: {out}: predictor 'ebert' has records there from an earlier "
                                               "kbc version, whose `prompt` is the template asked, not the E-BERT "
                                               "input it scored (the subject replaced by its entity, or the entity "
                                               "put before it); its scores stand, but its records would mix both: "
                                               "use another --out to record the inputs scored")
    # records linked by an earlier rule (aliases, a mention's rarer entity) are refused too
    for ident in config["predictor_specs"].values():
        ident["prompt"] = "the input scored"
        assert ident.pop("link_rule") == 2
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc([*argv, "--out", str(out)], capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: {out}: predictor 'ebert' has records there from an earlier "
                                               "kbc version, which linked a subject also by its aliases (Google-RE's "
                                               "Gilbert John Arrow to the page Arrow) and a mention to a rarer entity "
                                               "where its most common one had no vector: its records would mix two "
                                               "linkings; use another --out")


def test_the_coverage_line_counts_the_facts_scored(ctx, lama_dir, tmp_path, monkeypatch, capsys):
    """Of a sample whose objects are partly no candidate (a vocabulary file holding some of them), the line counts
    the facts E-BERT scores (those with a record), and says how many of the sample it left out."""
    from cli_support import run_kbc

    from bridge.predictors.entities import LinkCache, resources
    from bridge.run.config import sample
    from eval.corpora import load_corpus

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    by_uid = {f.uid: f for f in sample(load_corpus("trex", lama_dir, ["P1412"]).facts, 40, 0)}
    objects = sorted({f.object.label for f in by_uid.values()})
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(objects[::2]) + "\n")  # every other object of the sample
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "ebert", "--relations", "P1412",
                            "--limit", "40", "--quiet", "--data-dir", str(lama_dir), "--set",
                            f"model={ctx.options['model']}", "--set", f"wikipedia2vec={ctx.options['wikipedia2vec']}",
                            "--set", f"vocab_file={vocab}", "--out", str(out)], capsys)
    assert code == 0, err
    lines = (out / "predictions" / "trex" / "ebert" / "P1412.jsonl").read_text().splitlines()
    scored = [by_uid[r["uid"]] for r in map(json.loads, lines) if "dropped" not in r]
    assert {f.uid for f in scored} == {f.uid for f in by_uid.values() if f.object.label in objects[::2]}
    links = LinkCache(resources(ctx).linker)
    linked = sum(1 for f in scored if links(f.subject))
    assert 0 < len(scored) < len(by_uid) == 40
    shown = [line for line in err.splitlines() if line.startswith("trex ebert: ")]
    assert len(shown) == 1 and shown[0].startswith(
        f"trex ebert: facts scored whose subject has an entity vector {linked}/{len(scored)} "
        f"({100.0 * linked / len(scored):.2f}%) ({40 - len(scored)} of the 40 sampled left out: their object is "
        "no candidate), the rest asked as plain BERT; "), shown


def test_the_coverage_line_gives_two_decimals_as_the_summary_does():
    """A share that rounds to a whole or one-decimal number still prints two decimals (13.00%, not 13.0%)."""
    from bridge.predictors.entities import coverage_line

    coverage = {"subjects": 1637, "linked": 161, "coverage_percent": 9.8, "asked": {
        "facts": 400, "linked": 52, "sampled": 400, "coverage_percent": 13.0}}
    assert coverage_line("trex", "ebert-entity", coverage) == (
        "trex ebert-entity: facts scored whose subject has an entity vector 52/400 (13.00%), the rest asked as plain "
        "BERT; subjects of the chosen relations with an entity vector 161/1637 (9.80%)")
    del coverage["asked"]
    assert coverage_line("trex", "ebert", coverage) == (
        "trex ebert: subjects of the chosen relations with an entity vector 161/1637 (9.80%); the rest are asked as "
        "plain BERT")
