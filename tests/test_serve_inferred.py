"""The explorer says when the inferred graph was built from fewer relations than the corpus has."""

from __future__ import annotations

import pytest

from eval.lama import relation_ids
from kb.reasoning import ensure_inferred, load_axioms
from kb.store import GraphStore

TWINS = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
wdt:P47 a owl:SymmetricProperty .
wdt:P190 a owl:SymmetricProperty .
wdt:P530 a owl:SymmetricProperty .
"""
RELATIONS = ["P47", "P190"]


def _partial_store(lama_dir, root):
    """The explorer's configuration over a store whose inferred graph was built from two relations."""
    from bridge.serve.explorer import Explorer, ExplorerConfig

    axioms = root / "twins.ttl"
    axioms.write_text(TWINS)
    cfg = ExplorerConfig(data_dir=str(lama_dir), relations=RELATIONS, store=str(root / "store"),
                         cache_dir=root / "cache")
    Explorer.start(cfg).close()  # loads the gold graphs of the two relations
    with GraphStore.open(root / "store") as store:
        ensure_inferred(store, load_axioms(axioms), [f"gold-trex-{rel}" for rel in RELATIONS],
                        [*RELATIONS, "P530"])  # P530 (diplomatic relation): a T-REx relation not loaded
    return cfg


def _inferred(explorer) -> dict:
    from bridge.serve.sides import Ask, answer

    body = explorer.call(answer, explorer, Ask(subject="Moscow", relation="P190", k=10))
    return next(c for c in body["columns"] if c["name"] == "inferred graph")


@pytest.fixture(scope="module")
def explorer(lama_dir, tmp_path_factory):
    from bridge.serve.explorer import Explorer

    root = tmp_path_factory.mktemp("inferred")
    explorer = Explorer.start(_partial_store(lama_dir, root))
    yield explorer
    explorer.close()


@pytest.fixture(scope="module")
def inferred_column(explorer):
    return _inferred(explorer)


def test_a_graph_of_fewer_relations_says_so(inferred_column, lama_dir):
    total = len(relation_ids("trex", lama_dir))
    assert inferred_column["status"] == "ok" and len(inferred_column["answers"]) == 20
    # derived objects only (none of them in the gold graph): no gold object among the 20 answers returned
    assert not any(a["gold"] for a in inferred_column["answers"])
    assert inferred_column["gold_rank"] == {"rank": None, "exact": False, "of": 20}
    assert inferred_column["message"] == (
        f"the inferred graph was built from 2 of the corpus's {total} relations (P190, P47); its axioms also name "
        "P530, whose facts it lacks: objects the other relations derive are not in it (kbc kb infer --corpus trex "
        "builds it from all)")


def test_a_store_written_while_served_is_said_with_when_it_was_read(explorer, inferred_column, lama_dir):
    """`kbc kb infer` beside a running explorer publishes a newer store, which the explorer does not read (its
    columns and the coverage note stay as read at start): each answer says so, with when it was read."""
    from rdflib import Literal, URIRef

    from bridge.serve.explorer import Explorer
    from kb.store import graph_iri

    assert "the store changed" not in inferred_column["message"]
    with GraphStore.open(explorer.cfg.store) as beside:  # another process's write, as `kbc kb infer` publishes one
        beside.add_quads([(URIRef("urn:kbc:test:s"), URIRef("urn:kbc:test:p"), Literal("o"), graph_iri("scratch"))])
    now = _inferred(explorer)
    assert now["message"] == (f"{inferred_column['message']}; the store changed after the explorer read it "
                              f"({explorer.store_read_at}): this column shows the inferred graph as it was then; "
                              "restart kbc serve to read the newer one")
    assert now["answers"] == inferred_column["answers"]
    fresh = Explorer.start(explorer.cfg)
    try:
        assert _inferred(fresh)["message"] == inferred_column["message"]
    finally:
        fresh.close()
