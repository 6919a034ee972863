"""`kbc kb load|types|objects`: the graph store from the command line."""

from __future__ import annotations

import json

import click

from bridge.cli_options import data_dir_option
from eval.lama import load_corpus


def _store(path: str | None):
    from bridge.runner import default_cache_dir
    from kb.store import GraphStore

    if path and path.startswith(("http://", "https://")):
        return GraphStore.remote(path)
    return GraphStore.open(path or default_cache_dir() / "store")


store_option = click.option("--store", default=None, help="Graph store path (default: the cache), or a SPARQL URL.")


@click.group()
def kb() -> None:
    """The graph store."""


@kb.command("load")
@click.option("--corpus", "corpora", multiple=True, default=("trex", "google_re"), show_default=True)
@data_dir_option
@store_option
def load(corpora, data_dir, store) -> None:
    """Load corpora into the `gold` named graph (skipped when already there)."""
    with _store(store) as st:
        for name in corpora:
            corpus = load_corpus(name, data_dir)
            added = st.ensure_facts(corpus.facts, f"{name}@{corpus.version}")
            click.echo(f"{name}: {len(corpus.facts)} facts {'loaded' if added else 'already in the store'}")
        click.echo(f"gold graph: {st.count()} triples in {st.location}")


@kb.command("types")
@click.option("--corpus", default="trex", show_default=True)
@data_dir_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON rows.")
def types(corpus, data_dir, store, as_json) -> None:
    """Cardinality types and symmetry computed from the data, against relations.jsonl."""
    from kb.graph_view import compare_types, shape

    c = load_corpus(corpus, data_dir)
    with _store(store) as st:
        st.ensure_facts(c.facts, f"{corpus}@{c.version}")
        shapes = [shape(rel, ((s, o) for s, o, _ in st.pairs(rel))) for rel in c.relations]
    rows = compare_types(shapes, {r: rel.type for r, rel in c.relations.items()})
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(f"{'relation':10s} {'declared':8s} {'computed':8s} {'tph':>6s} {'hpt':>7s} {'rev':>5s}  note")
    for r in rows:
        note = ("" if r["agree"] else "DISAGREES") + (" symmetric" if r["symmetric"] else "")
        click.echo(f"{r['relation']:10s} {str(r['declared']):8s} {r['computed']:8s} {r['tails_per_head']:6.2f} "
                   f"{r['heads_per_tail']:7.2f} {r['reverse_fraction']:5.2f}  {note}")
    bad = sum(not r["agree"] for r in rows)
    click.echo(f"{bad} of {len(rows)} relations disagree with relations.jsonl (test data holds <= 1,000 "
               "sampled facts per relation, so computed types see only part of each relation)")


from bridge.cli_kb_re import register as _register_re  # noqa: E402

_register_re(kb)
