"""Ids and labels with characters an IRI cannot hold are percent-encoded, and come back exactly."""

import pytest

from eval.types import Entity, Fact
from kb.store import GraphStore, entity_iri, entity_key, relation_iri, relation_key

NASTY = [
    "/m/0 x",
    '/m/0"quote"',
    "/m/<a>{b}|c^d`e\\f",
    "/m/Zürich",
    "/m/100%25",
    "/m/a/b#c?d",
    "/m/",
    "Q12 ",
    "Q١٢",  # Arabic-Indic digits: not a Wikidata id
    "Q",
    "label:looks like a key",
    "urn:x:y",
    "tab\there\nnewline",
    "emoji 🙂",
]
FORBIDDEN = set(' "<>{}|^`\\') | {"\t", "\n"}


@pytest.mark.parametrize("eid", NASTY)
def test_ids_round_trip_and_fit_in_an_iri(eid):
    ent = Entity("some label", eid)
    iri = str(entity_iri(ent))
    assert iri.isascii() and not FORBIDDEN & set(iri)
    assert entity_key(iri) == ent.key == eid


def test_exact_encodings():
    assert str(entity_iri(Entity("x", "/m/0 x"))) == "http://rdf.freebase.com/ns/m.0%20x"
    assert str(entity_iri(Entity("x", "Q١٢"))) == "urn:kbc:entity:Q%D9%A1%D9%A2"
    assert str(entity_iri(Entity('a "b" <c>'))) == "urn:kbc:label:a%20%22b%22%20%3Cc%3E"
    assert entity_key("urn:kbc:label:a%20%22b%22%20%3Cc%3E") == 'label:a "b" <c>'
    assert str(relation_iri("place of <birth>")) == "urn:kbc:relation:place%20of%20%3Cbirth%3E"
    assert relation_key(str(relation_iri("place of <birth>"))) == "place of <birth>"
    assert relation_key(str(relation_iri("P19"))) == "P19"


def test_labels_without_ids_round_trip():
    for label in ('He said "hi" {x} <y> \\ ü', "", "a%20b"):
        assert entity_key(str(entity_iri(Entity(label)))) == f"label:{label}"


def test_nasty_ids_load_and_query(tmp_path):
    person = Entity('Jo "the <boss>"', "/m/0 j{o}")
    facts = [Fact(str(i), "google_re", "place_of_birth", Entity(f"p{i}", eid), Entity("Zürich", "/m/Zürich\\"))
             for i, eid in enumerate(NASTY)]
    facts.append(Fact("x", "google_re", "place_of_birth", person, Entity('New "York"')))
    with GraphStore.open(tmp_path / "s") as store:
        graph = store.ensure_corpus("google_re", "v1", facts)
        valid = store.valid_objects("place_of_birth", graph)
        assert valid == {**{eid: {"Zürich"} for eid in NASTY}, "/m/0 j{o}": {'New "York"'}}
        assert store.objects(person, "place_of_birth", graph) == [Entity('New "York"')]
        subjects = store.subjects("place_of_birth", Entity("Zürich", "/m/Zürich\\"), graph)
        assert sorted(e.id for e in subjects) == sorted(NASTY)
        assert store.relations(graph) == {"place_of_birth": len(facts)}
