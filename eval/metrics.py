"""Rank-based metrics (LAMA §4.4): P@k and MRR per relation, macro-averaged over relations.

Two settings side by side: `raw` ranks the gold object among all answers (LAMA's released
code); `filtered` first removes the other valid objects of the same subject and relation
(the LAMA paper, after Bordes et al. 2013). Answers match gold by label, as LAMA compares tokens.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eval.types import Answer

SETTINGS = ("raw", "filtered")
METRICS = ("p@1", "p@10", "mrr")
CURVE_KS = tuple(range(1, 101))


def _norm(label: str, lowercased: bool) -> str:
    return label.lower() if lowercased else label


def gold_rank(
    answers: Sequence[Answer], gold: str, exclude: Iterable[str] = (), lowercased: bool = False
) -> int | None:
    """1-based rank of `gold` among `answers` after dropping labels in `exclude`; None if absent."""
    gold_n = _norm(gold, lowercased)
    skip = {_norm(e, lowercased) for e in exclude} - {gold_n}
    rank = 0
    for ans in answers:
        label = _norm(ans.label, lowercased)
        if label in skip:
            continue
        rank += 1
        if label == gold_n:
            return rank
    return None


@dataclass(frozen=True, slots=True)
class Ranked:
    """One scored query: what every metric needs, and all a predictions file must keep."""

    relation: str
    rank_raw: int | None
    rank_filtered: int | None

    def rank(self, setting: str) -> int | None:
        return self.rank_raw if setting == "raw" else self.rank_filtered


def precision_at(ranks: Sequence[int | None], k: int) -> float:
    """Percentage of queries whose gold is within the top k."""
    if not ranks:
        return 0.0
    return 100.0 * sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def mean_reciprocal_rank(ranks: Sequence[int | None]) -> float:
    if not ranks:
        return 0.0
    return sum(1.0 / r for r in ranks if r) / len(ranks)


def _metric(name: str, ranks: Sequence[int | None]) -> float:
    if name == "mrr":
        return mean_reciprocal_rank(ranks)
    return precision_at(ranks, int(name.split("@")[1]))


def _by_relation(rows: Iterable[Ranked], setting: str) -> dict[str, list[int | None]]:
    grouped: dict[str, list[int | None]] = defaultdict(list)
    for row in rows:
        grouped[row.relation].append(row.rank(setting))
    return grouped


def summarize(
    rows: Iterable[Ranked],
    relation_types: dict[str, str | None],
    metrics: Sequence[str] = METRICS,
    settings: Sequence[str] = SETTINGS,
) -> list[dict]:
    """Tidy rows {setting, group, metric, value, n_facts}: per relation, per type, and `all`.

    Type and `all` values are macro averages over relations (each relation counts once).
    """
    rows = list(rows)
    out: list[dict] = []
    for setting in settings:
        per_rel = _by_relation(rows, setting)
        for metric in metrics:
            values = {rel: _metric(metric, ranks) for rel, ranks in per_rel.items()}
            groups: dict[str, list[str]] = {"all": list(values)}
            for rel in values:
                rtype = relation_types.get(rel)
                if rtype:
                    groups.setdefault(rtype, []).append(rel)
            for rel, value in values.items():
                out.append(_row(setting, rel, metric, value, len(per_rel[rel])))
            for group, rels in groups.items():
                mean = sum(values[r] for r in rels) / len(rels)
                out.append(_row(setting, group, metric, mean, sum(len(per_rel[r]) for r in rels)))
    return out


def _row(setting: str, group: str, metric: str, value: float, n: int) -> dict:
    return {"setting": setting, "group": group, "metric": metric, "value": value, "n_facts": n}


def pk_curve(rows: Iterable[Ranked], ks: Sequence[int] = CURVE_KS, settings: Sequence[str] = SETTINGS) -> list[dict]:
    """Macro-averaged P@k for k = 1..100 (LAMA Fig. 2), per setting."""
    rows = list(rows)
    out = []
    for setting in settings:
        per_rel = _by_relation(rows, setting)
        for k in ks:
            vals = [precision_at(r, k) for r in per_rel.values()]
            out.append({"setting": setting, "group": "all", "k": k,
                        "value": sum(vals) / len(vals) if vals else 0.0})
    return out
