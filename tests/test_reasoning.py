"""Property axioms on the graph store: exact inferred facts, provenance, errors, and T-REx against networkx."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import networkx as nx
import pytest
from cli_support import run_kbc

from eval.errors import DataError
from eval.kmir import InferredFact
from eval.types import Entity, Fact
from kb.reasoning import (
    Closure,
    closure_graph,
    closure_graphs,
    derive,
    ensure_inferred,
    inferred_triples,
    levels,
    load_axioms,
    owlrl_new_facts,
    provenance_graph,
    provenance_quads,
    read_inferred,
)
from kb.store import LOADED, WD, WDT, GraphStore, entity_key, fact_quads, graph_iri, relation_key

PREFIXES = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix schema: <http://schema.org/> .
@prefix kbc: <urn:kbc:relation:> .
@prefix kbcv: <urn:kbc:> .
"""
TOY_AXIOMS = PREFIXES + """
wdt:P47 a owl:SymmetricProperty .
wdt:P131 a owl:TransitiveProperty .
wdt:P36 owl:inverseOf wdt:P1376 .
wdt:P19 owl:equivalentProperty schema:birthPlace .
schema:birthPlace a owl:ObjectProperty .
wdt:P103 rdfs:subPropertyOf wdt:P1412 .
kbc:country_of_birth a owl:ObjectProperty ; rdfs:label "country of birth" ;
    kbcv:template "[X] was born in the country [Y] ." ;
    owl:propertyChainAxiom ( wdt:P19 wdt:P17 ) .
"""
BIRTH_PLACE = "http://schema.org/birthPlace"
COUNTRY_OF_BIRTH = "urn:kbc:relation:country_of_birth"

E = {q: Entity(label, q) for q, label in [
    ("Q142", "France"), ("Q29", "Spain"), ("Q38", "Italy"), ("Q259463", "7th arrondissement of Paris"),
    ("Q90", "Paris"), ("Q13917", "Ile-de-France"), ("Q7186", "Marie Curie"), ("Q270", "Warsaw"),
    ("Q36", "Poland"), ("Q809", "Polish"), ("Q150", "French")]}
TOY_FACTS = [(1, "P47", "Q142", "Q29"), (2, "P47", "Q142", "Q38"), (3, "P47", "Q38", "Q142"),
             (4, "P131", "Q259463", "Q90"), (5, "P131", "Q90", "Q13917"), (6, "P131", "Q13917", "Q142"),
             (7, "P36", "Q142", "Q90"), (8, "P19", "Q7186", "Q270"), (9, "P17", "Q270", "Q36"),
             (10, "P103", "Q7186", "Q809"), (11, "P1412", "Q7186", "Q150"), (12, "P1376", "Q270", "Q36")]


def toy_facts() -> list[Fact]:
    return [Fact(str(uid), "toy", rel, E[s], E[o]) for uid, rel, s, o in TOY_FACTS]


def wd(q: str) -> str:
    return WD + q


def p(rel: str) -> str:
    return WDT + rel


EXPECTED = {  # axiom name -> the new facts it derives
    "symmetric:P47": {(wd("Q29"), p("P47"), wd("Q142"))},
    "transitive:P131": {(wd("Q259463"), p("P131"), wd("Q13917")), (wd("Q259463"), p("P131"), wd("Q142")),
                        (wd("Q90"), p("P131"), wd("Q142"))},
    f"equivalent:P19:{BIRTH_PLACE}": {(wd("Q7186"), BIRTH_PLACE, wd("Q270"))},
    "inverse:P36:P1376": {(wd("Q90"), p("P1376"), wd("Q142")), (wd("Q36"), p("P36"), wd("Q270"))},
    "subproperty:P103:P1412": {(wd("Q7186"), p("P1412"), wd("Q809"))},
    "chain:P19/P17:country_of_birth": {(wd("Q7186"), COUNTRY_OF_BIRTH, wd("Q36"))},
}


def _toy_store(tmp_path: Path, axioms: str, facts: list[Fact]):
    """(an in-memory store holding `facts` as corpus "toy", the axioms of the text `axioms`, the gold graph)."""
    path = tmp_path / "toy.ttl"
    path.write_text(axioms)
    store = GraphStore.open(None)
    graph = store.ensure_corpus("toy", "v1", facts)
    yield store, load_axioms(path), graph
    store.close()


