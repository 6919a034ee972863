"""The Predictor protocol over statement scoring: each query ranks a closed answer space (BEAR's, a relation's
objects, or a closed question's choices) by the score of the filled statement, exactly, whatever each
answer's number of tokens. Given each relation's subjects too, it asks subjects the same way (the
statement with the candidate at [X] and the known object at [Y]), as coherency's way back needs.

Ties follow `eval.metrics`: equal scores are ordered by answer-space order, in the answer list and in the
exact ranks alike. Causal LMs score the statements of one relation and template as one token tree, so
instances share the template text and the candidates before the subject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from eval.types import (
    ASKED_PROMPT,
    CHOICE_SCORES,
    CHOICE_SCORING,
    OBJECT_SLOT,
    SUBJECT_SLOT,
    Answer,
    Fact,
    Prediction,
    Query,
)
from lm.finite import NonFiniteScores
from lm.statement import CausalStatementScorer, MaskedStatementScorer, Statement, check_options, fill

MASK = "[MASK]"
NOT_IN_SPACE = "object is not in the answer space"
SUBJECT_NOT_IN_SPACE = "subject is not in the answer space"


class StatementPredictor:
    """Ranks each relation's answer space by statement score (PLL for masked LMs, log-likelihood for causal)."""

    ranks = "exact"  # every option is scored: Prediction.target_ranks holds exact ranks
    slots = ("object",)
    chunk_size = 64  # queries per call: a relation's statements share work within a call

    def __init__(self, name: str, scorer: MaskedStatementScorer | CausalStatementScorer,
                 answers: Mapping[str, Sequence[str]], *, reduction: str = "sum", compat: str | None = None,
                 source: str = "answer space", describe_extra: dict | None = None,
                 subjects: Mapping[str, Sequence[str]] | None = None) -> None:
        check_options(getattr(scorer, "pll", "within_word_l2r"), reduction)
        self.name = name
        self.scorer = scorer
        self.answers = {rel: list(dict.fromkeys(a)) for rel, a in answers.items()}
        self.subjects = {rel: list(dict.fromkeys(a)) for rel, a in (subjects or {}).items()}
        self._spaces = {"object": self.answers, "subject": self.subjects}
        self._sets = {slot: {rel: set(a) for rel, a in space.items()} for slot, space in self._spaces.items()}
        if subjects is not None:
            self.slots = ("object", "subject")
        self.reduction = reduction
        self.compat = compat
        self.source = source
        self._extra = describe_extra or {}

    def describe(self) -> dict:
        engine = getattr(self.scorer, "scorer", None)
        out = {
            "kind": "statement",
            "model": self.name,
            "scoring": "statement",
            "fingerprint": getattr(engine, "fingerprint", None),
            "dtype": getattr(engine, "dtype", None),
            "reduction": self.reduction,
            "compat": self.compat,
            "candidates": self.source,
            "candidates_per_relation": {rel: len(a) for rel, a in sorted(self.answers.items())},
            **({"subject_candidates_per_relation": {rel: len(a) for rel, a in sorted(self.subjects.items())}}
               if "subject" in self.slots else {}),
            "ranks": self.ranks,
            "ties": "answer-space order",
            "slots": list(self.slots),
            **self._extra,
        }
        if isinstance(self.scorer, MaskedStatementScorer):
            out["pll"] = self.scorer.pll
        return out

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self._spaces.get(slot, {}).get(relation, ()))

    work_unit = "statement"  # what the run's progress bar counts: a query's cost is its answer space's statements

    def work(self, query: Query) -> int:
        """The statements scored for `query`: one per option of its answer space."""
        return len(self._options(query))

    def cost(self, queries: Sequence[Query]) -> str:
        n = sum(len(self._options(q)) for q in queries)
        return f"statement scoring will score {n:,} statements ({len(queries):,} queries x their answer space)"

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        kept, dropped = [], {}
        space, reason = self._sets.get(slot, {}), NOT_IN_SPACE if slot == "object" else SUBJECT_NOT_IN_SPACE
        for fact in facts:
            asked = fact.object if slot == "object" else fact.subject
            if getattr(fact, "choices", ()) or asked.label in space.get(fact.relation, ()):
                kept.append(fact)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def _options(self, query: Query) -> list[str]:
        choices = getattr(query, "choices", ())
        return list(dict.fromkeys(choices)) if choices else self._spaces.get(query.slot, {}).get(query.relation, [])

    def statements(self, query: Query) -> list[Statement]:
        """The query's statement for each option; a context is read before it (coherency)."""
        if query.slot == "subject":
            out = [fill(query.template, o, query.known.label, self.compat, SUBJECT_SLOT) for o in self._options(query)]
        else:
            out = [fill(query.template, query.known.label, o, self.compat, OBJECT_SLOT) for o in self._options(query)]
        if not query.context:
            return out
        shift = len(query.context) + 1
        return [Statement(f"{query.context} {s.text}", (s.answer[0] + shift, s.answer[1] + shift)) for s in out]

    def prompt(self, query: Query) -> str:
        """The statement as scored with [MASK] at the asked slot (labels stripped, opening upper-cased as `fill`
        does), without the context read before it."""
        if query.slot == "subject":
            return fill(query.template, MASK, query.known.label, self.compat, SUBJECT_SLOT).text
        return fill(query.template, query.known.label, MASK, self.compat, OBJECT_SLOT).text

    def _scores(self, groups: list[list[Statement]], keys: list[tuple]) -> list[list[float]]:
        if isinstance(self.scorer, CausalStatementScorer):
            trees: dict[tuple, list[int]] = {}
            for i, key in enumerate(keys):
                trees.setdefault(key, []).append(i)
            out: list[list[float]] = [[] for _ in groups]
            for members in trees.values():
                flat = [s for i in members for s in groups[i]]
                scores = self.scorer.score_groups([flat], self.reduction)[0]
                at = 0
                for i in members:
                    out[i] = scores[at:at + len(groups[i])]
                    at += len(groups[i])
            return out
        flat = self.scorer.score([s for g in groups for s in g], self.reduction)
        out, at = [], 0
        for g in groups:
            out.append(flat[at:at + len(g)])
            at += len(g)
        return out

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        groups = [self.statements(q) for q in queries]
        try:
            scored = self._scores(groups, [(q.relation, q.template, q.slot, q.context is None) for q in queries])
        except NonFiniteScores as exc:
            asked = next((q for q, g in zip(queries, groups) if any(s.text in exc.bad for s in g)), None)
            raise (exc if asked is None else exc.for_fact(f"{asked.fact_uid} ({asked.relation})")) from None
        out = []
        for q, scores in zip(queries, scored):
            options = self._options(q)
            values = np.array(scores, dtype=np.float64)
            order = np.argsort(-values, kind="stable")  # ties: answer-space order
            rank = np.empty(len(options), dtype=np.int64)
            rank[order] = np.arange(1, len(options) + 1)
            where = {o: i for i, o in enumerate(options)}
            targets = {t: int(rank[where[t]]) for t in q.targets if t in where}
            answers = tuple(Answer(options[i], float(values[i])) for i in order[:depth])
            extra = {"n_candidates": len(options), "scoring": "statement"}  # `kbc show` lists every option
            if getattr(q, "choices", ()):  # a closed question: each choice's score, which its rank orders
                extra[CHOICE_SCORES] = {c: float(values[where[c]]) for c in q.choices if c in where}
                extra[CHOICE_SCORING] = "score of the statement with the choice at the answer slot (PLL for a masked " \
                                        "LM, log-likelihood for a causal one)"
            prompt = self.prompt(q)
            if prompt != q.text(MASK):  # the record holds the statement scored
                extra[ASKED_PROMPT] = prompt
            out.append(Prediction(q.uid, answers, False, extra, targets))
        return out
