"""The retrieval baseline, evidence paragraphs and the LAMA evidence index."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import pytest

from bridge.predictors.registry import PredictorContext, build
from eval.errors import ConfigError, DataError
from eval.types import Entity, Evidence, Fact, Query
from kb.text.evidence import attach_gold, attach_retrieved, evidence_index, gold_context
from kb.text.index import build_index
from kb.text.paragraphs import ContentDigest, Paragraph, evidence_paragraphs
from kb.text.retrieval import EntityReader, RetrievalPredictor, SlotContext, VocabReader, retrieval_text

TEMPLATE = "[X] was born in [Y] ."


def _query(label: str, uid: str = "q1", template: str = TEMPLATE) -> Query:
    return Query(uid, uid, "trex", "P19", Entity(label), "object", template)


@pytest.fixture
def tiny(tmp_path):
    rows = [("Dante was born in Florence and died in Ravenna", ("Dante", "Florence"), ("q1",)),
            ("Dante wrote in Florence about Rome", ("Dante", "Rome"), ()),
            ("Petrarch was born in Arezzo", ("Petrarch", "Arezzo"), ("q2",)),
            ("Boccaccio lived in Florence", ("Boccaccio", "Florence"), ())]
    paragraphs = [Paragraph(f"p#{i}", "p", i, t, links, facts) for i, (t, links, facts) in enumerate(rows)]
    return build_index(paragraphs, "tantivy", tmp_path / "tiny")


def test_query_text_and_slot_context():
    q = _query("Dante")
    assert retrieval_text(q) == "Dante was born in ."
    ctx = SlotContext.of(q)
    assert ctx.left == ("in", "born") and ctx.right == () and ctx.own == {"dante", "was", "born", "in"}
    cloze = Query("s", "s", "squad", "squad", Entity("Squad"), "object", "Relativity was developed by [Y] .")
    assert retrieval_text(cloze) == "Relativity was developed by ."


def test_vocab_reader_scores_exactly(tiny):
    vocab = ["Florence", "Ravenna", "Rome", "Arezzo", "Dante", "born", "and"]
    reader = VocabReader(vocab, tiny, context_bonus=1.0)
    hits = tiny.search(retrieval_text(_query("Dante")), 2)
    assert [h.paragraph.pid for h in hits] == ["p#0", "p#2"]
    answers = reader.read(_query("Dante"), hits, 10)
    w = hits[1].score / hits[0].score

    def idf(df):
        return math.log(1 + (4 - df + 0.5) / (df + 0.5))

    expected = {
        "Florence": idf(3) * (1 + 2),  # "born in Florence": both context words match
        "Ravenna": idf(1) * (1 + 1),  # "in Ravenna"
        "Arezzo": w * idf(1) * (1 + 2),  # second paragraph, weighted by its relative BM25 score
        "and": idf(1),
    }
    assert [a.label for a in answers] == sorted(expected, key=lambda k: -expected[k])
    for a in answers:
        assert a.score == pytest.approx(expected[a.label])
    assert "Dante" not in [a.label for a in answers] and "born" not in [a.label for a in answers]


def test_exclude_gold_drops_the_facts_own_paragraphs(tiny):
    reader = VocabReader(["Florence", "Ravenna", "Rome", "Arezzo"], tiny)
    plain = RetrievalPredictor(tiny, reader, k=2)
    leak_free = RetrievalPredictor(tiny, reader, k=2, exclude_gold=True)
    q = _query("Dante")
    assert plain.predict([q], 5)[0].extra["retrieved"] == ["p#0", "p#2"]
    assert "Ravenna" in [a.label for a in plain.predict([q], 5)[0].answers]  # only in the fact's own p#0
    pred = leak_free.predict([q], 5)[0]
    assert pred.extra["retrieved"] == ["p#2", "p#1"]
    assert "Ravenna" not in [a.label for a in pred.answers]
    assert leak_free.describe()["exclude_gold"] is True


def test_entity_reader_ranks_link_targets(tiny):
    hits = tiny.search("Dante born", 3)
    answers = EntityReader().read(_query("Dante"), hits, 5)
    assert answers[0].label == "Florence" and "Dante" not in [a.label for a in answers]


def test_evidence_attached_as_context(tiny):
    fact = Fact("f1", "trex", "P19", Entity("Dante"), Entity("Florence"),
                (Evidence("Dante was born in Florence.", "Dante was born in [MASK]."),
                 Evidence("Dante was born in Florence.", "Dante was born in [MASK]."),
                 Evidence("Florence was his city.", "[MASK] was his city.")))
    assert gold_context(fact, k=2) == "Dante was born in Florence. Florence was his city."
    assert gold_context(fact, masked=True, mask="<mask>") == "Dante was born in <mask>."
    queries = [_query("Dante", "f1"), _query("Nobody", "f9")]
    got = attach_gold(queries, {"f1": fact})
    assert [q.context for q in got.queries] == ["Dante was born in Florence.", None] and got.missing == 1
    assert got.queries[0].uid == "f1" and queries[0].context is None
    ret = attach_retrieved([_query("Dante", "q1")], tiny, k=1)
    assert ret.queries[0].context == "Dante was born in Florence and died in Ravenna" and ret.missing == 0
    ret = attach_retrieved([_query("Dante", "q1")], tiny, k=1, exclude_gold=True)
    assert ret.queries[0].context == "Petrarch was born in Arezzo"


@pytest.fixture(scope="module")
def lama_index(lama_dir, tmp_path_factory):
    return evidence_index(tmp_path_factory.mktemp("ev") / "lama-evidence", lama_dir)


def test_evidence_index_is_cached_and_versioned(lama_index, lama_dir):
    stats = lama_index.stats()
    assert stats["source"] == "lama-evidences" and set(stats["data_versions"]) == {"trex", "google_re"}
    again = evidence_index(lama_index.root, lama_dir)
    assert again.generation == lama_index.generation  # not rebuilt


def _own_sentence_found(index, facts, k: int = 5) -> list[str]:
    """Facts none of whose evidence sentences is in the top k when searched with its first one.

    (Not top 1: a shorter near-duplicate sentence of another fact can outscore it under BM25.)
    """
    missed = []
    for fact in facts:
        hits = index.search(fact.evidences[0].text, k)
        if not any(fact.uid in h.paragraph.facts for h in hits):
            missed.append(fact.uid)
    return missed


def test_trex_facts_retrieve_their_own_sentences_sample(lama_index, trex):
    with_ev = [f for f in trex.facts if f.evidences]
    assert _own_sentence_found(lama_index, with_ev[::25]) == []


@pytest.mark.heavy
def test_every_trex_fact_with_evidences_is_indexed_and_retrieves_its_own_sentence(lama_index, trex):
    """Every fact's sentences are in the index (read back from it); every fourth fact not in the sample above
    finds its own sentence."""
    with_ev = [f for f in trex.facts if f.evidences]
    assert len(with_ev) == 24895
    indexed = {uid for paragraph in lama_index.matching_paragraphs() for uid in paragraph.facts}
    assert {f.uid for f in with_ev} - indexed == set()
    assert _own_sentence_found(lama_index, [f for i, f in enumerate(with_ev) if i % 4 == 1]) == []


def test_retrieval_predictor_from_the_registry(lama_index, trex, lama_dir, tmp_path):
    ctx = PredictorContext(trex, None, tmp_path, lama_dir, options={"text_index": str(lama_index.root), "k": "5"})
    predictor = build("retrieval", ctx)
    assert predictor.describe()["index"]["paragraphs"] == len(lama_index)
    facts = [f for f in trex.facts if f.relation == "P19"][:50]
    queries = [Query(f.uid, f.uid, "trex", "P19", f.subject, "object", "[X] was born in [Y] .") for f in facts]
    preds = predictor.predict(queries, 10)
    assert len(preds) == 50 and all(len(p.answers) <= 10 for p in preds)
    vocab = set((lama_dir / "common_vocab_cased.txt").read_text().split())
    assert all(a.label in vocab for p in preds for a in p.answers)
    assert predictor.describe()["exclude_gold"] is True  # the leak-free number by default
    for bad, msg in [({"k": "0"}, "at least 1"), ({"reader": "neural"}, "choose vocab"),
                     ({"reader": "qa"}, "needs --set model"), ({"backend": "solr"}, "unknown index backend")]:
        with pytest.raises(ConfigError, match=msg):
            build("retrieval", PredictorContext(trex, None, tmp_path, lama_dir,
                                                options={"text_index": str(lama_index.root), **bad}))
    with pytest.raises(DataError, match="no text index there"):
        build("retrieval", PredictorContext(trex, None, tmp_path, lama_dir,
                                            options={"text_index": str(tmp_path / "x")}))


def test_the_oracle_reads_the_gold_evidence_and_the_default_does_not(lama_index, trex, lama_dir, tmp_path):
    """On the LAMA evidence index, reading the fact's own sentence finds far more objects: an upper bound."""
    facts = [f for f in trex.facts if f.relation == "P19"][:50]
    queries = [Query(f.uid, f.uid, "trex", "P19", f.subject, "object", "[X] was born in [Y] .") for f in facts]
    right = {}
    for name, options in (("retrieval", {}), ("retrieval-oracle", {}), ("retrieval", {"exclude_gold": "0"}),
                          ("retrieval-oracle", {"exclude_gold": "1"})):
        ctx = PredictorContext(trex, None, tmp_path, lama_dir, options={"text_index": str(lama_index.root), **options})
        preds = build(name, ctx).predict(queries, 10)
        right[name, options.get("exclude_gold")] = sum(
            bool(p.answers) and p.answers[0].label == f.object.label for p, f in zip(preds, facts))
    assert right == {("retrieval", None): 3, ("retrieval-oracle", None): 27, ("retrieval", "0"): 27,
                     ("retrieval-oracle", "1"): 3}


