"""`kbc analyze correlation`: coefficients equal scipy's on the run's own per-fact table; bins count every fact."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pandas as pd
import pytest
from analyze_support import call_kbc, check_pristine, copy_run, small_run  # noqa: F401
from scipy import stats as sps


@pytest.fixture(scope="module")
def analyzed(small_run, tmp_path_factory):  # noqa: F811
    """`kbc analyze correlation` on a copy of the shared run (it writes RUN/analysis/)."""
    run = copy_run(small_run, tmp_path_factory.mktemp("correlation"))
    code, out = call_kbc(["analyze", "correlation", str(run), "--index", str(small_run.index), "--quiet"])
    assert code == 0, out
    folder = run / "analysis"
    rows = json.loads((folder / "correlation.json").read_text())
    bins = json.loads((folder / "bins.json").read_text())
    return replace(small_run, run=run), out, rows, bins


def test_coefficients_equal_scipy_on_the_instances_table(analyzed):
    small, out, rows, _ = analyzed
    table = pd.read_parquet(small.run / "instances.parquet")
    table = table[table["dropped"].isna()]
    checked = 0
    for row in rows:
        mine = table[(table["corpus"] == row["corpus"]) & (table["predictor"] == row["predictor"])]
        mine = mine[mine[row["statistic"]].notna()]
        rank = mine[f"rank_{row['setting']}"].astype("Float64")
        exact = mine[f"rank_exact_{row['setting']}"].astype("Float64").fillna(rank)  # MRR's rank: exact where known
        y = ((rank == 1).fillna(False) if row["target"] == "p@1" else (1.0 / exact).fillna(0.0)).astype(float)
        x = mine[row["statistic"]].astype(float)
        assert row["n"] == len(mine)
        if x.nunique() < 2 or y.nunique() < 2:
            assert row["coefficient"] is None and row["p_value"] is None
            continue
        fn = sps.pearsonr if row["method"] == "pearson" else sps.spearmanr
        r, p = fn(x.to_numpy(), y.to_numpy())
        assert row["coefficient"] == pytest.approx(float(r), abs=1e-9)
        assert row["p_value"] == pytest.approx(float(p), rel=1e-6, abs=1e-12)
        checked += 1
    assert checked > 50
    keys = {(r["corpus"], r["predictor"], r["statistic"]) for r in rows}
    for corpus in ("trex", "google_re"):
        for predictor in ("freq", "retrieval"):
            for stat in ("sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp"):
                assert (corpus, predictor, stat) in keys
    assert "pearson" in out and "spearman" in out


def test_reciprocal_rank_uses_the_exact_ranks_of_a_masked_lm(analyzed):
    """The tiny BERT ranks no gold within its answer list, but reports each gold's exact rank: `rr` is
    1/exact rank on every answered fact, so its coefficients are defined."""
    small, _, rows, _ = analyzed
    table = pd.read_parquet(small.run / "instances.parquet")
    bert = table[(table["predictor"] == "bert") & (table["corpus"] == "trex") & table["dropped"].isna()]
    assert bert["rank_raw"].isna().all() and bert["rank_exact_raw"].notna().all()
    got = {(r["method"]): r for r in rows if (r["corpus"], r["predictor"], r["setting"], r["statistic"],
                                              r["target"]) == ("trex", "bert", "raw", "st", "rr")}
    expected = sps.spearmanr(bert["st"].astype(float), 1.0 / bert["rank_exact_raw"].astype(float))
    assert got["spearman"]["n"] == len(bert)
    assert got["spearman"]["coefficient"] == pytest.approx(float(expected[0]), abs=1e-9)


def test_bins_are_log_spaced_and_count_every_answered_fact(analyzed):
    small, _, _, bins = analyzed
    table = pd.read_parquet(small.run / "instances.parquet")
    answered = table[table["dropped"].isna()]
    frame = pd.DataFrame(bins)
    assert set(frame["scope"]) == {"own", "shared"}
    for (corpus, predictor, setting, stat), group in frame[frame["scope"] == "own"].groupby(
            ["corpus", "predictor", "setting", "statistic"]):
        expected = answered[(answered["corpus"] == corpus) & (answered["predictor"] == predictor)]
        assert group["n"].sum() == expected[stat].notna().sum()
        first = group.iloc[0]
        assert (first["low"], first["high"], first["bin"]) == (0, 0, "0")
        for _, b in group.iloc[1:].iterrows():
            assert b["high"] == 2 * b["low"] and math.log2(b["low"]).is_integer()
        zero = expected[expected[stat] == 0]
        if len(zero):
            hit = (zero[f"rank_{setting}"] == 1).fillna(False).mean() * 100
            assert first["p@1"] == pytest.approx(hit)


def test_shared_bins_are_over_the_facts_every_predictor_answered(analyzed):
    """The `shared` bins count, for every predictor alike, the facts all of the corpus's predictors answered."""
    small, _, _, bins = analyzed
    table = pd.read_parquet(small.run / "instances.parquet")
    answered = table[table["dropped"].isna()]
    frame = pd.DataFrame(bins)
    for corpus, rows in answered.groupby("corpus"):
        every = set.intersection(*(set(g["uid"]) for _, g in rows.groupby("predictor")))
        for (predictor, setting, stat), group in frame[(frame["scope"] == "shared") & (frame["corpus"] == corpus)
                                                       ].groupby(["predictor", "setting", "statistic"]):
            facts = rows[(rows["predictor"] == predictor) & rows["uid"].isin(every)]
            assert group["n"].sum() == facts[stat].notna().sum()
            hits = sum((facts[f"rank_{setting}"] == 1).fillna(False) & facts[stat].notna())
            assert (group["n"] * group["p@1"].fillna(0.0) / 100).sum() == pytest.approx(hits)


def test_the_shared_run_is_left_as_built(analyzed, small_run):  # noqa: F811
    """After the analysis above: it wrote into its copy, not into the run every analysis test shares."""
    check_pristine(small_run)
