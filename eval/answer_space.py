"""A short-list predictor asked over closed answer spaces (BEAR): its answers cut to each relation's answer space.

KB predictors that read LAMA's text (relation extraction, retrieval) answer whatever they find; a BEAR fact is a
multiple choice, so an answer outside the relation's answer space would count as a wrong pick that no option
names. The wrapper keeps the predictor's order, maps answers onto the space by Wikidata id (else by exact label),
relabels them with the space's labels, and keeps one answer per option, so ranks and P@k count only options.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from eval.errors import DataError
from eval.types import Answer, Entity, Prediction, Query, Relation, entity_ids

UNBOUNDED = 1 << 30  # the inner predictor's whole list: options may sit behind answers outside the space


def has_closed_spaces(relations: Mapping[str, Relation]) -> bool:
    """Every relation has its own answer space (BEAR): its facts are multiple choices."""
    return bool(relations) and all(r.answer_space for r in relations.values())


class AnswerSpacePredictor:
    """`inner`'s answers restricted to each relation's `answer_space`, in `inner`'s order."""

    slots = ("object",)  # a closed answer space ranks objects only

    def __init__(self, inner, relations: Mapping[str, Relation]) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "predictor")
        self.ranks = getattr(inner, "ranks", "list")
        self._spaces = {rel: r.answer_space for rel, r in relations.items()}
        self._by_id = {rel: {e.id: e for e in space if e.id} for rel, space in self._spaces.items()}
        self._by_label = {rel: {e.label: e for e in space} for rel, space in self._spaces.items()}

    def describe(self) -> dict:
        return {**self.inner.describe(), "answer_space": "each relation's (answers outside it are left out)"}

    def answer_space_size(self, relation: str, slot: str = "object") -> int:
        return len(self._spaces.get(relation, ()))

    def option(self, relation: str, answer: Answer) -> Entity | None:
        """The answer-space entity an answer names: same Wikidata id (one of an answer naming several, the one
        of its label where two are in the space), else same label; None outside the space."""
        by_id = self._by_id.get(relation, {})
        found = [by_id[i] for i in sorted(entity_ids(answer.id)) if i in by_id]
        same = [e for e in found if e.label == answer.label]
        return (same or found or [self._by_label.get(relation, {}).get(answer.label)])[0]

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        out = []
        for query, pred in zip(queries, self.inner.predict(queries, UNBOUNDED)):
            kept: dict[str, Answer] = {}
            for answer in pred.answers:
                entity = self.option(query.relation, answer)
                if entity is not None and entity.label not in kept:
                    kept[entity.label] = Answer(entity.label, answer.score, entity.id)
            out.append(dataclasses.replace(pred, answers=tuple(kept.values())[:depth]))
        return out


def lama_data_for(data_dir: str | Path) -> Path:
    """The LAMA copy whose text KB predictors read on a BEAR run: `$KBC_DATA`, else a `lama/` folder beside the
    BEAR data (its parent's or grandparent's)."""
    from eval.datadir import absolute_path, resolve_data_dir

    root = absolute_path(data_dir)
    env = os.environ.get("KBC_DATA")
    for cand in ([Path(env)] if env else []) + [root.parent / "lama", root.parent.parent / "lama"]:
        if cand.is_dir():
            try:
                return resolve_data_dir(cand)
            except DataError:
                continue
    raise DataError(f"relation extraction and retrieval on BEAR read LAMA's text: no LAMA data in $KBC_DATA or "
                    f"beside {root}; set KBC_DATA to a LAMA copy")
