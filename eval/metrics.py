"""Rank-based metrics (LAMA §4.4): P@k and MRR per relation, macro-averaged over relations.

Two settings side by side: `raw` ranks the gold object among all answers (LAMA's released
code); `filtered` first removes the other valid objects of the same subject and relation
(the LAMA paper, after Bordes et al. 2013). Answers match gold by label, as LAMA compares tokens.

Two kinds of rank per query. The *list* rank is the gold's position in the predictor's answer
list (at most the answer depth; None below it); P@k uses it, or the exact rank where the gold is
below the list (so P@k past the depth is exact where exact ranks are recorded). The *exact* rank is the
gold's rank among all candidates a predictor scored (`Prediction.target_ranks`, from predictors
that score every candidate: masked LMs, causal typed querying, E-BERT token level); MRR uses it
when present, so a gold object below the answer depth still counts 1/rank. The two agree for
every rank within the depth. MRR has no cut-off by default; `mrr_cutoff=LAMA_MRR_CUTOFF` counts
1/rank only for ranks <= 10,000 and 0 below, as LAMA's released code does (its
`evaluation_metrics.get_ranking` looks the gold up among `torch.topk(log_probs, k=10000)` over
the common vocabulary; the gold's position there + 1 is the rank, and a gold outside gives 0).

Ties (every predictor): candidates with equal scores are ordered by the predictor's fixed
candidate order (the vocabulary file order for LMs; each predictor documents its order), so
    rank(c) = 1 + #{candidates scoring strictly higher than c}
                + #{candidates scoring exactly as c that come before c in the candidate order},
which is also c's position in the answer list. LAMA's `torch.topk` leaves the order of exact ties
unspecified. A KB's answers of equal score are equally true (`Prediction.shared_ties`: the gold
KB, the relation-extraction KBs): there the gold ranks 1 + #{labels scoring strictly higher}, so
a label order never turns a correct answer into a wrong one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eval.relations import summary_groups
from eval.types import Answer, answer_labels

SETTINGS = ("raw", "filtered")
METRICS = ("p@1", "p@10", "mrr")
# scores where less is better: shares of answers not given or not linked, KMIR's Q-sets with no question right,
# negated LAMA's agreement of a negated or misprimed query with the positive one (`eval.negated`)
LOWER_IS_BETTER = frozenset({"abstain", "unlinked", "robust_none", "overlap", "spearman", "became-prime",
                             "p@1-drop"})
# figures that describe what a predictor answered, not how well: nothing to rank by
DESCRIPTIVE = {"avg-preds": "the mean size of its answer sets", "empty-preds": "its empty answer sets",
               "answer_space": "the candidates it ranks", "chance": "what a uniform guess expects",
               "n_instances": "the coherency instances it was asked", "label-hits": "its answers matched by label only"}
CURVE_KS = tuple(range(1, 101))
LAMA_MRR_CUTOFF = 10_000  # LAMA's released code: get_ranking(..., topk=10000)


def _norm(label: str, lowercased: bool) -> str:
    return label.lower() if lowercased else label


def _labels(answers: Sequence[Answer], lowercased: bool) -> list[str]:
    """The answers' labels as ranks compare them (lower-cased for an uncased model); not to be changed in place."""
    labels = answer_labels(answers)
    return [label.lower() for label in labels] if lowercased else labels


def gold_rank(
    answers: Sequence[Answer], gold: str, exclude: Iterable[str] = (), lowercased: bool = False,
    shared_ties: bool = False,
) -> int | None:
    """1-based rank of `gold` among `answers` after dropping labels in `exclude`; None if absent.

    `shared_ties` (a KB's answers, held equally true at equal score): the gold takes the first
    position of its tie group, 1 + the labels scoring strictly higher (answers match by label: a KB
    listing two entities of one label, Lisbon Q597 and Q2310637, puts one label above the rest).
    """
    gold_n = _norm(gold, lowercased)
    skip = {_norm(e, lowercased) for e in exclude} - {gold_n}
    labels = _labels(answers, lowercased)
    if skip:
        kept = [i for i, label in enumerate(labels) if label not in skip]
        labels = [labels[i] for i in kept]
        if shared_ties:
            answers = [answers[i] for i in kept]
    try:
        at = labels.index(gold_n)
    except ValueError:
        return None
    if shared_ties:  # 1 + the labels scoring strictly higher: a label listed for several entities counts once
        score = answers[at].score
        return 1 + len({label for a, label in zip(answers[:at], labels[:at]) if a.score != score})
    return at + 1


