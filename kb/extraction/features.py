"""Features of an ordered mention pair (m1, m2): the words between and around them, and their shapes.

Only the sentence text is used: which mention came from an annotation, a gazetteer or a shape
rule is never a feature, and neither is any entity id. Words between the mentions carry the
direction (`>` when m1 comes first, `<` when m2 does), so a linear model can tell
"X was born in Y" from "Y was born in X".
"""

from __future__ import annotations

import re

from kb.extraction.candidates import YEAR, Sentence

MAX_BETWEEN_PHRASE = 6


def shape(text: str) -> str:
    """Xxx / xxx / dddd / XX ... with runs collapsed, plus the number of words (capped at 3)."""
    if YEAR.fullmatch(text):
        return "year"
    s = re.sub(r"[A-Z]", "X", text)
    s = re.sub(r"[a-z]", "x", s)
    s = re.sub(r"[0-9]", "d", s)
    s = re.sub(r"(.)\1+", r"\1", s)
    return f"{s[:8]}/{min(len(text.split()), 3)}"


def pair_features(sent: Sentence, i: int, j: int) -> list[str]:
    a, b = sent.mentions[i], sent.mentions[j]
    toks = sent.tokens
    fwd = a.end <= b.start
    first, second = (a, b) if fwd else (b, a)
    d = ">" if fwd else "<"
    between = [t.lower() for t in toks[first.end:second.start]]
    feats = [f"dir{d}", f"dist{d}{_bucket(len(between))}"]
    feats += [f"b{d}{w}" for w in between]
    feats += [f"bb{d}{x}_{y}" for x, y in zip(between, between[1:])]
    if len(between) <= MAX_BETWEEN_PHRASE:
        feats.append(f"bp{d}{' '.join(between)}")
    if between:
        feats += [f"bf{d}{between[0]}", f"bl{d}{between[-1]}"]
    left = [t.lower() for t in toks[max(0, first.start - 2):first.start]]
    right = [t.lower() for t in toks[second.end:second.end + 2]]
    feats += [f"l{d}{k}:{w}" for k, w in enumerate(reversed(left))]
    feats += [f"r{d}{k}:{w}" for k, w in enumerate(right)]
    for tag, m in (("m1", a), ("m2", b)):
        words = [w.lower() for w in toks[m.start:m.end]]
        feats.append(f"{tag}s:{shape(m.text)}")
        feats.append(f"{tag}h:{words[-1]}")
        feats += [f"{tag}w:{w}" for w in words]
    inside = sum(1 for m in sent.mentions if m.start >= first.end and m.end <= second.start)
    feats.append(f"ment{d}{min(inside, 3)}")
    return feats


def _bucket(n: int) -> str:
    for limit in (0, 1, 2, 3, 5, 8, 12, 20):
        if n <= limit:
            return str(limit)
    return "far"
