"""A FewRel classifier's recorded probabilities do not depend on which other sentences a call asks: a resume that
asks only the sentences a stopped run did not record writes the numbers an uninterrupted run writes.

float32 sums over a batch's padded inputs move with the batch's other sentences (its width, its rows), so the
stand-in for `predict_proba` here shifts every probability by the number of inputs it was given, as such sums do
in their last places."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge.predictors.relations import ClassifierPredictor, FormModel
from eval.fewrel import Sentence
from eval.types import Entity, Query

CLASSES = ["P177", "P361"]


@dataclass
class _Input:
    sentence: Sentence
    fallback: int = 0


class _Builder:
    def build(self, sentences, form):
        return [_Input(s) for s in sentences]

    def view(self, x, titles):
        return x.sentence.words


class _Trained:
    encoder = head = None

    def batcher(self, mapped):
        return None


def _batch_dependent(encoder, head, batcher, inputs, batch_size=64):
    """Probabilities of each sentence that move, in their last places, with how many sentences came along."""
    base = np.array([[0.25 + 0.01 * int(x.sentence.uid.split(":")[1]), 0.0] for x in inputs], dtype=np.float64)
    base[:, 1] = 1.0 - base[:, 0]
    return base + 1e-7 * len(inputs) * np.array([1.0, -1.0])


def _sentence(relation: str, row: int) -> Sentence:
    head, tail = Entity(f"h{row}", f"Q{row}"), Entity(f"t{row}", f"Q{row + 100}")
    return Sentence(f"{relation}:{row}", relation, (f"h{row}", "is", f"t{row}"), head, (0, 1), tail, (2, 3))


def _query(s: Sentence) -> Query:
    return Query(s.uid, s.uid, "fewrel", s.relation, s.head, "object", "[X] [Y]")


def test_a_resume_asking_the_rest_records_the_numbers_of_an_uninterrupted_run(monkeypatch):
    import lm.relation_classifier

    monkeypatch.setattr(lm.relation_classifier, "predict_proba", _batch_dependent)
    sentences = [_sentence("P177", k) for k in range(5)] + [_sentence("P361", k) for k in range(5, 8)]
    by_uid = {s.uid: s for s in sentences}

    def predictor() -> ClassifierPredictor:
        model = FormModel("bert", _Trained(), _Builder(), None, [])
        return ClassifierPredictor("bert", [model], by_uid, CLASSES, {}, batch_size=32)

    asked = [_query(s) for s in sentences[:5]]
    whole = {p.query_uid: p.answers for p in predictor().predict(asked, 10)}
    resumed = {p.query_uid: p.answers for p in predictor().predict(asked[3:], 10)}
    assert resumed == {uid: whole[uid] for uid in resumed}
    # a --limit sample of one sentence scores it as the whole relation does
    assert predictor().predict(asked[1:2], 10)[0].answers == whole[asked[1].uid]