@pytest.fixture()
def toy(tmp_path):
    yield from _toy_store(tmp_path, TOY_AXIOMS, toy_facts())


def test_toy_inferred_facts_and_counts_are_exact(toy):
    store, onto, graph = toy
    report = ensure_inferred(store, onto, [graph])
    assert report.built and report.facts == 9 and report.rounds == 3
    assert report.counts == {name: len(facts) for name, facts in EXPECTED.items()}
    assert inferred_triples(store, report.graph) == set().union(*EXPECTED.values())
    # facts a gold graph holds are never inferred (Italy borders France both ways in the gold facts)
    assert (wd("Q38"), p("P47"), wd("Q142")) not in inferred_triples(store, report.graph)
    # named by the source graphs and the axioms' digest; the provenance graph is outside the closures' prefix
    assert report.graph == closure_graph(onto, [graph]) and report.provenance == provenance_graph(report.graph)
    assert report.graph.startswith("inferred-") and len(report.graph) == len("inferred-") + 12
    assert store.graph_names("inferred") == closure_graphs(store) == [report.graph]
    assert store.graph_names() == ["gold-toy", report.graph, report.provenance]


def test_provenance_names_axiom_and_premises(toy):
    store, onto, graph = toy
    report = ensure_inferred(store, onto, [graph])
    facts = {(f.key, f.axiom): f for f in read_inferred(store, [graph], report.graph)}
    assert len(facts) == 9
    arr = facts[(("Q259463", "P131", "Q142"), "transitive:P131")]
    # two derivations exist (via Paris or via Ile-de-France); the smallest premise list is kept
    assert arr == InferredFact(E["Q259463"], "P131", E["Q142"], "transitive:P131",
                               (("Q259463", "P131", "Q13917"), ("Q13917", "P131", "Q142")))
    chain = facts[(("Q7186", "country_of_birth", "Q36"), "chain:P19/P17:country_of_birth")]
    assert chain.subject.label == "Marie Curie" and chain.object.label == "Poland"
    assert chain.premises == (("Q7186", "P19", "Q270"), ("Q270", "P17", "Q36"))
    inverse = facts[(("Q90", "P1376", "Q142"), "inverse:P36:P1376")]
    assert inverse.premises == (("Q142", "P36", "Q90"),)


def test_rerun_reuses_and_new_axioms_recompute(toy, tmp_path):
    store, onto, graph = toy
    first = ensure_inferred(store, onto, [graph])
    again = ensure_inferred(store, onto, [graph])
    assert not again.built and again.counts == first.counts and again.facts == 9
    smaller = tmp_path / "small.ttl"
    smaller.write_text(PREFIXES + "wdt:P47 a owl:SymmetricProperty .\n")
    third = ensure_inferred(store, load_axioms(smaller), [graph])
    assert third.built and third.counts == {"symmetric:P47": 1} and third.graph != first.graph
    assert inferred_triples(store, third.graph) == EXPECTED["symmetric:P47"]
    assert store.count(third.provenance) > 0
    # the closure under the other axioms stays, and is not computed again
    assert inferred_triples(store, first.graph) == set().union(*EXPECTED.values())
    assert closure_graphs(store) == sorted([first.graph, third.graph])
    assert not ensure_inferred(store, onto, [graph]).built


PART_OF_AXIOMS = PREFIXES + """
wdt:P361 a owl:TransitiveProperty .
wdt:P361 owl:inverseOf wdt:P527 .
"""
# Rwanda part of East Africa part of Africa: "Rwanda part of Africa" comes from transitivity (level 1), its inverse
# "Africa has part Rwanda" from it (level 2); the inverse of that is the fact itself again, no derivation of it
PART_OF = [("1", "Q1037", "Q27407"), ("2", "Q27407", "Q15")]
PART_OF_LABELS = {"Q1037": "Rwanda", "Q27407": "East Africa", "Q15": "Africa"}


def part_of_facts() -> list[Fact]:
    return [Fact(uid, "toy", "P361", Entity(PART_OF_LABELS[s], s), Entity(PART_OF_LABELS[o], o))
            for uid, s, o in PART_OF]


@pytest.fixture()
def part_of(tmp_path):
    yield from _toy_store(tmp_path, PART_OF_AXIOMS, part_of_facts())


