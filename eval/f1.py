"""Token-level F1 and exact match with SQuAD's answer normalisation (KMIR §4.5).

KMIR scores open, multi-token answers as SQuAD does (Rajpurkar et al. 2016): lower-case, drop
punctuation and the articles a/an/the, collapse whitespace, then compare bags of tokens. One
choice beyond SQuAD v1.1's script: when either side normalises to nothing (an answer such as
"the"), F1 is 1 if both do and 0 otherwise, as SQuAD v2.0's script does; v1.1 gave 0 even when
both were empty, which would score an exact match as F1 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when both normalise to the same string, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall over the normalised answers (bags of tokens)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over_golds(prediction: str, golds: Iterable[str]) -> tuple[float, float]:
    """(F1, EM), each the best over several acceptable answers, as SQuAD scores multiple golds."""
    golds = list(golds)
    if not golds:
        raise ValueError("no gold answer to score against")
    return (max(f1_score(prediction, g) for g in golds), max(exact_match(prediction, g) for g in golds))
