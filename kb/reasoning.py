"""Property axioms (KMIR Table 3) applied to the gold facts of the graph store.

An ontology in Turtle (default: `kb/axioms.ttl`) declares OWL 2 property axioms: symmetric,
transitive, inverse, equivalent, sub-property and property chain. `ensure_inferred` closes
gold graphs under them and writes only the new facts, each one into the named graph of that
closure, `inferred-<12 hex>` (a digest of the source graphs' names and the axioms file's digest;
never a fact some gold graph holds, never OWL-RL's generic triples), and into its graph
`provenance-<12 hex>` one derivation per (new fact, axiom deriving it): the axiom, and the
premises as reified statements (`rdf:subject/predicate/object` on `urn:kbc:stmt:<sha1>`). The
store keeps one closure per (source graphs, axioms): a run over a few relations never replaces
the closure of a whole corpus.

Provenance is well-founded. Each fact of the closure has a level: 0 for a gold fact, and for an
inferred one the naive-evaluation round (every rule applied at once) in which it first becomes
derivable, 1 + the smallest over all its derivations of the largest premise level (`levels`). A
derivation is recorded only when every premise has a lower level than its conclusion (per axiom
the smallest such premise list), so every chain of recorded derivations ends in gold facts, and
a fact is never credited to an axiom through facts that rest on it ("Rwanda part of Africa" by
the inverse of "Africa has part Rwanda", itself the inverse of the transitive fact).

Counts per axiom: the new facts it derives from facts of lower levels; a fact two axioms so
derive counts for both. On all T-REx facts the 7,489 new facts count once each: `inverse:P361:P527`
2,457 (3,018 under the earlier rule, which recorded 561 inverse derivations from facts resting
on the conclusion, each a P361 fact transitivity derives), every other axiom as before
(`docs/reasoning.md`). A closure recorded by the earlier rule (`PROVENANCE_RULE`) is computed
again, never read.

How the closure is computed. Both candidates were timed on all 34,039 T-REx facts with labels
(65,227 triples) and the 12 axioms of `axioms.ttl`, on 2 shared CPU cores (load average ~2.5;
`python bench/reasoning.py`):

| engine | closure | new facts of the declared properties |
|---|---|---|
| owlrl 7.6.2 `DeductiveClosure(OWLRL_Semantics)` on an rdflib in-memory graph | 111.8 s | 7,489 |
| SPARQL 1.1 `INSERT ... WHERE` rules run by Oxigraph, to a fixpoint (4 rounds) | 0.38 s | 7,489 |

Both give the same new facts (`bench/reasoning.py` compares the sets on T-REx; a test does on a
hand-made graph). owlrl also adds OWL-RL's generic triples (`owl:sameAs` for every resource,
property typing), which have to be filtered away, and needs the whole graph in Python memory.
The SPARQL rules need only the facts of the axioms' properties, not the whole graph in Python
objects, so they are the engine here; `owlrl_new_facts` keeps owlrl as the reference. `infer` runs
them in an in-memory Oxigraph store holding a copy of those facts (from any store, embedded or
remote), bounded by
`max_derived`, and writes only the result to the store (~7 s on the on-disk store for T-REx,
mostly writing the 86,056 provenance quads; the levels take a linear pass over the derivations).

The store records what each closure was computed from (`record_coverage`): readers over other
facts (`coverage_problem`, `find_closure`) rebuild it or refuse, never answer from a partial closure.
The single graph `inferred` of earlier versions is never read (`LEGACY`), and is dropped when a
closure is written.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rdflib import OWL, RDF, RDFS, BNode, Graph, Literal, URIRef
from rdflib.collection import Collection

from eval.errors import ConfigError, DataError
from eval.jsonl import refuse_special
from eval.kmir import InferredFact
from eval.types import Entity, Fact, Relation
from kb.store import LABEL_NS, GraphStore, entity_iri, entity_key, graph_iri, relation_iri, relation_key

DEFAULT_AXIOMS = Path(__file__).with_name("axioms.ttl")
CLOSURE_PREFIX = "inferred-"  # + 12 hex: one closure's new facts (`closure_graph`)
PROVENANCE_PREFIX = "provenance-"  # + the same 12 hex: its derivations (`provenance_graph`)
_CLOSURE_NAME = re.compile(r"inferred-[0-9a-f]{12}")
LEGACY = ("inferred", "inferred-provenance")  # the one closure earlier versions kept: never read
TEMPLATE = URIRef("urn:kbc:template")
DERIVATION = URIRef("urn:kbc:Derivation")
CONCLUSION = URIRef("urn:kbc:conclusion")
AXIOM = URIRef("urn:kbc:axiom")
AXIOM_KIND = URIRef("urn:kbc:axiomKind")
PREMISE = "urn:kbc:premise"  # + 1, 2, ...: the premises in rule order
STMT_NS = "urn:kbc:stmt:"
AXIOM_NS = "urn:kbc:axiom:"

SYMMETRIC, TRANSITIVE, EQUIVALENT = "symmetric", "transitive", "equivalent"
INVERSE, SUBPROPERTY, CHAIN = "inverse", "subproperty", "chain"
KINDS = (SYMMETRIC, TRANSITIVE, EQUIVALENT, INVERSE, SUBPROPERTY, CHAIN)  # KMIR Table 3 order
KMIR_NAMES = {SYMMETRIC: "SymmetricOP", TRANSITIVE: "TransitiveOP", EQUIVALENT: "EquivalentOP",
              INVERSE: "InverseOP", SUBPROPERTY: "Sub-relation OP", CHAIN: "SubOP(OPChain)"}
_TYPE_KINDS = {OWL.SymmetricProperty: SYMMETRIC, OWL.TransitiveProperty: TRANSITIVE}
_PAIR_KINDS = {OWL.inverseOf: INVERSE, OWL.equivalentProperty: EQUIVALENT, RDFS.subPropertyOf: SUBPROPERTY}
_ANNOTATIONS = {RDFS.label, RDFS.comment, TEMPLATE, RDFS.seeAlso}

Pattern = tuple[str, str, str]  # (subject variable, property IRI, object variable)


@dataclass(frozen=True)
class Rule:
    """Horn rule over triple patterns: all `premises` give `conclusion`."""

    premises: tuple[Pattern, ...]
    conclusion: Pattern


@dataclass(frozen=True)
class Axiom:
    """One property axiom. `properties`: the property (symmetric, transitive), the pair (r1, r2)
    for inverse, equivalent and sub-property (r1 sub r2), or the chain (r1, ..., rn) with `target`."""

    kind: str
    properties: tuple[str, ...]
    target: str | None = None

    @property
    def name(self) -> str:
        keys = [relation_key(p) for p in self.properties]
        if self.kind == CHAIN:
            return f"{CHAIN}:{'/'.join(keys)}:{relation_key(self.target or '')}"
        return ":".join([self.kind, *keys])

    @property
    def iri(self) -> URIRef:
        return URIRef(AXIOM_NS + hashlib.sha1(self.name.encode()).hexdigest()[:16])

    @property
    def named(self) -> tuple[str, ...]:
        """Every property the axiom names."""
        return self.properties + ((self.target,) if self.target else ())

    def rules(self) -> list[Rule]:
        p = self.properties
        if self.kind == SYMMETRIC:
            return [Rule((("x", p[0], "y"),), ("y", p[0], "x"))]
        if self.kind == TRANSITIVE:
            return [Rule((("x", p[0], "y"), ("y", p[0], "z")), ("x", p[0], "z"))]
        if self.kind == INVERSE:
            return [Rule((("x", p[0], "y"),), ("y", p[1], "x")), Rule((("x", p[1], "y"),), ("y", p[0], "x"))]
        if self.kind == EQUIVALENT:
            return [Rule((("x", p[0], "y"),), ("x", p[1], "y")), Rule((("x", p[1], "y"),), ("x", p[0], "y"))]
        if self.kind == SUBPROPERTY:
            return [Rule((("x", p[0], "y"),), ("x", p[1], "y"))]
        nodes = ["x", *(f"y{i}" for i in range(1, len(p))), "z"]
        return [Rule(tuple((nodes[i], r, nodes[i + 1]) for i, r in enumerate(p)), ("x", self.target or "", "z"))]


@dataclass
class Ontology:
    """The axioms of one Turtle file, and the new properties it declares (IRI -> (label, template))."""

    path: str
    axioms: list[Axiom]
    declared: dict[str, tuple[str, str]]
    text: str = ""
    digest: str = ""

    def properties(self) -> set[str]:
        return {p for a in self.axioms for p in a.named}

    def relations(self) -> dict[str, Relation]:
        """The declared properties as relations (id = relation id of its IRI), for question templates."""
        out = {}
        for iri, (label, template) in self.declared.items():
            key = relation_key(iri)
            label = label or key
            out[key] = Relation(key, label, template or f"[X] {label} [Y] .")
        return out

    def unknown(self, known_relations: Iterable[str]) -> list[tuple[Axiom, str]]:
        """(axiom, property IRI) for each named property that is neither a relation of the data nor declared."""
        known = {str(property_iri(r)) for r in known_relations} | set(self.declared)
        return [(axiom, prop) for axiom in self.axioms for prop in axiom.named if prop not in known]

    def check(self, known_relations: Iterable[str]) -> None:
        """Every named property is a relation of the data or declared; else a one-line `DataError`."""
        for axiom, prop in self.unknown(known_relations)[:1]:
            raise DataError(f"{self.where(prop)}: axiom {axiom.name} names {relation_key(prop)} ({prop}), which is "
                            "neither a relation of the data nor declared `a owl:ObjectProperty` in the file")

    def where(self, iri: str, term: str | None = None) -> str:
        """File and line of `iri`; with `term`, of the first line writing `term` from `iri`'s statements on."""
        line = _line_of(self.text, iri)
        if term is not None:
            line = _line_of(self.text, term, after=line or 1) or _line_of(self.text, term) or line
        return f"{self.path}:{line}" if line else self.path