def test_no_fact_is_derived_from_facts_resting_on_it(part_of):
    store, onto, graph = part_of
    report = ensure_inferred(store, onto, [graph], known_relations=["P361", "P527"])
    rwanda_africa, africa_rwanda = (wd("Q1037"), p("P361"), wd("Q15")), (wd("Q15"), p("P527"), wd("Q1037"))
    gold_1, gold_2 = (wd("Q1037"), p("P361"), wd("Q27407")), (wd("Q27407"), p("P361"), wd("Q15"))
    derivations = derive(store, onto, [graph], report.graph)
    # "Rwanda part of Africa" by transitivity only: never by the inverse of "Africa has part Rwanda", derived from it
    assert derivations == {
        "transitive:P361": {rwanda_africa: (gold_1, gold_2)},
        "inverse:P361:P527": {(wd("Q27407"), p("P527"), wd("Q1037")): (gold_1,),
                              (wd("Q15"), p("P527"), wd("Q27407")): (gold_2,),
                              africa_rwanda: (rwanda_africa,)}}
    assert report.counts == {"transitive:P361": 1, "inverse:P361:P527": 3} and report.facts == 4
    inferred = read_inferred(store, [graph], report.graph)
    assert sorted((f.axiom, f.key, f.premises) for f in inferred) == [
        ("inverse:P361:P527", ("Q15", "P527", "Q1037"), (("Q1037", "P361", "Q15"),)),
        ("inverse:P361:P527", ("Q15", "P527", "Q27407"), (("Q27407", "P361", "Q15"),)),
        ("inverse:P361:P527", ("Q27407", "P527", "Q1037"), (("Q1037", "P361", "Q27407"),)),
        ("transitive:P361", ("Q1037", "P361", "Q15"), (("Q1037", "P361", "Q27407"), ("Q27407", "P361", "Q15")))]


def test_levels_are_the_naive_rounds():
    # (conclusion, premises), g given: c from g; d from c, or from itself; e from d, or from g and c, in the
    # same round as d; f from itself alone: never derivable, no level
    derivations = [("d", ("c",)), ("c", ("g",)), ("d", ("d",)), ("e", ("d",)), ("e", ("g", "c")), ("f", ("f",)),
                   ("h", ("e", "c"))]
    assert levels(derivations, {"c", "d", "e", "f", "h"}) == {"c": 1, "d": 2, "e": 2, "h": 3}


def test_a_closure_recorded_by_an_earlier_rule_is_computed_again(part_of):
    """A store's closure whose derivations an earlier version recorded (no rule in its tag) is never read as is."""
    from kb.reasoning import coverage_problem, find_closure, stored_counts

    store, onto, graph = part_of
    first = ensure_inferred(store, onto, [graph], known_relations=["P361", "P527"])
    assert first.built and not ensure_inferred(store, onto, [graph], known_relations=["P361", "P527"]).built
    # what the earlier rule wrote: also "Rwanda part of Africa" by the inverse of "Africa has part Rwanda"
    circular = {"inverse:P361:P527": {(wd("Q1037"), p("P361"), wd("Q15")): ((wd("Q15"), p("P527"), wd("Q1037")),)}}
    store.add_quads(provenance_quads(onto, circular, first.graph))
    (old_tag,) = store.loaded_versions(first.graph)
    assert old_tag.startswith("inferred@provenance-2@sha256:")
    store.update(f"DELETE WHERE {{ GRAPH <{graph_iri('meta')}> {{ <{graph_iri(first.graph)}> <{LOADED}> ?v }} }}")
    store.mark_loaded("inferred@sha256:" + old_tag.rpartition(":")[2], first.graph)
    assert stored_counts(store, onto, first.graph) == {"transitive:P361": 1, "inverse:P361:P527": 4}
    why = ("the inferred graph's derivations were recorded by an earlier kbc version, which could record a fact as "
           "derived from facts that rest on it")
    assert coverage_problem(store, first.graph, [graph], onto) == why
    assert find_closure(store, [graph]) == Closure(None, why)
    again = ensure_inferred(store, onto, [graph], known_relations=["P361", "P527"])
    assert again.built and again.graph == first.graph
    assert again.counts == stored_counts(store, onto, again.graph) == {"transitive:P361": 1, "inverse:P361:P527": 3}
    assert find_closure(store, [graph]).graph == again.graph


