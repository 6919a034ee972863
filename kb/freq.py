"""LAMA's Freq baseline (§4.3): rank objects by how often they are objects of the relation.

Counts run over the test facts of each relation (every row, by object label, as LAMA compares
labels). An answer's id names every entity its count covers: P1376's "England" counts Q21 once and
Q179876 four times, and answers `Q179876|Q21` (`eval.types.entity_ids`), right for either.
Ties are broken by first occurrence in the data file, so the ranking is deterministic and equals
LAMA Table 2 (T-REx 22.03). The subject is ignored: every query of a relation gets the same
ranking; the filtered setting then removes that subject's other valid objects.
Subject queries (coherency's second direction) get the relation's subjects ranked the same way.
Ranks count within the returned list (`ranks = "list"`); the list holds every object of the relation.
SQuAD's cloze questions have no relation (one placeholder stands for all of them): Freq does not apply there
and drops them, as LAMA Table 2 shows "-" for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from eval.types import ID_JOIN, Answer, Fact, Prediction, Query

RELATIONLESS = ("squad",)  # corpora whose facts share one placeholder relation: no objects of a relation to count
ANSWER_IDS, ANSWER_IDS_NOW = "answer_ids", "every entity of its label"  # identity: records of older Freq differ
ID_SCORED = ("coherency",)  # experiments that score Freq's answers by id (LAMA's ranks compare labels)
NO_RELATION = "a SQuAD question has no relation: Freq has no relation's objects to count"


def _ranking(counts: dict[str, Counter], ids: dict[tuple[str, str], set[str]]
             ) -> dict[str, tuple[Answer, ...]]:
    # Counter.most_common is a stable sort on insertion order: first occurrence wins ties.
    return {rel: tuple(Answer(label, float(n), _joined(ids[(rel, label)])) for label, n in c.most_common())
            for rel, c in counts.items()}


def _joined(ids: set[str]) -> str | None:
    """The ids of the entities a label's count covers, sorted and joined by `ID_JOIN` (None where none has one)."""
    return ID_JOIN.join(sorted(ids)) if ids else None


class FreqPredictor:
    name = "freq"
    ranks = "list"
    slots = ("object", "subject")

    def __init__(self, facts: Iterable[Fact]) -> None:
        counts: dict[str, dict[str, Counter]] = {"object": {}, "subject": {}}
        ids: dict[str, dict[tuple[str, str], set[str]]] = {"object": {}, "subject": {}}
        for fact in facts:
            for slot, entity in (("object", fact.object), ("subject", fact.subject)):
                counts[slot].setdefault(fact.relation, Counter())[entity.label] += 1
                known = ids[slot].setdefault((fact.relation, entity.label), set())
                if entity.id is not None:
                    known.add(entity.id)
        self._ranked = {slot: _ranking(counts[slot], ids[slot]) for slot in self.slots}

    def flat_relations(self) -> list[str]:
        """Relations of more than one object where every object is equally frequent (BEAR balances its answers):
        there Freq's ranking is the data file's order, a chance-level baseline rather than a prior."""
        return [rel for rel, ranked in self._ranked["object"].items()
                if len(ranked) > 1 and ranked[0].score == ranked[-1].score]

    def describe(self) -> dict:
        flat = self.flat_relations()
        return {"predictor": "freq", "ties": "first occurrence in the data", "ranks": self.ranks,
                "slots": list(self.slots), **({"all_tied": flat} if flat else {})}

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        """Drop the facts of a corpus without relations, so that a ranking of one placeholder's objects (mostly
        tie order) is not scored as a frequency prior."""
        kept = [f for f in facts if f.corpus not in RELATIONLESS]
        gone = len(facts) - len(kept)
        return kept, ({NO_RELATION: gone} if gone else {})

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self._ranked[slot].get(relation, ()))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self._ranked[q.slot].get(q.relation, ())[:depth]) for q in queries]
