"""`kbc kb build-re` and `kbc kb stats`: the relation-extraction KB from the command line."""

from __future__ import annotations

import click

from bridge.cli.options import data_dir_option, open_cli_store, show_progress, store_option
from eval.cells import count_of
from eval.corpora import load_corpus


def _print_report(report: dict) -> None:
    from kb.extraction.kb_build import held_out_table

    click.echo(f"{report.get('tag')}: {report.get('sentences')} sentences, {report.get('mentions')} mentions, "
               f"{report.get('labelled_pairs')} labelled pairs, {report.get('train_rows')} training rows "
               f"(all folds), {report.get('extracted')} held-out extractions")
    for reason, n in (report.get("dropped") or {}).items():
        if n:
            click.echo(f"  dropped: {n} {reason}")
    click.echo(f"  {'relation':16s} {'P':>6s} {'R':>6s} {'pairs':>6s} {'facts':>6s} {'w/ evid':>7s} {'in RE_o':>7s}")
    for row in held_out_table(report):
        click.echo(f"  {row['relation']:16s} {row['precision']:6.1f} {row['recall']:6.1f} {row['gold_pairs']:6d} "
                   f"{row['facts']:6d} {row['with_evidence']:7d} {row['in_oracle_kb']:7d}")
    if report.get("seconds_total") is not None:
        click.echo(f"  time: extraction (features, {report['settings']['folds']}-fold training, extraction, linking) "
                   f"{report.get('seconds_extract')} s, store writing {report.get('seconds_write')} s, "
                   f"total {report.get('seconds_total')} s")


def register(kb: click.Group) -> None:

    @kb.command("build-re", short_help="Train the extractor; write `re-naive`, `re-oracle`.")
    @click.option("--corpus", "corpora", multiple=True, default=("trex", "google_re"), show_default=True)
    @data_dir_option
    @store_option
    @click.option("--force", is_flag=True, help="Retrain and rewrite even when this data version is built.")
    @click.option("--quiet", is_flag=True, help="No progress bars.")
    def build_re(corpora, data_dir, store, force, quiet) -> None:
        """Train the extractor (k-fold by subject) and write graphs `re-naive` and `re-oracle`.

        P/R are held-out pair-level precision and recall per relation; `facts`, `w/ evid` and
        `in RE_o` count the test facts, those with evidence sentences, and those the RE_o graph holds.
        """
        from bridge.run.runner import default_cache_dir
        from kb.extraction.kb_build import ensure_re_kb
        from kb.writer_lock import process_text

        with open_cli_store(store) as st:
            for name in corpora:
                corpus = load_corpus(name, data_dir)
                report = ensure_re_kb(st, corpus, default_cache_dir(), progress=show_progress(quiet), force=force)
                if report.get("built"):
                    _print_report(report)
                    continue
                by = process_text(report.get("built_by"))  # unknown where the build report is not in this cache
                click.echo(f"{name}: already built ({report.get('tag')}){f' by {by}' if by else ''}; nothing done "
                           "now (`kbc kb stats` lists its graphs); --force rebuilds")

    @kb.command("stats", short_help="Triples per relation in each graph of the store.")
    @store_option
    def stats(store) -> None:
        """Triples per relation in each gold graph (one per corpus, or corpus and relation), extracted and
        inferred graph; for each closure (`inferred-<12 hex>`), the relations and axioms it was computed from."""
        from rdflib import RDF

        from eval.relations import relation_id
        from kb.extraction.kb_build import held_graphs
        from kb.reasoning import closure_graphs, stored_coverage
        from kb.store import REL_NS, graph_iri, relation_key

        with open_cli_store(store, filled_by="kbc kb load") as st:
            closures = closure_graphs(st)
            for graph in (*st.graph_names("gold"), *held_graphs(st), *closures):
                rows = st.select(  # every predicate but labels and the statements of provenance and confidence
                    f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri(graph)}> {{ ?s ?p ?o }} "
                    f"FILTER(?p != rdfs:label && !STRSTARTS(STR(?p), \"{RDF}\") && (STRSTARTS(STR(?p), "
                    f"\"{REL_NS}\") || !STRSTARTS(STR(?p), \"urn:kbc:\"))) }} GROUP BY ?p ORDER BY ?p"
                )
                versions = sorted(st.loaded_versions(graph))
                total = sum(int(n) for _, n in rows)
                n_rel = count_of(len(rows), "relations")
                click.echo(f"{graph}: {total} fact triples, {n_rel} (labels and provenance not counted); "
                           f"built from {', '.join(versions) or '-'}")
                if graph in closures:
                    coverage = stored_coverage(st, graph)
                    click.echo(f"  {coverage.describe()}: {' '.join(sorted(coverage.relations))}" if coverage else
                               "  coverage unknown (its build was cut short): the next run over its source graphs "
                               "computes it again")
                for p, n in rows:
                    click.echo(f"  {relation_id(relation_key(str(p))):16s} {int(n):7d}")
