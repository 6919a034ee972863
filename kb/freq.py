"""LAMA's Freq baseline (§4.3): rank objects by how often they are objects of the relation.

Counts run over the test facts of each relation (every row, by object label, as LAMA compares
labels). Ties are broken by first occurrence in the data file, so the ranking is deterministic
and equals LAMA Table 2 (T-REx 22.03). The subject is ignored: every query of a relation gets
the same ranking; the filtered setting then removes that subject's other valid objects.
Ranks count within the returned list (`ranks = "list"`); the list holds every object of the relation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from eval.types import Answer, Fact, Prediction, Query


class FreqPredictor:
    name = "freq"
    ranks = "list"

    def __init__(self, facts: Iterable[Fact]) -> None:
        counts: dict[str, Counter] = {}
        ids: dict[tuple[str, str], str | None] = {}
        for fact in facts:
            counts.setdefault(fact.relation, Counter())[fact.object.label] += 1
            ids.setdefault((fact.relation, fact.object.label), fact.object.id)
        # Counter.most_common is a stable sort on insertion order: first occurrence wins ties.
        self._ranked = {
            rel: tuple(Answer(label, float(n), ids[(rel, label)]) for label, n in c.most_common())
            for rel, c in counts.items()
        }

    def describe(self) -> dict:
        return {"predictor": "freq", "ties": "first occurrence in the data", "ranks": self.ranks}

    def answer_space_size(self, relation: str) -> int:
        return len(self._ranked.get(relation, ()))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self._ranked.get(q.relation, ())[:depth]) for q in queries]