def property_iri(relation: str) -> URIRef:
    """The IRI of a relation id: the inverse of `relation_key`, which leaves foreign IRIs (schema.org) whole."""
    return URIRef(relation) if relation.startswith(("http://", "https://", "urn:")) else relation_iri(relation)


def _line_of(text: str, iri: str, after: int = 1) -> int | None:
    """The first line from line `after` on that writes `iri` (in full or as prefix:name under the file's prefixes)."""
    spellings = [f"<{iri}>"]
    for prefix, ns in re.findall(r"@prefix\s+([\w-]*):\s*<([^>]*)>", text, flags=re.IGNORECASE):
        if iri.startswith(ns) and iri != ns:
            spellings.append(f"{prefix}:{iri[len(ns):]}")
    pattern = re.compile("|".join(re.escape(s) + r"(?![\w-])" for s in spellings))
    for lineno, line in enumerate(text.splitlines(), 1):
        if lineno >= after and not line.lstrip().startswith("#") and pattern.search(line):
            return lineno
    return None


def load_axioms(path: str | Path | None = None) -> Ontology:
    """Parse an axioms file (default: the one shipped). Malformed input: one-line `DataError` with file and line."""
    path = Path(path) if path is not None else DEFAULT_AXIOMS
    refuse_special(path, str(path), "Turtle file")  # a pipe would block the read for ever
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is ignored, as in the data files
    except FileNotFoundError:
        raise DataError(f"{path}: no such axioms file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the axioms file ({exc})") from None
    graph = Graph()
    try:
        graph.parse(data=text, format="turtle", publicID=path.resolve().as_uri())
    except Exception as exc:
        line = getattr(exc, "lines", None)
        why = getattr(exc, "_why", None) or " ".join(str(exc).split())
        where = f"{path}:{line + 1}" if isinstance(line, int) else str(path)
        raise DataError(f"{where}: not valid Turtle ({why})") from None
    onto = Ontology(str(path), [], {}, text, "sha256:" + hashlib.sha256(text.encode()).hexdigest())
    axioms: set[Axiom] = set()
    lists: set = set()
    for s, p, o in graph:
        if p == RDF.type and o == OWL.ObjectProperty:
            onto.declared.setdefault(str(s), ("", ""))
        elif p == RDF.type and o in _TYPE_KINDS:
            axioms.add(Axiom(_TYPE_KINDS[o], (_prop(onto, s),)))
        elif p in _PAIR_KINDS:
            axioms.add(Axiom(_PAIR_KINDS[p], (_prop(onto, s), _prop(onto, o))))
        elif p == OWL.propertyChainAxiom:
            axioms.add(_chain(onto, graph, s, o))
            lists.add(o)
        elif p in (RDF.first, RDF.rest) or p in _ANNOTATIONS:
            continue
        else:
            what = f"a {_short(graph, o)}" if p == RDF.type else _short(graph, p)
            term = str(o) if p == RDF.type and isinstance(o, URIRef) else str(p)
            raise DataError(f"{onto.where(str(s), term) if isinstance(s, URIRef) else path}: unsupported statement "
                            f"({what}); axioms are owl:SymmetricProperty, owl:TransitiveProperty, owl:inverseOf, "
                            "owl:equivalentProperty, rdfs:subPropertyOf and owl:propertyChainAxiom")
    for iri in onto.declared:
        node = URIRef(iri)
        label = graph.value(node, RDFS.label)
        template = graph.value(node, TEMPLATE)
        if template is not None and ("[X]" not in str(template) or "[Y]" not in str(template)):
            raise DataError(f"{onto.where(iri, str(TEMPLATE))}: the template of {relation_key(iri)} needs [X] and "
                            f"[Y]: {template}")
        onto.declared[iri] = (str(label) if label is not None else "", str(template) if template is not None else "")
    if not axioms:
        raise DataError(f"{path}: no property axioms (owl:SymmetricProperty, owl:TransitiveProperty, owl:inverseOf, "
                        "owl:equivalentProperty, rdfs:subPropertyOf, owl:propertyChainAxiom)")
    onto.axioms = sorted(axioms, key=lambda a: (KINDS.index(a.kind), a.name))
    return onto


