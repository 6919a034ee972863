"""The one interface every answering side implements, KB or LM."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from eval.types import Prediction, Query


@runtime_checkable
class Predictor(Protocol):
    name: str

    def describe(self) -> dict:
        """Everything that determines this predictor's answers (stored in the run config)."""

    def predict(self, queries: Sequence[Query], depth: int) -> Iterable[Prediction]:
        """One prediction per query, in order, each with at least its `depth` best answers."""


def parameter_count(predictor) -> int | None:
    """The number of weights of the model a predictor asks (its scorer's `model`, or its own), else None. A
    stand-in for a predictor built elsewhere (a Ray actor's) carries the count its predictor gave there, so a run
    records the same metadata whichever executor answered it."""
    stated = getattr(predictor, "parameter_count", None)
    if isinstance(stated, int):
        return stated
    for holder in (getattr(predictor, "scorer", None), getattr(getattr(predictor, "scorer", None), "scorer", None),
                   predictor):
        model = getattr(holder, "model", None)
        if callable(getattr(model, "parameters", None)):
            try:
                return int(sum(p.numel() for p in model.parameters()))
            except (TypeError, AttributeError):
                return None
    return None