def gold_ranks(
    answers: Sequence[Answer], gold: str, exclude: Iterable[str] = (), lowercased: bool = False,
    shared_ties: bool = False,
) -> tuple[int | None, int | None]:
    """`gold_rank` without and with `exclude` (raw and filtered), from one pass over the labels: the filtered
    rank is the raw one less the excluded labels above it (the gold itself is never excluded)."""
    if shared_ties:
        return (gold_rank(answers, gold, (), lowercased, shared_ties),
                gold_rank(answers, gold, exclude, lowercased, shared_ties))
    gold_n = _norm(gold, lowercased)
    labels = _labels(answers, lowercased)
    try:
        at = labels.index(gold_n)
    except ValueError:
        return None, None
    skip = {_norm(e, lowercased) for e in exclude} - {gold_n}
    above = sum(1 for label in labels[:at] if label in skip) if skip else 0
    return at + 1, at + 1 - above


def filtered_exact_rank(
    target_ranks: Mapping[str, int] | None, gold: str, others: Iterable[str], lowercased: bool = False
) -> int | None:
    """The gold's exact rank after removing the other valid objects ranked above it.

    `target_ranks` is a prediction's label -> exact rank map (it holds every target that is a
    candidate); an other valid object absent from it is no candidate and removes nothing. Labels
    equal to the gold after normalisation are the gold itself. None when the gold has no exact rank.
    """
    if target_ranks is None:
        return None
    gold_n = _norm(gold, lowercased)
    rank = target_ranks.get(gold)
    if rank is None:
        rank = next((r for label, r in target_ranks.items() if _norm(label, lowercased) == gold_n), None)
    if rank is None:
        return None
    skip = {_norm(o, lowercased) for o in others} - {gold_n}
    # distinct candidates have distinct ranks: counting ranks counts each candidate once
    above = {r for label, r in target_ranks.items() if r < rank and _norm(label, lowercased) in skip}
    return rank - len(above)


def exact_rank(scores: np.ndarray, pos: int) -> int:
    """Rank of candidate `pos` among all `scores` under the tie rule of the module docstring."""
    scores = np.asarray(scores)
    s = scores[pos]
    return 1 + int(np.count_nonzero(scores > s)) + int(np.count_nonzero(scores[:pos] == s))


