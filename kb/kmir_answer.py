"""The graph store answering KMIR questions: `kb` reads the gold graphs, `kb-inferred` adds their closure.

Each question kind is answered by lookups, under the closed-world reading a KB gives:
- triple completion: an object the graphs hold for (subject, relation) (the first by label);
- statement checking: "yes" when the graphs hold the stated triple, else "no";
- entity distinction: the only choice lacking a category the three others share (`eval.kmir.outlier`):
  a type (objects of `wdt:P31` in the graphs and in the graph `instance-of`, X-FACTR's instance-of
  lists written by `ensure_instance_of`) or, for a relation aspect, an object of the relation;
- predicate reasoning: the choice the graphs relate to the subject by the relation.
The `instance-of` graph serves type lookups only, so it never answers a P31 fact question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from rdflib import RDFS, Literal

from eval.errors import ConfigError, DataError
from eval.kmir import (
    ENTITY_DISTINCTION,
    NO,
    PREDICATE_REASONING,
    STATEMENT_CHECKING,
    TRIPLE_COMPLETION,
    TYPE_ASPECT,
    YES,
    KmirQuestion,
    outlier,
)
from eval.types import Entity
from kb.reasoning import Ontology, find_closure, gold_graphs, property_iri
from kb.store import GraphStore, entity_iri, graph_iri, relation_iri

SETTINGS = ("kb", "kb-inferred")
TYPES_GRAPH = "instance-of"
INSTANCE_OF = "P31"


def ensure_instance_of(store: GraphStore, instance_of: Mapping[str, Sequence[tuple[str, str]]],
                       tag: str = "xfactr") -> bool:
    """Write `entity wdt:P31 type` (and type labels) into the graph `instance-of`, once per content."""
    rows = sorted((e, t, label) for e, types in instance_of.items() for t, label in types)
    digest = hashlib.sha256("\n".join("\t".join(r) for r in rows).encode("utf-8", "surrogatepass")).hexdigest()
    version = f"{tag}@sha256:{digest}"
    with store.filling(lambda: version in store.loaded_versions(TYPES_GRAPH)) as needed:
        if not needed:
            return False
        store.drop_graph(TYPES_GRAPH)
        g, p31 = graph_iri(TYPES_GRAPH), relation_iri(INSTANCE_OF)
        quads: list[tuple] = []
        types: dict[tuple[str, str], object] = {}  # (type, label) -> its IRI, labelled once: types are shared
        for e, t, label in rows:
            type_iri = types.get((t, label))
            if type_iri is None:
                type_iri = types[(t, label)] = entity_iri(Entity(label, t))
                quads.append((type_iri, RDFS.label, Literal(label), g))
            quads.append((entity_iri(Entity(e, e)), p31, type_iri, g))
        store.add_quads(quads)
        store.mark_loaded(version, TYPES_GRAPH)
        return True


def setting_graphs(store: GraphStore, setting: str, corpus: str | None = None,
                   ontology: Ontology | None = None) -> list[str]:
    """The fact graphs a setting reads: the corpus's gold graphs, and for kb-inferred their closure (under
    `ontology`, when given), computed from exactly their facts: a `DataError` where the store holds none."""
    if setting not in SETTINGS:
        raise ConfigError(f"unknown KB setting {setting!r}; choose from {', '.join(SETTINGS)}")
    graphs = gold_graphs(store, corpus)
    if setting != "kb-inferred":
        return graphs
    found = find_closure(store, graphs, ontology)
    if found.graph is None or not found.exact:
        why = found.problem or "the closures there were computed from more relations"
        raise DataError(f"kb-inferred: no closure of {', '.join(graphs) or 'no gold graphs'} in the store ({why}); "
                        "compute it with kbc kb infer")
    return [*graphs, found.graph]


class KmirKB:
    """Answers `KmirQuestion`s from fixed named graphs of one store (`type_graphs`: for type lookups only)."""

    def __init__(self, store: GraphStore, graphs: Sequence[str], type_graphs: Sequence[str] = ()) -> None:
        self.store = store
        self.graphs = list(graphs)
        self._in = self._values(self.graphs)
        self._types_in = self._values([*self.graphs, *type_graphs])

    @staticmethod
    def _values(graphs: Sequence[str]) -> str:
        return ", ".join(f"<{graph_iri(g)}>" for g in graphs) or "<urn:kbc:graph:none>"

    def answer(self, question: KmirQuestion) -> str:
        """The KB's answer ("" when it has none)."""
        if question.kind == TRIPLE_COMPLETION:
            labels = sorted(label for _, label in self.objects(question.subject, question.relation))
            return labels[0] if labels else ""
        if question.kind == STATEMENT_CHECKING:
            return YES if self.holds(question.subject, question.relation, question.object) else NO
        if question.kind == ENTITY_DISTINCTION:
            if question.aspect == TYPE_ASPECT:
                categories = [{o for o, _ in self.objects(e, INSTANCE_OF, self._types_in)} for e in question.entities]
            else:
                categories = [{o for o, _ in self.objects(e, question.relation)} for e in question.entities]
            index = outlier(categories) if len(categories) > 2 else None
            return question.entities[index].label if index is not None else ""
        if question.kind == PREDICATE_REASONING:
            for choice in question.entities:
                if self.holds(question.subject, question.relation, choice):
                    return choice.label
            return ""
        raise ConfigError(f"unknown KMIR question kind {question.kind!r}")

    def holds(self, subject: Entity | None, relation: str, obj: Entity | None) -> bool:
        if subject is None or obj is None:
            return False
        rows = self.store.select(
            f"SELECT ?g WHERE {{ GRAPH ?g {{ <{entity_iri(subject)}> <{property_iri(relation)}> "
            f"<{entity_iri(obj)}> }} FILTER(?g IN ({self._in})) }} LIMIT 1")
        return bool(rows)

    def objects(self, subject: Entity | None, relation: str, graphs: str | None = None) -> list[tuple[str, str]]:
        """(object IRI, label) of (subject, relation) in the graphs; the label is "" where none is stored."""
        if subject is None:
            return []
        where = graphs or self._in
        rows = self.store.select(
            f"SELECT DISTINCT ?o ?l WHERE {{ GRAPH ?g {{ <{entity_iri(subject)}> <{property_iri(relation)}> ?o }} "
            f"FILTER(?g IN ({where})) OPTIONAL {{ GRAPH ?lg {{ ?o <{RDFS.label}> ?l }} "
            f"FILTER(?lg IN ({where})) }} }}")
        labels: dict[str, set[str]] = {}
        for o, label in rows:
            labels.setdefault(str(o), set()).update([str(label)] if label is not None else [])
        return [(o, min(names) if names else "") for o, names in sorted(labels.items())]


def kb_for(store: GraphStore, setting: str, corpus: str | None = None, ontology: Ontology | None = None) -> KmirKB:
    """The answerer of a setting (`kb` or `kb-inferred`) over a corpus's graphs, types from `instance-of` too."""
    types = [TYPES_GRAPH] if TYPES_GRAPH in store.graph_names(TYPES_GRAPH) else []
    return KmirKB(store, setting_graphs(store, setting, corpus, ontology), types)
