"""Evidence contexts for queries (coherency paper §3.4): the fact's own evidence, or retrieved text.

Gold context: the fact's evidence (T-REx: the aligned sentences; Google-RE: the Wikipedia
snippets) with the gold object hidden, so the model has to read the relation from the text, not
copy the answer. The object is replaced by `PLACEHOLDER` (never a model's mask token, which would
give the input a second mask): at T-REx's [MASK] slot, and wherever the object label or its
surface form in the evidence (`obj_surface`) occurs, case-insensitively. An occurrence starts at
a word boundary; for strings of `MIN_PREFIX` characters or more it may end inside a word
("Iranian" -> "___ian", "Catholics" -> "___s"), shorter ones ("C", "art", "BBC") must end at a word
boundary, so that short objects do not blank out pieces of other words. Aliases are not masked
(Google-RE lists aliases such as "lb" for Lebanon).

Retrieved context: the BM25 top-k paragraphs of a text index (`kb.text`, built by
`kbc index build`) for the query's words; `exclude_gold` skips paragraphs aligned to the queried
fact. Nothing is masked there: finding the answer in retrieved text is the point.

How a context meets the prompt is the predictor's business: masked LMs read `context [SEP]
prompt`, truncating the context; causal LMs read the context before the prompt.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence

from eval.errors import ConfigError
from eval.types import Fact, Query

PLACEHOLDER = "___"
MIN_PREFIX = 4
EVIDENCE_MASK = "[MASK]"  # how LAMA's T-REx evidence marks the object
HOW_TO_INDEX = ("build one with `kbc index build` (the LAMA evidence text; --source dump for a Wikipedia dump), "
                "or pass the folder of an existing index")


@dataclasses.dataclass(frozen=True)
class _Hider:
    """The compiled pattern for some strings, and the characters they use."""

    pattern: re.Pattern | None
    chars: frozenset[str]

    def __call__(self, text: str, placeholder: str) -> str:
        if self.pattern is None:
            return text
        # a word-character placeholder sharing no character with the strings cannot make a new
        # occurrence (its neighbours still fail the word-boundary test): one pass is enough then
        once = placeholder.replace("_", "a").isalnum() and not self.chars & set(placeholder)
        for _ in range(1 if once else 10):
            text, n = self.pattern.subn(placeholder, text)
            if not n:
                break
        return text


def _hider(strings: Sequence[str]) -> _Hider:
    return _compiled(tuple(sorted({s for s in strings if s and s.strip()}, key=lambda s: (-len(s), s))))


@functools.lru_cache(maxsize=8192)
def _compiled(kept: tuple[str, ...]) -> _Hider:
    """Objects repeat across facts (T-REx has a few thousand): each pattern is compiled once."""
    parts = []
    for s in kept:
        tail = "" if len(s) >= MIN_PREFIX else r"(?!\w)"
        parts.append(r"(?<!\w)" + re.escape(s) + tail)
    pattern = re.compile("|".join(parts), re.IGNORECASE) if parts else None
    return _Hider(pattern, frozenset("".join(kept)))


def hide(text: str, strings: Sequence[str], placeholder: str = PLACEHOLDER) -> str:
    """`text` with every occurrence of `strings` (rules of the module docstring) replaced by `placeholder`."""
    return _hider(strings)(text, placeholder)


def leaks(text: str, label: str) -> bool:
    """Whether `label` still occurs in `text` by the rules `hide` removes it by."""
    pattern = _hider([label]).pattern
    return bool(pattern and pattern.search(text))


def gold_context(fact: Fact, k: int | None = 1, placeholder: str = PLACEHOLDER) -> str | None:
    """The first `k` distinct evidence texts of `fact` (all with None), gold object hidden; None without evidence."""
    return " ".join(gold_texts(fact, k, placeholder)) or None


def gold_texts(fact: Fact, k: int | None = 1, placeholder: str = PLACEHOLDER) -> list[str]:
    """The texts `gold_context` joins: how many there are says whether the fact had evidence."""
    hider = _hider([fact.object.label] + [ev.obj_surface for ev in fact.evidences if ev.obj_surface])
    texts: list[str] = []
    raw_seen: set[str] = set()
    for ev in fact.evidences:
        raw = ev.masked.replace(EVIDENCE_MASK, placeholder) if ev.masked else ev.text
        if raw in raw_seen:
            continue
        raw_seen.add(raw)
        text = hider(raw, placeholder)
        if text not in texts:
            texts.append(text)
        if k is not None and len(texts) == k:
            break
    return texts


@dataclasses.dataclass
class WithContext:
    """Queries with their context set, and how many got none (no evidence, nothing retrieved)."""

    queries: list[Query]
    missing: int


def with_gold_contexts(queries: Sequence[Query], facts: Mapping[str, Fact], k: int | None = 1) -> WithContext:
    out, missing = [], 0
    for q in queries:
        fact = facts.get(q.fact_uid)
        context = gold_context(fact, k) if fact else None
        missing += context is None
        out.append(dataclasses.replace(q, context=context))
    return WithContext(out, missing)


def query_words(query: Query) -> str:
    """The retrieval query: the prompt with the known entity and no slot (as `kb.text.retrieval`)."""
    return re.sub(r"\s+", " ", query.text(" ")).strip()


def retrieved_context(index, query: Query, k: int = 1, exclude_gold: bool = False) -> str | None:
    """The top-k paragraphs of `index` (a `kb.text.index.TextIndex`) for the query's words, joined.

    `exclude_gold` leaves out paragraphs aligned to the queried fact (their `facts` hold its uid).
    """
    return " ".join(retrieved_paragraphs(index, query, k, exclude_gold)) or None


MAX_FETCH = 1000  # hits fetched at most to find k paragraphs that are not the fact's own


def retrieved_paragraphs(index, query: Query, k: int = 1, exclude_gold: bool = False) -> list[str]:
    """The paragraphs `retrieved_context` joins: fewer than `k` only where the index holds no more for the words.

    Without the fact's own paragraphs, more hits are fetched (up to `MAX_FETCH`) until k others are found: a
    well-covered subject's own paragraphs may fill the first hits."""
    if index is None:
        raise ConfigError(f"retrieved contexts need a text index: {HOW_TO_INDEX}")
    words = query_words(query)
    if not exclude_gold:
        return [h.paragraph.text for h in index.search(words, k)]
    n = k * 3 + 10
    while True:
        hits = index.search(words, n)
        kept = [h for h in hits if query.fact_uid not in h.paragraph.facts]
        if len(kept) >= k or len(hits) < n or n >= MAX_FETCH:
            return [h.paragraph.text for h in kept[:k]]
        n = min(n * 4, MAX_FETCH)


def with_retrieved_contexts(queries: Sequence[Query], index, k: int = 1, exclude_gold: bool = False) -> WithContext:
    out, missing = [], 0
    for q in queries:
        context = retrieved_context(index, q, k, exclude_gold)
        missing += context is None
        out.append(dataclasses.replace(q, context=context))
    return WithContext(out, missing)
