"""The one analyzer both backends use, so they index and query the same terms.

Tokens are runs of letters, digits and `_`, joined across single `'` or `.` inside a word
(`O'Brien's`, `U.S`, `3.14`, `the_end` stay one token), then lowercased. The same pattern is
registered as tantivy's regex tokenizer and as an Elasticsearch `pattern` tokenizer; Python's
`\\w` is exactly `[\\p{L}\\p{N}_]`, so `tokens()` here reproduces both for query building and
for the brute-force scan the tests and the benchmark compare against.
"""

from __future__ import annotations

import re
from collections import Counter

NAME = "kbc_words"
PATTERN = r"[\p{L}\p{N}_]+(?:['.][\p{L}\p{N}_]+)*"
_PY = re.compile(r"\w+(?:['.]\w+)*")


def surface_tokens(text: str) -> list[str]:
    """Tokens with their case kept (readers match cased candidate vocabularies)."""
    return _PY.findall(text)


def tokens(text: str) -> list[str]:
    """Index terms of `text`, in order."""
    return [t.lower() for t in _PY.findall(text)]


def term_counts(text: str) -> Counter:
    """Bag of words for a BM25 query: each distinct term with its count (used as its boost)."""
    return Counter(tokens(text))


def es_analysis() -> dict:
    """Elasticsearch index settings defining the same analyzer."""
    return {
        "tokenizer": {NAME: {"type": "pattern", "pattern": PATTERN, "group": 0}},
        "analyzer": {NAME: {"type": "custom", "tokenizer": NAME, "filter": ["lowercase"]}},
    }


def tantivy_analyzer():
    import tantivy

    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(PATTERN)).filter(tantivy.Filter.lowercase()).build()