def _short(graph: Graph, node) -> str:
    try:
        return graph.qname(node)
    except Exception:
        return str(node)


def _prop(onto: Ontology, node) -> str:
    if not isinstance(node, URIRef):
        raise DataError(f"{onto.path}: an axiom names {node!r}, not a property IRI")
    return str(node)


def _chain(onto: Ontology, graph: Graph, target, head) -> Axiom:
    where = onto.where(str(target)) if isinstance(target, URIRef) else onto.path
    if not isinstance(head, BNode) and head != RDF.nil:
        raise DataError(f"{where}: owl:propertyChainAxiom needs a list ( r1 r2 ... ), not {head}")
    members = list(Collection(graph, head))
    if len(members) < 2:
        raise DataError(f"{where}: the property chain of {relation_key(str(target))} has {len(members)} "
                        f"propert{'y' if len(members) == 1 else 'ies'}; a chain needs at least 2")
    return Axiom(CHAIN, tuple(_prop(onto, m) for m in members), _prop(onto, target))


# --- inference on the store ---------------------------------------------------------------------------
@dataclass
class InferenceReport:
    """What `ensure_inferred` did: new facts per axiom name, in total, how long it took, and the closure's graph."""

    counts: dict[str, int]
    facts: int
    sources: list[str]
    built: bool = True
    rounds: int = 0
    seconds_closure: float = 0.0
    seconds_provenance: float = 0.0
    kinds: dict[str, str] = field(default_factory=dict)  # axiom name -> KMIR axiom name
    graph: str = ""  # the closure's graph (`closure_graph`)

    @property
    def seconds(self) -> float:
        return self.seconds_closure + self.seconds_provenance

    @property
    def provenance(self) -> str:
        """The graph of the closure's derivations."""
        return provenance_graph(self.graph)


def closure_graph(ontology: Ontology, sources: Sequence[str]) -> str:
    """The graph of the closure of `sources` under `ontology`: one per (source graphs, axioms), so that the closure
    of a few relations never replaces that of a whole corpus."""
    key = "\n".join([ontology.digest, *sorted(set(sources))])
    return CLOSURE_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def provenance_graph(closure: str) -> str:
    """The graph of a closure's derivations, `provenance-<its 12 hex>`: outside the prefix `inferred-`, so a lookup
    by that prefix finds closures only."""
    return PROVENANCE_PREFIX + closure.removeprefix(CLOSURE_PREFIX)


def closure_graphs(store: GraphStore) -> list[str]:
    """The closures in the store, sorted: the graphs `inferred-<12 hex>` that hold facts or that `meta` records
    (a closure may derive nothing)."""
    prefix = str(graph_iri(""))
    rows = store.select(f"SELECT DISTINCT ?g WHERE {{ GRAPH <{graph_iri('meta')}> {{ ?g ?p ?v }} }}")
    named = {str(g)[len(prefix):] for (g,) in rows if str(g).startswith(prefix)}
    named.update(store.graph_names(CLOSURE_PREFIX))
    return sorted(n for n in named if _CLOSURE_NAME.fullmatch(n))


def gold_graphs(store: GraphStore, corpus: str | None = None) -> list[str]:
    """The gold graphs of a corpus (`gold-<corpus>` and `gold-<corpus>-<relation>`), or all gold graphs."""
    names = store.graph_names("gold-")
    if corpus is None:
        return names
    return [n for n in names if n == f"gold-{corpus}" or n.startswith(f"gold-{corpus}-")]


