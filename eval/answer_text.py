"""From a generated text to answers: one answer or a set, an abstention, and each answer linked to a KB entity.

A model asked by generation writes prose, not a ranking. The answer is read from the first lines it writes:
bullet lines (`- A`, `* A`, `1. A`) are one item each; otherwise the first non-empty line, cut at a closing
full stop, with an `Answer:` prefix removed. A set splits that line on commas and semicolons (LM-KBC's baseline
splits on ", " and drops a leading "and "); a single answer keeps the line whole. A text that says none,
unknown, n/a or "I don't know" is an abstention: an empty set where the experiment asks for a set, no answer
where it asks for one. Items are linked to entities by label and alias (`eval.disambiguate.LabelIndex`); an
item naming no entity, or several, stays a string and is counted as unlinked, and so is a first line that holds
no answer at all ("::::"). An item "A and B" that names no entity is split once more where both halves do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval.disambiguate import LabelIndex

GENERATED = "generation"  # the raw generation's key in `Prediction.extra` and in records
# what a record of a generated answer keeps beside its answers: the exact prompt, the raw text, what was read from it
GENERATION_FIELDS = ("prompt", "prompt_text", GENERATED, "parsed", "unlinked", "abstained", "shots")
_YES, _NO = frozenset({"yes", "true", "correct"}), frozenset({"no", "false", "incorrect"})
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")
_PREFIX = re.compile(r"^\s*(?:the\s+)?answers?\b\s*(?:is|are)?\s*[:=-]?\s*", re.IGNORECASE)
_NONE = frozenset({"none", "unknown", "n/a", "na", "no answer", "no answers", "nobody", "nothing", "empty",
                   "i don't know", "i do not know", "not known", "there are none", "there is none"})
_TRIM = " \t\"'`*_.,;:!"


@dataclass(frozen=True)
class Parsed:
    """What a generation answered: its items in order (empty when it abstained or wrote nothing usable)."""

    items: tuple[str, ...]
    abstained: bool = False


def _clean(item: str) -> str:
    item = re.sub(r"\s+", " ", item).strip(_TRIM)
    return item[4:].strip(_TRIM) if item.lower().startswith("and ") else item


def is_abstention(text: str) -> bool:
    """Whether `text` (one line or item) says there is no answer."""
    return _clean(text).lower().rstrip(".!") in _NONE


def answer_lines(text: str) -> list[str]:
    """The answer part of a generation: its leading bullet lines, else its first non-empty line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    bullets = []
    for line in lines:
        match = _BULLET.match(line)
        if not match:
            break
        bullets.append(match.group(1))
    if bullets:
        return bullets
    first = _PREFIX.sub("", lines[0], count=1) if _PREFIX.match(lines[0]) and ":" in lines[0] else lines[0]
    # a sentence's closing full stop ends the answer ("Paris. It is the capital" -> "Paris")
    cut = re.split(r"(?<=[a-z\)])\.\s+(?=[A-Z])", first, maxsplit=1)[0]
    return [cut]


def parse_generation(text: str, many: bool) -> Parsed:
    """The answer (`many=False`) or the answer set (`many=True`) a generation states."""
    lines = answer_lines(text)
    if not lines or (len(lines) == 1 and is_abstention(lines[0])):
        return Parsed((), abstained=bool(lines))
    if many:
        parts = [p for line in lines for p in re.split(r"[,;]", line)]
    else:
        parts = lines[:1]
    items = [c for c in (_clean(p) for p in parts) if c and not is_abstention(c)]
    if not many:
        items = items[:1]
    abstained = not items and all(is_abstention(p) for p in parts)
    if not items and not abstained:  # text that is no answer ("::::"): an answer naming no entity, counted as such
        items = [lines[0].strip()]
    return Parsed(tuple(dict.fromkeys(items)), abstained=abstained)


def parse_yes_no(text: str) -> str | None:
    """"yes" or "no" as the first word of a generation's answer says it ("Yes, it is.", "False"); None when it
    says neither."""
    lines = answer_lines(text)
    word = re.match(r"\W*([A-Za-z]*)", lines[0]).group(1).lower() if lines else ""
    return "yes" if word in _YES else "no" if word in _NO else None


def generation_fields(extra: dict) -> dict:
    """The fields of `GENERATION_FIELDS` a generating predictor's `Prediction.extra` holds (none for a ranking one)."""
    return {key: extra[key] for key in GENERATION_FIELDS if key in extra} if GENERATED in extra else {}


def link_items(items: tuple[str, ...] | list[str], index: LabelIndex) -> list[tuple[str, str | None]]:
    """(item, entity id or None) per item; "A and B" naming no entity becomes A and B where both halves do."""
    out: list[tuple[str, str | None]] = []
    for item in items:
        found = _link(item, index)
        if found is None and " and " in item:
            halves = [h.strip(_TRIM) for h in item.split(" and ")]
            ids = [_link(h, index) for h in halves]
            if len(halves) == 2 and all(ids):
                out += list(zip(halves, ids))
                continue
        out.append((item, found))
    return out


def _link(item: str, index: LabelIndex) -> str | None:
    resolved = index.resolve(item)
    return None if resolved == item.strip() else resolved
