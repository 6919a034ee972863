"""Entity-level answers: the masked position's output scored against mapped entity vectors.

A masked LM scores a word piece t at [MASK] as <o, E_B(t)> (+ bias), where o is the vector its
output layer receives and E_B is the (tied) word-piece embedding matrix. The E-BERT map puts every
entity into that same space (W·F(e)), so <o, W·F(e)> scores whole entities the same way, and a
multi-token object such as "Barack Obama" is answerable as one item. This is new relative to
LAMA, E-BERT and ERNIE, which rank single word pieces only: the numbers it gives measure whether
the model's [MASK] output points at the right entity in wikipedia2vec space, over all entities
of the index, not whether it can spell the object.

Ranks count within the returned list only. Ties (`eval.metrics`): entities with equal scores are
ordered by entity row; which of several entities tied at the cut are returned is the index's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from eval.types import Answer
from lm.entities.faiss_index import EntityIndex

Labeler = Callable[[int], tuple[str, str | None]]


def mapped_entities(entity_vectors: np.ndarray, W: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """W·F(e) for every entity row (chunked, so millions of rows do not need a float64 copy)."""
    out = np.empty((len(entity_vectors), W.shape[1]), dtype=np.float32)
    for start in range(0, len(entity_vectors), chunk):
        out[start:start + chunk] = np.asarray(entity_vectors[start:start + chunk], np.float32) @ W
    return out


class EntityAnswerer:
    """Top entities for [MASK] output vectors; `labeler(row)` gives (label, Wikidata id or None)."""

    def __init__(self, index: EntityIndex, labeler: Labeler) -> None:
        self.index = index
        self.labeler = labeler

    def answer(self, outputs: np.ndarray, depth: int,
               exclude: Sequence[int | None] | None = None) -> list[list[Answer]]:
        """Best `depth` entities per output row; `exclude[i]` (e.g. the subject itself) is skipped."""
        if not len(outputs):
            return []
        scores, rows = self.index.search(outputs, depth + 1)
        result = []
        for i in range(len(outputs)):
            skip = exclude[i] if exclude is not None else None
            answers = []
            hits = sorted(zip(scores[i].tolist(), rows[i].tolist()), key=lambda h: (-h[0], h[1]))
            for score, row in hits:
                if row < 0 or row == skip:
                    continue
                label, ident = self.labeler(int(row))
                answers.append(Answer(label, float(score), ident))
                if len(answers) == depth:
                    break
            result.append(answers)
        return result