def top_order(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the `k` best scores, best first, ties by position (the module's tie rule)."""
    scores = np.asarray(scores)
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < len(scores):
        kth = np.partition(-scores, k - 1)[k - 1]
        cand = np.flatnonzero(-scores <= kth)  # every position that can be in the top k, ties included
    else:
        cand = np.arange(len(scores))
    order = cand[np.lexsort((cand, -scores[cand]))]
    return order[:k]


@dataclass(frozen=True, slots=True)
class Ranked:
    """One scored query: what every metric needs, and all a predictions file must keep.

    `rank_*` are list ranks (P@k); `exact_*` are exact ranks among all candidates where the
    predictor reports them (MRR), else None.
    """

    relation: str
    rank_raw: int | None
    rank_filtered: int | None
    exact_raw: int | None = None
    exact_filtered: int | None = None

    def rank(self, setting: str) -> int | None:
        return self.rank_raw if setting == "raw" else self.rank_filtered

    def pk_rank(self, setting: str) -> int | None:
        """The list rank, else the exact rank below the list (P@k)."""
        listed = self.rank(setting)
        if listed is not None:
            return listed
        return self.exact_raw if setting == "raw" else self.exact_filtered

    def mrr_rank(self, setting: str) -> int | None:
        """The exact rank where known, else the list rank."""
        exact = self.exact_raw if setting == "raw" else self.exact_filtered
        return exact if exact is not None else self.rank(setting)


def precision_at(ranks: Sequence[int | None], k: int) -> float:
    """Percentage of queries whose gold is within the top k."""
    if not ranks:
        return 0.0
    return 100.0 * sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def mean_reciprocal_rank(ranks: Sequence[int | None], cutoff: int | None = None) -> float:
    """Mean of 1/rank (0 for None); with `cutoff`, ranks above it count 0 (LAMA: 10,000). Summed exactly
    (`math.fsum`), so a resumed run whose records lie in another order scores to the same last bit."""
    if not ranks:
        return 0.0
    return math.fsum(1.0 / r for r in ranks if r and (cutoff is None or r <= cutoff)) / len(ranks)


def _metric(name: str, rows: Sequence[Ranked], setting: str, mrr_cutoff: int | None) -> float:
    if name == "mrr":
        return mean_reciprocal_rank([r.mrr_rank(setting) for r in rows], mrr_cutoff)
    return precision_at([r.pk_rank(setting) for r in rows], int(name.split("@")[1]))


def _by_relation(rows: Iterable[Ranked]) -> dict[str, list[Ranked]]:
    grouped: dict[str, list[Ranked]] = defaultdict(list)
    for row in rows:
        grouped[row.relation].append(row)
    return grouped


def summarize(
    rows: Iterable[Ranked],
    relation_types: dict[str, str | None],
    metrics: Sequence[str] = METRICS,
    settings: Sequence[str] = SETTINGS,
    mrr_cutoff: int | None = None,
) -> list[dict]:
    """Tidy rows {setting, group, metric, value, n_facts}: per relation, per type, and `all`.

    Type and `all` values are macro averages over relations (each relation counts once). MRR uses
    exact ranks where rows have them; `mrr_cutoff` (e.g. LAMA_MRR_CUTOFF) zeroes ranks beyond it.
    """
    per_rel = _by_relation(rows)
    out: list[dict] = []
    for setting in settings:
        for metric in metrics:
            values = {rel: _metric(metric, group, setting, mrr_cutoff) for rel, group in per_rel.items()}
            groups: dict[str, list[str]] = {"all": list(values)}
            for rel in values:
                for group in summary_groups(relation_types.get(rel)):
                    groups.setdefault(group, []).append(rel)
            for rel, value in values.items():
                out.append(_row(setting, rel, metric, value, len(per_rel[rel])))
            for group, rels in groups.items():
                mean = macro_mean([values[r] for r in rels])
                out.append(_row(setting, group, metric, mean, sum(len(per_rel[r]) for r in rels)))
    return out


def macro_mean(values: Sequence[float]) -> float:
    """The mean over relations of their scores, summed exactly rounded (`math.fsum`): a Total does not depend on
    the order the relations come in, so runs of the same facts asked in another order write the same bits."""
    return math.fsum(values) / len(values)


def _row(setting: str, group: str, metric: str, value: float, n: int) -> dict:
    return {"setting": setting, "group": group, "metric": metric, "value": value, "n_facts": n}


def pk_curve(rows: Iterable[Ranked], ks: Sequence[int] = CURVE_KS, settings: Sequence[str] = SETTINGS) -> list[dict]:
    """Macro-averaged P@k for k = 1..100 (LAMA Fig. 2), per setting, from list ranks (exact ranks below them)."""
    per_rel = _by_relation(rows)
    out = []
    for setting in settings:
        for k in ks:
            vals = [precision_at([r.pk_rank(setting) for r in group], k) for group in per_rel.values()]
            out.append({"setting": setting, "group": "all", "k": k,
                        "value": macro_mean(vals) if vals else 0.0})
    return out
