"""Facts to queries: LAMA asks each fact once, for its object, with the relation's template."""

from __future__ import annotations

from eval.lama import Corpus
from eval.types import Query, Slot


def make_queries(corpus: Corpus, slot: Slot = "object") -> dict[str, list[tuple[Query, object]]]:
    """Per relation, (query, fact) pairs in data order; query uids are unique within the corpus."""
    seen: set[str] = set()
    out: dict[str, list] = {rel: [] for rel in corpus.relations}
    for fact in corpus.facts:
        known = fact.subject if slot == "object" else fact.object
        template = fact.cloze or corpus.relations[fact.relation].template
        uid = fact.uid if slot == "object" else f"{fact.uid}:subject"
        n = 1
        while uid in seen:
            n += 1
            uid = f"{fact.uid}#{n}"
        seen.add(uid)
        out[fact.relation].append((Query(uid, fact.uid, corpus.name, fact.relation, known, slot, template), fact))
    return out
