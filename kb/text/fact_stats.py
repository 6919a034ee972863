"""Per-fact text statistics of LAMA §5 (Fig. 3) and KMIR Fig. 2, counted over a text index.

SM / OM: paragraphs mentioning the subject / object label (or an alias), as phrases; wiki links
are not counted, because the LAMA evidence paragraphs link every fact they support and would
make every subject "mentioned". Co-occurrence is counted twice: paragraphs mentioning both, and
sentences mentioning both within those paragraphs. Sentences come from the paragraph text the
index returns, split by `sentences` and matched with the analyzer's tokens, so tantivy,
Elasticsearch and the brute-force `ScanIndex` give the same numbers.

Speed: every distinct mention is counted once and pairs go through `count_many` in batches;
only pairs that co-occur in some paragraph have their paragraphs fetched for the sentence count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from eval.types import Fact
from kb.text.analyzer import tokens
from kb.text.cooccur import Cooccur, mention_of
from kb.text.index import Mention, TextIndex

COLUMNS = ("uid", "relation", "sm", "om", "cooc_paragraphs", "cooc_sentences")
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[\"'(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")
ABBREVIATIONS = frozenset({"Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Prof", "Gen", "Col", "Lt", "Capt", "Rev",
                           "Mt", "No", "vs", "Inc", "Co", "Ltd", "Corp", "Jan", "Feb", "Aug", "Sept", "Oct",
                           "Nov", "Dec"})


def _abbreviation(before: str) -> bool:
    """`U.S.`, `J.` or `Mr.`: a full stop that does not end a sentence."""
    word = _LAST_WORD.search(before)
    if not word:
        return False
    last = word.group(1).rsplit(".", 1)[-1].lstrip("(\"'")
    return (len(last) == 1 and last.isupper()) or last in ABBREVIATIONS


def sentences(text: str) -> list[str]:
    """A paragraph cut after `.`, `!` or `?` before a capital or digit, not after initials and common
    abbreviations; never inside a token, so a phrase found in a sentence is one in its paragraph."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if text[m.start()] == "." and _abbreviation(text[start:m.start()]):
            continue
        out.append(text[start:m.start() + 1])
        start = m.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


def _has_phrase(toks: Sequence[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    first = phrase[0]
    return any(toks[i] == first and tuple(toks[i:i + n]) == phrase for i in range(len(toks) - n + 1))


def mentions_in(toks: Sequence[str], phrases: Sequence[tuple[str, ...]]) -> bool:
    return any(_has_phrase(toks, p) for p in phrases)


def sentence_count(texts: Sequence[str], a: Mention, b: Mention) -> int:
    """Sentences of `texts` mentioning both `a` and `b` by phrase."""
    pa, pb = a.token_phrases(), b.token_phrases()
    n = 0
    for text in texts:
        for sentence in sentences(text):
            toks = tokens(sentence)
            n += mentions_in(toks, pa) and mentions_in(toks, pb)
    return n


def fact_text_stats(facts: Sequence[Fact], index: TextIndex, progress: bool = False,
                    sentences_too: bool = True) -> list[dict]:
    """One row per fact: `COLUMNS` (SM, OM, co-occurrence in paragraphs and in sentences)."""
    from tqdm import tqdm

    co = Cooccur(index)
    pairs = [(mention_of(f.subject), mention_of(f.object)) for f in facts]
    counts = co.pairs(pairs, progress=progress)
    sentence_counts: dict[tuple[Mention, Mention], int] = {}
    rows = []
    for f, (a, b), c in tqdm(list(zip(facts, pairs, counts)), desc="sentences", unit="fact",
                             disable=not (progress and sentences_too)):
        n_sent: int | None = None
        if sentences_too:
            if not c.both:
                n_sent = 0
            elif (a, b) in sentence_counts:
                n_sent = sentence_counts[(a, b)]
            else:
                texts = [p.text for p in index.matching_paragraphs(a, b)]
                n_sent = sentence_counts[(a, b)] = sentence_count(texts, a, b)
        rows.append({"uid": f.uid, "relation": f.relation, "sm": c.a, "om": c.b, "cooc_paragraphs": c.both,
                     "cooc_sentences": n_sent})
    return rows
