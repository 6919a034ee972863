"""Set-valued scoring exactly as the LM-KBC 2024 challenge's evaluation (`evaluate.py` of lm-kbc/dataset2024).

Per subject-relation pair, over distinct objects (Wikidata ids, or numbers):
    precision = tp / #predicted, and 1 when nothing is predicted (whatever the gold);
    recall    = tp / #gold,      and 1 when the gold is empty (whatever is predicted);
    F1        = 2PR / (P + R),   and 0 when P + R = 0.
So both empty scores 1/1/1, an empty prediction for a non-empty gold 1/0/0 and a non-empty prediction
for an empty gold 0/1/0. Per relation: macro P/R/F1 are means over its pairs; micro P/R are summed tp
over summed predictions (1 when the relation has none) and over summed gold objects (1 when it has
none), micro F1 their harmonic mean; `avg-preds` is predictions per pair and `empty-preds` the pairs
predicted empty. The all-relations row (`ALL`) averages over every pair, not over relations, and
sums tp, predictions and gold objects over every pair.

Pairs are keyed by subject id (the challenge's script keys them by subject label; no relation of the
staged data has two subjects of one label, so both give the same pairs).

These figures compare ids with ids only, as `evaluate.py` does: a predicted item no id was found for (a label
kept as a string, as the submission file holds it) matches nothing. kbc's own label-matching figures
(`LABEL_METRICS`, `LABEL_HITS`) also let such an item match a gold label equal to it (`SetFact.labels`); items
matching an id count first, and tp never exceeds the gold's size. They are rows of their own, never the
challenge's columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from eval.errors import KbcError
from eval.types import ID_JOIN, SetFact, named_gold

ALL = "all"
METRICS = ("macro-p", "macro-r", "macro-f1", "micro-p", "micro-r", "micro-f1", "avg-preds", "empty-preds")
# LAMA's `--answers set` rows: the macro scores under their row names, and the relation types they cover
LAMA_SET_METRICS = {"macro-p": "set-p", "macro-r": "set-r", "macro-f1": "set-f1"}
LAMA_SET_TYPES = ("N-M",)  # the relations whose subjects hold several objects
# kbc's own figures where an answer left a string matches a gold label equal to it: not what `evaluate.py` gives
LABEL_METRICS = {"macro-p": "label-macro-p", "macro-r": "label-macro-r", "macro-f1": "label-macro-f1"}
# the scores that are fractions (0-1), printed to three decimals as the challenge's table: two would tie 0.2613 and
# 0.2600
FRACTIONS = frozenset((*METRICS[:6], *LABEL_METRICS.values()))
LABEL_HITS = "label-hits"  # answers matched by a gold label only (no id): a count per relation and over all pairs


@dataclass(frozen=True, slots=True)
class PairScore:
    """One subject-relation pair's score and the counts the micro averages sum."""

    relation: str
    subject: str
    p: float
    r: float
    f1: float
    tp: int
    n_pred: int
    n_gold: int


def f1(p: float, r: float) -> float:
    """Harmonic mean; 0 when both are 0 (the challenge's ZeroDivisionError branch)."""
    return 2 * p * r / (p + r) if p + r else 0.0


