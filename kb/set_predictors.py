"""KB predictors of set-valued corpora (LM-KBC): the gold KB, and Freq over the train split.

The gold KB answers each subject with the objects its gold set holds (score 1 each, ids kept): the ceiling.
Freq ranks each relation's objects by how many train subjects hold them; the score of an object is the
share of the relation's train pairs whose gold set holds it, a probability, so the set rules of LMs
(`eval.set_rules`: threshold, top-K, threshold tuned on train) apply unchanged. Ties keep the order of
first occurrence in the train file, as LAMA's Freq. Freq ignores the subject.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from eval.types import Answer, Prediction, Query, SetFact


def train_shares(facts: Iterable[SetFact]) -> dict[str, tuple[Answer, ...]]:
    """Per relation, every object seen in train with the share of train pairs holding it, highest first."""
    pairs: Counter = Counter()
    counts: dict[str, Counter] = {}
    labels: dict[str, str] = {}
    for fact in facts:
        pairs[fact.relation] += 1
        held = counts.setdefault(fact.relation, Counter())
        for obj in dict.fromkeys(fact.objects):
            key = obj.id or obj.label
            held[key] += 1
            labels.setdefault(key, obj.label)
    # Counter.most_common is a stable sort on insertion order: first occurrence wins ties
    return {rel: tuple(Answer(labels[key], n / pairs[rel], key) for key, n in held.most_common())
            for rel, held in counts.items()}


class FreqSetPredictor:
    """The train-split Freq ranking, the same for every subject of a relation."""

    name = "freq"
    ranks = "list"
    slots = ("object",)

    def __init__(self, train: Iterable[SetFact]) -> None:
        self._ranked = train_shares(train)

    def describe(self) -> dict:
        return {"predictor": "freq", "counts": "train split, share of pairs holding each object",
                "ties": "first occurrence in the data", "ranks": self.ranks, "slots": list(self.slots)}

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self._ranked.get(relation, ()))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self._ranked.get(q.relation, ())[:depth]) for q in queries]


class GoldSetPredictor:
    """Every object of the asked pair's gold set; an empty set answers nothing."""

    name = "gold"
    ranks = "list"
    slots = ("object",)

    def __init__(self, facts: Iterable[SetFact]) -> None:
        self._held = {(f.relation, f.subject.id): tuple(Answer(o.label, 1.0, o.id) for o in f.objects) for f in facts}

    def describe(self) -> dict:
        return {"predictor": "gold", "answers": "the gold set of each subject and relation", "ranks": self.ranks,
                "slots": list(self.slots)}

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self._held.get((q.relation, q.known.id), ()), shared_ties=True) for q in queries]
