"""The graph store: SPARQL look-ups, persistence, named graphs; the networkx view."""

from tests_support_facts import toy_facts

from eval.types import Entity
from kb.graph_view import compare_types, shape
from kb.store import GraphStore, entity_iri, entity_key


def test_lookups_and_persistence(tmp_path):
    path = tmp_path / "store"
    with GraphStore.open(path) as store:
        assert store.ensure_facts(toy_facts(), "toy@1") is True
        assert store.ensure_facts(toy_facts(), "toy@1") is False  # recorded in the meta graph
        assert store.objects(Entity("Paris", "Q90"), "P131") == [Entity("France", "Q142")]
        assert sorted(e.label for e in store.subjects("P131", Entity("France", "Q142"))) == ["Lyon", "Paris"]
        assert store.valid_objects("P47") == {"Q29": {"France"}, "Q142": {"Spain", "Italy"}}
        # entities without ids live under label IRIs and keep their key
        assert store.valid_objects("date_of_birth") == {"label:Nobody": {"1941"}}
    with GraphStore.open(path) as store:  # reopened from disk
        assert store.loaded_versions() == {"toy@1"}
        assert store.relations() == {"P131": 2, "P47": 3, "date_of_birth": 1}
        assert store.objects(Entity("Paris", "Q90"), "P131", graph="re-naive") == []


def test_iri_round_trip():
    for ent in (Entity("x", "Q5"), Entity("x", "/m/047fprg"), Entity("Saint-Denis, Réunion")):
        assert entity_key(str(entity_iri(ent))) == ent.key
    assert str(entity_iri(Entity("x", "Q5"))) == "http://www.wikidata.org/entity/Q5"
    assert str(entity_iri(Entity("x", "/m/047fprg"))) == "http://rdf.freebase.com/ns/m.047fprg"


def test_shapes_and_symmetry():
    sym = shape("P47", [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")])
    assert sym.symmetric and sym.reverse_fraction == 1.0
    n1 = shape("P131", [("a", "x"), ("b", "x"), ("c", "x"), ("d", "y")])
    assert n1.type == "N-1" and not n1.symmetric and n1.heads_per_tail == 2.0
    rows = compare_types([sym, n1], {"P47": "N-M", "P131": "N-1"})
    assert [(r["relation"], r["computed"], r["agree"]) for r in rows] == [("P47", "1-1", False), ("P131", "N-1", True)]


def test_types_on_trex(trex, tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        graph = store.ensure_corpus(trex.name, trex.version, trex.facts)
        shapes = {rel: shape(rel, ((s, o) for s, o, _ in store.pairs(rel, graph))) for rel in trex.relations}
    assert shapes["P19"].n_triples == 944
    assert shapes["P19"].type == "N-1"  # many people per birth place, one birth place per person
    # the sampled data shows reverse pairs only for the symmetric relations (borders, diplomacy, twin cities)
    assert sorted(r for r, sh in shapes.items() if sh.symmetric) == ["P190", "P47", "P530"]
    rows = compare_types(shapes.values(), {r: rel.type for r, rel in trex.relations.items()})
    assert len(rows) == 41


def test_quads_written_directly_are_those_rdflib_writes(tmp_path):
    """A store on disk converts IRIs and literals to Oxigraph quads itself: the same quads as rdflib's `addN`
    through oxrdflib, for plain, language-tagged and typed literals; other terms are left to `addN`."""
    import pyoxigraph as ox
    from oxrdflib import OxigraphStore
    from oxrdflib._converter import to_ox
    from rdflib import RDFS, BNode, Dataset, Literal, URIRef

    from kb.store import _oxigraph_quads, fact_quads, graph_iri

    g = graph_iri("gold")
    quads = [*fact_quads(toy_facts(), "gold"), (URIRef("urn:x:a"), RDFS.label, Literal("Paris", lang="fr"), g),
             (URIRef("urn:x:a"), URIRef("urn:x:n"), Literal(5), g), (URIRef("urn:x:a"), URIRef("urn:x:d"),
             Literal("1.50", datatype=URIRef("http://www.w3.org/2001/XMLSchema#decimal")), g)]
    by_rdflib = ox.Store()
    Dataset(store=OxigraphStore(store=by_rdflib)).addN(quads)
    direct = _oxigraph_quads(quads)
    assert direct == [to_ox(q) for q in quads]
    stored = ox.Store()
    stored.extend(direct)
    assert set(stored) == set(by_rdflib) and len(set(by_rdflib)) == len(set(direct)) == 16  # labels repeat
    assert _oxigraph_quads([*quads, (BNode("b"), RDFS.label, Literal("x"), g)]) is None

    store = GraphStore.open(tmp_path / "s")
    store.add_quads(quads)
    assert set(store.backend.folder.current()) == set(by_rdflib)
    store.add_quads([(BNode("b"), RDFS.label, Literal("blank"), g)])  # through rdflib's `addN`
    assert [str(label) for label, in store.select(
        f"SELECT ?l WHERE {{ GRAPH <{g}> {{ ?b <{RDFS.label}> ?l FILTER(isBlank(?b)) }} }}")] == ["blank"]
