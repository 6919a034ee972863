"""Standard errors and bootstrap intervals: against scipy, a brute-force stratified bootstrap, pinned runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as st
from cli_support import run_kbc

from bridge.run.intervals import interval_table, unit_sets, with_intervals
from bridge.run.summaries import collect
from eval.uncertainty import intervals, replicate_means

GOLDEN = Path(__file__).parent / "golden"


def test_cell_stderr_is_scipy_sem_and_interval_matches_scipy_bootstrap():
    x = np.random.default_rng(3).exponential(size=50)
    got = intervals({"a": x}, n_boot=20_000, rng=np.random.default_rng(5))["a"]
    assert got.stderr == pytest.approx(st.sem(x), rel=1e-12)
    ref = st.bootstrap((x,), np.mean, n_resamples=20_000, method="percentile", random_state=1).confidence_interval
    assert got.ci_low == pytest.approx(ref.low, abs=0.01) and got.ci_high == pytest.approx(ref.high, abs=0.01)
    hits = np.array([100.0] * 12 + [0.0] * 28)  # P@1 of 40 facts: the binomial draw
    got = intervals({"a": hits}, n_boot=20_000, rng=np.random.default_rng(5))["a"]
    ref = st.bootstrap((hits,), np.mean, n_resamples=20_000, method="percentile", random_state=1).confidence_interval
    assert (got.ci_low, got.ci_high) == (ref.low, ref.high) == (17.5, 45.0)
    assert got.stderr == pytest.approx(st.sem(hits), rel=1e-12)


def test_macro_interval_resamples_within_relations():
    rng = np.random.default_rng(7)
    cells = {"P1": np.where(rng.random(30) < 0.2, 100.0, 0.0), "P2": rng.exponential(size=12),
             "P3": np.where(rng.random(80) < 0.6, 100.0, 0.0)}
    got = intervals(cells, {"all": list(cells)}, n_boot=20_000, rng=np.random.default_rng(1))["all"]
    assert got.stderr == pytest.approx(np.sqrt(sum(st.sem(v) ** 2 for v in cells.values())) / 3, rel=1e-12)
    brute = np.random.default_rng(2)  # explicit indices, relation by relation
    reps = np.mean([v[brute.integers(0, len(v), size=(20_000, len(v)))].mean(axis=1) for v in cells.values()], axis=0)
    low, high = np.percentile(reps, [2.5, 97.5])
    assert got.ci_low == pytest.approx(low, abs=0.3) and got.ci_high == pytest.approx(high, abs=0.3)


def test_replicates_of_a_constant_cell_and_undefined_below_two_units():
    assert replicate_means(np.array([0.5] * 4), 3, np.random.default_rng(0)).tolist() == [0.5] * 3
    out = intervals({"one": np.array([100.0]), "two": np.array([0.0, 100.0])}, {"all": ["one", "two"]}, n_boot=10)
    assert out["one"].stderr is None and out["two"].stderr == 50.0
    assert out["all"].stderr == 25.0 and (out["all"].ci_low, out["all"].ci_high) == (50.0, 100.0)  # "one" constant
    assert intervals({"one": np.array([1.0])}, {"all": ["one"]}, n_boot=10)["all"].stderr is None


def test_coherency_and_kmir_units():
    recs = [{"relation": "P1", "round": k, "coherent": c, "first_correct": f, "second_correct": True, "fact_uid": u}
            for u, k, c, f in (("a", 1, True, True), ("a", 2, False, True), ("b", 1, False, False),
                               ("b", 2, True, True))]
    sets = unit_sets("coherency", recs, {"P1": "N-1"}, None)
    assert sets[("raw", "coherency")][0]["P1"].tolist() == [100.0, 0.0, 0.0, 100.0]
    assert sets[("raw", "all_correct")][0]["P1"].tolist() == [100.0, 0.0]
    questions = [{"kind": k, "f1": f, "em": float(f == 1.0)} for k, f in (("a", 1.0), ("a", 0.5), ("b", 0.0))]
    rows = [{"setting": "raw", "group": g, "metric": "f1", "value": 0.0, "n_facts": 1} for g in ("a", "b", "all")]
    out = with_intervals(rows, interval_table(unit_sets("kmir", questions, {}, None), 0, 0, "k"))
    assert [r["stderr"] for r in out] == [25.0, None, pytest.approx(st.sem([100.0, 50.0, 0.0]))]


def _golden_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "lama_run", run)
    return run


def test_summary_rows_carry_stderr_and_seeded_intervals(tmp_path):
    run = _golden_run(tmp_path)
    rows = collect(run)
    by = {(r["corpus"], r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]): r for r in rows}
    cell = by[("trex", "freq", "own", "raw", "P19", "p@1")]  # 1 of 12 right
    assert (cell["value"], cell["stderr"], cell["ci_low"], cell["ci_high"]) == \
        (pytest.approx(100 / 12), pytest.approx(100 / 12), 0.0, 25.0)
    total = by[("trex", "freq", "own", "raw", "all", "p@1")]
    assert total["stderr"] == pytest.approx(5.403538870336026, rel=1e-12)
    assert by[("trex", "freq", "own", "raw", "all", "answer_space")]["stderr"] is None
    first = (run / "summary.json").read_bytes()
    collect(run)
    assert (run / "summary.json").read_bytes() == first  # seeded: identical files
    rows = collect(run, bootstrap=0)
    total = next(r for r in rows if r["predictor"] == "freq" and r["group"] == "all" and r["metric"] == "p@1")
    assert total["stderr"] is not None and total["ci_low"] is None
    assert "| trex | freq | 140.2 | 48 | 0.00 ± 0.00 | 8.33 ± 8.33 |" in (run / "summary.md").read_text()


def test_run_bootstrap_option(lama_dir, tmp_path, capsys):
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P30", "--limit", "20", "--predictors", "freq",
            "--store", str(tmp_path / "store"), "--data-dir", str(lama_dir), "--quiet"]
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "bad"), "--bootstrap", "-1"], capsys)
    assert code == 2 and "--bootstrap" in err and "Traceback" not in err
    code, out, err = run_kbc([*argv, "--out", str(tmp_path / "run"), "--bootstrap", "500", "--bootstrap-seed", "3"],
                             capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    total = next(r for r in rows if r["scope"] == "shared" and r["setting"] == "raw" and r["group"] == "all"
                 and r["metric"] == "p@1")
    assert total["ci_low"] <= total["value"] <= total["ci_high"] and total["stderr"] > 0
    assert "P19 place of birth (n=20)" in out and "answer space" in out
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["summary"] == {"bootstrap": 500, "seed": 3}


def test_relation_labels_order_and_answer_space(tmp_path):
    from eval.report import per_relation, table

    run = _golden_run(tmp_path)
    rows = collect(run)
    md = (run / "summary.md").read_text()
    assert ("| corpus | predictor | answer space (mean) | #facts | P1376 capital of (n=12) | P19 place of birth "
            "(n=10) | P30 continent (n=11) | P140 religion (n=12) | Total | Total 95% CI |") in md
    assert "| trex | gold | open | 45 |" in md and "| trex | bert | 21,018 | 45 |" in md
    spaces = {r["group"]: r["value"] for r in rows if r["metric"] == "answer_space" and r["predictor"] == "freq"
              and r["corpus"] == "trex" and r["scope"] == "shared" and r["setting"] == "raw"}
    assert spaces == {"P19": 325, "P30": 6, "P140": 12, "P1376": 218, "all": 140.25, "N-1": 343 / 3, "1-1": 218}
    assert "| trex | freq | 140.2 | 45 |" in md  # the mean of 325, 6, 12 and 218: the column says so
    lines = per_relation(rows, relations={"google_re": {"date_of_birth": ("birth-date", "N-1")}}).splitlines()
    assert [ln.split(" | ")[1:3] for ln in lines[2:]] == [  # by type (untyped last), then id as a number
        ["P19", "-"], ["P30", "-"], ["P140", "-"], ["P1376", "-"], ["date_of_birth birth-date", "N-1"],
        ["place_of_death", "-"]]
    assert "| trex | gold | - | 45 |" in table(rows, corpus="trex")  # no record of an open answer space: `-`


def test_identical_unit_scores_get_identical_intervals_whatever_the_metric():
    hits = [("a", 1.0)] * 8 + [("a", 0.0)] * 22 + [("b", 1.0)] * 7 + [("b", 0.0)] * 13
    questions = [{"kind": k, "f1": h, "em": h} for k, h in hits]  # every answer all right or all wrong: F1 = EM
    found = interval_table(unit_sets("kmir", questions, {}, None), 1000, 0, "trex/kb")
    got = {metric: {g: (i.ci_low, i.ci_high) for g, i in found[("raw", metric)].items()} for metric in ("f1", "em")}
    assert got["f1"] == got["em"] == {"a": (pytest.approx(40 / 3), pytest.approx(130 / 3)), "b": (15.0, 55.0),
                                      "all": (18.0, 44.0)}


def test_the_corpus_name_enters_the_seed_as_the_docs_give_it():
    """docs/lama.md gives the generator of a group's resamples: the same scores under `trex` and `trex-uhn` (LAMA-UHN
    by name, or a UHN copy given as --data-dir) get equal stderr and intervals of their own."""
    import zlib

    page = " ".join((Path(__file__).parents[1] / "docs" / "lama.md").read_text().split())
    assert '`numpy.random.default_rng([seed, zlib.crc32("<corpus>/<group>")])`' in page
    hits = np.array([100.0] * 9 + [0.0] * 31)
    sets = {("raw", "p@1"): ({"P19": hits}, {}, {}, {})}
    got = {}
    for corpus in ("trex", "trex-uhn"):
        found = interval_table(sets, 1000, 0, corpus)[("raw", "p@1")]["P19"]
        def documented_rng(group: str, key: str = corpus) -> np.random.Generator:
            return np.random.default_rng([0, zlib.crc32(f"{key}/{group}".encode())])

        documented = intervals({"P19": hits}, None, None, 1000, documented_rng)
        assert found == documented["P19"]
        got[corpus] = (round(found.stderr, 6), found.ci_low, found.ci_high)
    assert got == {"trex": (6.686669, 10.0, 35.0), "trex-uhn": (6.686669, 10.0, 37.5)}


def test_raw_and_filtered_of_the_same_facts_share_their_intervals(tmp_path):
    rows = collect(_golden_run(tmp_path))
    by = {(r["corpus"], r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]): r for r in rows}
    for setting in ("raw", "filtered"):  # Freq's gold ranks are the same in both settings of these facts
        total = by[("trex", "freq", "own", setting, "all", "mrr")]
        assert (total["value"], total["ci_low"], total["ci_high"]) == \
            (pytest.approx(0.4320079247043552), pytest.approx(0.3688059342158928), pytest.approx(0.49607849993678815))


def test_prompts_of_one_fact_are_resampled_together():
    facts = np.array([100.0, 0.0, 0.0, 100.0, 0.0])
    units, labels = np.repeat(facts, 3), np.repeat(np.arange(5), 3)  # each fact asked with three prompts
    got = intervals({"P1": units}, {"all": ["P1"]}, n_boot=20_000, rng=np.random.default_rng(5),
                    clusters={"P1": labels})
    assert got["P1"].stderr == got["all"].stderr == pytest.approx(st.sem(facts), rel=1e-12)  # 24.49, not 13.09
    ref = st.bootstrap((facts,), np.mean, n_resamples=20_000, method="percentile", random_state=1).confidence_interval
    assert (got["P1"].ci_low, got["P1"].ci_high) == (ref.low, ref.high) == (0.0, 80.0)
    alone = intervals({"P1": units}, n_boot=0, clusters={"P1": np.arange(15)})["P1"]  # one unit per fact: as before
    assert alone.stderr == pytest.approx(st.sem(units), rel=1e-12)


def test_prompt_set_stderr_counts_facts_not_prompts(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P30", "--limit", "30",
                            "--predictors", "freq", "--prompts", "pararel", "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    got = {r["group"]: (r["n_facts"], r["value"], r["stderr"], r["ci_low"], r["ci_high"]) for r in rows
           if r["scope"] == "own" and r["setting"] == "raw" and r["metric"] == "p@1" and not r.get("prompt")}
    queries = {r["group"]: r["n_queries"] for r in rows
               if r["scope"] == "own" and r["setting"] == "raw" and r["metric"] == "p@1" and not r.get("prompt")}
    # Freq answers alike under every prompt: 1 of P19's 30 facts (13 prompts each), 23 of P30's 30 (4 prompts)
    assert got["P19"] == (30, pytest.approx(100 / 30), pytest.approx(st.sem([100.0] + [0.0] * 29)), 0.0, 10.0)
    assert got["all"][:3] == (60, pytest.approx(40.0), pytest.approx(4.266055990780607))
    assert queries == {"P19": 390, "P30": 120, "all": 510, "N-1": 510}
    assert (got["all"][3], got["all"][4]) == (pytest.approx(31.666666666666668), pytest.approx(48.333333333333336))


def test_group_accuracy_carries_the_interval_of_its_facts(lama_dir, tmp_path, capsys, monkeypatch):
    """Group accuracy is a mean over facts (right under every prompt, or not): it has a stderr and an interval,
    recomputed here from `instances.parquet`; consistency and the draws, no means over facts, have none."""
    import pandas as pd

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P30", "--limit", "30",
                            "--predictors", "freq", "--prompts", "pararel", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((out / "summary.json").read_text())
    by = {(r["metric"], r["group"]): r for r in rows if r["scope"] == "own" and r["setting"] == "raw"
          and not r.get("prompt")}
    facts = pd.read_parquet(out / "instances.parquet")
    hits = facts.assign(fact=facts.uid.str.split("@").str[0]).groupby(["relation", "fact"]).correct_raw.all() * 100.0
    errs = []
    for rel in ("P19", "P30"):
        mine = hits.loc[rel].to_numpy(dtype=float)
        row = by["group_accuracy", rel]
        assert (row["value"], row["n_facts"]) == (pytest.approx(mine.mean()), 30)
        assert row["stderr"] == pytest.approx(st.sem(mine), rel=1e-12)
        errs.append(row["stderr"])
    total = by["group_accuracy", "all"]
    assert total["stderr"] == pytest.approx(np.hypot(*errs) / 2, rel=1e-12)
    assert total["ci_low"] < total["value"] < total["ci_high"]
    # Freq answers alike under every prompt, so a fact's group hit is its P@1 hit: the same draws, the same interval
    assert (total["ci_low"], total["ci_high"]) == (pytest.approx(by["p@1", "all"]["ci_low"], rel=1e-12),
                                                   pytest.approx(by["p@1", "all"]["ci_high"], rel=1e-12))
    assert by["consistency", "all"]["stderr"] is None and by["p@1_random_prompt_avg", "all"]["ci_low"] is None


def test_coherency_rounds_of_a_fact_are_one_draw_and_a_one_fact_relation_is_a_constant_in_the_total():
    units = (("P1", "a", 1, True), ("P1", "a", 2, True), ("P1", "b", 1, False), ("P1", "b", 2, True),
             ("P2", "c", 1, True), ("P2", "c", 2, False))
    recs = [{"relation": rel, "round": k, "coherent": c, "first_correct": c, "second_correct": c, "fact_uid": u}
            for rel, u, k, c in units]
    found = interval_table(unit_sets("coherency", recs, {"P1": "N-1", "P2": "N-1"}, None), 1000, 0, "t")
    got = found[("raw", "coherency")]
    assert got["P2"].fields() == {"stderr": None, "ci_low": None, "ci_high": None}  # one fact, two rounds
    assert got["P1"].stderr == 25.0  # cluster-robust: sqrt(2 * (50² + 50²)) / 4
    # P1's replicates are 50, 75 or 100; P2 adds its 50 to each: the Total varies with P1 alone
    assert (got["all"].stderr, got["all"].ci_low, got["all"].ci_high) == (12.5, 50.0, 75.0)
    assert found[("raw", "c1")]["all"].stderr == 25.0  # P1's c1 [100, 0] over two relations


def test_table_columns_one_relation_and_bear_domains(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, stdout, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "freq",
                                 "--limit", "30", "--data-dir", str(lama_dir), "--out", str(tmp_path / "one"),
                                 "--quiet"], capsys)
    assert code == 0, err
    assert "| corpus | predictor | answer space | #facts | P19 place of birth (n=30) | Total | Total 95% CI |" in stdout
    assert "| trex | freq | 325 | 30 | 3.33 ± 3.33 | 3.33 ± 3.33 | [0.00, 10.00] |" in stdout
    code, stdout, err = run_kbc(["run", "lama", "--corpus", "bear", "--predictors", "freq", "--limit", "2",
                                 "--data-dir", str(lama_dir.parent / "bear"), "--out", str(tmp_path / "bear"),
                                 "--quiet"], capsys)
    assert code == 0, err
    head = stdout.splitlines()[1]  # 60 relations, no cardinality types: the nine knowledge domains
    assert head == ("| corpus | predictor | answer space (mean) | #facts | domain:Arts (n=24) | domain:Biographical "
                    "(n=44) | domain:Economic (n=16) | domain:Geographic (n=26) | domain:Historical (n=12) | "
                    "domain:Movies (n=18) | domain:Political (n=8) | domain:Scientific (n=6) | domain:Sports (n=10) | "
                    "Total | Total 95% CI |")
    assert "| bear | freq | 31.7 | 120 | 8.33 ± 5.89 | 4.55 ± 3.21 | 0.00 ± 0.00 | 11.54 ± 6.66 | " in stdout
