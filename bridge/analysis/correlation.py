"""Per-fact accuracy against per-fact statistics: LAMA Fig. 3 (correlations) and KMIR Fig. 2 (bins).

Targets per fact: P@1 (the gold ranked first, 0/1) and the reciprocal rank, of the exact rank
among all candidates where the predictor reports one (`rank_exact_*`, as MRR uses it), else of the
rank in the answer list (0 when the gold is not among the answers). Only answered facts count
(dropped facts have no rank). Coefficients are null where they are undefined: fewer than 3 facts,
or a constant statistic or target.
Bins for the count statistics are log-spaced (powers of two: 1, 2-3, 4-7, ...), with zero
counts in a bin of their own (`low = high = 0`); `high` is exclusive otherwise.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from bridge.analysis.stats import TEXT_STATS, available

SETTINGS = ("raw", "filtered")
TARGETS = ("p@1", "rr")
METHODS = ("pearson", "spearman")
BINNED = TEXT_STATS


def targets(frame: pd.DataFrame, setting: str) -> pd.DataFrame:
    """`p@1` (list rank; an answer written by generation: exact match) and `rr` (exact rank where known, else list
    rank; undefined, NaN, for a written answer) for the answered rows of `frame`."""
    answered = frame[frame["dropped"].isna()] if "dropped" in frame.columns else frame
    rank = answered[f"rank_{setting}"].astype("Float64")
    exact = f"rank_exact_{setting}"
    mrr_rank = answered[exact].astype("Float64").fillna(rank) if exact in answered.columns else rank
    p1 = (rank == 1).fillna(False).astype(float)
    rr = (1.0 / mrr_rank).fillna(0.0).astype(float)
    if "generation" in answered.columns and f"correct_{setting}" in answered.columns:
        written = answered["generation"].notna().to_numpy()
        p1 = p1.where(~written, answered[f"correct_{setting}"].fillna(False).astype(float))
        rr = rr.where(~written, float("nan"))
    return answered.assign(**{"p@1": p1, "rr": rr})


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def coefficient(x: np.ndarray, y: np.ndarray, method: str) -> tuple[float | None, float | None]:
    from scipy import stats

    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = stats.pearsonr(x, y) if method == "pearson" else stats.spearmanr(x, y)
    return _finite(result[0]), _finite(result[1])


def correlations(frame: pd.DataFrame, statistics: Sequence[str] | None = None) -> list[dict]:
    """Rows of `correlation.json` for every corpus, predictor, setting, statistic, target and method."""
    statistics = available(frame) if statistics is None else list(statistics)
    rows = []
    for (corpus, predictor), group in frame.groupby(["corpus", "predictor"], sort=False):
        for setting in SETTINGS:
            scored = targets(group, setting)
            for stat in statistics:
                if stat not in scored.columns:
                    continue
                have = scored[scored[stat].notna()]
                x = have[stat].astype(float).to_numpy()
                for target in TARGETS:
                    y = have[target].to_numpy(dtype=float)
                    for method in METHODS:
                        r, p = coefficient(x, y, method)
                        rows.append({"corpus": corpus, "predictor": predictor, "setting": setting,
                                     "statistic": stat, "target": target, "method": method,
                                     "coefficient": r, "p_value": p, "n": int(len(have))})
    return rows


def bin_edges(max_value: int) -> list[tuple[int, int]]:
    """[low, high) bins 1, 2-3, 4-7, ... covering 1..max_value."""
    edges, low = [], 1
    while low <= max_value:
        edges.append((low, low * 2))
        low *= 2
    return edges


def bin_label(low: int, high: int) -> str:
    if high == 0:
        return "0"
    return str(low) if high - low == 1 else f"{low}-{high - 1}"


def bins(frame: pd.DataFrame, statistics: Sequence[str] | None = None) -> list[dict]:
    """Rows of `bins.json`: P@1 (%) per log-spaced bin of each count statistic, with its fact count; `scope`
    `own` over each predictor's answered facts, `shared` over the facts every predictor of the corpus answered
    (so the predictors of one bin are compared over the same facts)."""
    statistics = [s for s in (available(frame, BINNED) if statistics is None else statistics) if s in BINNED]
    answered = frame[frame["dropped"].isna()] if "dropped" in frame.columns else frame
    shared: dict[str, set] = {}
    for (corpus, _), group in answered.groupby(["corpus", "predictor"], sort=False):
        uids = set(group["uid"])
        shared[corpus] = shared[corpus] & uids if corpus in shared else uids
    rows = []
    for scope in ("own", "shared"):
        for (corpus, predictor), group in frame.groupby(["corpus", "predictor"], sort=False):
            chosen = group if scope == "own" else group[group["uid"].isin(shared.get(corpus, set()))]
            rows += [{**row, "scope": scope} for row in _binned(chosen, corpus, predictor, statistics)]
    return rows


def _binned(group: pd.DataFrame, corpus: str, predictor: str, statistics: Sequence[str]) -> list[dict]:
    rows = []
    for setting in SETTINGS:
        scored = targets(group, setting)
        for stat in statistics:
            have = scored[scored[stat].notna()]
            values = have[stat].astype(int).to_numpy()
            hits = have["p@1"].to_numpy(dtype=float)
            if not len(values):
                continue
            spans = [(0, 0), *bin_edges(int(values.max()))]
            for low, high in spans:
                mask = values == 0 if high == 0 else (values >= low) & (values < high)
                n = int(mask.sum())
                rows.append({"corpus": corpus, "predictor": predictor, "setting": setting, "statistic": stat,
                             "bin": bin_label(low, high), "low": low, "high": high, "n": n,
                             "p@1": 100.0 * float(hits[mask].mean()) if n else None})
    return rows
