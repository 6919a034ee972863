"""The explorer and `kbcompare.ask` on LM-KBC 2024: each pair's gold set, each predictor's ranking and the set a
`kbc run lmkbc` run answers with its `set=` rule."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc

import kbcompare

REL = "countryLandBordersCountry"
ETHIOPIA = ["Djibouti", "Eritrea", "Kenya", "Somalia", "South Sudan", "Sudan"]
# Freq's train shares of countryLandBordersCountry: 67 train pairs, China held by 7 of them, France 6, ...
FREQ_TOP = [("People's Republic of China", "Q148", 7 / 67), ("France", "Q142", 6 / 67), ("Russia", "Q159", 5 / 67)]


@pytest.fixture(scope="module")
def sides(lama_dir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    with kbcompare.Sides(["freq", "top=freq", "above=freq", "tuned=freq"], corpus="lmkbc2024", data_dir=lama_dir,
                         settings={"top.set": "top:2", "above.set": "threshold:0.05", "tuned.set": "threshold-tuned"},
                         cache_dir=cache) as sides:
        yield sides


def test_ask_answers_an_lmkbc_pair(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    answers = kbcompare.ask("Ethiopia", REL, corpus="lmkbc2024", predictors=["freq"], data_dir=str(lama_dir), k=3)
    assert answers.gold == ETHIOPIA
    gold = answers.side("gold KB")
    assert [(a["label"], a["id"]) for a in gold["answers"]] == [
        ("Djibouti", "Q977"), ("Eritrea", "Q986"), ("Kenya", "Q114"), ("Somalia", "Q1045"), ("South Sudan", "Q958"),
        ("Sudan", "Q1049")]
    freq = answers.side("freq")
    assert [(a["label"], a["id"], a["score"], a["gold"]) for a in freq["answers"]] == [
        (label, qid, score, False) for label, qid, score in FREQ_TOP]
    # without a rule every answer counts: all 114 objects of the relation's train pairs, best first
    assert freq["set_rule"] == "all answers" and len(freq["set"]) == 114
    assert freq["set"][:2] == [{"label": "People's Republic of China", "id": "Q148", "gold": False},
                               {"label": "France", "id": "Q142", "gold": False}]
    assert [a["label"] for a in freq["set"] if a["gold"]] == ["Kenya", "South Sudan", "Somalia"]
    # `sets` prints each object as `kbc show` does: `label (id)`, and alone an id the data ties no label to (Q40 and
    # Q39 appear only together, in rows that list both Austria and Switzerland)
    shown = answers.sets["freq"]
    assert shown[:2] == ["People's Republic of China (Q148)", "France (Q142)"]
    assert shown[18:25] == ["Liberia (Q1014)", "Q40", "Denmark (Q35)", "Luxembourg (Q32)", "Netherlands (Q55)",
                            "Poland (Q36)", "Q39"]
    assert answers.side("inferred graph")["status"] == "not applicable"
    assert answers.prompt == "Ethiopia shares a land border with [MASK]."


def test_each_rule_cuts_the_set_a_run_records(sides, lama_dir, tmp_path, monkeypatch, capsys):
    answers = sides.ask("Ethiopia", REL, k=2)
    assert answers.sets["top"] == ["People's Republic of China (Q148)", "France (Q142)"]
    assert answers.sets["above"] == ["People's Republic of China (Q148)", "France (Q142)", "Russia (Q159)",
                                     "Brazil (Q155)", "Germany (Q183)", "Peru (Q419)"]
    assert answers.sets["tuned"] is None
    assert "train split" in answers.side("tuned")["set_note"]
    assert answers.side("tuned")["set_rule"] == "threshold-tuned"
    # the same sets, by id, as `kbc run lmkbc` records for the pair
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "top=freq", "above=freq", "--set", "top.set=top:2",
                            "--set", "above.set=threshold:0.05", "--relations", REL, "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    for name in ("freq", "top", "above"):
        records = [json.loads(line) for line in (out / "predictions" / "lmkbc2024" / name / f"{REL}.jsonl")
                   .read_text().splitlines()]
        (record,) = [r for r in records if r["subject"] == "Ethiopia"]
        assert [a["id"] for a in answers.side(name)["set"]] == record["predicted"]


def test_an_empty_gold_set(sides):
    answers = sides.ask("Malta", REL)
    assert answers.gold == []
    assert answers.side("gold KB")["message"] == "the gold set of this subject and relation is empty"
    assert answers.sets["top"] == ["People's Republic of China (Q148)", "France (Q142)"]


def test_page_suggestions_and_api(sides):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    with TestClient(create_app(sides.explorer, Runs([]))) as client:
        r = client.get("/api/suggest", params={"prefix": "ethio"})
        assert r.status_code == 200 and r.json()["labels"] == ["Ethiopia"]
        r = client.get("/api/query", params={"subject": "ethiopia", "relation": REL, "k": 1})
        assert r.status_code == 200, r.text
        assert r.json()["gold"] == ETHIOPIA
        page = client.get("/", params={"subject": "Ethiopia", "relation": REL, "k": 1})
        assert page.status_code == 200
        shown = 'set (top:2, 2 objects): <span class="">People&#39;s Republic of China <span class="id">Q148</span>'
        assert shown in page.text
        assert "set (threshold-tuned): threshold-tuned picks" in page.text


def test_a_written_answer_is_linked_into_its_set(lama_dir, tmp_path):
    """A predictor answering by generation: its parsed answers, linked to ids by label, are its set."""
    from served_support import Scripted, completion

    server = Scripted(lambda path, body, n: (200, completion("Kenya, Sudan, Atlantis", "chat" if "chat" in path
                                                                                          else "completions")))
    try:
        with kbcompare.Sides([f"srv={server.url}"], corpus="lmkbc2024", data_dir=lama_dir, relations=[REL],
                             settings={"srv.model": "tiny"}, cache_dir=tmp_path / "cache") as sides:
            answers = sides.ask("Ethiopia", REL)
    finally:
        server.close()
    srv = answers.side("srv")
    assert srv["status"] == "ok", srv["message"]
    assert srv["set_rule"] == "all answers"
    assert srv["set"] == [{"label": "Kenya", "id": "Q114", "gold": True},
                          {"label": "Sudan", "id": "Q1049", "gold": True},
                          {"label": "Atlantis", "id": None, "gold": False}]
