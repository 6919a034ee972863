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
    """`pair_features` of each pair of one sentence; its lower-cased words, the features of each word and word pair
    in both directions and each mention's own features are made once, not once a pair (a sentence has many
    pairs), and a pair's are slices of them."""
    toks = [t.lower() for t in sent.tokens]
    words = {d: [f"b{d}{w}" for w in toks] for d in "<>"}
    bigrams = {d: [f"bb{d}{x}_{y}" for x, y in zip(toks, toks[1:])] for d in "<>"}
    own = []
    for m in sent.mentions:
        kind, head, inner = shape(m.text), toks[m.end - 1], toks[m.start:m.end]
        own.append({tag: [f"{tag}s:{kind}", f"{tag}h:{head}", *(f"{tag}w:{w}" for w in inner)]
                    for tag in ("m1", "m2")})
    for i, j in pairs:
        a, b = sent.mentions[i], sent.mentions[j]
        fwd = a.end <= b.start
        first, second = (a, b) if fwd else (b, a)
        d = ">" if fwd else "<"
        start, end = first.end, second.start
        between = toks[start:end]
        feats = [f"dir{d}", f"dist{d}{_bucket(len(between))}", *words[d][start:end],
                 *bigrams[d][start:max(start, end - 1)]]
        if len(between) <= MAX_BETWEEN_PHRASE:
            feats.append(f"bp{d}{' '.join(between)}")
        if between:
            feats += [f"bf{d}{between[0]}", f"bl{d}{between[-1]}"]
        left = toks[max(0, first.start - 2):first.start]
        right = toks[second.end:second.end + 2]
        feats += [f"l{d}{k}:{w}" for k, w in enumerate(reversed(left))]
        feats += [f"r{d}{k}:{w}" for k, w in enumerate(right)]
        feats += own[i]["m1"]
        feats += own[j]["m2"]
        inside = sum(1 for m in sent.mentions if m.start >= start and m.end <= end)
        feats.append(f"ment{d}{min(inside, 3)}")
        yield feats


def _bucket(n: int) -> str:
    for limit in (0, 1, 2, 3, 5, 8, 12, 20):
        if n <= limit:
            return str(limit)
    return "far"
