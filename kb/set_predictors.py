"""KB predictors of set-valued corpora (LM-KBC): the gold KB, Freq over the train split, an extracted KB.

The gold KB answers each subject with the objects its gold set holds (score 1 each, ids kept): the ceiling.
Freq ranks each relation's objects by how many train subjects hold them; the score of an object is the
share of the relation's train pairs whose gold set holds it, a probability, so the set rules of LMs
(`eval.set_rules`: threshold, top-K, threshold tuned on train) apply unchanged. Ties keep the order of
first occurrence in the train file, as LAMA's Freq. Freq ignores the subject.
A relation-extraction KB answers each pair as its Wikidata property (`eval.lmkbc.WIKIDATA`), by the subject's id:
the set is every entity its graph holds there, scored by the extractor's confidence (the probability its classifier
gives the relation), so the same set rules apply. A property the KB holds no triple of answers empty sets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from eval.types import Answer, Prediction, Query, SetFact

if TYPE_CHECKING:  # the extracted KB loads only where a run asks it
    from kb.extraction.predictor import ExtractedKBPredictor


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


class ExtractedSetPredictor:
    """Every entity an extracted KB holds for the asked pair, asked as the relation's property and slot; a lookup
    answers all it holds, whatever the depth, as the gold KB."""

    ranks = "list"
    slots = ("object",)

    def __init__(self, kb: ExtractedKBPredictor, properties: Mapping[str, tuple[str, str]],
                 covered: Iterable[str]) -> None:
        self.name = kb.name
        self.kb = kb
        self._properties = dict(properties)  # relation -> (Wikidata property, slot asked)
        self._covered = frozenset(covered)  # the properties the KB holds triples of

    def uncovered(self, relations: Iterable[str]) -> list[str]:
        """The relations whose property the KB holds no triple of: their sets are always empty."""
        return [rel for rel in relations if self._properties[rel][0] not in self._covered]

    def describe(self) -> dict:
        return {**self.kb.describe(), "answers": "every entity the graph holds for the subject's Wikidata id",
                "slots": list(self.slots),
                "properties": {rel: {"property": prop, "slot": slot} for rel, (prop, slot) in self._properties.items()},
                "uncovered": self.uncovered(self._properties)}

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        from kb.store import entity_iri

        out = []
        for q in queries:
            prop, slot = self._properties[q.relation]
            held = self.kb.held(prop, slot) if prop in self._covered else {}
            out.append(Prediction(q.uid, held.get(str(entity_iri(q.known)), ()), shared_ties=True))
        return out