def test_retrieval_identity_records_exclude_gold(tmp_path):
    """A run directory of `retrieval` from when it read the gold evidence by default ({} options) is refused."""
    from bridge.predictors.text import make_retrieval, make_retrieval_oracle
    from bridge.run.config import PlannedPredictor, RunConfig

    cfg = RunConfig(corpora=["trex"], predictors=["retrieval"], out=tmp_path)
    for factory, options, expected in ((make_retrieval, {}, {"exclude_gold": "1"}),
                                       (make_retrieval, {"exclude_gold": "0"}, {"exclude_gold": "0"}),
                                       (make_retrieval_oracle, {}, {"exclude_gold": "0"})):
        planned = PlannedPredictor("retrieval", "retrieval", factory, options, factory.options)
        assert planned.identity(cfg)["options"] == expected


def test_kbc_ls_labels_the_oracle_an_upper_bound(capsys):
    from cli_support import run_kbc

    code, out, _ = run_kbc(["ls"], capsys)
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("retrieval")}
    assert code == 0 and set(lines) == {"retrieval", "retrieval-oracle"}
    assert "the fact's own evidence left out" in lines["retrieval"]
    assert "Upper bound" in lines["retrieval-oracle"] and "gold leak" in lines["retrieval-oracle"]
    code, out, _ = run_kbc(["ls", "retrieval"], capsys)
    assert "  --set retrieval.exclude_gold=BOOL: drop the queried fact's own evidence paragraphs (0: an upper bound " \
           "that reads them) (default 1)\n" in out
    code, out, _ = run_kbc(["ls", "retrieval-oracle"], capsys)
    assert "  --set retrieval-oracle.exclude_gold=BOOL: drop the queried fact's own evidence paragraphs (1: the " \
           "leak-free retrieval) (default 0)\n" in out


