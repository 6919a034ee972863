"""P@k, MRR and the P@k curve of many queries at once, from rank columns instead of one object per query.

The numbers are those of `eval.metrics.summarize` and `eval.metrics.pk_curve`, bit for bit: each
per-relation value is computed with the same floating-point operations in the same order
(`100.0 * hits / n`; reciprocal ranks and macro means summed exactly by `math.fsum`, so that neither the
order of the queries nor that of the relations moves a value by a bit, as a resumed run may hold them in another
order). Only the counting is done by numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.metrics import CURVE_KS, METRICS, SETTINGS, macro_mean
from eval.relations import summary_groups


@dataclass
class RankTable:
    """One row per scored query: its relation and its ranks per setting (NaN where there is none)."""

    relations: list[str]  # in order of first appearance
    codes: np.ndarray  # per query: index into `relations`
    list_ranks: dict[str, np.ndarray]  # setting -> list rank, else the exact rank below the list (P@k)
    mrr_ranks: dict[str, np.ndarray]  # setting -> exact rank where known, else list rank (MRR)

    @classmethod
    def from_records(cls, records: Sequence[dict]) -> RankTable:
        """From prediction records (`relation`, `rank_raw`, `rank_filtered`, optional `rank_exact_*`)."""
        index: dict[str, int] = {}
        n = len(records)
        codes = np.fromiter((index.setdefault(r["relation"], len(index)) for r in records), dtype=np.int64, count=n)
        list_ranks, mrr_ranks = {}, {}
        for setting in SETTINGS:
            key, exact_key = f"rank_{setting}", f"rank_exact_{setting}"
            listed = np.fromiter((math.nan if (v := r[key]) is None else v for r in records), dtype=float, count=n)
            exact = np.fromiter((math.nan if (v := r.get(exact_key)) is None else v for r in records), dtype=float,
                                count=n)
            # a rank is a whole number or missing (NaN): each column takes the other where its own is missing
            list_ranks[setting] = np.where(np.isnan(listed), exact, listed)
            mrr_ranks[setting] = np.where(np.isnan(exact), listed, exact)
        return cls(list(index), codes, list_ranks, mrr_ranks)

    def sizes(self) -> np.ndarray:
        return np.bincount(self.codes, minlength=len(self.relations))

    def precision(self, setting: str, k: int) -> list[float]:
        """Per relation: percentage of queries whose gold ranks within the top k (the exact rank below the list)."""
        hits = np.bincount(self.codes[self.list_ranks[setting] <= k], minlength=len(self.relations))
        return (100.0 * hits / self.sizes()).tolist()

    def mrr(self, setting: str, cutoff: int | None = None) -> list[float]:
        """Per relation: mean of 1/rank over its queries (0 for none; beyond `cutoff` 0 too)."""
        ranks = self.mrr_ranks[setting]
        with np.errstate(invalid="ignore"):
            keep = ~np.isnan(ranks) & (ranks != 0)
            if cutoff is not None:
                keep &= ranks <= cutoff
        sizes = self.sizes()
        out = []
        for code in range(len(self.relations)):
            terms = (1.0 / ranks[keep & (self.codes == code)]).tolist()
            out.append(math.fsum(terms) / int(sizes[code]))
        return out

    def unit_scores(self, setting: str, metric: str, cutoff: int | None = None) -> np.ndarray:
        """Per query, what its relation's value averages: 100 for a hit within k (P@k), else 1/rank (MRR)."""
        if metric != "mrr":
            with np.errstate(invalid="ignore"):
                return np.where(self.list_ranks[setting] <= int(metric.split("@")[1]), 100.0, 0.0)
        ranks = self.mrr_ranks[setting]
        with np.errstate(invalid="ignore", divide="ignore"):
            keep = ~np.isnan(ranks) & (ranks != 0)
            if cutoff is not None:
                keep &= ranks <= cutoff
            return np.where(keep, 1.0 / ranks, 0.0)

    def by_relation(self, scores: np.ndarray) -> dict[str, np.ndarray]:
        """`scores` split by relation, relations in order of first appearance."""
        return {rel: scores[self.codes == code] for code, rel in enumerate(self.relations)}

    def curve_counts(self, setting: str, ks: Sequence[int]) -> np.ndarray:
        """[relation, k] -> how many queries of the relation have the gold within the top k."""
        ranks = self.list_ranks[setting]
        counts = np.zeros((len(self.relations), len(ks)), dtype=np.int64)
        wanted = np.asarray(ks, dtype=float)
        for code in range(len(self.relations)):
            mine = ranks[self.codes == code]
            counts[code] = np.searchsorted(np.sort(mine[~np.isnan(mine)]), wanted, side="right")
        return counts


def summarize_table(table: RankTable, relation_types: dict[str, str | None], metrics: Sequence[str] = METRICS,
                    settings: Sequence[str] = SETTINGS, mrr_cutoff: int | None = None) -> list[dict]:
    """The rows of `eval.metrics.summarize` for the same queries, in the same order."""
    sizes = [int(n) for n in table.sizes()]
    n_of = dict(zip(table.relations, sizes))
    out: list[dict] = []
    for setting in settings:
        for metric in metrics:
            if metric == "mrr":
                per_rel = table.mrr(setting, mrr_cutoff)
            else:
                per_rel = table.precision(setting, int(metric.split("@")[1]))
            values = dict(zip(table.relations, per_rel))
            groups: dict[str, list[str]] = {"all": list(values)}
            for rel in values:
                for group in summary_groups(relation_types.get(rel)):
                    groups.setdefault(group, []).append(rel)
            for rel, value in values.items():
                out.append(_row(setting, rel, metric, value, n_of[rel]))
            for group, rels in groups.items():
                mean = macro_mean([values[r] for r in rels])
                out.append(_row(setting, group, metric, mean, sum(n_of[r] for r in rels)))
    return out


def curve_table(table: RankTable, ks: Sequence[int] = CURVE_KS, settings: Sequence[str] = SETTINGS) -> list[dict]:
    """The rows of `eval.metrics.pk_curve` for the same queries, in the same order."""
    sizes = table.sizes()
    out = []
    for setting in settings:
        values = (100.0 * table.curve_counts(setting, ks) / sizes[:, None]).T.tolist()  # [k][relation]
        for k, vals in zip(ks, values):
            out.append({"setting": setting, "group": "all", "k": k,
                        "value": macro_mean(vals) if vals else 0.0})
    return out


def _row(setting: str, group: str, metric: str, value: float, n: int) -> dict:
    return {"setting": setting, "group": group, "metric": metric, "value": value, "n_facts": n}
