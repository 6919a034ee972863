"""A predictor's answer to a set-valued question: its ranked answers made objects, then cut by a set rule.

An answer with an id (a KB's, an entity-level answer) keeps it; one without goes through the label index
(`eval.disambiguate`), or, for a numeric relation, becomes the number it holds. Without a rule the set is
every object answered: what a KB holds (the gold graph, a relation-extraction KB). With one, the rule
of `eval.set_rules` cuts the ranked objects (`threshold-tuned` with the relation's tuned threshold).
Set rules read probabilities: a list holding a negative score is a list of log-probabilities (an LM's) and is
exponentiated; scores in [0, 1] (Freq's shares, the gold KB's 1) are taken as they are. An LM whose log scores
are no distribution over its answers (causal typed querying: a candidate's sentence log-likelihood; seq2seq: a
beam's length-normalised log-probability) gives their log-sum-exp (`LOG_NORM` in `Prediction.extra`): its
probabilities are the softmax of the scores over every answer it ranked (all of the relation's candidates, or
the distinct spans of the beams).
"""

from __future__ import annotations

import math

from eval.disambiguate import LabelIndex
from eval.set_metrics import distinct
from eval.set_rules import LOG_NORM, SetRule, apply_rule, parse_number
from eval.types import Prediction


def ranked_objects(pred: Prediction, index: LabelIndex, numeric: bool = False) -> list[tuple[str, float]]:
    """(object, score) best first, distinct objects, each at its first answer; numbers for a numeric relation."""
    out: dict[str, float] = {}
    for answer in pred.answers:
        if numeric:
            item = parse_number(answer.label)
        else:
            item = answer.id or index.resolve(answer.label)
        if item is not None and item not in out:
            out[item] = answer.score
    return list(out.items())


def as_probabilities(ranked: list[tuple[str, float]], norm: float | None = None) -> list[tuple[str, float]]:
    """Log scores normalised by `norm` (their log-sum-exp over every answer ranked); else log-probabilities (any
    score below 0) exponentiated; probabilities unchanged."""
    if norm is not None:
        return [(item, min(math.exp(score - norm), 1.0)) for item, score in ranked]
    if any(score < 0 for _, score in ranked):
        return [(item, math.exp(score)) for item, score in ranked]
    return ranked


def normaliser(pred: Prediction) -> float | None:
    """The log-sum-exp an LM gives with scores that are no distribution (None: the scores are probabilities or
    log-probabilities as they are)."""
    value = pred.extra.get(LOG_NORM) if pred.extra else None
    return float(value) if value is not None else None


def set_answer(pred: Prediction, index: LabelIndex, rule: SetRule | None = None, numeric: bool = False,
               tuned: float | None = None) -> list[str]:
    """The predicted set: every object answered (no rule), or the objects the rule keeps."""
    ranked = as_probabilities(ranked_objects(pred, index, numeric), normaliser(pred))
    if rule is None:
        return [item for item, _ in ranked]
    return apply_rule(rule, ranked, tuned)


def label_set(pred: Prediction, rule: SetRule | None = None) -> list[str]:
    """A ranked LAMA answer as a set of labels: the labels `rule` keeps (scores as probabilities), else a KB's
    answers tied at its top score when it holds them equally true (`shared_ties`: every object it holds for the
    subject), else the top answer alone (`top:1`)."""
    if rule is not None:
        first: dict[str, float] = {}
        for answer in pred.answers:  # best first: a repeated label keeps its first score
            first.setdefault(answer.label, answer.score)
        if rule.kind == "top":  # a cut by rank reads no probabilities (Freq's scores are counts)
            return list(first)[:int(rule.value)]
        return apply_rule(rule, as_probabilities(list(first.items()), normaliser(pred)))
    if not pred.answers:
        return []
    if pred.shared_ties:
        best = pred.answers[0].score
        return distinct(a.label for a in pred.answers if a.score == best)
    return [pred.answers[0].label]
