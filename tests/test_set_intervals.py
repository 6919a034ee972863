"""`kbc run lama --answers set`: set P/R/F1 rows carry stderr and a bootstrap interval, and are shown."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_support import run_kbc
from scipy.stats import sem

from bridge.run.intervals import _lama_sets, interval_table
from eval.uncertainty import cluster_stderr

# `top2=freq --set top2.set=top:2`, four facts each: Freq's two most frequent objects, Germany and Australia (P530),
# English and French (P1412). Per fact (P, R, F1):
P530 = {"Malta": (1 / 2, 1 / 2, 1 / 2), "Ukraine": (1, 2 / 50, 1 / 13), "Senegal": (1, 1, 1),
        "Finland": (1, 1 / 2, 2 / 3)}
P1412 = {"Jorge Lanata": (0, 0, 0), "Jacques Poulin": (1 / 2, 1, 2 / 3), "Jorge Arvizu": (0, 0, 0),
         "Pentti Linkola": (0, 0, 0)}
METRICS = ("set-p", "set-r", "set-f1")


def _rows(out) -> dict:
    return {(r["scope"], r["setting"], r["group"], r["metric"]): r
            for r in json.loads((out / "summary.json").read_text()) if r["metric"] in METRICS}


def test_set_rows_have_intervals_and_are_shown(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, printed, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P530", "P1412", "--limit", "4",
                                  "--predictors", "top2=freq", "--set", "top2.set=top:2", "--answers", "set",
                                  "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    for rel, facts in (("P530", P530), ("P1412", P1412)):
        records = [json.loads(line) for line in (out / f"predictions/trex/top2/{rel}.jsonl").read_text().splitlines()]
        assert sorted(r["subject"] for r in records) == sorted(facts)
    rows = _rows(out)
    errs = {}
    for rel, facts in (("P530", P530), ("P1412", P1412)):
        for i, metric in enumerate(METRICS):
            units = [100 * v[i] for v in facts.values()]
            row = rows["own", "raw", rel, metric]
            assert (row["value"], row["n_facts"]) == (pytest.approx(np.mean(units), abs=1e-12), 4)
            assert row["stderr"] == pytest.approx(sem(units), abs=1e-12)
            errs[rel, metric] = row["stderr"]
    for metric in METRICS:  # N-M and all: the macro mean over the two relations
        for group in ("N-M", "all"):
            row = rows["own", "raw", group, metric]
            assert row["stderr"] == pytest.approx(math.hypot(errs["P530", metric], errs["P1412", metric]) / 2,
                                                  abs=1e-12)
    # seeded percentile bootstrap (1,000 resamples, seed 0): facts drawn within each relation
    expected = {
        ("P530", "set-p"): (62.5, 100.0), ("P530", "set-r"): (15.5, 87.5),
        ("P530", "set-f1"): (22.435897435897434, 87.5),
        ("P1412", "set-p"): (0.0, 37.5), ("P1412", "set-r"): (0.0, 75.0), ("P1412", "set-f1"): (0.0, 50.0),
        ("all", "set-p"): (37.5, 62.5), ("all", "set-r"): (13.5, 68.75),
        ("all", "set-f1"): (16.506410256410255, 58.33333333333333)}
    for (group, metric), ci in expected.items():
        row = rows["own", "raw", group, metric]
        assert [row["ci_low"], row["ci_high"]] == pytest.approx(ci, abs=1e-9)
    # one value and one interval for both settings and (the same facts) both scopes
    for key, row in rows.items():
        for other in (("shared", *key[1:]), (key[0], "filtered", *key[2:])):
            assert {f: rows[other][f] for f in ("value", "stderr", "ci_low", "ci_high")} == {
                f: row[f] for f in ("value", "stderr", "ci_low", "ci_high")}
    summary = (out / "summary.md").read_text()
    section = summary.split("## Set F1, N-M relations (%), shared facts")[1].split("##")[0]
    assert "| trex | top2 | 91.5 | 8 | 56.09 ± 19.19 | 16.67 ± 16.67 | 36.38 ± 12.71 | [16.51, 58.33] |" in section
    assert "## Set precision, N-M relations (%), own facts" in summary
    assert "## Set recall, N-M relations (%), own facts" in summary
    printed = printed.split("Set F1, N-M relations (%), setting raw, shared facts")[1]
    assert "| trex | top2 | 91.5 | 8 | 56.09 ± 19.19 | 16.67 ± 16.67 | 36.38 ± 12.71 | [16.51, 58.33] |" in printed


def test_a_facts_prompts_are_one_draw():
    """Under a prompt set a fact's units are resampled together: the cluster-robust stderr, not the plain one."""
    records = []
    for fact, answers in (("f1", (["a"], ["b"])), ("f2", (["a"], ["a"])), ("f3", (["b"], ["b"]))):
        for prompt, answer in zip(("p1", "p2"), answers):
            records.append({"uid": f"{fact}@{prompt}", "fact_uid": fact, "relation": "P530", "set": answer,
                            "set_gold": ["a"]})
    sets = _lama_sets(records, {"P530": "N-M"})
    assert set(sets) == {(s, m) for s in ("raw", "filtered") for m in METRICS}
    found = interval_table(sets, 200, 0, "trex/x")
    p = found["raw", "set-p"]["P530"]
    units, labels = np.array([100.0, 0, 100, 100, 0, 0]), np.array(["f1", "f1", "f2", "f2", "f3", "f3"])
    assert p.stderr == pytest.approx(cluster_stderr(units, labels), abs=1e-12)
    assert p.stderr == pytest.approx(100 * math.sqrt(3 / 2 * 2 * 1) / 6, abs=1e-12)  # sums 100, 200, 0 about 100 each
    assert p.stderr != pytest.approx(sem(units))
    assert found["filtered", "set-p"] is found["raw", "set-p"]


def test_instances_hold_each_facts_set_scores(lama_dir, tmp_path, monkeypatch, capsys):
    """`instances.parquet` holds each fact's set, gold set and P/R/F1, so the summaries' set rows are recomputed
    from it; a 1-1 relation's facts (no set metric) hold their set but no scores."""
    import pandas as pd

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P530", "P1412", "P36", "--limit", "4",
                            "--predictors", "top2=freq", "--set", "top2.set=top:2", "--answers", "set",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    facts = pd.read_parquet(out / "instances.parquet")
    for rel, expected in (("P530", P530), ("P1412", P1412)):
        mine = facts[facts.relation == rel].set_index("subject")
        for subject, scores in expected.items():
            assert tuple(mine.loc[subject, ["set_p", "set_r", "set_f1"]]) == pytest.approx(scores, abs=1e-12)
            assert len(json.loads(mine.loc[subject, "set"])) == 2 and json.loads(mine.loc[subject, "set_gold"])
    one_to_one = facts[facts.relation == "P36"]
    assert len(one_to_one) == 4 and one_to_one.set_f1.isna().all() and one_to_one["set"].notna().all()
    rows = _rows(out)
    for metric, column in zip(METRICS, ("set_p", "set_r", "set_f1")):
        per_relation = facts.groupby("relation")[column].mean().dropna() * 100
        assert rows["own", "raw", "all", metric]["value"] == pytest.approx(per_relation.mean(), abs=1e-12)
