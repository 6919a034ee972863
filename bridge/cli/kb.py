"""`kbc kb load|types|objects`: the graph store from the command line."""

from __future__ import annotations

import json

import click

from bridge.cli.options import data_dir_option, open_cli_store, store_option
from bridge.cli.value_types import IntRange, PathType
from eval.cells import count_of
from eval.corpora import load_corpus
from eval.errors import ConfigError, DataError


@click.group()
def kb() -> None:
    """The graph store."""


@kb.command("load", short_help="Load each corpus into graph `gold-<corpus>`.")
@click.option("--corpus", "corpora", multiple=True, default=("trex", "google_re"), show_default=True)
@data_dir_option
@store_option
def load(corpora, data_dir, store) -> None:
    """Load each corpus into its own named graph `gold-<corpus>` (skipped when already there).

    A graph holding another version of the corpus is replaced, never merged.
    """
    with open_cli_store(store) as st:
        for name in corpora:
            corpus = load_corpus(name, data_dir)
            graph, added = st.sync_corpus(corpus.name, corpus.version, corpus.facts)
            n, triples = len(corpus.facts), st.count(graph)
            click.echo(f"{name}: {count_of(n, 'facts')} {'loaded' if added else 'already in the store'} "
                       f"(graph {graph}: {count_of(triples, 'triples')} in {st.location})")


@kb.command("types", short_help="Cardinality types and symmetry from the data.")
@click.option("--corpus", default="trex", show_default=True)
@data_dir_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON rows.")
def types(corpus, data_dir, store, as_json) -> None:
    """Cardinality types and symmetry computed from the data, against relations.jsonl."""
    from kb.graph_view import compare_types, shape

    with open_cli_store(store, filled_by=f"kbc kb load --corpus {corpus}") as st:
        c = load_corpus(corpus, data_dir)
        if any(f.cloze for f in c.facts):
            raise ConfigError(f"{corpus} holds cloze sentences, not subject-relation-object facts: they have no "
                              "cardinality type; ask a corpus of facts (trex, google_re)")
        graph = st.ensure_corpus(c.name, c.version, c.facts)
        shapes = [shape(rel, ((s, o) for s, o, _ in st.pairs(rel, graph))) for rel in c.relations]
    rows = compare_types(shapes, {r: rel.type for r, rel in c.relations.items()})
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    width = max([10, *(len(r["relation"]) for r in rows)])  # Google-RE's names are longer than T-REx's ids
    click.echo(f"{'relation':{width}s} {'declared':8s} {'computed':8s} {'tph':>6s} {'hpt':>7s} {'rev':>5s}  note")
    for r in rows:
        note = ("" if r["agree"] else "DISAGREES") + (" symmetric" if r["symmetric"] else "")
        click.echo(f"{r['relation']:{width}s} {str(r['declared']):8s} {r['computed']:8s} {r['tails_per_head']:6.2f} "
                   f"{r['heads_per_tail']:7.2f} {r['reverse_fraction']:5.2f}  {note}")
    bad = sum(not r["agree"] for r in rows)
    if corpus.startswith("trex"):
        click.echo(f"{bad} of {len(rows)} relations disagree with relations.jsonl (test data holds <= 1,000 "
                   "sampled facts per relation, so computed types see only part of each relation)")
    else:
        click.echo(f"{bad} of {len(rows)} relations disagree with the type {corpus} declares")


@kb.command("infer", short_help="Apply property axioms; new facts to an `inferred-*` graph.")
@click.option("--axioms", type=PathType(dir_okay=False), default=None,
              help="Turtle file of OWL 2 property axioms (default: the shipped kb/axioms.ttl).")
@click.option("--corpus", default="trex", show_default=True)
@data_dir_option
@store_option
@click.option("--force", is_flag=True, help="Recompute even when the corpus's closure is up to date.")
@click.option("--owlrl", "with_owlrl", is_flag=True,
              help="Also time owlrl's OWL-RL closure of the same facts and compare its new facts.")
@click.option("--max-derived", type=IntRange(min=1), default=None,
              help="Stop with an error when the axioms derive more new facts than this "
                   "(default: 10 per input fact, at least 10,000).")