def test_owlrl_gives_the_same_new_facts(toy):
    pytest.importorskip("owlrl")
    store, onto, graph = toy
    report = ensure_inferred(store, onto, [graph])
    new, seconds = owlrl_new_facts((q[:3] for q in fact_quads(toy_facts(), graph)), onto)
    assert new == inferred_triples(store, report.graph) and seconds > 0


def test_default_axioms_ship_with_the_package():
    onto = load_axioms()
    assert [a.name for a in onto.axioms] == [
        "symmetric:P190", "symmetric:P47", "symmetric:P530", "transitive:P131", "transitive:P279",
        "transitive:P361", f"equivalent:P19:{BIRTH_PLACE}", "inverse:P361:P527", "inverse:P36:P1376",
        "subproperty:P103:P1412", "chain:P19/P17:country_of_birth", "chain:P20/P17:country_of_death"]
    relations = onto.relations()
    assert relations["country_of_birth"].template == "[X] was born in the country [Y] ."
    assert relations[BIRTH_PLACE].label == "birth place"


@pytest.mark.parametrize("body,message", [
    ("wdt:P47 a owl:SymmetricProperty .\nwdt:P131 a owl:TransitiveProperty\nwdt:P36 owl:inverseOf wdt:P1376 .\n",
     "bad.ttl:9: not valid Turtle"),
    ("wdt:P47 a owl:SymmetricProperty .\n\nwdt:P9999 a owl:TransitiveProperty .\n",
     "bad.ttl:9: axiom transitive:P9999 names P9999"),
    ("kbc:x a owl:ObjectProperty ;\n  owl:propertyChainAxiom ( wdt:P19 ) .\n",
     "bad.ttl:7: the property chain of x has 1 property; a chain needs at least 2"),
    ("wdt:P47 a owl:ReflexiveProperty .\n", "bad.ttl:7: unsupported statement (a owl:ReflexiveProperty)"),
    ("wdt:P47 a owl:SymmetricProperty .\n\nwdt:P47 a owl:FunctionalProperty .\n",
     "bad.ttl:9: unsupported statement (a owl:FunctionalProperty)"),
    ("wdt:P47 a owl:SymmetricProperty .\nkbc:x a owl:ObjectProperty .\nkbc:y owl:inverseOf kbc:x .\n"
     "kbc:x kbcv:template \"[X] borders .\" .\n", "bad.ttl:10: the template of x needs [X] and [Y]"),
    ("wdt:P47 a owl:SymmetricProperty ;\n  rdfs:comment \"borders\" ;\n  owl:sameAs wdt:P530 .\n",
     "bad.ttl:9: unsupported statement (owl:sameAs)"),
    ("wdt:P47 rdfs:label \"shares border with\" .\n", "bad.ttl: no property axioms"),
])
def test_bad_axioms_files(tmp_path, body, message):
    path = tmp_path / "bad.ttl"
    path.write_text(PREFIXES + body)
    store = GraphStore.open(None)
    store.ensure_corpus("toy", "v1", toy_facts())
    with pytest.raises(DataError) as info:
        ensure_inferred(store, load_axioms(path), ["gold-toy"])
    assert message in str(info.value) and "\n" not in str(info.value)


def test_missing_axioms_file(tmp_path):
    with pytest.raises(DataError, match="no such axioms file"):
        load_axioms(tmp_path / "nope.ttl")


def test_a_byte_order_mark_in_the_axioms_file_is_ignored(tmp_path):
    path = tmp_path / "bom.ttl"
    path.write_text("\ufeff" + TOY_AXIOMS, encoding="utf-8")
    assert load_axioms(path).axioms == load_axioms(_write(tmp_path / "plain.ttl", TOY_AXIOMS)).axioms


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_named_pipe_for_the_axioms_file_is_named(tmp_path, pipe_writer):
    pipe = tmp_path / "axioms.ttl"
    os.mkfifo(pipe)
    opened = pipe_writer(pipe)
    with pytest.raises(DataError, match=r"axioms\.ttl: not a regular file \(a named pipe, socket or device\)"):
        load_axioms(pipe)
    assert not opened


