"""Which relations a graph store holds between two entities: the symbolic side of relation classification.

For a sentence whose head and tail carry Wikidata ids, the KB's answer is every relation it holds from the head
to the tail in the graphs named (the gold graphs of a corpus, and the graph of facts derived by the axioms).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from eval.types import Entity
from kb.store import GraphStore, entity_iri, graph_iri, relation_key

BATCH = 200  # entity pairs per SPARQL request


def relations_between(store: GraphStore, pairs: Iterable[tuple[Entity, Entity]], graphs: Sequence[str]
                      ) -> dict[tuple[str, str], set[str]]:
    """(head key, tail key) -> relation ids held from head to tail in any of `graphs` (labels excluded)."""
    unique = list(dict.fromkeys((h.key, t.key, str(entity_iri(h)), str(entity_iri(t))) for h, t in pairs))
    out: dict[tuple[str, str], set[str]] = {(h, t): set() for h, t, _, _ in unique}
    if not graphs or not unique:
        return out
    by_iri = {(hi, ti): (h, t) for h, t, hi, ti in unique}
    named = " ".join(f"<{graph_iri(g)}>" for g in graphs)
    for start in range(0, len(unique), BATCH):
        values = " ".join(f"(<{hi}> <{ti}>)" for _, _, hi, ti in unique[start:start + BATCH])
        rows = store.select(f"SELECT DISTINCT ?h ?t ?p WHERE {{ VALUES (?h ?t) {{ {values} }} VALUES ?g {{ {named} }} "
                            f"GRAPH ?g {{ ?h ?p ?t }} FILTER(?p != rdfs:label) }}")
        for h, t, p in rows:
            out[by_iri[(str(h), str(t))]].add(relation_key(str(p)))
    return out
