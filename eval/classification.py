"""Scores of a single-label classifier (FewRel relation classification): macro precision, recall and F1 over
the classes as E-BERT's Table 2 reports them, accuracy, per-class scores, the confusion matrix, and a seeded
bootstrap over sentences for their intervals.

Macro scores follow scikit-learn's `precision_recall_fscore_support(average="macro", zero_division=0)` with
the class list given: a class never predicted has precision 0; macro F1 is the mean of per-class F1. A
missing prediction (None: a KB that holds no relation between the two entities) is wrong for its gold class
and counts towards no class's precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.uncertainty import Interval

MACRO = ("f1", "precision", "recall", "accuracy", "coverage")
OWN_STRATUM = ("recall", "accuracy", "coverage")  # a class's scores that only its own gold sentences move
OTHER, NONE = -1, -2  # codes of a prediction outside the class list, and of no prediction


@dataclass(frozen=True)
class ClassScores:
    precision: float
    recall: float
    f1: float
    support: int


def _codes(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    index = {label: i for i, label in enumerate(labels)}
    g = np.array([index[x] for x in gold], dtype=np.int64)
    p = np.array([index.get(x, OTHER) if x is not None else NONE for x in pred], dtype=np.int64)
    return g, p


def _from_counts(tp: np.ndarray, n_pred: np.ndarray, n_gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        r = np.where(n_gold > 0, tp / np.maximum(n_gold, 1), 0.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return p, r, f


def _counts(g: np.ndarray, p: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tp = np.bincount(g[g == p], minlength=k).astype(float)
    n_pred = np.bincount(p[p >= 0], minlength=k).astype(float)
    n_gold = np.bincount(g, minlength=k).astype(float)
    return tp, n_pred, n_gold


def _macro(g: np.ndarray, p: np.ndarray, k: int) -> dict[str, float]:
    prec, rec, f1 = _from_counts(*_counts(g, p, k))
    return {"f1": 100.0 * float(f1.mean()), "precision": 100.0 * float(prec.mean()),
            "recall": 100.0 * float(rec.mean()), "accuracy": 100.0 * float((g == p).mean()),
            "coverage": 100.0 * float((p != NONE).mean())}


def macro_scores(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> dict[str, float]:
    """Macro F1, precision, recall over `labels`, accuracy and coverage (share with a prediction), in percent."""
    if not gold:
        return {m: 0.0 for m in MACRO}
    g, p = _codes(gold, pred, labels)
    return _macro(g, p, len(labels))


def per_class(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> dict[str, ClassScores]:
    """Each class's precision, recall and F1 (percent) and its number of gold sentences."""
    g, p = _codes(gold, pred, labels)
    tp, n_pred, n_gold = _counts(g, p, len(labels))
    prec, rec, f1 = _from_counts(tp, n_pred, n_gold)
    return {label: ClassScores(100.0 * float(prec[i]), 100.0 * float(rec[i]), 100.0 * float(f1[i]), int(n_gold[i]))
            for i, label in enumerate(labels)}


def confusion(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> np.ndarray:
    """Counts (gold class x predicted class), a last column for sentences without a prediction among the classes."""
    g, p = _codes(gold, pred, labels)
    out = np.zeros((len(labels), len(labels) + 1), dtype=np.int64)
    np.add.at(out, (g, np.where(p >= 0, p, len(labels))), 1)
    return out


def bootstrap_intervals(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str], n_boot: int,
                        rng: np.random.Generator) -> dict[str, dict[str, Interval]]:
    """Per group (`all`: the macro scores; each class: its own) and metric, the stderr (std of the resampled
    values) and percentile 95% interval, sentences resampled with replacement within each gold class; empty
    with fewer than two sentences or no resamples. Nothing where every class has one gold sentence, and a class
    with one has no recall, accuracy or coverage interval: each resample redraws that same sentence, and a
    zero-width interval would claim an exactness that only reflects the sample size."""
    if n_boot <= 0 or len(gold) < 2:
        return {}
    g, p = _codes(gold, pred, labels)
    k = len(labels)
    strata = [np.flatnonzero(g == c) for c in range(k) if (g == c).any()]
    draws: dict[tuple[str, str], np.ndarray] = {}

    def put(group: str, metric: str, b: int, value: float) -> None:
        draws.setdefault((group, metric), np.empty(n_boot))[b] = value

    for b in range(n_boot):
        idx = np.concatenate([s[rng.integers(0, len(s), len(s))] for s in strata])
        gb, pb = g[idx], p[idx]
        for m, v in _macro(gb, pb, k).items():
            put("all", m, b, v)
        tp, n_pred, n_gold = _counts(gb, pb, k)
        prec, rec, f1 = _from_counts(tp, n_pred, n_gold)
        answered = np.bincount(gb[pb != NONE], minlength=k)
        for c in np.flatnonzero(n_gold):
            for m, v in (("f1", f1[c]), ("precision", prec[c]), ("recall", rec[c]), ("accuracy", rec[c]),
                         ("coverage", answered[c] / n_gold[c])):
                put(labels[c], m, b, 100.0 * float(v))
    fixed = all(len(s) == 1 for s in strata)  # every resample is the sample itself
    single = {labels[c] for c in range(k) if (g == c).sum() == 1}
    out: dict[str, dict[str, Interval]] = {}
    for (group, metric), v in draws.items():
        if fixed or (group in single and metric in OWN_STRATUM):
            continue
        out.setdefault(group, {})[metric] = Interval(float(v.std(ddof=1)), float(np.percentile(v, 2.5)),
                                                     float(np.percentile(v, 97.5)))
    return out
