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


@pytest.fixture(scope="module")
def inferred_column(lama_dir, tmp_path_factory):
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.sides import Ask, answer

    root = tmp_path_factory.mktemp("inferred")
    axioms = root / "twins.ttl"
    axioms.write_text(TWINS)
    cfg = ExplorerConfig(data_dir=str(lama_dir), relations=RELATIONS, store=str(root / "store"),
                         cache_dir=root / "cache")
    Explorer.start(cfg).close()  # loads the gold graphs of the two relations
    with GraphStore.open(root / "store") as store:
        ensure_inferred(store, load_axioms(axioms), [f"gold-trex-{rel}" for rel in RELATIONS],
                        [*RELATIONS, "P530"])  # P530 (diplomatic relation): a T-REx relation not loaded
    explorer = Explorer.start(cfg)
    try:
        body = explorer.call(answer, explorer, Ask(subject="Moscow", relation="P190", k=10))
    finally:
        explorer.close()
    return next(c for c in body["columns"] if c["name"] == "inferred graph")


def test_a_graph_of_fewer_relations_says_so(inferred_column, lama_dir):
    total = len(relation_ids("trex", lama_dir))
    assert inferred_column["status"] == "ok" and len(inferred_column["answers"]) == 20
    assert inferred_column["message"] == (
        f"the inferred graph was built from 2 of the corpus's {total} relations (P190, P47); its axioms also name "
        "P530, whose facts it lacks: objects the other relations derive are not in it (kbc kb infer --corpus trex "
        "builds it from all)")