def test_qa_reader_with_a_tiny_random_model(tiny, shared_data, tmp_path):
    transformers = pytest.importorskip("transformers")
    from kb.text.retrieval import QAReader

    tok_dir = shared_data / "tokenizers" / "bert-base-cased"
    tokenizer = transformers.BertTokenizer.from_pretrained(tok_dir, do_lower_case=False)
    config = transformers.BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=37)
    model_dir = Path(tmp_path) / "qa"
    transformers.BertForQuestionAnswering(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    reader = QAReader(str(model_dir), vocab=None)
    hits = tiny.search("Dante born", 2)
    answers = reader.read(_query("Dante"), hits, 10)
    words = {w for h in hits for w in h.paragraph.text.split()}
    assert answers and all(a.label in words and a.label.lower() not in {"dante", "was", "born", "in"}
                           for a in answers)
    assert [a.score for a in answers] == sorted((a.score for a in answers), reverse=True)
    with pytest.raises(DataError, match="cannot load the QA reader"):
        QAReader(str(tmp_path / "missing"))


def test_an_index_rebuilt_from_other_paragraphs_under_the_same_path_is_refused(lama_dir, tmp_path, monkeypatch,
                                                                               capsys):
    """The index is part of the predictor's identity as a vocabulary file is: by what it holds, not its path."""
    from cli_support import run_kbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    where, out = tmp_path / "idx", tmp_path / "run"
    first = [Paragraph("a#0", "a", 0, "Gerard Lee was born in Melbourne"), Paragraph("b#0", "b", 0, "Paris is big")]

    def build_and_run(paragraphs: list[Paragraph], limit: str) -> tuple[int, str]:
        build_index(paragraphs, "tantivy", where).close()
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "retrieval",
                                "--set", f"retrieval.text_index={where}", "--data-dir", str(lama_dir), "--limit", limit,
                                "--out", str(out)], capsys)
        return code, err

    assert build_and_run(first, "3")[0] == 0
    fingerprint = json.loads((out / "config.json").read_text())["predictor_specs"]["retrieval"]["files"]
    digest = ContentDigest(first)
    list(digest)
    assert fingerprint == {"text_index": "sha256:" + digest.hexdigest()[:16]}
    assert build_and_run(first, "4")[0] == 0  # the same paragraphs rebuilt: the same input
    code, err = build_and_run([Paragraph("a#0", "a", 0, "Gerard Lee was born in Paris")], "5")
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {out}: predictor 'retrieval' was run with other files at text_index={where} (they were replaced "
        "or edited since); give it another name (NAME=SPEC) or use another --out")
    assert len((out / "predictions/trex/retrieval/P19.jsonl").read_text().splitlines()) == 4


