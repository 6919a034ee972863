"""The graph store: facts as RDF with Wikidata IRIs and labels, in named graphs, asked by SPARQL.

Embedded default: rdflib on an on-disk Oxigraph store. The same class works against any
SPARQL 1.1 endpoint (rdflib `SPARQLStore`, or `SPARQLUpdateStore` when an update URL is given).
Named graphs are `urn:kbc:graph:<name>` (`gold`; extraction and inference add their own); a
`meta` graph records which corpus versions each graph holds, so loads happen once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

from rdflib import RDFS, Dataset, Literal, URIRef

from eval.errors import KbcError
from eval.types import Entity, Fact

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
FREEBASE = "http://rdf.freebase.com/ns/"
LABEL_NS = "urn:kbc:label:"
REL_NS = "urn:kbc:relation:"
GRAPH_NS = "urn:kbc:graph:"
LOADED = URIRef("urn:kbc:loaded")
PREFIXES = f"PREFIX rdfs: <{RDFS}>\nPREFIX wdt: <{WDT}>\n"


def entity_iri(entity: Entity) -> URIRef:
    eid = entity.id
    if eid and eid[0] == "Q" and eid[1:].isdigit():
        return URIRef(WD + eid)
    if eid and eid.startswith("/m/"):
        return URIRef(FREEBASE + "m." + eid[3:])
    if eid:
        return URIRef("urn:kbc:entity:" + quote(eid, safe=""))
    return URIRef(LABEL_NS + quote(entity.label, safe=""))


def entity_key(iri: str) -> str:
    """The `Entity.key` of an IRI made by `entity_iri`."""
    if iri.startswith(WD):
        return iri[len(WD):]
    if iri.startswith(FREEBASE + "m."):
        return "/m/" + iri[len(FREEBASE) + 2:]
    if iri.startswith(LABEL_NS):
        return "label:" + unquote(iri[len(LABEL_NS):])
    return unquote(iri.rsplit(":", 1)[-1])


def relation_iri(relation: str) -> URIRef:
    if relation[:1] == "P" and relation[1:].isdigit():
        return URIRef(WDT + relation)
    return URIRef(REL_NS + quote(relation, safe=""))


def graph_iri(name: str) -> URIRef:
    return URIRef(GRAPH_NS + name)


class GraphStore:
    def __init__(self, dataset: Dataset, location: str) -> None:
        self.dataset = dataset
        self.location = location

    @classmethod
    def open(cls, path: str | Path | None = None) -> GraphStore:
        """An Oxigraph store on disk at `path` (created if missing), or in memory if None."""
        ds = Dataset(store="Oxigraph")
        if path is not None:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                ds.open(str(path))
            except OSError as exc:
                raise KbcError(f"cannot open graph store at {path}: {exc} (is another kbc using it?)") from None
        return cls(ds, str(path) if path else ":memory:")

    @classmethod
    def remote(cls, query_url: str, update_url: str | None = None) -> GraphStore:
        """The same API against a SPARQL 1.1 endpoint (read-only without `update_url`)."""
        from rdflib.plugins.stores.sparqlstore import SPARQLStore, SPARQLUpdateStore

        store = SPARQLUpdateStore(query_url, update_url) if update_url else SPARQLStore(query_url)
        return cls(Dataset(store=store), query_url)

    def close(self) -> None:
        self.dataset.close()

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------
    def loaded_versions(self, graph: str = "gold") -> set[str]:
        rows = self.select(f"SELECT ?v WHERE {{ GRAPH <{GRAPH_NS}meta> {{ <{graph_iri(graph)}> <{LOADED}> ?v }} }}")
        return {str(r[0]) for r in rows}

    def ensure_facts(self, facts: list[Fact], tag: str, graph: str = "gold") -> bool:
        """Load `facts` into `graph` unless `tag` (corpus@version) is already there."""
        if tag in self.loaded_versions(graph):
            return False
        self.add_facts(facts, graph)
        self.mark_loaded(tag, graph)
        return True

    def add_facts(self, facts: Iterable[Fact], graph: str = "gold") -> int:
        g = graph_iri(graph)
        quads = []
        for fact in facts:
            s, o = entity_iri(fact.subject), entity_iri(fact.object)
            quads.append((s, relation_iri(fact.relation), o, g))
            quads.append((s, RDFS.label, Literal(fact.subject.label), g))
            quads.append((o, RDFS.label, Literal(fact.object.label), g))
        self.add_quads(quads)
        return len(quads) // 3

    def add_quads(self, quads: list[tuple]) -> None:
        """Add (s, p, o, graph IRI) quads as they are (for graphs that are not plain facts)."""
        self.dataset.addN(quads)
        self._commit()

    def mark_loaded(self, tag: str, graph: str) -> None:
        self.dataset.graph(graph_iri("meta")).add((graph_iri(graph), LOADED, Literal(tag)))
        self._commit()

    def drop_graph(self, name: str) -> None:
        """Remove a named graph and its load markers (so the next `ensure_*` rebuilds it)."""
        self.dataset.update(
            f"DROP SILENT GRAPH <{graph_iri(name)}> ; "
            f"DELETE WHERE {{ GRAPH <{GRAPH_NS}meta> {{ <{graph_iri(name)}> <{LOADED}> ?v }} }}"
        )
        self._commit()

    def _commit(self) -> None:
        try:
            self.dataset.commit()
        except Exception:  # stores without transactions
            pass

    # --- reading -------------------------------------------------------------------------
    def select(self, sparql: str) -> list[tuple]:
        return [tuple(row) for row in self.dataset.query(PREFIXES + sparql)]

    def objects(self, subject: Entity, relation: str, graph: str = "gold") -> list[Entity]:
        """Objects of (subject, relation), with labels."""
        rows = self.select(
            f"SELECT DISTINCT ?o ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"<{entity_iri(subject)}> <{relation_iri(relation)}> ?o . OPTIONAL {{ ?o rdfs:label ?l }} }} }}"
        )
        return _entities(rows)

    def subjects(self, relation: str, obj: Entity, graph: str = "gold") -> list[Entity]:
        """Subjects of (relation, object), with labels."""
        rows = self.select(
            f"SELECT DISTINCT ?s ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"?s <{relation_iri(relation)}> <{entity_iri(obj)}> . OPTIONAL {{ ?s rdfs:label ?l }} }} }}"
        )
        return _entities(rows)

    def pairs(self, relation: str, graph: str = "gold") -> Iterator[tuple[str, str, str]]:
        """(subject key, object key, object label) of every triple of `relation`."""
        rows = self.select(
            f"SELECT ?s ?o ?l WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
            f"?s <{relation_iri(relation)}> ?o . OPTIONAL {{ ?o rdfs:label ?l }} }} }}"
        )
        for s, o, label in rows:
            yield entity_key(str(s)), entity_key(str(o)), str(label) if label is not None else ""

    def valid_objects(self, relation: str, graph: str = "gold") -> dict[str, set[str]]:
        """All valid object labels per subject key: what the `filtered` setting removes."""
        valid: dict[str, set[str]] = {}
        for s, _, label in self.pairs(relation, graph):
            valid.setdefault(s, set()).add(label)
        return valid

    def count(self, graph: str = "gold") -> int:
        rows = self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} }}")
        return int(rows[0][0])

    def relations(self, graph: str = "gold") -> dict[str, int]:
        rows = self.select(
            f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} "
            f"FILTER(?p != rdfs:label) }} GROUP BY ?p"
        )
        return {entity_key(str(p)) if not str(p).startswith(WDT) else str(p)[len(WDT):]: int(n) for p, n in rows}


def _entities(rows: list[tuple]) -> list[Entity]:
    out = []
    for iri, label in rows:
        key = entity_key(str(iri))
        eid = None if key.startswith("label:") else key
        out.append(Entity(str(label) if label is not None else key, eid))
    return out
