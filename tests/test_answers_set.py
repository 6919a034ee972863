"""`kbc run lama --answers set`: N-M relations scored set against set, on real T-REx facts."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)

from bridge.experiments.lama import LamaExperiment, set_rows
from eval.set_answers import label_set
from eval.types import Answer, Entity, Fact, Prediction, Query


def _set_rows(out):
    rows = json.loads((out / "summary.json").read_text())
    return {(r["predictor"], r["setting"], r["group"], r["metric"]): (r["value"], r["n_facts"]) for r in rows
            if r["scope"] == "own" and r["metric"].startswith("set-")}


def test_set_rows_of_n_m_relations(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    base = ["run", "lama", "--corpus", "trex", "--relations", "P530", "P19", "--limit", "3", "--data-dir",
            str(lama_dir), "--quiet"]
    code, _, err = run_kbc([*base, "--predictors", "freq", "gold", "top2=freq", "--set", "top2.set=top:2", "--out",
                            str(out), "--answers", "set"], capsys)
    assert code == 0, err
    got = _set_rows(out)
    # the gold KB answers every valid object, all equally true
    for group in ("P530", "N-M", "all"):
        for metric in ("set-p", "set-r", "set-f1"):
            assert got["gold", "raw", group, metric] == got["gold", "filtered", group, metric] == (100.0, 3)
    # Freq answers its top object, Germany, for all three sampled P530 subjects: Malta (gold Australia, Italy:
    # 0/0/0), Ukraine (50 valid objects, Germany one of them: P 1, R 1/50, F1 2/51), Senegal (Germany, Australia:
    # P 1, R 1/2, F1 2/3)
    records = [json.loads(line) for line in (out / "predictions/trex/freq/P530.jsonl").read_text().splitlines()]
    assert [(r["subject"], r["set"], len(r["set_gold"])) for r in records] == [
        ("Malta", ["Germany"], 2), ("Ukraine", ["Germany"], 50), ("Senegal", ["Germany"], 2)]
    assert got["freq", "raw", "P530", "set-p"] == (pytest.approx(200 / 3, abs=1e-12), 3)
    assert got["freq", "raw", "P530", "set-r"] == (pytest.approx(100 * (1 / 50 + 1 / 2) / 3, abs=1e-12), 3)
    assert got["freq", "raw", "P530", "set-f1"] == (pytest.approx(100 * (2 / 51 + 2 / 3) / 3, abs=1e-12), 3)
    assert got["freq", "raw", "all", "set-f1"] == got["freq", "raw", "P530", "set-f1"]
    # `set=top:2`: Germany and Australia for each: Malta P 1/2, R 1/2, F1 1/2; Ukraine P 1, R 2/50, F1 1/13;
    # Senegal 1/1/1
    assert got["top2", "raw", "P530", "set-p"] == (pytest.approx(100 * (1 / 2 + 1 + 1) / 3, abs=1e-12), 3)
    assert got["top2", "raw", "P530", "set-r"] == (pytest.approx(100 * (1 / 2 + 2 / 50 + 1) / 3, abs=1e-12), 3)
    assert got["top2", "raw", "P530", "set-f1"] == (pytest.approx(100 * (1 / 2 + 1 / 13 + 1) / 3, abs=1e-12), 3)
    # P19 (N-1) has one gold object per fact: no set rows, and the tables say why its column is empty
    assert not [k for k in got if k[2] == "P19"]
    summary = (out / "summary.md").read_text()
    note = ("- `-` under P19 place of birth for every predictor: set metrics are taken over N-M relations only, so "
            "it has none.")
    assert summary.count(note) == 6  # set-p, set-r, set-f1 in each scope (own, shared)
    assert "answered none" not in summary

    # the answers are a setting of the directory: a rerun asking ranked answers only is refused
    code, _, err = run_kbc([*base, "--predictors", "freq", "gold", "--out", str(out)], capsys)
    assert code == 2 and err.splitlines()[-1].startswith(
        f"error: {out} holds results made with other settings: answers set, now the default;")
    # a set rule without set answers, and one LAMA has no train split to tune, are refused
    code, _, err = run_kbc([*base, "--predictors", "freq", "--set", "freq.set=top:2", "--out", str(tmp_path / "o")],
                           capsys)
    assert (code, err.splitlines()[-1]) == (2, "error: --set freq.set: a set rule applies to set-valued answers "
                                               "(`kbc run lmkbc`, `kbc run lama --answers set`) only")
    code, _, err = run_kbc([*base, "--predictors", "freq", "--set", "freq.set=threshold-tuned", "--answers", "set",
                            "--out", str(tmp_path / "o")], capsys)
    assert (code, err.splitlines()[-1]) == (2, "error: set=threshold-tuned needs a train split (`kbc run lmkbc`); "
                                               "LAMA takes top:K or threshold:X")


def test_uncased_lm_answers_its_top_answer(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    """An LM's set is its top answer; an uncased model's gold set is lower-cased, as its ranks are."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P530", "P1412", "--predictors",
                            f"bert={tiny_models('bert-uncased')}", "--limit", "4", "--answers", "set",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    got = _set_rows(out)
    macro = {}
    for rel in ("P530", "P1412"):
        path = out / "predictions" / "trex" / "bert" / f"{rel}.jsonl"
        records = [r for r in map(json.loads, path.read_text().splitlines()) if "dropped" not in r]
        n = len(records)
        assert n == {"P530": 4, "P1412": 3}[rel]  # one P1412 object is no token of the model: dropped
        p = r = f = 0.0
        for rec in records:
            assert rec["set"] == [rec["answers"][0][0]]
            assert rec["set_gold"] == list(dict.fromkeys(g.lower() for g in [rec["gold"], *rec["other_valid"]]))
            hit = rec["set"][0] in rec["set_gold"]
            p, r = p + hit, r + hit / len(rec["set_gold"])
            f += 2 / (1 + len(rec["set_gold"])) if hit else 0.0
        macro[rel] = (100 * p / n, 100 * r / n, 100 * f / n)
        assert [got["bert", "raw", rel, m][0] for m in ("set-p", "set-r", "set-f1")] == pytest.approx(macro[rel])
    assert got["bert", "raw", "all", "set-f1"][0] == pytest.approx((macro["P530"][2] + macro["P1412"][2]) / 2)


