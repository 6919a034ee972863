"""A corpus graph holds exactly the facts of the version it is marked with: never a sample, never two versions."""

import pytest
from rdflib import Literal
from tests_support_facts import toy_facts

from eval.types import Entity, Fact
from kb.store import LOADING, GraphStore, corpus_graph, graph_iri

FULL_P47 = {"Q29": {"France"}, "Q142": {"Spain", "Italy"}}


def born_in(place: Entity) -> list[Fact]:
    return [Fact("1", "toy", "P19", Entity("Dante", "Q1067"), place)]


def test_sample_then_full_corpus_of_the_same_version(tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        sample = toy_facts()[2:4]  # a `--limit 2` run: two P47 facts
        graph = store.ensure_corpus("toy", "v1", sample)
        assert graph == "gold-toy"
        assert store.valid_objects("P47", graph) == {"Q29": {"France"}, "Q142": {"Spain"}}
        assert store.ensure_corpus("toy", "v1", toy_facts()) == graph
        assert store.valid_objects("P47", graph) == FULL_P47
        assert store.valid_objects("P131", graph) == {"Q90": {"France"}, "Q456": {"France"}}
        assert store.loaded_versions(graph) == {"toy@v1"}
        # and a later sampled call does not shrink it
        assert store.sync_corpus("toy", "v1", toy_facts()) == (graph, False)


def test_sample_in_the_legacy_gold_graph_does_not_leak(tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        assert store.ensure_facts(toy_facts()[2:4], "toy@v1") is True
        graph = store.ensure_corpus("toy", "v1", toy_facts())
        assert store.valid_objects("P47", graph) == FULL_P47
        # ensure_facts itself now replaces a sample marked with the same tag
        assert store.ensure_facts(toy_facts(), "toy@v1") is True
        assert store.valid_objects("P47") == FULL_P47
        assert store.ensure_facts(toy_facts(), "toy@v1") is False


def test_new_version_replaces_the_old(tmp_path):
    path = tmp_path / "s"
    with GraphStore.open(path) as store:
        graph = store.ensure_corpus("toy", "v1", born_in(Entity("Florence", "Q2044")))
        assert store.valid_objects("P19", graph) == {"Q1067": {"Florence"}}
    with GraphStore.open(path) as store:  # the data file was edited: a new version
        assert store.sync_corpus("toy", "v2", born_in(Entity("Ravenna", "Q13364"))) == (graph, True)
        assert store.valid_objects("P19", graph) == {"Q1067": {"Ravenna"}}
        assert store.loaded_versions(graph) == {"toy@v2"}
        assert store.count(graph) == 3  # one triple, two labels: nothing of v1 left
        assert store.sync_corpus("toy", "v1", born_in(Entity("Florence", "Q2044")))[1] is True
        assert store.valid_objects("P19", graph) == {"Q1067": {"Florence"}}


def test_corpora_have_their_own_graphs(tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        a = store.ensure_corpus("trex", "v1", born_in(Entity("Florence", "Q2044")))
        b = store.ensure_corpus("google_re", "v7", born_in(Entity("Ravenna", "Q13364")))
        assert (a, b) == (corpus_graph("trex"), corpus_graph("google_re")) == ("gold-trex", "gold-google_re")
        assert store.valid_objects("P19", a) == {"Q1067": {"Florence"}}
        assert store.valid_objects("P19", b) == {"Q1067": {"Ravenna"}}
        assert store.sync_corpus("trex", "v1", born_in(Entity("Florence", "Q2044"))) == (a, False)


def test_legacy_shared_graph_drops_an_old_version(tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        store.ensure_facts(born_in(Entity("Florence", "Q2044")), "trex@v1")
        store.ensure_facts(toy_facts(), "toy@v1")
        assert store.loaded_versions() == {"trex@v1", "toy@v1"}
        store.ensure_facts(born_in(Entity("Ravenna", "Q13364")), "trex@v2")
        assert store.valid_objects("P19") == {"Q1067": {"Ravenna"}}
        assert store.loaded_versions() == {"trex@v2"}  # toy went with the old graph ...
        assert store.ensure_facts(toy_facts(), "toy@v1") is True  # ... and comes back on its next use
        assert store.valid_objects("P47") == FULL_P47


class Crash(Exception):
    pass


def test_a_load_cut_short_is_not_marked_and_is_redone(tmp_path):
    path = tmp_path / "s"
    with GraphStore.open(path) as store:
        write = store.backend.add_quads

        def half_then_crash(quads):
            if len(quads) > 3:  # the facts, not the markers
                write(quads[: len(quads) // 2])
                raise Crash
            write(quads)

        store.backend.add_quads = half_then_crash
        with pytest.raises(Crash):
            store.ensure_corpus("toy", "v1", toy_facts())
        assert store.loaded_versions("gold-toy") == set()
        assert store.count("gold-toy") == 0  # on disk a load is published whole or not at all (a remote store
        # keeps the half: its loading marker makes the next load redo it, as below)
    with GraphStore.open(path) as store:
        graph = store.ensure_corpus("toy", "v1", toy_facts())
        assert store.valid_objects("P47", graph) == FULL_P47
        assert store.count(graph) == 6 + 7  # 6 facts and the labels of 7 entities
        assert store.loaded_versions(graph) == {"toy@v1"}


def test_crash_in_a_shared_graph_drops_it(tmp_path):
    with GraphStore.open(tmp_path / "s") as store:
        store.ensure_facts(born_in(Entity("Florence", "Q2044")), "other@v1")
        meta, g = graph_iri("meta"), graph_iri("gold")
        # what a crash after the first batch of `toy@v1` leaves: its loading marker and a partial graph
        store.add_quads([(g, LOADING, Literal("toy@v1"), meta)])
        store.add_facts([Fact("x", "toy", "P47", Entity("Spain", "Q29"), Entity("Portugal", "Q45"))])
        assert store.ensure_facts(toy_facts(), "toy@v1") is True
        assert store.valid_objects("P47") == FULL_P47


def test_real_trex_p19_sample_then_full_then_edited(trex):
    p19 = [f for f in trex.facts if f.relation == "P19"]
    expected: dict[str, set[str]] = {}
    for f in p19:
        expected.setdefault(f.subject.key, set()).add(f.object.label)
    assert len(p19) == 944 and len(expected) == 944
    with GraphStore.open(None) as store:
        graph = store.ensure_corpus("trex", trex.version, p19[:2])
        assert len(store.valid_objects("P19", graph)) == 2
        store.ensure_corpus("trex", trex.version, p19)
        assert store.valid_objects("P19", graph) == expected
        # the data file is edited: the first fact gets another object
        first = p19[0]
        edited = [Fact(first.uid, first.corpus, "P19", first.subject, Entity("Nowhere", "Q99999999")), *p19[1:]]
        store.ensure_corpus("trex", trex.version + "-edited", edited)
        valid = store.valid_objects("P19", graph)
        assert valid[first.subject.key] == {"Nowhere"}
        assert len(valid) == 944 and sum(len(v) for v in valid.values()) == 944
