"""KB predictors reading LAMA's text (RE, retrieval) on BEAR: answers cut to the relation's answer space, and the
leak-free retrieval leaves out the evidence of the LAMA facts that are the asked fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.predictors.text import _closed_retrieval, _same_entities
from eval.answer_space import UNBOUNDED, AnswerSpacePredictor, lama_data_for
from eval.bear import load_bear
from eval.queries import make_queries
from eval.types import Answer, Prediction
from kb.text.base import Hit
from kb.text.paragraphs import Paragraph
from kb.text.retrieval import RetrievalPredictor

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"


@pytest.fixture(scope="module")
def p30():
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    return load_bear("bear", BEAR, ["P30"])


class Lister:
    """A short-list predictor answering every query with the same list, recording the depth it was asked for."""

    name, ranks = "lister", "list"

    def __init__(self, answers: tuple[Answer, ...]) -> None:
        self.answers, self.depths = answers, []

    def describe(self) -> dict:
        return {"predictor": self.name}

    def predict(self, queries, depth):
        self.depths.append(depth)
        return [Prediction(q.uid, self.answers[:depth], shared_ties=True) for q in queries]


def test_answers_are_cut_to_the_answer_space(p30):
    inner = Lister((Answer("Paris", 9.0, "Q90"), Answer("Afrika", 5.0, "Q15"), Answer("Antarctic", 4.0),
                    Answer("Europe", 3.0), Answer("Africa", 2.0, "Q15"), Answer("South America", 1.0, "Q18")))
    predictor = AnswerSpacePredictor(inner, p30.relations)
    query, _ = make_queries(p30)["P30"][0]
    (pred,) = predictor.predict([query], depth=2)
    assert inner.depths == [UNBOUNDED]  # options behind answers outside the space are not cut off
    assert pred.answers == (Answer("Africa", 5.0, "Q15"), Answer("Europe", 3.0, "Q46"))
    assert pred.shared_ties and pred.query_uid == query.uid
    (whole,) = predictor.predict([query], depth=10)
    assert [a.label for a in whole.answers] == ["Africa", "Europe", "South America"]
    assert predictor.answer_space_size("P30") == 6 and predictor.slots == ("object",)
    assert predictor.describe()["answer_space"].startswith("each relation's")


def test_leak_free_retrieval_leaves_out_the_same_fact_in_lama(p30, lama_dir):
    assert lama_data_for(BEAR / "BEAR") == lama_dir
    same = _same_entities(p30, lama_dir)
    nile = next(f for f in p30.facts if f.subject.label == "Nile")
    lama_uids = sorted(same[nile.uid])
    assert len(lama_uids) == 1  # T-REx holds Nile (Q3392) -> Africa (Q15) once

    class Index:
        def search(self, text, k):
            return [Hit(3.0, Paragraph("a", "Nile", 0, "The Nile is in Africa .", facts=tuple(lama_uids))),
                    Hit(2.0, Paragraph("b", "Nile", 1, "The Nile flows north .")),
                    Hit(1.0, Paragraph("c", "Nile", 2, "Egypt lies on the Nile ."))][:k]

    class Reader:
        def read(self, query, hits, depth):
            return []

    kind = _closed_retrieval(RetrievalPredictor, same)
    query = next(q for q, f in make_queries(p30)["P30"] if f.uid == nile.uid)
    assert [h.paragraph.pid for h in kind(Index(), Reader(), 2, True).retrieve(query)] == ["b", "c"]
    assert [h.paragraph.pid for h in kind(Index(), Reader(), 2, False).retrieve(query)] == ["a", "b"]


def test_re_oracle_answers_bear_within_the_answer_space(tmp_path, monkeypatch, capsys):
    import json

    from cli_support import run_kbc
    from test_re_kb import write_data

    write_data(tmp_path / "data" / "lama")  # Person<i> (Q<i+1>) born in Rome, Paris, Oslo, ... (Q900, Q901, ...)
    bear = tmp_path / "data" / "bear"
    (bear / "BEAR").mkdir(parents=True)
    (bear / "BEAR" / "metadata_relations.json").write_text(json.dumps({"P19": {
        "templates": ["[X] was born in [Y].", "[X] is from [Y].", "[Y] is where [X] was born."],
        "answer_space_labels": ["Roma", "Paris", "Berlin"], "answer_space_ids": ["Q900", "Q901", "Q999"]}}))
    rows = [("Q2", "Person1", 1), ("Q3", "Person2", 2), ("Q7", "Person6", 0), ("Q1", "Person0", 1)]
    space = [("Q900", "Roma"), ("Q901", "Paris"), ("Q999", "Berlin")]
    (bear / "BEAR" / "P19.jsonl").write_text("".join(json.dumps(
        {"sub_id": s, "sub_label": label, "sub_aliases": [], "obj_id": space[i][0], "obj_label": space[i][1],
         "answer_idx": i}) + "\n" for s, label, i in rows))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KBC_DATA", str(tmp_path / "data" / "lama"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--predictors", "re-oracle", "--data-dir", str(bear),
                            "--store", str(tmp_path / "store"), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    records = {r["uid"]: r for r in map(json.loads, (out / "predictions" / "bear" / "re-oracle" / "P19.jsonl")
                                        .read_text().splitlines())}
    # T-REx says Person1 -> Paris, Person2 -> Oslo (no option), Person6 -> Rome (the option "Roma", by id),
    # Person0 -> Rome (BEAR's gold there is Paris)
    answers = {uid: [(a[0], a[2]) for a in r["answers"]] for uid, r in records.items()}
    assert answers == {"P19:0": [("Paris", "Q901")], "P19:1": [], "P19:2": [("Roma", "Q900")],
                       "P19:3": [("Roma", "Q900")]}
    assert [records[f"P19:{i}"]["rank_raw"] for i in range(4)] == [1, None, 1, None]
    rows = json.loads((out / "summary.json").read_text())
    p1 = {r["group"]: r["value"] for r in rows
          if r["metric"] == "p@1" and r["setting"] == "raw" and r["scope"] == "own"}
    assert p1["all"] == 50.0