def test_ranked_answers_write_no_set_rows(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P530", "--predictors", "freq",
                            "--limit", "3", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert _set_rows(out) == {}


def test_label_set():
    """A KB's answers tied at its top score are one set; a ranking's set is its top answer."""
    answers = (Answer("a", 1.0), Answer("b", 1.0), Answer("a", 1.0), Answer("c", 0.5))
    assert label_set(Prediction("q", answers, shared_ties=True)) == ["a", "b"]
    assert label_set(Prediction("q", answers)) == ["a"]
    assert label_set(Prediction("q", ())) == []


def test_uncased_answer_matches_the_lower_cased_gold_set():
    """Italy answered as "italy" by an uncased model is one of Malta's two valid objects: P 100, R 50, F1 200/3."""
    malta = Entity("Malta", "Q233")
    fact = Fact("f", "trex", "P530", malta, Entity("Australia", "Q408"))
    query = Query("f", "f", "trex", "P530", malta, "object", "[X] maintains diplomatic relations with [Y] .")
    pred = Prediction("f", (Answer("italy", -0.1), Answer("germany", -0.2)), lowercased=True)
    exp = LamaExperiment(answers="set")
    record = exp.record("", query, fact, pred, {"Q233": {"Australia", "Italy"}})
    assert (record["set"], record["set_gold"]) == (["italy"], ["australia", "italy"])
    rows = set_rows([record], {"P530": "N-M"})
    got = {(r["setting"], r["group"], r["metric"]): r["value"] for r in rows}
    assert got["raw", "P530", "set-p"] == got["filtered", "all", "set-p"] == 100.0
    assert got["raw", "N-M", "set-r"] == 50.0 and got["raw", "P530", "set-f1"] == pytest.approx(200 / 3, abs=1e-12)
