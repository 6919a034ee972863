"""Non-finite scores (NaN, infinity) are an error, never a rank.

A NaN compares false with every other score, so counting "candidates scoring higher" would give
every gold object rank 1, and a NaN written into a record is not JSON. A model that gives them
for every input is damaged (or overflows in its dtype); one that gives them for some inputs is
named with the first such input, or with its fact once the predictor knows it.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.errors import KbcError


class NonFiniteScores(KbcError):
    """Scores that are NaN or infinite: `bad` are the inputs that got them, out of `total` scored together."""

    def __init__(self, model: str, bad: Sequence[str], total: int, fact: str | None = None,
                 check: bool = False) -> None:
        self.model, self.bad, self.total, self.fact, self.check = model, list(bad), total, fact, check
        super().__init__(self._message())

    def _message(self) -> str:
        if self.check or (len(self.bad) >= self.total > 1 and self.fact is None):
            return (f"{self.model}: the model gives non-finite scores (NaN or infinity) for every input it was tried "
                    "on; its weights hold NaN or infinity, or overflow in this dtype, so it cannot be scored (check "
                    "the checkpoint, or use --dtype float32)")
        what = f"fact {self.fact}" if self.fact else f"input {self.bad[0][:200]!r}"
        return (f"{self.model}: non-finite score (NaN or infinity) for {what} ({len(self.bad)} of {self.total} "
                "inputs scored together); no rank can be given to it (check the checkpoint, or use --dtype float32)")

    def for_fact(self, fact: str) -> NonFiniteScores:
        """The same error naming the fact of the first bad input (a predictor knows which fact asked it)."""
        if len(self.bad) >= self.total > 1:
            return self  # every input of the batch: the model, not one fact
        return NonFiniteScores(self.model, self.bad, self.total, fact)


def text_of(item: object) -> str:
    """An input as text: a prompt, or (context, prompt) shown as the prompt."""
    return item if isinstance(item, str) else str(item[-1]) if isinstance(item, tuple) and item else str(item)
