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