# --- the CLI on a tiny LAMA copy -------------------------------------------------------------------
def _tiny_lama(root, lama_dir):
    """A LAMA data folder holding the toy facts (relations.jsonl lines taken from the real copy)."""
    wanted = {rel for _, rel, _, _ in TOY_FACTS}
    lines = [line for line in (lama_dir / "relations.jsonl").read_text().splitlines()
             if json.loads(line)["relation"] in wanted]
    (root / "TREx").mkdir(parents=True)
    (root / "relations.jsonl").write_text("\n".join(lines) + "\n")
    rows = defaultdict(list)
    for uid, rel, s, o in TOY_FACTS:
        rows[rel].append(json.dumps({"uuid": str(uid), "predicate_id": rel, "sub_uri": s, "sub_label": E[s].label,
                                     "obj_uri": o, "obj_label": E[o].label}))
    for rel, lines_ in rows.items():
        (root / "TREx" / f"{rel}.jsonl").write_text("\n".join(lines_) + "\n")
    return root


def test_cli_infer_prints_counts_and_reuses(tmp_path, lama_dir, capsys):
    data = _tiny_lama(tmp_path / "lama", lama_dir)
    axioms = tmp_path / "toy.ttl"
    axioms.write_text(TOY_AXIOMS)
    argv = ["kb", "infer", "--axioms", str(axioms), "--data-dir", str(data), "--store", str(tmp_path / "s")]
    code, out, err = run_kbc(argv, capsys)
    assert code == 0, err
    rows = {line.split()[-2]: int(line.split()[-1]) for line in out.splitlines() if ":P" in line or ":country" in line}
    assert rows == {name: len(facts) for name, facts in EXPECTED.items()}
    assert "9 distinct new facts in graph inferred" in out and "rounds of SPARQL rules" in out
    code, out, _ = run_kbc(argv, capsys)
    assert code == 0 and "already inferred" in out


