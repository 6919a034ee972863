"""Sentences, entity mentions and mention pairs: what the extractor labels.

T-REx evidences give the subject surface and mark the object position (`[MASK]`), so both
annotated spans are mentions. Every sentence also gets the mentions a gazetteer of the corpus
entity labels finds (longest match first), which supply the "no relation" pairs and the
distractors a real extractor faces. Google-RE snippets carry no annotation: they are split into
sentences, and mentions are gazetteer matches (labels and aliases), runs of capitalised tokens
and years. Distant-supervision labels: a pair (m1, m2) of a sentence aligned to fact (s, r, o)
is labelled r when m1 names s and m2 names o.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from eval.types import Entity, Fact

TOKEN = re.compile(r"\w+(?:['\-]\w+)*|[^\w\s]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
YEAR = re.compile(r"1\d{3}|20\d{2}")
MAX_LABEL_TOKENS = 8
# Capitalised function words that start sentences: never the start of a name.
NOT_NAMES = frozenset(
    "A An And As At After Before Born By During For From He Her His However In It Its Later "
    "Of On She Since The Their Then There These They This Those To When While With".split()
)


@dataclass(frozen=True, slots=True)
class Mention:
    start: int  # token index
    end: int  # token index, exclusive
    text: str  # the surface string, exactly as in the sentence
    kind: str  # "sub"/"obj" (annotated), "gaz" (gazetteer), "cap" (name shape), "year"


@dataclass(slots=True)
class Sentence:
    text: str
    tokens: list[str]
    spans: list[tuple[int, int]]  # character span of each token
    mentions: list[Mention] = field(default_factory=list)
    gold: dict[tuple[int, int], set[str]] = field(default_factory=dict)  # mention pair -> relations
    facts: list[int] = field(default_factory=list)  # indices of the facts this sentence is evidence of

    def mention_at(self, start_char: int, end_char: int, kind: str) -> int | None:
        """Index of the mention covering the character span (added if new); None if no token."""
        toks = [i for i, (a, b) in enumerate(self.spans) if a < end_char and b > start_char]
        if not toks:
            return None
        start, end = toks[0], toks[-1] + 1
        for idx, m in enumerate(self.mentions):
            if m.start == start and m.end == end:
                return idx
        self.mentions.append(Mention(start, end, self.text[start_char:end_char], kind))
        return len(self.mentions) - 1


def tokenize(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    tokens, spans = [], []
    for m in TOKEN.finditer(text):
        tokens.append(m.group())
        spans.append(m.span())
    return tokens, spans


class Gazetteer:
    """Exact token-sequence lookup of entity names (labels, and aliases where given)."""

    def __init__(self, names: Iterable[str]) -> None:
        self._table: set[tuple[str, ...]] = set()
        self._sizes: dict[str, list[int]] = {}  # first token -> name lengths, longest first
        for name in names:
            toks = tuple(tokenize(name)[0])
            if not 0 < len(toks) <= MAX_LABEL_TOKENS or not any(t[0].isalnum() for t in toks):
                continue
            if len(toks) == 1 and len(name) <= 3 and not name[0].isupper():
                continue  # "in", "lb": aliases that are also common words
            self._table.add(toks)
            sizes = self._sizes.setdefault(toks[0], [])
            if len(toks) not in sizes:
                sizes.append(len(toks))
                sizes.sort(reverse=True)

    def __len__(self) -> int:
        return len(self._table)

    def find(self, tokens: Sequence[str], taken: set[int]) -> list[tuple[int, int]]:
        """Longest non-overlapping matches, left to right, avoiding tokens in `taken`."""
        found = []
        i, n = 0, len(tokens)
        while i < n:
            hit = 0
            for size in self._sizes.get(tokens[i], ()):
                if i + size > n:
                    continue
                if tuple(tokens[i:i + size]) in self._table and not taken.intersection(range(i, i + size)):
                    hit = size
                    break
            if hit:
                found.append((i, i + hit))
                i += hit
            else:
                i += 1
        return found


def entity_names(facts: Iterable[Fact], aliases: bool) -> set[str]:
    names: set[str] = set()
    for fact in facts:
        for ent in (fact.subject, fact.object):
            names.add(ent.label)
            if aliases:
                names.update(ent.aliases)
    return names


def _add_span_mentions(sent: Sentence, spans: list[tuple[int, int]], kind: str) -> None:
    for a, b in spans:
        sent.mention_at(sent.spans[a][0], sent.spans[b - 1][1], kind)


def _taken(sent: Sentence) -> set[int]:
    return {i for m in sent.mentions for i in range(m.start, m.end)}


def trex_sentences(facts: Sequence[Fact], gazetteer: Gazetteer) -> tuple[list[Sentence], dict[str, int]]:
    """One `Sentence` per distinct evidence text; counts of evidences that gave no labelled pair."""
    by_text: dict[str, Sentence] = {}
    dropped = {"no subject surface in the sentence": 0, "no [MASK] in the sentence": 0}
    for idx, fact in enumerate(facts):
        for ev in fact.evidences:
            masked = ev.masked or ""
            cut = masked.find("[MASK]")
            if cut < 0:
                dropped["no [MASK] in the sentence"] += 1
                continue
            obj_surface = ev.obj_surface or fact.object.label
            text = masked.replace("[MASK]", obj_surface)
            sent = by_text.get(text)
            if sent is None:
                sent = Sentence(text, *tokenize(text))
                by_text[text] = sent
            if idx not in sent.facts:
                sent.facts.append(idx)
            obj = sent.mention_at(cut, cut + len(obj_surface), "obj")
            sub = _find_surface(sent, ev.sub_surface or fact.subject.label, (cut, cut + len(obj_surface)))
            if sub is None or obj is None or sub == obj:
                dropped["no subject surface in the sentence"] += 1
                continue
            sent.gold.setdefault((sub, obj), set()).add(fact.relation)
    sentences = list(by_text.values())
    for sent in sentences:
        _add_span_mentions(sent, gazetteer.find(sent.tokens, _taken(sent)), "gaz")
    return sentences, dropped


def _find_surface(sent: Sentence, surface: str, avoid: tuple[int, int]) -> int | None:
    start = sent.text.find(surface)
    while start >= 0:
        end = start + len(surface)
        if end <= avoid[0] or start >= avoid[1]:
            return sent.mention_at(start, end, "sub")
        start = sent.text.find(surface, start + 1)
    return None


def split_sentences(snippet: str) -> list[str]:
    return [s for s in SENTENCE_END.split(snippet.strip()) if s]


def shape_mentions(tokens: Sequence[str], taken: set[int]) -> list[tuple[tuple[int, int], str]]:
    """Runs of capitalised tokens (names) and years, outside `taken`."""
    out: list[tuple[tuple[int, int], str]] = []
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if i in taken:
            i += 1
        elif YEAR.fullmatch(tok):
            out.append(((i, i + 1), "year"))
            i += 1
        elif tok[:1].isupper() and tok not in NOT_NAMES:
            j = i + 1
            while j < n and j not in taken and tokens[j][:1].isupper() and not YEAR.fullmatch(tokens[j]):
                j += 1
            out.append(((i, j), "cap"))
            i = j
        else:
            i += 1
    return out


def names_entity(text: str, entity: Entity, partial: bool) -> bool:
    """Does a mention name the entity? Exact label or alias; with `partial`, also a run of its name tokens."""
    if text == entity.label or text in entity.aliases:
        return True
    if not partial:
        return False
    toks = _words(text)
    for name in (entity.label, *entity.aliases):
        full = _words(name)
        if len(toks) < len(full) and any(full[i:i + len(toks)] == toks for i in range(len(full) - len(toks) + 1)):
            return toks[0][:1].isupper()
    return False


@lru_cache(maxsize=1 << 16)
def _words(text: str) -> tuple[str, ...]:
    """The tokens of a mention or a name: the same few names are matched against every mention of their snippets."""
    return tuple(tokenize(text)[0])


def snippet_sentences(facts: Sequence[Fact], gazetteer: Gazetteer) -> tuple[list[Sentence], dict[str, int]]:
    """Google-RE: sentences of the snippets, mentions by gazetteer and shape, pairs labelled by name match.

    A subject is also recognised by part of its name ("Stephen" for "John Stephen"), which Wikipedia
    uses after the first sentence; that widening only labels training pairs, linking stays exact.
    """
    by_text: dict[str, Sentence] = {}
    dropped = {"snippets with no sentence naming both subject and object": 0}
    for idx, fact in enumerate(facts):
        for ev in fact.evidences:
            labelled = False
            for text in split_sentences(ev.text):
                sent = by_text.get(text)
                if sent is None:
                    sent = Sentence(text, *tokenize(text))
                    _add_span_mentions(sent, gazetteer.find(sent.tokens, set()), "gaz")
                    for span, kind in shape_mentions(sent.tokens, _taken(sent)):
                        _add_span_mentions(sent, [span], kind)
                    by_text[text] = sent
                if idx not in sent.facts:
                    sent.facts.append(idx)
                subs = [i for i, m in enumerate(sent.mentions) if names_entity(m.text, fact.subject, True)]
                objs = [i for i, m in enumerate(sent.mentions) if names_entity(m.text, fact.object, False)]
                for s in subs:
                    for o in objs:
                        if s != o:
                            sent.gold.setdefault((s, o), set()).add(fact.relation)
                            labelled = True
            if not labelled:
                dropped["snippets with no sentence naming both subject and object"] += 1
    return list(by_text.values()), dropped


def candidate_pairs(sent: Sentence, window: int) -> list[tuple[int, int]]:
    """Ordered pairs of non-overlapping mentions at most `window` tokens apart; gold pairs always."""
    pairs = set(sent.gold)
    ms = sent.mentions
    for i, a in enumerate(ms):
        for j, b in enumerate(ms):
            if i == j or (a.start < b.end and b.start < a.end):
                continue
            gap = b.start - a.end if a.end <= b.start else a.start - b.end
            if gap <= window:
                pairs.add((i, j))
    return sorted(pairs)
