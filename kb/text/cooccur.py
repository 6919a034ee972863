"""Co-occurrence counts over a text index: paragraphs mentioning A, B, and both; PMI scores.

What this gives the papers:
- LAMA Fig. 3: SM / OM, how often a fact's subject / object is mentioned (`fact_mentions`).
- KMIR §5.2, Fig. 2: the "ES score", paragraphs in which the query's entities co-occur with the
  words of the answer (`kmir_score`).
A mention is any label or alias as a phrase, or a wiki link to the entity's page when the
paragraphs carry links. `ScanIndex` counts the same by scanning every paragraph; tests and the
benchmark check the index against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from eval.types import Entity, Fact
from kb.text.analyzer import tokens
from kb.text.index import Mention, TextIndex
from kb.text.paragraphs import Paragraph


@dataclass(frozen=True, slots=True)
class Cooccurrence:
    """Paragraph counts: mentioning A, B, both, and all paragraphs of the index."""

    a: int
    b: int
    both: int
    total: int

    @property
    def pmi(self) -> float | None:
        """log p(A,B) / (p(A) p(B)); None when A and B never co-occur."""
        if not self.both:
            return None
        return math.log(self.both * self.total / (self.a * self.b))

    @property
    def npmi(self) -> float | None:
        """PMI scaled to [-1, 1] (Bouma 2009); 1 when A and B only occur together."""
        if not self.both:
            return None
        if self.both == self.total:
            return 1.0
        return self.pmi / -math.log(self.both / self.total)

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "both": self.both, "total": self.total, "pmi": self.pmi,
                "npmi": self.npmi}


def mention_of(entity: Entity, by_link: bool = False) -> Mention:
    """Label and aliases as phrases; with `by_link`, a link to the page titled by the label too."""
    return Mention.of(entity.label, entity.aliases, entity.label if by_link else None)


class Cooccur:
    """Counts over one index; single-entity counts are cached, pairs are sent in batches."""

    def __init__(self, index: TextIndex) -> None:
        self.index = index
        self.total = len(index)
        self._single: dict[Mention, int] = {}

    def _singles(self, mentions: Iterable[Mention]) -> None:
        todo = list(dict.fromkeys(m for m in mentions if m not in self._single))
        for m, n in zip(todo, self.index.count_many([[m] for m in todo])):
            self._single[m] = n

    def mentions(self, mention: Mention) -> int:
        self._singles([mention])
        return self._single[mention]

    def pair(self, a: Mention, b: Mention) -> Cooccurrence:
        return self.pairs([(a, b)])[0]

    def pairs(self, pairs: Sequence[tuple[Mention, Mention]], progress: bool = False,
              batch: int = 1_000) -> list[Cooccurrence]:
        """Counts for thousands of pairs: each distinct mention counted once, pairs in batches."""
        from tqdm import tqdm

        self._singles(m for pair in pairs for m in pair)
        out: list[Cooccurrence] = []
        with tqdm(total=len(pairs), desc="co-occurrence", unit="pair", disable=not progress) as bar:
            for start in range(0, len(pairs), batch):
                chunk = pairs[start:start + batch]
                for (a, b), both in zip(chunk, self.index.count_many([list(p) for p in chunk])):
                    out.append(Cooccurrence(self._single[a], self._single[b], both, self.total))
                bar.update(len(chunk))
        return out

    def fact_mentions(self, facts: Sequence[Fact], by_link: bool = False, progress: bool = False) -> list[dict]:
        """Per fact: subject mentions (LAMA's SM), object mentions (OM), and both together."""
        pairs = [(mention_of(f.subject, by_link), mention_of(f.object, by_link)) for f in facts]
        counts = self.pairs(pairs, progress=progress)
        return [{"uid": f.uid, "relation": f.relation, "subject": f.subject.label, "object": f.object.label,
                 "sm": c.a, "om": c.b, "both": c.both, "pmi": c.pmi} for f, c in zip(facts, counts)]

    def kmir_score(self, query_entities: Sequence[Mention], answer: str) -> Cooccurrence:
        """KMIR's ES score: paragraphs with every query entity and every answer word (`both`).

        `a` counts paragraphs with all query entities, `b` those with all answer words.
        """
        words = [Mention((w,)) for w in dict.fromkeys(tokens(answer))]
        qs, ws = list(query_entities), words
        a, b, both = self.index.count_many([qs, ws, qs + ws])
        return Cooccurrence(a, b, both, self.total)


class ScanIndex:
    """Counts by scanning every paragraph (no index): the reference the index is checked against."""

    backend = "scan"

    def __init__(self, paragraphs: Iterable[Paragraph]) -> None:
        self._paragraphs = list(paragraphs)
        self._rows = [(p.pid, tuple(tokens(p.text)), frozenset(p.links)) for p in self._paragraphs]
        self._sets = [frozenset(toks) for _, toks, _ in self._rows]

    def __len__(self) -> int:
        return len(self._rows)

    @staticmethod
    def _has_phrase(toks: tuple[str, ...], vocab: frozenset, phrase: tuple[str, ...]) -> bool:
        if not all(t in vocab for t in phrase):
            return False
        n = len(phrase)
        first = phrase[0]
        return any(toks[i] == first and toks[i:i + n] == phrase for i in range(len(toks) - n + 1))

    def _matches(self, i: int, mention: Mention, phrases: list[tuple[str, ...]]) -> bool:
        _, toks, links = self._rows[i]
        if mention.link and mention.link in links:
            return True
        return any(self._has_phrase(toks, self._sets[i], p) for p in phrases)

    def matching(self, *mentions: Mention) -> Iterator[str]:
        prepared = [(m, m.token_phrases()) for m in mentions]
        for i, (pid, _, _) in enumerate(self._rows):
            if all(self._matches(i, m, ph) for m, ph in prepared):
                yield pid

    def matching_paragraphs(self, *mentions: Mention) -> Iterator[Paragraph]:
        prepared = [(m, m.token_phrases()) for m in mentions]
        for i, p in enumerate(self._paragraphs):
            if all(self._matches(i, m, ph) for m, ph in prepared):
                yield p

    def count(self, *mentions: Mention) -> int:
        return sum(1 for _ in self.matching(*mentions))

    def count_many(self, groups: Sequence[Sequence[Mention]]) -> list[int]:
        return [self.count(*g) for g in groups]

    def doc_freq(self, term: str) -> int:
        return sum(1 for s in self._sets if term in s)
