"""`kbc run negated`: negated and misprimed Google-RE through the runner, checked against the prediction files."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)


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
        for rel in ("date_of_birth", "place_of_death"):
            mine = [r for r in facts if r["relation"] == rel]
            same = sum(top[r["uid"]] == top[f"{r['uid']}:negated"] for r in mine)
            primed = sum(top[f"{r['uid']}:misprimed"].casefold() == records[f"{r['uid']}:misprimed"]["prime"].casefold()
                         for r in mine)
            assert got[rel, "overlap"] == pytest.approx(100 * same / len(mine), abs=1e-12)
            assert got[rel, "became-prime"] == pytest.approx(100 * primed / len(mine), abs=1e-12)
        assert got["all", "overlap"] == pytest.approx(
            (got["date_of_birth", "overlap"] + got["place_of_death", "overlap"]) / 2, abs=1e-12)
    assert freq["date_of_birth", "became-prime"] == 4.0 and freq["place_of_death", "became-prime"] == 0.0
    assert records["google_re/place_of_death:4:misprimed"]["prompt"].endswith("? Honoré Tournély died in the city of "
                                                                             "[MASK] .")


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "lama", "--corpus", "negated-trex", "--predictors", "freq"],
     "error: --corpus negated-trex is negated/misprimed LAMA: run it with `kbc run negated`\n"),
    (["run", "negated", "--corpus", "google_re", "--predictors", "freq"],
     "error: --corpus google_re: `kbc run negated` asks negated-trex, negated-google_re, negated-conceptnet, "
     "negated-squad only\n"),
])
def test_refusals(lama_dir, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc([*argv, "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert (code, err) == (2, message)


def test_loader_names_the_misprime_variant_and_gold_says_why_it_drops(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P159", "P19",
                            "--predictors", "freq", "gold", "--misprimes", "high_ranked", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert ("  trex/P159 positive facts (from random/P159_random.jsonl; every --misprimes variant holds the same "
            "facts): read 336, kept 336, dropped 0\n") in err
    assert err.count("negated-trex: negated and misprimed sentences from TREx/high_ranked/\n") == 1
    dropped = json.loads((out / "dropped.json").read_text())
    reason = ("a negated or misprimed probe is a sentence, not a (subject, relation) lookup: the gold KB answers "
              "no probes")
    assert [(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped] == [
        ("gold", "P159", reason, 672), ("gold", "P19", reason, 630)]
