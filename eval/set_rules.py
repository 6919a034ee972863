"""From a ranked answer list to a set: the rules an LM predictor's `set=` option names.

A language model ranks answers; LM-KBC asks for a set, possibly empty. Three rules, all pure functions
over (item, probability) lists, best first:
- `threshold:X` keeps the items whose probability is strictly above X (the challenge's baseline:
  `score > threshold`); nothing above X is the empty set, an answer like any other.
- `top:K` keeps the first K items.
- `threshold-tuned` picks X per relation on the train split, the X of highest macro F1 there (ties go
  to the larger X: fewer answers), and applies it to the split scored.
Repeated items (two labels that map to one id) keep their first, highest probability.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eval.errors import ConfigError
from eval.set_metrics import true_positives
from eval.types import ID_JOIN
from eval.user_values import strict_float

Ranked = Sequence[tuple[str, float]]
SET_RULES = ("threshold:X", "top:K", "threshold-tuned")
# `Prediction.extra` key of LMs whose log scores are no distribution (causal typed querying, seq2seq beams):
# log of the sum of exp(score) over every answer ranked, so that exp(score - it) sums to 1 over them
LOG_NORM = "log_norm"


def log_norm(scores: Sequence[float]) -> float | None:
    """log(sum(exp(scores))), computed stably; None for no scores."""
    values = np.asarray(scores, dtype=np.float64)
    if not len(values):
        return None
    top = values.max()
    return float(top + np.log(np.exp(values - top).sum()))


@dataclass(frozen=True, slots=True)
class SetRule:
    """A parsed `set=` option: kind and its number (None for `threshold-tuned`)."""

    kind: str
    value: float | None = None

    def __str__(self) -> str:
        if self.kind == "top":
            return f"top:{int(self.value)}"
        return self.kind if self.value is None else f"{self.kind}:{self.value:g}"


def parse_set_rule(text: str) -> SetRule:
    """`threshold:0.1`, `top:3` or `threshold-tuned`; anything else is a ConfigError naming the forms."""
    kind, _, arg = text.partition(":")
    bad = ConfigError(f"set={text!r}: expected one of {', '.join(SET_RULES)} (X a probability in [0, 1], "
                      "K a whole number >= 1)")
    if kind == "threshold-tuned" and not arg:
        return SetRule("threshold-tuned")
    if kind == "threshold":
        try:
            value = strict_float(arg)
        except ValueError:
            raise bad from None
        if not 0.0 <= value <= 1.0:  # also refuses NaN
            raise bad
        return SetRule("threshold", value)
    if kind == "top" and re.fullmatch(r"[0-9]+", arg) and int(arg) >= 1:
        return SetRule("top", float(int(arg)))
    raise bad


def _check(ranked: Ranked) -> list[tuple[str, float]]:
    """Distinct items in rank order; a probability outside [0, 1] (or NaN) is a ConfigError."""
    seen: dict[str, float] = {}
    for item, prob in ranked:
        if not (isinstance(prob, (int, float)) and 0.0 <= prob <= 1.0):
            raise ConfigError(f"answer {item!r} has score {prob!r}: a set rule needs probabilities in [0, 1]")
        seen.setdefault(item, float(prob))
    return list(seen.items())


def above_threshold(ranked: Ranked, threshold: float) -> list[str]:
    """Items with probability strictly above `threshold`, in rank order."""
    return [item for item, prob in _check(ranked) if prob > threshold]


def top_k(ranked: Ranked, k: int) -> list[str]:
    """The first `k` distinct items."""
    return [item for item, _ in _check(ranked)[:k]]


def apply_rule(rule: SetRule, ranked: Ranked, tuned: float | None = None) -> list[str]:
    """The set a rule keeps; `threshold-tuned` needs the relation's tuned threshold."""
    if rule.kind == "top":
        return top_k(ranked, int(rule.value))
    threshold = rule.value if rule.kind == "threshold" else tuned
    if threshold is None:
        raise ConfigError("set=threshold-tuned needs a threshold tuned on the train split")
    return above_threshold(ranked, threshold)