def test_the_content_digest_is_the_digest_of_the_paragraphs_in_order():
    a, b = Paragraph("a#0", "a", 0, "one"), Paragraph("b#0", "b", 0, "two", ("B",), ("f1",))
    digest = ContentDigest([a, b])
    assert list(digest) == [a, b]
    assert digest.hexdigest() == hashlib.sha256(
        b'{"id": "a#0", "title": "a", "para": 0, "text": "one", "links": [], "facts": []}\n'
        b'{"id": "b#0", "title": "b", "para": 0, "text": "two", "links": ["B"], "facts": ["f1"]}\n').hexdigest()
    again = ContentDigest([b, a])
    list(again)
    assert again.hexdigest() != digest.hexdigest()


def test_a_run_records_per_relation_how_many_facts_have_their_own_evidence_in_the_index(trex, lama_dir, tmp_path,
                                                                                        monkeypatch, capsys):
    """Evidence of P19 only: the oracle's note says P36 had none to read, so it bounds nothing there."""
    from cli_support import run_kbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    p19 = dataclasses.replace(trex, facts=[f for f in trex.facts if f.relation == "P19"])
    build_index(evidence_paragraphs([p19]), "tantivy", tmp_path / "idx").close()
    out = tmp_path / "run"
    code, printed, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--predictors",
                                  "retrieval", "retrieval-oracle", "--set", f"text_index={tmp_path / 'idx'}",
                                  "--data-dir", str(lama_dir), "--limit", "5", "--out", str(out)], capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    held = {"P19": [944, 944], "P36": [0, 703]}
    assert config["own_evidence"] == {"trex": {"retrieval": held, "retrieval-oracle": held}}
    note = ("Upper bounds, not baselines: `retrieval-oracle` reads the fact's own evidence paragraphs (facts of each "
            "relation whose own evidence its index holds: trex P19 944 of 944, P36 0 of 703; none on trex P36: there "
            "it reads what the leak-free retrieval reads, no upper bound).")
    assert note in printed.splitlines()
    assert f"- {note}" in (out / "summary.md").read_text().splitlines()
