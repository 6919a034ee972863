"""The runner's valid-object maps, computed from the facts, equal what the graph store answers."""

from __future__ import annotations

from bridge.run.runner import valid_objects_of
from eval.types import Entity, Fact
from kb.store import GraphStore


def _store_answer(facts: list[Fact], relation: str) -> dict[str, set[str]]:
    with GraphStore.open(None) as store:
        graph = store.ensure_corpus(f"t-{relation}", "v1", facts)
        return store.valid_objects(relation, graph)


def test_every_real_relation_matches_the_store(trex, google_re):
    compared = 0
    for corpus in (trex, google_re):
        for rel, facts in corpus.by_relation().items():
            assert valid_objects_of(facts) == _store_answer(facts, rel), (corpus.name, rel)
            compared += len(facts)
    assert compared == 34039 + 5527


def test_an_iri_gathers_every_label_it_has_in_the_graph():
    paris, paris2 = Entity("Paris", "Q90"), Entity("Paris, France", "Q90")
    a, b, nameless = Entity("A", "Q1"), Entity("B", "Q2"), Entity("Exeter")
    facts = [Fact(f"u{i}", "t", "P19", s, o) for i, (s, o) in
             enumerate([(a, paris), (paris2, b), (b, nameless), (b, Entity("Exeter"))])]
    want = {"Q1": {"Paris", "Paris, France"}, "Q90": {"B"}, "Q2": {"Exeter"}}
    assert valid_objects_of(facts) == want == _store_answer(facts, "P19")


def test_an_id_spelt_like_a_label_key_stays_another_entity():
    odd, plain = Entity("Exeter", "label:Exeter"), Entity("Exeter")
    a, b = Entity("A", "Q1"), Entity("B", "Q2")
    facts = [Fact("u1", "t", "P19", a, odd), Fact("u2", "t", "P19", Entity("Exeter, Devon"), b),
             Fact("u3", "t", "P19", b, plain), Fact("u4", "t", "P19", plain, a)]
    assert valid_objects_of(facts) == _store_answer(facts, "P19")
