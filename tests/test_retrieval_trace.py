"""What retrieval read is shown with its answers: live, on a run's fact page and by `kbc show`, paragraph by paragraph,
each answer with the paragraph and sentence it was read from; the query's evidence panel marks the fact's own."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from bridge.serve.explorer import Column
from eval.types import Entity, Evidence, Fact
from kb.text.index import build_index
from kb.text.paragraphs import Paragraph
from kb.text.retrieval import RetrievalPredictor, VocabReader

ROWS = [("Fred Rich#0", "Fred Rich was an English composer. Fred Rich died in New York.", ("f1",)),
        ("brass#52", "Brass is an alloy. Brass is rich in copper and zinc, and it died out of use. "
                     "Ore of zincite holds zinc.", ()),
        ("Rich Gannon#4", "Rich Gannon played for the Raiders.", ())]


@pytest.fixture
def tiny(tmp_path):
    index = build_index([Paragraph(pid, pid.split("#")[0], 0, text, (), facts) for pid, text, facts in ROWS],
                        "tantivy", tmp_path / "tiny")
    yield index
    index.close()


def _query():
    from bridge.serve.sides import AskedQuery

    return AskedQuery("q", "f1", "google_re", "place_of_death", Entity("Fred Rich"), "object", "[X] died in [Y] .",
                      facts=("f1",))


def test_the_retrieval_column_shows_the_paragraphs_it_read_and_where_each_answer_came_from(tiny):
    from bridge.serve.sides import predictor_columns

    reader = VocabReader(["copper", "zinc", "New", "York", "Raiders", "English"], tiny)
    column = Column("retrieval", "retrieval", "kb", RetrievalPredictor(tiny, reader, k=5, exclude_gold=True))
    (col,) = predictor_columns(SimpleNamespace(set_valued=False), column, [_query()], [10], [{"New York"}])
    read = col["read"]
    assert [(p["id"], p["first_of"]) for p in read["paragraphs"]] == [("brass#52", ["copper", "zinc"]),
                                                                      ("Rich Gannon#4", ["Raiders"])]
    assert [p["score"] is not None and p["score"] > 0 for p in read["paragraphs"]] == [True, True]
    assert read["note"] == ""
    top = col["answers"][0]
    assert (top["label"], top["source"], top["sentence"]) == (
        "copper", "brass#52", "Brass is rich in copper and zinc, and it died out of use.")
    marked = [(s["text"], s["mark"]) for s in read["paragraphs"][0]["segments"] if s["mark"]]
    assert marked == [("copper", "answer"), ("zinc", "answer"), ("zinc", "answer")]  # not the "zinc" of "zincite"


def test_the_evidence_panel_marks_the_facts_own_paragraph(tiny):
    from bridge.serve.sides import evidence_column

    explorer = SimpleNamespace(index=tiny)
    panel = evidence_column(explorer, _query(), {"New York"}, [])
    assert [(p["id"], p["own"]) for p in panel["paragraphs"]] == [
        ("Fred Rich#0", True), ("brass#52", False), ("Rich Gannon#4", False)]


def test_an_extraction_sentence_is_cut_between_words():
    from bridge.serve.sides import _sentence

    text = ("Before the war he worked as a clerk in a shipping office and studied music at night, " * 3
            + "until he was badly injured at Verdun in 1916, after which he never played again " * 2).strip()
    fact = Fact("u", "trex", "P20", Entity("Bob"), Entity("Verdun"), evidences=(Evidence(text),))
    explorer = SimpleNamespace(by_subject={"Bob": [fact]})
    got = _sentence(explorer, "Bob", "Verdun")
    assert got == ("…Before the war he worked as a clerk in a shipping office and studied music at night, until he was "
                   "badly injured at Verdun in 1916, after which he never played again until he was badly injured at "
                   "Verdun in 1916, after which he never played…")
    assert len(got) <= 240


def test_a_sentence_window_never_cuts_a_word():
    from bridge.analysis.retrieved import window

    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    assert window(text, "epsilon", 20) == "…delta epsilon zeta…"
    assert window(text, "alpha", 12) == "alpha beta…"
    assert window(text, "lambda", 12) == "…kappa lambda"


@pytest.fixture
def p19_run(trex, lama_dir, tmp_path, monkeypatch, capsys):
    import dataclasses

    from cli_support import run_kbc

    from kb.text.paragraphs import evidence_paragraphs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    p19 = dataclasses.replace(trex, facts=[f for f in trex.facts if f.relation == "P19"])
    build_index(evidence_paragraphs([p19]), "tantivy", tmp_path / "index").close()
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "retrieval",
                            "--set", f"retrieval.text_index={tmp_path / 'index'}", "--data-dir", str(lama_dir),
                            "--limit", "20", "--out", str(out)], capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (out / "predictions/trex/retrieval/P19.jsonl").read_text().splitlines()]
    return out, tmp_path / "index", records


def test_live_and_recorded_retrieval_show_the_same_paragraphs(p19_run, lama_dir, tmp_path):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    out, index, records = p19_run
    record = next(r for r in records if r["subject"] == "Gerard Lee")
    pids = record["extra"]["retrieved"]
    cfg = ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=["retrieval"],
                         options={"retrieval.text_index": str(index)}, cache_dir=tmp_path / "cache",
                         text_index=str(index))
    explorer = Explorer.start(cfg)
    try:
        with TestClient(create_app(explorer, Runs([out]))) as client:
            body = client.get("/api/query", params={"subject": "Gerard Lee", "relation": "P19"}).json()
            live = next(c for c in body["columns"] if c["name"] == "retrieval")
            fact = client.get(f"/api/runs/run/facts/{record['uid']}").json()
            page = client.get(f"/runs/run/facts/{record['uid']}").text
            live_page = client.get("/", params={"subject": "Gerard Lee", "relation": "P19"}).text
    finally:
        explorer.close()
    recorded = fact["predictors"]["retrieval"]["read"]
    assert [p["id"] for p in live["read"]["paragraphs"]] == pids == [p["id"] for p in recorded["paragraphs"]]
    assert [p["score"] for p in live["read"]["paragraphs"]] == [p["score"] for p in recorded["paragraphs"]]
    assert recorded["note"] == "" and all(p["text"] for p in recorded["paragraphs"])
    assert recorded["sources"]["Minneapolis"] == {
        "paragraph": "Ruth Lee#0", "sentence": "Ruth Lee was born on September 14, 1895 in Minneapolis, Minnesota, US."}
    top = live["answers"][0]
    assert (top["label"], top["source"]) == ("Minneapolis", "Ruth Lee#0")
    for html in (page, live_page):
        assert all(f'data-id="{pid}"' in html for pid in pids)
        assert '<mark class="answer">September</mark> 14, 1895 in <mark class="answer">Minneapolis</mark>' in html
    own = [p["id"] for p in body["evidence"]["paragraphs"] if p["own"]]
    assert own and all(pid not in pids for pid in own)
    assert live_page.count("the fact's own evidence</span>") == len(own)


def test_kbc_show_prints_the_paragraphs_read_and_their_ids_where_the_index_is_gone(p19_run, capsys):
    from cli_support import run_kbc

    out, index, records = p19_run
    record = next(r for r in records if r["subject"] == "Gerard Lee")
    pids = record["extra"]["retrieved"]
    code, text, err = run_kbc(["show", str(out), "--uid", record["uid"]], capsys)
    assert code == 0, err
    lines = text.splitlines()
    at = lines.index("               read (extra.retrieved, in the order searched):")
    assert [lines[at + 1 + 2 * i].split("  BM25 ")[0] for i in range(len(pids))] == \
        [f"                 {i}. {pid}" for i, pid in enumerate(pids, 1)]
    assert lines[at + 1] == "                 1. Ruth Lee#0  BM25 9.318  first holds Minneapolis, Ruth, September, " \
                            "Minnesota, US"
    assert lines[at + 2] == "                    Ruth Lee was born on September 14, 1895 in Minneapolis, Minnesota, US."
    assert ('               Minneapolis <- Ruth Lee#0: "Ruth Lee was born on September 14, 1895 in Minneapolis, '
            'Minnesota, US."') in lines
    shutil.move(index, index.with_name("moved"))
    code, text, err = run_kbc(["show", str(out), "--uid", record["uid"]], capsys)
    assert code == 0, err
    lines = text.splitlines()
    at = lines.index(f"               read (extra.retrieved, in the order searched; the index {index} is not at "
                     "hand):")
    assert lines[at + 1:at + 1 + len(pids)] == [f"                 {i}. {pid}" for i, pid in enumerate(pids, 1)]
