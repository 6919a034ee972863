"""Features of an ordered mention pair (m1, m2): the words between and around them, and their shapes.

Only the sentence text is used: which mention came from an annotation, a gazetteer or a shape
rule is never a feature, and neither is any entity id. Words between the mentions carry the
direction (`>` when m1 comes first, `<` when m2 does), so a linear model can tell
"X was born in Y" from "Y was born in X".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from kb.extraction.candidates import YEAR, Sentence

MAX_BETWEEN_PHRASE = 6


@lru_cache(maxsize=1 << 16)
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
    return next(sentence_pair_features(sent, [(i, j)]))


def sentence_pair_features(sent: Sentence, pairs: Iterable[tuple[int, int]]) -> Iterator[list[str]]:
    """`pair_features` of each pair of one sentence; its lower-cased words and each mention's own features are
    made once, not once a pair (a sentence has many pairs)."""
    toks = [t.lower() for t in sent.tokens]
    own = [(shape(m.text), toks[m.end - 1], toks[m.start:m.end]) for m in sent.mentions]
    for i, j in pairs:
        a, b = sent.mentions[i], sent.mentions[j]
        fwd = a.end <= b.start
        first, second = (a, b) if fwd else (b, a)
        d = ">" if fwd else "<"
        between = toks[first.end:second.start]
        feats = [f"dir{d}", f"dist{d}{_bucket(len(between))}"]
        feats += [f"b{d}{w}" for w in between]
        feats += [f"bb{d}{x}_{y}" for x, y in zip(between, between[1:])]
        if len(between) <= MAX_BETWEEN_PHRASE:
            feats.append(f"bp{d}{' '.join(between)}")
        if between:
            feats += [f"bf{d}{between[0]}", f"bl{d}{between[-1]}"]
        left = toks[max(0, first.start - 2):first.start]
        right = toks[second.end:second.end + 2]
        feats += [f"l{d}{k}:{w}" for k, w in enumerate(reversed(left))]
        feats += [f"r{d}{k}:{w}" for k, w in enumerate(right)]
        for tag, m in (("m1", i), ("m2", j)):
            kind, head, words = own[m]
            feats.append(f"{tag}s:{kind}")
            feats.append(f"{tag}h:{head}")
            feats += [f"{tag}w:{w}" for w in words]
        inside = sum(1 for m in sent.mentions if m.start >= first.end and m.end <= second.start)
        feats.append(f"ment{d}{min(inside, 3)}")
        yield feats


def _bucket(n: int) -> str:
    for limit in (0, 1, 2, 3, 5, 8, 12, 20):
        if n <= limit:
            return str(limit)
    return "far"