def data_relations(store: GraphStore, graphs: Sequence[str]) -> set[str]:
    """Relation ids with triples in `graphs`."""
    return {r for g in graphs for r in store.relations(g)}


# how derivations are recorded (`derive`): 2 keeps only well-founded ones, where 1 could record a fact as derived from
# facts that rest on it; a closure recorded by another rule is computed again (`_problem`)
PROVENANCE_RULE = 2
_RULE_TAG = re.compile(r"inferred@provenance-(\d+)@")


def _tag(store: GraphStore, ontology: Ontology, sources: Sequence[str]) -> str:
    parts = [ontology.digest] + [f"{g}={sorted(store.loaded_versions(g))}:{store.count(g)}" for g in sorted(sources)]
    return f"inferred@provenance-{PROVENANCE_RULE}@sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


def provenance_rule(tags: Iterable[str]) -> int:
    """The `PROVENANCE_RULE` a closure's tags (`_tag`) record; 1 for a closure of a version that recorded none."""
    found = [int(m.group(1)) for t in tags if (m := _RULE_TAG.match(t))]
    return max(found) if found else 1


DERIVED_PER_FACT = 10  # default bound of the closure: this many new facts per input fact ...
MIN_MAX_DERIVED = 10_000  # ... and never fewer than this


def default_max_derived(input_facts: int) -> int:
    return max(DERIVED_PER_FACT * input_facts, MIN_MAX_DERIVED)


def ensure_inferred(store: GraphStore, ontology: Ontology, sources: Sequence[str],
                    known_relations: Iterable[str] | None = None, force: bool = False,
                    max_derived: int | None = None) -> InferenceReport:
    """The closure of `sources` under `ontology` (graph `report.graph`): computed unless its coverage holds for
    these facts and axioms (the data changed, or its build was cut short). Other closures stay as they are.

    `known_relations` (relation ids) are the relations axioms may name besides the declared
    ones; default: those with triples in `sources`. `max_derived` bounds the new facts (default:
    `default_max_derived` of the input facts); a closure growing past it is a `DataError`.
    """
    sources = sorted(set(sources))
    if not sources:
        raise DataError("no gold graphs to reason over (load a corpus first: kbc kb load)")
    ontology.check(known_relations if known_relations is not None else data_relations(store, sources))
    graph = closure_graph(ontology, sources)
    tag = _tag(store, ontology, sources)
    with store.filling(lambda: not force and coverage_problem(store, graph, sources, ontology) is None) as needed:
        if not needed:
            return InferenceReport(stored_counts(store, ontology, graph), store.count(graph), sources, built=False,
                                   kinds={a.name: KMIR_NAMES[a.kind] for a in ontology.axioms}, graph=graph)
        for old in LEGACY:
            store.drop_graph(old)
        report = infer(store, ontology, sources, max_derived, graph)
        record_coverage(store, ontology, sources, graph)
        store.mark_loaded(tag, graph)
        return report


def infer(store: GraphStore, ontology: Ontology, sources: Sequence[str],
          max_derived: int | None = None, graph: str | None = None) -> InferenceReport:
    """Recompute the closure `graph` (default: `closure_graph`) and its provenance from `sources` (SPARQL rules to a
    fixpoint).

    The closure runs in an in-memory store holding the facts of the axioms' properties, and only
    its result is written to `store`: an exploding or interrupted closure leaves nothing behind
    there (a large deleted graph would slow every later query of an on-disk store).
    """
    graph = graph or closure_graph(ontology, sources)
    store.drop_graph(graph)
    store.drop_graph(provenance_graph(graph))
    with GraphStore.open(None) as work:
        given = copy_facts(store, work, ontology, sources)
        bound = max_derived if max_derived is not None else default_max_derived(given)
        start = time.perf_counter()
        rounds = close(work, ontology, sources, graph, max_derived=bound, input_facts=given)
        closed = time.perf_counter()
        derivations = derive(work, ontology, sources, graph)
        new = sorted(inferred_triples(work, graph))
    g = graph_iri(graph)
    store.add_quads([(URIRef(s), URIRef(p), URIRef(o), g) for s, p, o in new])
    store.add_quads(provenance_quads(ontology, derivations, graph))
    done = time.perf_counter()
    counts = {a.name: len(derivations.get(a.name, {})) for a in ontology.axioms}
    return InferenceReport(counts, len(new), list(sources), True, rounds, closed - start, done - closed,
                           {a.name: KMIR_NAMES[a.kind] for a in ontology.axioms}, graph)


def copy_facts(store: GraphStore, work: GraphStore, ontology: Ontology, sources: Sequence[str]) -> int:
    """Copy the source facts of the properties the axioms name into `work` (same graphs); how many."""
    allowed = ", ".join(f"<{graph_iri(g)}>" for g in sources)
    props = ", ".join(f"<{p}>" for p in sorted(ontology.properties()))
    rows = store.select(f"SELECT ?g ?s ?p ?o WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(?g IN ({allowed})) "
                        f"FILTER(?p IN ({props})) }}")
    work.add_quads([(s, p, o, g) for g, s, p, o in rows])
    return len(rows)


def _term(var_or_iri: str) -> str:
    return f"<{var_or_iri}>" if ":" in var_or_iri else f"?{var_or_iri}"


def _pattern(p: Pattern) -> str:
    return f"{_term(p[0])} {_term(p[1])} {_term(p[2])}"


