"""An inferred graph records what it was computed from, and a partial one never answers as complete.

A run over a few relations leaves `inferred` computed from those alone; the explorer and the
`kb-inferred` predictor over more relations must build it again or refuse, not report "no
derived object" for facts the missing relations derive. A closure that explodes stops with an
error naming the axioms, and leaves the store as it was.
"""

from __future__ import annotations

import time

import pytest
from cli_support import run_kbc

from eval.errors import DataError
from kb.reasoning import (
    INFERRED,
    PROVENANCE,
    coverage_problem,
    ensure_inferred,
    inferred_triples,
    load_axioms,
    stored_coverage,
)
from kb.store import WD, WDT, GraphStore

PREFIXES = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
"""
TWINS = PREFIXES + "wdt:P47 a owl:SymmetricProperty .\nwdt:P190 a owl:SymmetricProperty .\n"
RELATIONS = ["P47", "P190"]


@pytest.fixture(scope="module")
def borders(lama_dir):
    from eval.corpora import load_corpus

    return load_corpus("trex", lama_dir, RELATIONS)


def _graphs(store: GraphStore, corpus) -> dict[str, str]:
    from eval.lama import relation_versions

    versions = relation_versions(corpus)
    return {rel: store.ensure_corpus(f"trex-{rel}", versions[rel], facts)
            for rel, facts in corpus.by_relation().items()}


def test_coverage_is_recorded_and_a_partial_graph_is_named(borders, tmp_path):
    axioms = tmp_path / "twins.ttl"
    axioms.write_text(TWINS)
    onto = load_axioms(axioms)
    with GraphStore.open(None) as store:
        graphs = _graphs(store, borders)
        ensure_inferred(store, onto, [graphs["P47"]], RELATIONS)  # as a run over P47 alone leaves it
        coverage = stored_coverage(store)
        assert coverage.relations == {"P47": 922} and coverage.sources == ("gold-trex-P47",)
        assert coverage.named == {"P47", "P190"} and coverage.axioms == f"{axioms} {onto.digest}"
        assert coverage_problem(store, [graphs["P47"]]) is None
        assert coverage_problem(store, sorted(graphs.values())) == (
            "the inferred graph is partial here: it covers 1 relation (922 facts of gold-trex-P47), axioms "
            f"{axioms} {onto.digest}, and lacks the facts of P190 (0 of 995 facts)")
        ensure_inferred(store, onto, sorted(graphs.values()), RELATIONS)
        assert coverage_problem(store, sorted(graphs.values())) is None
        assert sum(p == WDT + "P190" for _, p, _ in inferred_triples(store)) == 673


def test_the_explorer_refuses_a_partial_graph(borders, lama_dir, tmp_path):
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.sides import Ask, answer

    axioms = tmp_path / "twins.ttl"
    axioms.write_text(TWINS)
    cfg = ExplorerConfig(data_dir=str(lama_dir), relations=RELATIONS, store=str(tmp_path / "store"),
                         cache_dir=tmp_path / "cache")

    def inferred_column(sources: list[str]) -> dict:
        with GraphStore.open(tmp_path / "store") as store:
            ensure_inferred(store, load_axioms(axioms), [f"gold-trex-{rel}" for rel in sources], RELATIONS)
        explorer = Explorer.start(cfg)
        try:
            body = explorer.call(answer, explorer, Ask(subject="Moscow", relation="P190", k=10))
        finally:
            explorer.close()
        return next(c for c in body["columns"] if c["name"] == "inferred graph")

    Explorer.start(cfg).close()  # loads the gold graphs
    partial = inferred_column(["P47"])
    assert partial["status"] == "partial" and partial["answers"] == []  # a note, not an error; no digest shown
    assert partial["message"] == (
        "the inferred graph is partial here: it covers 1 relation (922 facts of gold-trex-P47), and lacks the facts "
        f"of P190 (0 of 995 facts); build it for this corpus: kbc kb infer --corpus trex --store {tmp_path / 'store'}")
    full = inferred_column(RELATIONS)
    assert full["status"] == "ok" and len(full["answers"]) == 20  # twinned with Moscow, not the reverse
    assert {"Madrid", "Sofia", "Uzhhorod"} <= {a["label"] for a in full["answers"]}


def test_kb_inferred_rebuilds_a_partial_graph(borders, lama_dir, tmp_path):
    from bridge.predictors.kmir import make_kb_inferred
    from bridge.predictors.registry import PredictorContext

    axioms = tmp_path / "twins.ttl"
    axioms.write_text(TWINS)
    with GraphStore.open(tmp_path / "store") as store:
        graphs = _graphs(store, borders)
        ensure_inferred(store, load_axioms(axioms), [graphs["P47"]], RELATIONS)
        make_kb_inferred("kb-inferred", PredictorContext(borders, store, tmp_path / "cache", lama_dir))
        coverage = stored_coverage(store)
        assert coverage.relations == {"P47": 922, "P190": 995} and coverage.axioms.startswith(str(load_axioms().path))
        assert coverage_problem(store, sorted(graphs.values())) is None


def test_kb_stats_lists_the_inferred_graph_and_its_coverage(tmp_path, lama_dir, capsys):
    axioms = tmp_path / "twins.ttl"
    axioms.write_text(TWINS)
    store = ["--store", str(tmp_path / "store")]
    code, _, err = run_kbc(["kb", "infer", "--axioms", str(axioms), "--data-dir", str(lama_dir), *store], capsys)
    assert code == 0, err
    code, out, _ = run_kbc(["kb", "stats", *store], capsys)
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("inferred:"))
    assert lines[at].startswith("inferred: 1395 fact triples, 2 relations")
    assert lines[at + 1] == f"  covers 41 relations (34039 facts of gold-trex), axioms {axioms} " \
                            f"{load_axioms(axioms).digest}: " + " ".join(sorted(_trex_relations(lama_dir)))


def _trex_relations(lama_dir) -> list[str]:
    from eval.corpora import load_corpus

    return list(load_corpus("trex", lama_dir).relations)


# -- a closure that explodes ------------------------------------------------------------------------
EXPLODING = PREFIXES + "wdt:P47 a owl:SymmetricProperty , owl:TransitiveProperty .\n" + "".join(
    f"wdt:P47 owl:equivalentProperty <urn:kbc:relation:border{i}> .\n"
    f"<urn:kbc:relation:border{i}> a owl:ObjectProperty .\n" for i in range(7))


def test_an_exploding_closure_stops_with_the_axioms_and_leaves_no_trace(tmp_path, lama_dir, capsys):
    axioms = tmp_path / "explode.ttl"
    axioms.write_text(EXPLODING)
    argv = ["kb", "infer", "--corpus", "trex", "--axioms", str(axioms), "--data-dir", str(lama_dir),
            "--store", str(tmp_path / "store")]
    started = time.monotonic()
    code, out, err = run_kbc(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err == (f"error: {axioms}: the closure exploded: more than 10,000 new facts from 922 input facts in "
                   "round 1; the axioms still deriving: equivalent:P47:border0 (+5,290), transitive:P47 (+3,989), "
                   "symmetric:P47 (+722). Check these axioms (e.g. a property declared symmetric and transitive, or "
                   "many properties declared equivalent to it), or raise --max-derived\n")
    assert time.monotonic() - started < 120
    with GraphStore.open(tmp_path / "store") as store:
        assert store.count(INFERRED) == 0 and store.count(PROVENANCE) == 0
        assert stored_coverage(store) is None
    code, out, err = run_kbc([*argv, "--max-derived", "5"], capsys)
    assert code == 2 and "more than 5 new facts from 922 input facts in round 1" in err


def test_max_derived_bounds_a_sane_closure_too(tmp_path):
    from eval.types import Entity, Fact

    axioms = tmp_path / "twins.ttl"
    axioms.write_text(TWINS)
    facts = [Fact(str(i), "toy", "P47", Entity(f"e{i}", f"Q{i}"), Entity(f"e{i + 1}", f"Q{i + 1}")) for i in range(6)]
    with GraphStore.open(None) as store:
        graph = store.ensure_corpus("toy", "v1", facts)
        with pytest.raises(DataError, match=r"more than 5 new facts from 6 input facts in round 1; the axioms "
                                             r"still deriving: symmetric:P47 \(\+6\)"):
            ensure_inferred(store, load_axioms(axioms), [graph], known_relations=["P47", "P190"], max_derived=5)
        report = ensure_inferred(store, load_axioms(axioms), [graph], known_relations=["P47", "P190"], max_derived=6)
        assert report.facts == 6 and (WD + "Q1", WDT + "P47", WD + "Q0") in inferred_triples(store)
