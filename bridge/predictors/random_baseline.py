"""`random`: the floor of every table, a predictor that ranks its candidates uniformly at random.

A closed question (a query with `choices`, as KMIR's yes/no and multiple-choice questions) ranks its
choices; any other query ranks the distinct objects (subjects, for subject queries) of its relation in
the corpus, the answer space Freq and typed querying use. Every candidate is ranked, so targets get
exact ranks and the expected P@1 is 1 / candidates (50% on a yes/no question).

The order depends only on `--set random.seed=N` and the query's uid, never on the batch a query comes
in or on what was asked before, so a resumed or repeated run ranks exactly alike.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence

from bridge.predictors.registry import PredictorContext
from bridge.run.options import Option, declares, number_option
from eval.types import CHOICE_SCORES, CHOICE_SCORING, Answer, Fact, Prediction, Query

NOT_IN_SET = "object is not an entity of the relation"
SEED = Option("seed", "seed of the random order (one order per query and seed)", "int", default="0")


class RandomPredictor:
    ranks = "exact"
    slots = ("object", "subject")

    def __init__(self, facts: Iterable[Fact], seed: int = 0) -> None:
        self.seed = seed
        table: dict[str, dict[str, dict[str, None]]] = {"object": {}, "subject": {}}
        for f in facts:
            table["object"].setdefault(f.relation, {})[f.object.label] = None
            table["subject"].setdefault(f.relation, {})[f.subject.label] = None
        self.candidates = {slot: {rel: list(labels) for rel, labels in by_rel.items()}
                           for slot, by_rel in table.items()}

    def describe(self) -> dict:
        return {"predictor": "random", "seed": self.seed, "ranks": self.ranks, "slots": list(self.slots),
                "candidates": "a closed question's choices, else the relation's entities in the corpus",
                "order": "uniform, seeded by seed and query uid"}

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self.candidates[slot].get(relation, ()))

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        kept, dropped = [], {}
        for fact in facts:
            asked = fact.object if slot == "object" else fact.subject
            if getattr(fact, "choices", ()) or asked.label in self.candidates[slot].get(fact.relation, ()):
                kept.append(fact)
            else:
                reason = NOT_IN_SET if slot == "object" else NOT_IN_SET.replace("object", "subject", 1)
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def order(self, query: Query) -> list[str]:
        """The query's candidates in their random order (the same for the same seed and uid)."""
        choices = getattr(query, "choices", ())
        cands = list(dict.fromkeys(choices)) if choices else list(self.candidates[query.slot].get(query.relation, ()))
        digest = hashlib.sha256(f"{self.seed}\x1f{query.uid}".encode()).digest()
        random.Random(digest).shuffle(cands)
        return cands

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        out = []
        for q in queries:
            ranked = self.order(q)
            rank = {label: i for i, label in enumerate(ranked, 1)}
            answers = tuple(Answer(label, -float(i)) for i, label in enumerate(ranked[:depth]))
            targets = {t: rank[t] for t in q.targets if t in rank}
            extra: dict = {"n_candidates": len(ranked)}
            if getattr(q, "choices", ()):  # a closed question: each choice's score, which its rank orders
                extra[CHOICE_SCORES] = {c: 1.0 - rank[c] for c in q.choices}
                extra[CHOICE_SCORING] = "minus the position in a seeded random order"
            out.append(Prediction(q.uid, answers, False, extra, targets))
        return out


@declares(SEED)
def make_random(name: str, ctx: PredictorContext) -> RandomPredictor:
    return RandomPredictor(ctx.corpus.facts, number_option(ctx.options, "seed", 0))