def close(store: GraphStore, ontology: Ontology, sources: Sequence[str], graph: str, max_rounds: int = 100,
          max_derived: int | None = None, input_facts: int = 0) -> int:
    """Apply every rule until a round adds nothing; each rule is one INSERT over gold + the closure `graph`.

    `USING` makes the merge of the source graphs and `graph` the rule's default graph, so a
    rule joins facts across graphs and never re-adds one a gold graph holds. Each INSERT adds at
    most what is left below `max_derived` (+1), so an exploding closure stops within one rule and
    the error names the axioms still deriving. Returns the rounds.
    """
    inferred = graph_iri(graph)
    using = " ".join(f"USING <{graph_iri(g)}>" for g in [*sources, graph])
    updates = []
    for axiom in ontology.axioms:
        for rule in axiom.rules():
            body = " . ".join(_pattern(p) for p in rule.premises)
            head = _pattern(rule.conclusion)
            variables = " ".join(sorted({f"?{v}" for v in (rule.conclusion[0], rule.conclusion[2])}))
            select = f"SELECT DISTINCT {variables} WHERE {{ {body} . FILTER NOT EXISTS {{ {head} }} }}"
            updates.append((axiom.name, f"INSERT {{ GRAPH <{inferred}> {{ {head} }} }} {using} WHERE {{ {select}"
                                        " LIMIT {limit} }"))
    before = store.count(graph)
    for rounds in range(1, max_rounds + 1):
        added: dict[str, int] = {}
        start = store.count(graph)
        for name, update in updates:
            limit = max_derived - start + 1 if max_derived is not None else 10**12
            store.update(update.replace("{limit}", str(max(limit, 1))))
            now = store.count(graph)
            added[name] = added.get(name, 0) + now - start
            start = now
            if max_derived is not None and now > max_derived:
                raise _exploded(ontology, added, max_derived, input_facts, rounds)
        after = store.count(graph)
        if after == before:
            return rounds
        before = after
    raise DataError(f"{ontology.path}: the axioms did not reach a fixpoint in {max_rounds} rounds")


class ClosureExploded(DataError):
    """A closure past its bound of new facts: `kbc kb infer` can raise the bound (`--max-derived`), a run cannot."""


def _exploded(ontology: Ontology, added: dict[str, int], max_derived: int, input_facts: int,
              rounds: int) -> ClosureExploded:
    growing = sorted((n, name) for name, n in added.items() if n)
    names = ", ".join(f"{name} (+{n:,})" for n, name in reversed(growing[-8:]))
    more = f" and {len(growing) - 8} more" if len(growing) > 8 else ""
    return ClosureExploded(f"{ontology.path}: the closure exploded: more than {max_derived:,} new facts from "
                           f"{input_facts:,} input facts in round {rounds}; the axioms still deriving (new facts in "
                           f"that round): {names}{more}. "
                           "Check these axioms (e.g. a property declared symmetric and transitive, or many properties "
                           "declared equivalent to it)")


# --- what an inferred graph covers --------------------------------------------------------------------
COVERS = URIRef("urn:kbc:covers")  # inferred -> "<relation id>=<facts>" of each relation of its sources
NAMES = URIRef("urn:kbc:axiomRelation")  # inferred -> each relation id its axioms name
AXIOMS_FILE = URIRef("urn:kbc:axiomsFile")  # inferred -> "<axioms file> <sha256 digest>"
SOURCE = URIRef("urn:kbc:source")  # inferred -> each gold graph it was computed from
PREMISES = URIRef("urn:kbc:premises")  # inferred -> "<relation id>=<premise_versions digest>" of each named relation


@dataclass(frozen=True)
class Coverage:
    """What a complete closure was computed from: facts per relation, the version of the facts of each
    relation its axioms name (`premise_versions`), axioms and source graphs."""

    relations: dict[str, int]
    named: frozenset[str]
    axioms: str
    sources: tuple[str, ...]
    versions: dict[str, str] = field(default_factory=dict)
    rule: int = PROVENANCE_RULE  # how its derivations were recorded (`PROVENANCE_RULE`)

    @property
    def digest(self) -> str:
        """The axioms file's digest (`Ontology.digest`)."""
        return self.axioms.rpartition(" ")[2]

    def describe(self) -> str:
        facts = sum(self.relations.values())
        graphs = self.sources[0] if len(self.sources) == 1 else f"{len(self.sources)} gold graphs"
        return (f"covers {len(self.relations)} relation{'' if len(self.relations) == 1 else 's'} "
                f"({facts} facts of {graphs}), axioms {self.axioms}")


def source_counts(store: GraphStore, graphs: Sequence[str]) -> dict[str, int]:
    """Facts per relation id in `graphs` (labels not counted)."""
    counts: dict[str, int] = {}
    for g in graphs:
        for r, n in store.relations(g).items():
            counts[r] = counts.get(r, 0) + n
    return counts


def premise_versions(store: GraphStore, graphs: Sequence[str], relations: Iterable[str]) -> dict[str, str]:
    """A digest of the facts (subject and object IRIs) of each of `relations` that `graphs` hold: what a closure
    derives from, so an edited fact changes it even where the number of facts stays the same."""
    props = ", ".join(f"<{property_iri(r)}>" for r in sorted(set(relations)))
    if not graphs or not props:
        return {}
    allowed = ", ".join(f"<{graph_iri(g)}>" for g in graphs)
    rows = store.select(f"SELECT DISTINCT ?p ?s ?o WHERE {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(?g IN ({allowed})) "
                        f"FILTER(?p IN ({props})) }}")
    facts: dict[str, list[str]] = {}
    for p, s, o in rows:
        facts.setdefault(relation_key(str(p)), []).append(f"{s} {o}")
    return {r: _lines_digest(lines) for r, lines in facts.items()}


def fact_versions(facts: Iterable[Fact], relations: Iterable[str]) -> dict[str, str]:
    """`premise_versions` of `facts` as data (before any store holds them): what a closure of their graphs records."""
    wanted = set(relations)
    lines: dict[str, set[str]] = {}
    for f in facts:
        if f.relation in wanted:
            lines.setdefault(f.relation, set()).add(f"{entity_iri(f.subject)} {entity_iri(f.object)}")
    return {r: _lines_digest(found) for r, found in lines.items()}


