"""The explorer's `retrieval` answers a fact as `kbc run` recorded it: the fact's own evidence left out."""

from __future__ import annotations

import dataclasses
import json

from kb.text.index import build_index
from kb.text.paragraphs import Paragraph, evidence_paragraphs
from kb.text.retrieval import RetrievalPredictor, VocabReader


def test_live_retrieval_answers_each_fact_as_the_run_recorded_it(trex, lama_dir, tmp_path, monkeypatch, capsys):
    from cli_support import run_kbc

    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    p19 = dataclasses.replace(trex, facts=[f for f in trex.facts if f.relation == "P19"])
    index = build_index(evidence_paragraphs([p19]), "tantivy", tmp_path / "index")
    index.close()
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "retrieval",
                            "--set", f"retrieval.text_index={tmp_path / 'index'}", "--data-dir", str(lama_dir),
                            "--limit", "20", "--out", str(out)], capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (out / "predictions/trex/retrieval/P19.jsonl").read_text().splitlines()]
    assert len(records) == 20
    with kbcompare.Sides(["retrieval"], settings={"retrieval.text_index": str(tmp_path / "index")},
                         relations=["P19"], data_dir=lama_dir, cache_dir=tmp_path / "cache") as sides:
        live = {r["uid"]: sides.ask(r["subject"], "P19", k=10).side("retrieval")["answers"] for r in records}
    assert {uid: [(a["label"], round(a["score"], 6)) for a in answers] for uid, answers in live.items()} == \
        {r["uid"]: [(label, score) for label, score, _ in r["answers"]] for r in records}
    gerard = next(r for r in records if r["subject"] == "Gerard Lee")
    assert gerard["rank_raw"] is None and "Melbourne" not in [a["label"] for a in live[gerard["uid"]]]


def test_a_subject_with_several_facts_leaves_out_the_evidence_of_each(tmp_path):
    from bridge.serve.sides import AskedQuery
    from eval.types import Entity

    rows = [("Dante spoke Italian", ("f1",)), ("Dante spoke Latin", ("f2",)), ("Dante spoke Occitan at home", ())]
    index = build_index([Paragraph(f"p#{i}", "p", i, t, (), facts) for i, (t, facts) in enumerate(rows)],
                        "tantivy", tmp_path / "tiny")
    reader = VocabReader(["Italian", "Latin", "Occitan"], index, context_bonus=1.0)
    predictor = RetrievalPredictor(index, reader, k=3, exclude_gold=True)
    query = AskedQuery("s1", "s1", "trex", "P1412", Entity("Dante"), "object", "[X] spoke [Y] .", facts=("f1", "f2"))
    assert query.own_facts == {"s1", "f1", "f2"}
    assert [h.paragraph.pid for h in predictor.retrieve(query)] == ["p#2"]
    (prediction,) = predictor.predict([query], 5)
    assert [a.label for a in prediction.answers] == ["Occitan"]


def test_the_oracle_badge_says_when_the_index_holds_no_evidence_of_the_asked_fact(trex, lama_dir, tmp_path):
    import kbcompare

    p19 = dataclasses.replace(trex, facts=[f for f in trex.facts if f.relation == "P19"])
    build_index(evidence_paragraphs([p19]), "tantivy", tmp_path / "index").close()
    capital = next(f for f in trex.facts if f.relation == "P36")
    born = next(f for f in trex.facts if f.relation == "P19")
    with kbcompare.Sides(["retrieval-oracle"], settings={"text_index": str(tmp_path / "index")},
                         relations=["P19", "P36"], data_dir=lama_dir, cache_dir=tmp_path / "cache") as sides:
        without = sides.ask(capital.subject.label, "P36").side("retrieval-oracle")["upper_bound"]
        with_own = sides.ask(born.subject.label, "P19").side("retrieval-oracle")["upper_bound"]
    assert with_own == "reads the fact's own evidence paragraphs"
    assert without == ("reads the fact's own evidence paragraphs; its index holds no evidence of this fact's own: "
                       "here it reads what the leak-free retrieval reads, no upper bound")
