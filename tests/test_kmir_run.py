"""`kbc run kmir` on the shared runner: KBs with and without derived facts, tiny LMs, resuming, bad axioms."""

from __future__ import annotations

import json

import lm_fixtures
from cli_support import run_kbc

from bridge.experiments.kmir import pick_choice
from eval.types import Answer, Prediction

tiny_models = lm_fixtures.tiny_models


def test_kmir_run(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    # P47 is symmetric; P36 is the inverse of P1376: both give predicate-reasoning questions
    argv = ["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
            "--questions-per-relation", "4", "--predictors", "freq", "kb", "kb-inferred",
            f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "| triple_completion |" in stdout and "predicate_reasoning" in stdout
    rows = json.loads((out / "summary.json").read_text())
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r for r in rows}
    # the symbolic side derives the facts the reasoning questions ask; the gold graphs alone do not hold them
    assert get[("kb-inferred", "own", "predicate_reasoning", "f1")]["value"] == 100.0
    assert get[("kb", "own", "predicate_reasoning", "f1")]["value"] == 0.0
    assert get[("kb", "own", "predicate_reasoning", "answered")]["value"] == 0.0
    for name in ("kb", "kb-inferred"):
        for kind in ("triple_completion", "statement_checking"):
            assert get[(name, "own", kind, "f1")]["value"] == 100.0
    groups = {"triple_completion", "entity_distinction", "statement_checking", "predicate_reasoning", "all"}
    for name in ("freq", "kb", "kb-inferred", "bert", "gpt2"):
        assert {g for (p, s, g, m) in get if p == name and s == "own" and m == "f1"} == groups, name
        assert {m for (p, s, g, m) in get if p == name and g == "all"} >= {"f1", "em", "answered", "robust_all"}
    # every predictor is scored on every question: none is left out of the shared scope
    n = {r["n_facts"] for r in rows if r["group"] == "all" and r["metric"] == "f1" and r["scope"] == "shared"}
    assert len(n) == 1
    assert {r["predictor"] for r in rows if r["scope"] == "shared"} == {"freq", "kb", "kb-inferred", "bert", "gpt2"}
    # a question the masked LM cannot be asked (answer not one token) is scored 0, with its reason
    bert = [json.loads(line) for p in (out / "predictions/trex/bert").glob("*.jsonl")
            for line in p.read_text().splitlines()]
    assert {r["uid"].split(":")[0] for r in bert} >= {"tc", "sc+", "sc-", "ed", "pr"}
    record = next(r for r in bert if r["uid"].startswith("pr:") and "dropped" not in r)
    assert record["kind"] == "predicate_reasoning" and record["qset_id"] and "choices" in record

    code, _, err = run_kbc(argv, capsys)  # a rerun asks nothing again
    assert code == 0, err
    assert err.count("queries done, skipped") == 5

    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix owl: <http://www.w3.org/2002/07/owl#> .\nthis is not turtle\n")
    code, _, err = run_kbc([*argv[:-3], "--out", str(tmp_path / "bad"), "--axioms", str(bad), "--quiet"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "bad.ttl" in lines[0]


def test_pick_choice():
    choices = ("Paris", "New York City", "yes")
    # exact ranks of every choice win
    assert pick_choice(Prediction("q", (), target_ranks={"Paris": 3, "New York City": 1, "yes": 9}), choices) \
        == "New York City"
    # otherwise the first ranked answer sharing a token with a choice
    ranked = Prediction("q", (Answer("London", 0.0), Answer("York", 0.0), Answer("Paris", 0.0)),
                        target_ranks={"Paris": 3})
    assert pick_choice(ranked, choices) == "New York City"
    assert pick_choice(Prediction("q", (Answer("London", 0.0),)), choices) is None