def test_cli_default_axioms_name_relations_the_data_lacks(tmp_path, lama_dir, capsys):
    data = _tiny_lama(tmp_path / "lama", lama_dir)
    code, out, err = run_kbc(["kb", "infer", "--data-dir", str(data), "--store", str(tmp_path / "s")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err == ("error: kb infer on trex: the default axioms (kb/axioms.ttl) name P190, P530, P279, P361, P527, "
                   "P20, which this copy of trex neither holds nor lists in relations.jsonl; pass --axioms FILE with "
                   "axioms over its relations\n")


def test_cli_bad_turtle_exits_2(tmp_path, lama_dir, capsys):
    bad = tmp_path / "bad.ttl"
    bad.write_text(PREFIXES + "wdt:P47 a owl:SymmetricProperty\n")
    code, _, err = run_kbc(["kb", "infer", "--axioms", str(bad), "--data-dir", str(lama_dir)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bad.ttl:8: not valid Turtle" in err


# --- all T-REx facts against an independent networkx computation -------------------------------------
def _closure(gold: dict[str, set], onto) -> dict[str, set]:
    """The fixpoint of the default axioms over relation -> {(s, o)}, by set algebra and networkx."""
    closed = defaultdict(set, {r: set(pairs) for r, pairs in gold.items()})
    while True:
        size = sum(map(len, closed.values()))
        for axiom in onto.axioms:
            r = [relation_key(x) for x in axiom.properties]
            if axiom.kind == "symmetric":
                closed[r[0]] |= {(o, s) for s, o in closed[r[0]]}
            elif axiom.kind == "transitive":
                closed[r[0]] = set(nx.transitive_closure(nx.DiGraph(closed[r[0]]), reflexive=False).edges)
            elif axiom.kind == "inverse":
                closed[r[1]] |= {(o, s) for s, o in closed[r[0]]}
                closed[r[0]] |= {(o, s) for s, o in closed[r[1]]}
            elif axiom.kind == "equivalent":
                closed[r[1]] |= closed[r[0]]
                closed[r[0]] |= closed[r[1]]
            elif axiom.kind == "subproperty":
                closed[r[1]] |= closed[r[0]]
            elif axiom.kind == "chain":
                nxt = defaultdict(set)
                for s, o in closed[r[1]]:
                    nxt[s].add(o)
                closed[relation_key(axiom.target)] |= {(x, z) for x, y in closed[r[0]] for z in nxt[y]}
        if sum(map(len, closed.values())) == size:
            return closed


def _rounds(gold: dict[str, set], onto) -> tuple[dict[tuple[str, str, str], int], dict[str, int]]:
    """Naive evaluation, every axiom at once on the facts of the earlier rounds: each fact's round (gold: 0), and per
    axiom the new facts it derives in the round they first appear, from facts of earlier rounds only."""
    level = {(s, r, o): 0 for r, pairs in gold.items() for s, o in pairs}
    counts = {a.name: 0 for a in onto.axioms}
    while True:
        closed = defaultdict(set)
        for s, r, o in level:
            closed[r].add((s, o))
        step = {a.name: _derived(a, closed) - level.keys() for a in onto.axioms}
        new = set().union(*step.values())
        if not new:
            return level, counts
        for name, found in step.items():
            counts[name] += len(found)
        level.update(dict.fromkeys(new, max(level.values()) + 1))


def _derived(axiom, closed: dict[str, set]) -> set[tuple[str, str, str]]:
    """(s, relation, o) the axiom derives from the facts `closed`, without using the fact itself."""
    r = [relation_key(x) for x in axiom.properties]
    if axiom.kind == "symmetric":
        return {(o, r[0], s) for s, o in closed[r[0]] if s != o}
    if axiom.kind == "transitive":
        g = nx.DiGraph(closed[r[0]])
        return {(x, r[0], z) for x, y in g.edges for z in g.successors(y) if y not in (x, z)}
    if axiom.kind == "inverse":
        return {(o, r[1], s) for s, o in closed[r[0]]} | {(o, r[0], s) for s, o in closed[r[1]]}
    if axiom.kind == "equivalent":
        return {(s, r[1], o) for s, o in closed[r[0]]} | {(s, r[0], o) for s, o in closed[r[1]]}
    if axiom.kind == "subproperty":
        return {(s, r[1], o) for s, o in closed[r[0]]}
    nxt = defaultdict(set)
    for s, o in closed[r[1]]:
        nxt[s].add(o)
    return {(x, relation_key(axiom.target), z) for x, y in closed[r[0]] for z in nxt[y]}


@pytest.fixture(scope="module")
def trex_inferred(trex):
    """T-REx in an in-memory store with the default axioms' facts inferred: what both T-REx checks read."""
    onto = load_axioms()
    store = GraphStore.open(None)
    graph = store.ensure_corpus(trex.name, trex.version, trex.facts)
    report = ensure_inferred(store, onto, [graph], known_relations=trex.relations)
    yield onto, store, graph, report
    store.close()


def test_trex_inference_equals_networkx(trex, trex_inferred):
    onto, store, graph, report = trex_inferred
    gold = defaultdict(set)
    for f in trex.facts:
        gold[f.relation].add((f.subject.key, f.object.key))
    closed = _closure(gold, onto)
    new = {(s, r, o) for r, pairs in closed.items() for s, o in pairs if (s, o) not in gold.get(r, set())}
    level, expected = _rounds(gold, onto)
    assert {f for f, n in level.items() if n} == new

    got = {(entity_key(s), relation_key(p_), entity_key(o)) for s, p_, o in inferred_triples(store, report.graph)}
    assert got == new
    assert report.counts == expected
    assert report.counts == {
        "symmetric:P190": 673, "symmetric:P47": 722, "symmetric:P530": 426, "transitive:P131": 5,
        "transitive:P279": 22, "transitive:P361": 561, f"equivalent:P19:{BIRTH_PLACE}": 944,
        "inverse:P361:P527": 2457, "inverse:P36:P1376": 735, "subproperty:P103:P1412": 924,
        "chain:P19/P17:country_of_birth": 7, "chain:P20/P17:country_of_death": 13}
    assert report.facts == len(new) == 7489
    # every derivation's premises are gold facts or inferred facts of earlier rounds: provenance ends in gold facts
    inferred = read_inferred(store, [graph], report.graph)
    assert len(inferred) == sum(report.counts.values())
    assert all(level[p] < level[f.key] for f in inferred for p in f.premises)


@pytest.mark.heavy
def test_trex_owlrl_agrees(trex, trex_inferred):
    pytest.importorskip("owlrl")
    onto, store, graph, report = trex_inferred
    # owlrl is given the facts of the properties the axioms name: with no class, domain or sameAs axioms,
    # OWL-RL derives nothing from the others, and its closure over 34K triples is what makes this test slow
    named = onto.properties()
    quads = [q for q in fact_quads(trex.facts, graph) if str(q[1]) in named]
    assert 0 < len(quads) < len(trex.facts)
    new, _ = owlrl_new_facts((q[:3] for q in quads), onto)
    assert new == inferred_triples(store, report.graph)