@dataclass(frozen=True, slots=True)
class TuningPair:
    """One train pair: the ranked answers and the gold it is scored against."""

    ranked: Ranked
    gold_ids: tuple[str, ...]
    gold_labels: tuple[str, ...] = ()


def prefix_true_positives(items: Sequence[str], gold_ids: Sequence[str], gold_labels: Sequence[str] = ()
                          ) -> np.ndarray:
    """`true_positives(items[:n], ...)` for every n from 0 to len(items), in one pass: each item adds what it
    matches (a gold id, else a gold label), capped at the number of gold ids as `true_positives` caps."""
    gold = set(gold_ids)
    if any(ID_JOIN in item for item in items):  # an item naming several entities: which it counts as hangs on the rest
        return np.array([true_positives(items[:n], gold_ids, gold_labels) for n in range(len(items) + 1)])
    labels = set(gold_labels) - gold
    hits = np.fromiter((item in gold or item in labels for item in items), dtype=np.int64, count=len(items))
    return np.minimum(np.concatenate(([0], np.cumsum(hits))), len(gold))


def tune_threshold(pairs: Sequence[TuningPair]) -> float:
    """The threshold of highest macro F1 over `pairs` (one relation), trying 0 and every probability seen."""
    if not pairs:
        raise ConfigError("set=threshold-tuned: the train split has no pair of this relation to tune on")
    lists = [_check(p.ranked) for p in pairs]
    candidates = np.unique(np.array([0.0] + [prob for ranked in lists for _, prob in ranked]))
    total = np.zeros(len(candidates))
    for pair, ranked in zip(pairs, lists):
        gold = tuple(dict.fromkeys(pair.gold_ids))
        probs = np.array([prob for _, prob in ranked])
        # tp of each prefix of the rank order; the items above a threshold are a prefix when sorted
        order = np.argsort(-probs, kind="stable")
        items = [ranked[i][0] for i in order]
        tps = prefix_true_positives(items, gold, pair.gold_labels)
        n_pred = (probs[None, :] > candidates[:, None]).sum(axis=1)
        tp = tps[n_pred]
        p = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 1.0)
        r = tp / len(gold) if gold else np.ones(len(candidates))
        total += np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1.0), 0.0)
    best = total.max()
    # ties: the largest threshold among the best (np.isclose guards against summation order only)
    return float(candidates[np.flatnonzero(np.isclose(total, best, rtol=0, atol=1e-12))[-1]])


_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = dict(zip("twenty thirty forty fifty sixty seventy eighty ninety".split(), range(20, 100, 10)))
_WORDS = {w: i for i, w in enumerate(_UNITS)} | _TENS
_DIGITS = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+")
# digits standing as a word of their own: neither a letter nor a digit before them, no letter after ("52 episodes",
# not "179trotro" or "Career035")
_WORD_DIGITS = re.compile(r"(?<![^\W_])(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?![^\W_])")


def parse_number(text: str, word: bool = False) -> str | None:
    """The first whole number in an answer, as the challenge writes numbers ("1,024" and "one hundred
    and twelve" -> "1024", "112"); None when there is none. Digits win over words. `word`: digits count only
    as a word of their own, as a written answer states a number (a model's noise glues digits to letters)."""
    match = (_WORD_DIGITS if word else _DIGITS).search(text)
    if match:
        return str(int(match.group().replace(",", "")))
    words = re.findall(r"[a-z]+", text.lower().replace("-", " "))
    value, current, found = 0, 0, False
    for word in words:
        if word in _WORDS:
            current += _WORDS[word]
            found = True
        elif word == "hundred" and found:
            current = max(current, 1) * 100
        elif word == "thousand" and found:
            value, current = value + max(current, 1) * 1000, 0
        elif word == "and" and found:
            continue
        elif found:
            break
    return str(value + current) if found else None