def infer(axioms, corpus, data_dir, store, force, with_owlrl, max_derived) -> None:
    """Apply property axioms (KMIR Table 3) to a corpus; new facts go to the graph of this closure,
    `inferred-<12 hex>` (one per corpus graph and axioms file; other closures stay).

    Each new fact is recorded with the axiom and premises that derive it (graph
    `provenance-<the same 12 hex>`). Counts: the new facts each axiom derives.
    """
    from bridge.predictors.kmir import default_axioms_problem, own_relations
    from eval.corpora import resolve_run_data_dir
    from kb.reasoning import (
        ClosureExploded,
        ensure_inferred,
        inferred_triples,
        load_axioms,
        owlrl_new_facts,
        stored_coverage,
    )
    from kb.store import fact_quads

    ontology = load_axioms(axioms)
    c = load_corpus(corpus, data_dir)
    where = resolve_run_data_dir([corpus], data_dir)
    if axioms is None and (problem := default_axioms_problem(ontology, c, where)):
        raise ConfigError(f"kb infer on {corpus}: {problem}")
    known = own_relations(c, where)  # as `kbc run kmir` takes them
    with open_cli_store(store) as st:
        graph = st.ensure_corpus(c.name, c.version, c.facts)
        try:
            report = ensure_inferred(st, ontology, [graph], known_relations=known, force=force,
                                     max_derived=max_derived)
        except ClosureExploded as exc:
            raise DataError(f"{exc}, or raise --max-derived") from None
        n_ax, n = len(ontology.axioms), len(c.facts)
        click.echo(f"{ontology.path}: {count_of(n_ax, 'axioms')} over {graph} "
                   f"({count_of(n, 'facts')})")
        click.echo(f"  {'axiom':16s} {'rule':44s} {'new facts':>9s}")
        for name, n in report.counts.items():
            click.echo(f"  {report.kinds.get(name, ''):16s} {name:44s} {n:9d}")
        click.echo(f"  {report.facts} distinct new facts in graph {report.graph} (derivations in "
                   f"{report.provenance})")
        coverage = stored_coverage(st, report.graph)
        if coverage is not None:
            click.echo(f"  graph {report.graph} {coverage.describe()}")
        if report.built:
            click.echo(f"  time: closure {report.seconds_closure:.2f} s ({report.rounds} rounds of SPARQL rules), "
                       f"provenance {report.seconds_provenance:.2f} s")
        else:
            click.echo("  already inferred for these facts and axioms (--force recomputes)")
        if with_owlrl:
            new, seconds = owlrl_new_facts((q[:3] for q in fact_quads(c.facts, graph)), ontology)
            same = "the same new facts" if new == inferred_triples(st, report.graph) else "DIFFERENT new facts"
            click.echo(f"  owlrl OWL-RL closure: {seconds:.2f} s, {len(new)} new facts ({same})")


@kb.command("drop", short_help="Remove graphs from the store (each is rebuilt when next needed).")
@click.argument("graphs", nargs=-1)
@click.option("--closures", "all_closures", is_flag=True,
              help="Every closure (`inferred-<12 hex>`) with its derivations.")
@store_option
def drop(graphs, all_closures, store) -> None:
    """Remove GRAPHS (names as `kbc kb stats` lists them) and what the store records about them; a closure
    (`inferred-<12 hex>`) goes with its derivations (`provenance-<the same 12 hex>`). Nothing is lost that a
    command cannot rebuild: runs and `kbc kb infer` load or compute again what they need (the extracted KBs
    `re-naive` and `re-oracle` take minutes: `kbc kb build-re`). A run that already reads the store keeps
    reading what it opened."""
    import difflib

    from kb.extraction.kb_build import held_graphs
    from kb.reasoning import CLOSURE_PREFIX, PROVENANCE_PREFIX, closure_graphs, provenance_graph

    if not graphs and not all_closures:
        raise ConfigError("name the graphs to drop (`kbc kb stats` lists them), or give --closures")
    with open_cli_store(store, filled_by="kbc kb load") as st:
        closures = closure_graphs(st)
        held = {n for n in st.graph_names() if not n.startswith(PROVENANCE_PREFIX)} | set(closures)
        held |= set(held_graphs(st))
        for name in graphs:
            if name.startswith(PROVENANCE_PREFIX):
                closure = CLOSURE_PREFIX + name.removeprefix(PROVENANCE_PREFIX)
                raise ConfigError(f"{name} holds the derivations of the closure {closure}, which reads them: drop the "
                                  f"closure (`kbc kb drop {closure}`), which takes them with it")
            if name not in held:
                close = difflib.get_close_matches(name, sorted(held), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(f"no graph {name!r} in the store at {st.location}; {hint}`kbc kb stats` lists "
                                  "its graphs")
        chosen = list(dict.fromkeys([*graphs, *(closures if all_closures else [])]))
        if not chosen:
            click.echo(f"no closure in the store at {st.location}; nothing dropped")
            return
        with st.writing():
            for name in chosen:
                triples = st.count(name)
                st.drop_graph(name)
                said = f"dropped {name} ({count_of(triples, 'triples')}"
                if name in closures:
                    derivations = provenance_graph(name)
                    n = st.count(derivations)
                    said += f"; its derivations {derivations}, {count_of(n, 'triples')}"
                    st.drop_graph(derivations)
                click.echo(said + ")")


from bridge.cli.kb_re import register as _register_re  # noqa: E402

_register_re(kb)
