"""Entity linking of extracted triples: LAMA's two regimes (§4.3).

RE_n (naive): both mentions of an extracted triple are linked by exact string match to the labels
of the KB entities (the subjects and objects of the corpus); a mention matching no label drops
the triple, one matching several entities links to each. RE_o (oracle): for a fact (s, r, o)
whose evidence sentence x yielded any triple of relation r, the triple (s, r, o) is added, with
the best confidence of those triples, whatever their mentions were; RE_o also keeps the naive
triples ("an oracle for entity linking in addition to string matching"). For Google-RE the
evidence of a fact is a snippet, so x is any sentence of that snippet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eval.types import Entity, Fact
from kb.extraction.candidates import Sentence

if TYPE_CHECKING:  # a type only: scikit-learn loads where extraction runs
    from kb.extraction.extractor import Extracted

TripleKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class ScoredTriple:
    subject: Entity
    relation: str
    object: Entity
    confidence: float

    @property
    def key(self) -> TripleKey:
        return self.subject.key, self.relation, self.object.key


class LabelIndex:
    """Exact label -> KB entities carrying it (first seen entity per key)."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        self._by_label: dict[str, dict[str, Entity]] = {}
        for fact in facts:
            for ent in (fact.subject, fact.object):
                self._by_label.setdefault(ent.label, {}).setdefault(ent.key, ent)

    def link(self, text: str) -> list[Entity]:
        return list(self._by_label.get(text, {}).values())


def _keep_best(out: dict[TripleKey, ScoredTriple], triple: ScoredTriple) -> None:
    old = out.get(triple.key)
    if old is None or triple.confidence > old.confidence:
        out[triple.key] = triple


def naive_triples(extracted: Iterable[Extracted], sentences: Sequence[Sentence],
                  index: LabelIndex) -> dict[TripleKey, ScoredTriple]:
    out: dict[TripleKey, ScoredTriple] = {}
    for t in extracted:
        sent = sentences[t.sentence]
        subjects = index.link(sent.mentions[t.m1].text)
        if not subjects:
            continue
        for obj in index.link(sent.mentions[t.m2].text):
            for sub in subjects:
                if sub.key != obj.key:
                    _keep_best(out, ScoredTriple(sub, t.relation, obj, t.confidence))
    return out


def oracle_triples(extracted: Iterable[Extracted], sentences: Sequence[Sentence],
                   facts: Sequence[Fact]) -> dict[TripleKey, ScoredTriple]:
    best: dict[tuple[int, str], float] = {}
    for t in extracted:
        k = (t.sentence, t.relation)
        best[k] = max(best.get(k, 0.0), t.confidence)
    out: dict[TripleKey, ScoredTriple] = {}
    for (idx, rel), conf in best.items():
        for fi in sentences[idx].facts:
            fact = facts[fi]
            if fact.relation == rel:
                _keep_best(out, ScoredTriple(fact.subject, rel, fact.object, conf))
    return out


def merge(*parts: dict[TripleKey, ScoredTriple]) -> dict[TripleKey, ScoredTriple]:
    out: dict[TripleKey, ScoredTriple] = {}
    for part in parts:
        for triple in part.values():
            _keep_best(out, triple)
    return out