def _lines_digest(lines: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def record_coverage(store: GraphStore, ontology: Ontology, sources: Sequence[str], graph: str | None = None) -> None:
    """Record in `meta` what the closure `graph` (default: `closure_graph`) was computed from."""
    meta, g = graph_iri("meta"), graph_iri(graph or closure_graph(ontology, sources))
    named = sorted(relation_key(p) for p in ontology.properties())
    quads = [(g, COVERS, Literal(f"{r}={n}"), meta) for r, n in sorted(source_counts(store, sources).items())]
    quads += [(g, NAMES, Literal(r), meta) for r in named]
    quads += [(g, PREMISES, Literal(f"{r}={v}"), meta) for r, v in sorted(premise_versions(store, sources,
                                                                                            named).items())]
    quads += [(g, SOURCE, Literal(name), meta) for name in sources]
    quads.append((g, AXIOMS_FILE, Literal(f"{ontology.path} {ontology.digest}"), meta))
    store.add_quads(quads)


def stored_coverage(store: GraphStore, graph: str) -> Coverage | None:
    """The coverage of the closure `graph`, or None when it has none (cut short, or absent)."""
    meta = store.meta(graph)
    covers = meta.get(str(COVERS), set())
    tags = store.loaded_versions(graph)
    if not tags or not covers or not meta.get(str(AXIOMS_FILE)):
        return None
    relations = {r: int(n) for r, _, n in (v.rpartition("=") for v in covers)}
    versions = {r: v for r, _, v in (x.rpartition("=") for x in meta.get(str(PREMISES), set()))}
    return Coverage(relations, frozenset(meta.get(str(NAMES), set())), sorted(meta[str(AXIOMS_FILE)])[0],
                    tuple(sorted(meta.get(str(SOURCE), set()))), versions, provenance_rule(tags))


def coverage_problem(store: GraphStore, closure: str, graphs: Sequence[str], ontology: Ontology | None = None,
                     exact: bool = True) -> str | None:
    """Why the closure `closure` is not the closure of the facts in `graphs` (under `ontology`, when given), or None.

    It is when it was computed with the same axioms (by digest) from the same facts of each relation its
    axioms name: as many of them, with the same `premise_versions`, and (`exact`) of no other such relation.
    A graph computed from fewer relations (a run over a few of them) misses what the others derive; one
    computed from other facts holds facts these do not derive, and so does one computed from more relations
    (what a run's records must not depend on; a reader of a few relations of a corpus may take it).
    """
    return _problem(store, closure, graphs, source_counts(store, graphs), ontology, exact, {})


def _problem(store: GraphStore, closure: str, graphs: Sequence[str], have: dict[str, int], ontology: Ontology | None,
             exact: bool, versions: dict[tuple[str, ...], dict[str, str]]) -> str | None:
    """`coverage_problem`, given the facts per relation of `graphs` (`have`) and a cache of their `premise_versions`
    (by the relations asked)."""
    coverage = stored_coverage(store, closure)
    if coverage is None:
        if closure not in closure_graphs(store):
            return "the store holds no inferred graph"
        return "the inferred graph records no coverage (its build was cut short)"
    if ontology is not None and coverage.digest != ontology.digest:
        return f"the inferred graph was computed with other axioms ({coverage.axioms}, not {ontology.path})"
    if coverage.rule != PROVENANCE_RULE:
        return ("the inferred graph's derivations were recorded by an earlier kbc version, which could record a fact "
                "as derived from facts that rest on it")
    missing = [r for r in sorted(have) if r in coverage.named and coverage.relations.get(r) != have[r]]
    if missing:
        shown = ", ".join(f"{r} ({coverage.relations.get(r, 0)} of {have[r]} facts)" for r in missing[:6])
        more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        return f"the inferred graph is partial here: it {coverage.describe()}, and lacks the facts of {shown}{more}"
    extra = _extra(coverage, have)
    if extra and exact:
        return (f"the inferred graph was computed from more relations than these: it {coverage.describe()}, "
                f"and from {', '.join(extra[:6])}{' ...' if len(extra) > 6 else ''} too, which these graphs lack")
    named = tuple(r for r in sorted(have) if r in coverage.named)
    if named and not coverage.versions:
        return "the inferred graph records no versions of its facts (an older kbcompare built it)"
    if named not in versions:
        versions[named] = premise_versions(store, graphs, named)
    now = versions[named]
    changed = [r for r in named if coverage.versions.get(r) != now.get(r)]
    if changed:
        return (f"the inferred graph was computed from other facts of {', '.join(changed[:6])}"
                f"{' ...' if len(changed) > 6 else ''} than these (the data changed since it was computed)")
    return None


def _extra(coverage: Coverage, have: dict[str, int]) -> list[str]:
    """The relations its axioms name that the closure was computed from and `have` lacks."""
    return sorted(r for r in coverage.relations if r in coverage.named and r not in have)


def _stale_extra(coverage: Coverage, have: dict[str, int], current: Callable[[list[str]], dict[str, str]]
                 ) -> str | None:
    """Why the closure's facts of the relations beyond `have` are not those the data holds now, or None."""
    extra = _extra(coverage, have)
    if not extra:
        return None
    now = current(extra)
    changed = [r for r in extra if coverage.versions.get(r) != now.get(r)]
    if not changed:
        return None
    return (f"the inferred graph was computed from other facts of {', '.join(changed[:6])}"
            f"{' ...' if len(changed) > 6 else ''} than the data holds (the data changed since it was computed)")


@dataclass(frozen=True)
class Closure:
    """`find_closure`'s answer: the closure's graph and coverage, or (graph None) why no closure answers."""

    graph: str | None
    problem: str | None
    coverage: Coverage | None = None
    exact: bool = False  # computed from exactly the facts asked, not from more relations
    candidates: int = 0  # how many closures could answer


def find_closure(store: GraphStore, graphs: Sequence[str], ontology: Ontology | None = None,
                 widest: bool = False, current: Callable[[list[str]], dict[str, str]] | None = None) -> Closure:
    """The closure to answer from for the facts of `graphs`, or why there is none.

    One computed from exactly their facts comes first; else one computed from more relations (it holds what theirs
    derive, and more: a reader of a few relations of a corpus may take it; never a run's records), the fewest
    relations first; among equals, one under the shipped axioms. `widest` (a reader asking what the store derives,
    the explorer): the one computed from the most relations first, so that a run's closure of a few relations never
    hides the corpus's. Where none is, the problem of the one closest to them: the most of their relations covered.
    `current` (relation ids -> their `fact_versions` in the data the reader serves) checks the facts of the relations
    a wider closure was computed from beyond `graphs`: one computed from other facts of them derives what the data
    no longer says.
    """
    names = closure_graphs(store)
    if not names:
        return Closure(None, "the store holds no inferred graph")
    have = source_counts(store, graphs)
    shipped = load_axioms().digest
    versions: dict[tuple[str, ...], dict[str, str]] = {}
    fits, problems = [], []
    for name in names:
        problem = _problem(store, name, graphs, have, ontology, False, versions)
        coverage = stored_coverage(store, name)
        if problem is None and coverage is not None and current is not None:
            problem = _stale_extra(coverage, have, current)
        if problem is None and coverage is not None:
            fits.append((bool(_extra(coverage, have)), len(coverage.relations), coverage.digest != shipped, name,
                         coverage))
        else:
            near = sum(coverage.relations.get(r) == n for r, n in have.items()) if coverage else -1
            problems.append((-near, name, problem))
    if fits:
        wider, _, _, name, coverage = min(fits, key=lambda f: (-f[1], *f[2:4]) if widest else f[:4])
        return Closure(name, None, coverage, exact=not wider, candidates=len(fits))
    return Closure(None, min(problems)[2])


Triple = tuple[str, str, str]
Derivations = dict[str, dict[Triple, tuple[Triple, ...]]]  # axiom name -> conclusion -> premises


def derive(store: GraphStore, ontology: Ontology, sources: Sequence[str], graph: str) -> Derivations:
    """Per axiom name: each fact of the closure `graph` it derives well-founded -> one premise list (the smallest,
    for determinism).

    A derivation counts only where every premise is a gold fact or an inferred fact of a lower level (`levels`) than
    its conclusion: never one through facts that themselves rest on the conclusion (a P361 fact "derived" by the
    inverse of the P527 fact derived from it), so every chain of recorded derivations ends in gold facts.
    """
    allowed = ", ".join(f"<{graph_iri(g)}>" for g in [*sources, graph])
    inferred = graph_iri(graph)
    found: list[tuple[str, Triple, tuple[Triple, ...]]] = []  # every derivation: (axiom name, conclusion, premises)
    for axiom in ontology.axioms:
        for rule in axiom.rules():
            variables = sorted({v for p in (*rule.premises, rule.conclusion) for v in (p[0], p[2])})
            blocks = [f"GRAPH ?g{i} {{ {_pattern(p)} }} FILTER(?g{i} IN ({allowed}))"
                      for i, p in enumerate(rule.premises)]
            query = (f"SELECT DISTINCT {' '.join('?' + v for v in variables)} WHERE {{ "
                     f"GRAPH <{inferred}> {{ {_pattern(rule.conclusion)} }} {' '.join(blocks)} }}")
            for row in store.select(query):
                value = {v: str(x) for v, x in zip(variables, row)}
                found.append((axiom.name, _ground(rule.conclusion, value),
                              tuple(_ground(p, value) for p in rule.premises)))
    level = levels(((c, ps) for _, c, ps in found), inferred_triples(store, graph))
    out: Derivations = {a.name: {} for a in ontology.axioms}
    for name, conclusion, premises in found:
        top = level[conclusion]
        if all(level.get(p, 0) < top for p in premises):
            best = out[name]
            if conclusion not in best or premises < best[conclusion]:
                best[conclusion] = premises
    return out


def levels(derivations: Iterable[tuple[Triple, tuple[Triple, ...]]], inferred: set[Triple]) -> dict[Triple, int]:
    """The level of each inferred fact: the naive-evaluation round (every rule applied at once) in which it first
    becomes derivable, 1 + the smallest over its derivations of the largest premise level (a given fact: 0).

    `derivations`: (conclusion, premises) of every derivation of the `inferred` facts; a premise outside `inferred`
    is given. Each fact's derivations are released once all their inferred premises have a level, level by level
    (linear in the derivations). A fact no derivation reaches from given facts gets none.
    """
    heads: list[Triple] = []
    waiting: list[int] = []  # per derivation: its inferred premises without a level yet
    uses: dict[Triple, list[int]] = {}  # inferred fact -> the derivations it is a premise of
    level: dict[Triple, int] = {}
    frontier: list[Triple] = []
    for conclusion, premises in derivations:
        pending = {p for p in premises if p in inferred}
        if conclusion in pending:
            continue
        if not pending:
            if conclusion not in level:
                level[conclusion] = 1
                frontier.append(conclusion)
            continue
        for p in pending:
            uses.setdefault(p, []).append(len(heads))
        heads.append(conclusion)
        waiting.append(len(pending))
    depth = 1
    while frontier:
        nxt = []
        for fact in frontier:
            for i in uses.get(fact, ()):
                waiting[i] -= 1
                if not waiting[i] and heads[i] not in level:
                    level[heads[i]] = depth + 1
                    nxt.append(heads[i])
        frontier, depth = nxt, depth + 1
    return level


def _ground(p: Pattern, value: dict[str, str]) -> Triple:
    return (value[p[0]], p[1], value[p[2]])


def statement_iri(triple: Triple) -> URIRef:
    """The reified statement node of (s, p, o): the same IRI wherever the triple is named."""
    return URIRef(STMT_NS + hashlib.sha1(" ".join(triple).encode("utf-8", "surrogatepass")).hexdigest())


def provenance_quads(ontology: Ontology, derivations: Derivations, graph: str) -> list[tuple]:
    """Derivation nodes (axiom, conclusion, numbered premises) and the statements they name, in the provenance graph
    of the closure `graph`."""
    g = graph_iri(provenance_graph(graph))
    quads: list[tuple] = []
    statements: set[Triple] = set()
    for axiom in ontology.axioms:
        a = axiom.iri
        quads += [(a, RDFS.label, Literal(axiom.name), g), (a, AXIOM_KIND, Literal(KMIR_NAMES[axiom.kind]), g)]
        for conclusion, premises in sorted(derivations.get(axiom.name, {}).items()):
            d = URIRef("urn:kbc:derivation:" + hashlib.sha1(
                " ".join([axiom.name, *conclusion]).encode("utf-8", "surrogatepass")).hexdigest())
            quads += [(d, RDF.type, DERIVATION, g), (d, AXIOM, a, g), (d, CONCLUSION, statement_iri(conclusion), g)]
            quads += [(d, URIRef(f"{PREMISE}{i}"), statement_iri(p), g) for i, p in enumerate(premises, 1)]
            statements.add(conclusion)
            statements.update(premises)
    for s, p, o in sorted(statements):
        st = statement_iri((s, p, o))
        quads += [(st, RDF.type, RDF.Statement, g), (st, RDF.subject, URIRef(s), g),
                  (st, RDF.predicate, URIRef(p), g), (st, RDF.object, URIRef(o), g)]
    return quads


def stored_counts(store: GraphStore, ontology: Ontology, graph: str) -> dict[str, int]:
    """Derivations per axiom name in the provenance of the closure `graph` (0 for axioms with none)."""
    rows = store.select(f"SELECT ?name (COUNT(?d) AS ?n) WHERE {{ GRAPH <{graph_iri(provenance_graph(graph))}> {{ "
                        f"?d <{AXIOM}> ?a . ?a <{RDFS.label}> ?name }} }} GROUP BY ?name")
    found = {str(name): int(n) for name, n in rows}
    return {a.name: found.get(a.name, 0) for a in ontology.axioms}


def inferred_triples(store: GraphStore, graph: str) -> set[Triple]:
    """The (s, p, o) IRIs of every fact of the closure `graph`."""
    rows = store.select_values(f"SELECT ?s ?p ?o WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} }}")
    return set(rows)


def read_inferred(store: GraphStore, sources: Sequence[str], graph: str) -> list[InferredFact]:
    """The facts of the closure `graph` with their axiom and premises, entities labelled from `sources`.

    One `InferredFact` per derivation (fact and axiom), in a stable order.
    """
    prov = graph_iri(provenance_graph(graph))
    rows = store.select_values(
        f"SELECT ?d ?name ?k ?s ?p ?o WHERE {{ GRAPH <{prov}> {{ ?d a <{DERIVATION}> ; <{AXIOM}> ?a ; ?k ?st . "
        f"?a <{RDFS.label}> ?name . ?st <{RDF.subject}> ?s ; <{RDF.predicate}> ?p ; <{RDF.object}> ?o }} }}")
    derivations: dict[str, dict] = {}
    for d, name, k, s, p, o in rows:
        entry = derivations.setdefault(str(d), {"axiom": str(name), "premises": {}})
        triple = (str(s), str(p), str(o))
        if str(k) == str(CONCLUSION):
            entry["conclusion"] = triple
        elif str(k).startswith(PREMISE):
            entry["premises"][int(str(k)[len(PREMISE):])] = triple
    allowed = ", ".join(f"<{graph_iri(g)}>" for g in sources)
    labels = {e: label for e, label in store.select_values(
        f"SELECT ?e ?l WHERE {{ GRAPH ?g {{ ?e <{RDFS.label}> ?l }} FILTER(?g IN ({allowed})) }}")} if sources else {}

    def entity(iri: str) -> Entity:
        key = entity_key(iri)
        return Entity(labels.get(iri, key), None if iri.startswith(LABEL_NS) else key)

    def key(t: Triple) -> tuple[str, str, str]:
        return (entity(t[0]).key, relation_key(t[1]), entity(t[2]).key)

    out = []
    for entry in derivations.values():
        if "conclusion" not in entry:
            continue
        s, p, o = entry["conclusion"]
        premises = tuple(key(entry["premises"][i]) for i in sorted(entry["premises"]))
        out.append(InferredFact(entity(s), relation_key(p), entity(o), entry["axiom"], premises))
    return sorted(out, key=lambda f: (f.axiom, f.key))


# --- owlrl, the reference engine -------------------------------------------------------------------
def owlrl_new_facts(triples: Iterable[tuple], ontology: Ontology) -> tuple[set[Triple], float]:
    """New facts of the axioms' properties in owlrl's OWL-RL closure, and the closure's seconds.

    Only triples between resources (no literals, no property-level triples) whose predicate an
    axiom names and that the input lacks: OWL-RL's generic triples are dropped.
    """
    try:
        import owlrl
    except ImportError:
        raise ConfigError("owlrl is not installed: pip install 'kbcompare[reason]'") from None
    # one graph, no named graphs: the store that keeps no contexts answers owlrl's many lookups a third faster
    graph = Graph(store="SimpleMemory")
    for triple in triples:
        graph.add(tuple(triple[:3]))
    given = {(str(s), str(p), str(o)) for s, p, o in graph}
    graph.parse(data=ontology.text, format="turtle")
    start = time.perf_counter()
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    seconds = time.perf_counter() - start
    props = ontology.properties()
    new = {(str(s), str(p), str(o)) for s, p, o in graph
           if str(p) in props and isinstance(s, URIRef) and isinstance(o, URIRef)
           and str(s) not in props and str(o) not in props}
    return new - given, seconds