def distinct(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats: the challenge scores `set(ObjectEntitiesID)`."""
    return list(dict.fromkeys(items))


def as_gold(pred: Sequence[str], gold_ids: Iterable[str]) -> list[str]:
    """Each predicted item, an item naming several entities (`a|b`, LAMA's Freq) made the gold id it names that no
    item before it took: one item, one gold entity at most; one naming none stays as it is, a wrong item."""
    gold = set(gold_ids)
    taken = {item for item in pred if item in gold}
    out = []
    for item in pred:
        if ID_JOIN in item and item not in gold:
            named = named_gold(item, gold - taken)
            if named is not None:
                taken.add(named)
                item = named
        out.append(item)
    return out


def true_positives(pred: Sequence[str], gold_ids: Iterable[str], gold_labels: Iterable[str] = ()) -> int:
    """Distinct predictions among the gold ids (an item naming several entities counts as the one gold entity it
    names, `as_gold`), then unmatched ones equal to a gold label; at most #gold."""
    gold = set(gold_ids)
    pred = as_gold(pred, gold)
    by_id = sum(map(gold.__contains__, pred))
    labels = set(gold_labels) - gold  # holds no gold id: a label match is never an id match counted twice
    by_label = sum(map(labels.__contains__, pred)) if labels else 0
    return min(by_id + by_label, len(gold))


def score_pair(relation: str, subject: str, pred: Iterable[str], gold_ids: Iterable[str],
               gold_labels: Iterable[str] = ()) -> PairScore:
    """The challenge's per-pair precision, recall and F1 (conventions in the module docstring)."""
    pred, gold = distinct(pred), distinct(gold_ids)
    tp = true_positives(pred, gold, gold_labels)
    p = min(tp / len(pred), 1.0) if pred else 1.0
    r = min(tp / len(gold), 1.0) if gold else 1.0
    return PairScore(relation, subject, p, r, f1(p, r), tp, len(pred), len(gold))


def score_facts(facts: Iterable[SetFact], predicted: Mapping[str, Iterable[str]]) -> list[PairScore]:
    """Every gold pair scored against `predicted[fact.uid]`; a gold pair with no prediction is an error."""
    out = []
    for fact in facts:
        if fact.uid not in predicted:
            raise KbcError(f"no prediction for {fact.subject.label} ({fact.subject.id}), {fact.relation}: "
                           "every subject-relation pair of the gold needs one (an empty list is an answer)")
        out.append(score_pair(fact.relation, fact.subject.id or fact.subject.label, predicted[fact.uid],
                              (o.id or o.label for o in fact.objects), fact.labels))
    return out


def _row(pairs: Sequence[PairScore]) -> dict[str, float]:
    n = len(pairs)
    tp = sum(s.tp for s in pairs)
    n_pred = sum(s.n_pred for s in pairs)
    n_gold = sum(s.n_gold for s in pairs)
    micro_p = tp / n_pred if n_pred else 1.0
    micro_r = tp / n_gold if n_gold else 1.0
    return {
        "macro-p": math.fsum(s.p for s in pairs) / n,
        "macro-r": math.fsum(s.r for s in pairs) / n,
        "macro-f1": math.fsum(s.f1 for s in pairs) / n,
        "micro-p": micro_p,
        "micro-r": micro_r,
        "micro-f1": f1(micro_p, micro_r),
        "avg-preds": n_pred / n,
        "empty-preds": float(sum(1 for s in pairs if s.n_pred == 0)),
    }


def summarize(pairs: Sequence[PairScore]) -> dict[str, dict[str, float]]:
    """Per relation (in first-seen order) and `ALL`, the challenge's table: METRICS -> value."""
    if not pairs:
        raise KbcError("no subject-relation pair to score")
    groups: dict[str, list[PairScore]] = {}
    for s in pairs:
        groups.setdefault(s.relation, []).append(s)
    table = {rel: _row(group) for rel, group in groups.items()}
    table[ALL] = _row(pairs)
    return table


def tidy_rows(pairs: Sequence[PairScore], setting: str = "raw") -> list[dict]:
    """`summarize` as the runner's tidy rows: `{setting, group, metric, value, n_facts}`, n_facts the pairs."""
    counts: dict[str, int] = {ALL: len(pairs)}
    for s in pairs:
        counts[s.relation] = counts.get(s.relation, 0) + 1
    return [{"setting": setting, "group": group, "metric": metric, "value": value, "n_facts": counts[group]}
            for group, row in summarize(pairs).items() for metric, value in row.items()]


def pair_from_record(record: dict, by_label: bool = False) -> PairScore:
    """The score a set record holds (`relation`, `subject_id`, `predicted`, `gold`), recomputed: `evaluate.py`'s,
    ids against ids; `by_label`: kbc's own, where an unlinked answer also matches a gold label (`gold_labels`)."""
    return score_pair(record["relation"], record.get("subject_id") or record.get("subject", ""), record["predicted"],
                      record["gold"], record.get("gold_labels", ()) if by_label else ())


def label_rows(records: Sequence[dict], setting: str = "raw") -> list[dict]:
    """kbc's label-matching macro P/R/F1 (`LABEL_METRICS`) and the answers matched by label only (`LABEL_HITS`),
    per relation and over all pairs; none where no answer matched by label only (then they equal the challenge's)."""
    by_id = [pair_from_record(r) for r in records]
    by_label = [pair_from_record(r, by_label=True) for r in records]
    hits: dict[str, int] = {}
    for a, b in zip(by_id, by_label, strict=True):
        hits[a.relation] = hits.get(a.relation, 0) + b.tp - a.tp
    if not any(hits.values()):
        return []
    hits[ALL] = sum(hits.values())
    n = {rel: sum(1 for s in by_id if s.relation == rel) for rel in hits} | {ALL: len(by_id)}
    return [{"setting": setting, "group": group, "metric": LABEL_METRICS[metric], "value": value, "n_facts": n[group]}
            for group, row in summarize(by_label).items() for metric, value in row.items() if metric in LABEL_METRICS
            ] + [{"setting": setting, "group": group, "metric": LABEL_HITS, "value": float(count), "n_facts": n[group]}
                 for group, count in hits.items()]


def macro_rows(pairs: Sequence[PairScore], groups: Mapping[str, Sequence[str]], names: Mapping[str, str],
               scale: float = 100.0) -> list[dict]:
    """Tidy rows of macro P/R/F1 (`names`: e.g. `macro-p` -> `set-p`): per relation the mean over its pairs,
    per group the mean over its relations' values (LAMA's macro over relations), times `scale`."""
    table = summarize(pairs)
    counts: dict[str, int] = {}
    for s in pairs:
        counts[s.relation] = counts.get(s.relation, 0) + 1
    rows = [{"group": rel, "metric": name, "value": scale * table[rel][key], "n_facts": counts[rel]}
            for rel in counts for key, name in names.items()]
    for group, rels in groups.items():
        rels = [r for r in rels if r in counts]
        if rels:
            rows += [{"group": group, "metric": name,
                      "value": scale * math.fsum(table[r][key] for r in rels) / len(rels),
                      "n_facts": sum(counts[r] for r in rels)} for key, name in names.items()]
    return rows


def lama_set_pairs(records: Iterable[dict], relation_types: Mapping[str, str | None]) -> list[PairScore]:
    """LAMA set records (`set`, `set_gold`) of the set-valued relation types, one pair per record (keyed by uid)."""
    return [score_pair(r["relation"], r["uid"], r["set"], r["set_gold"]) for r in records
            if "set" in r and relation_types.get(r["relation"]) in LAMA_SET_TYPES]


def unit_scores(pairs: Sequence[PairScore], names: Mapping[str, str], scale: float = 100.0
                ) -> dict[str, dict[str, list[float]]]:
    """Per row name (`names`: `macro-p` -> `set-p`), each relation's pair scores times `scale`: the units whose
    mean is the relation's macro value, for its standard error and bootstrap interval."""
    fields = {"macro-p": "p", "macro-r": "r", "macro-f1": "f1"}
    out: dict[str, dict[str, list[float]]] = {name: {} for name in names.values()}
    for s in pairs:
        for key, name in names.items():
            out[name].setdefault(s.relation, []).append(scale * getattr(s, fields[key]))
    return out
