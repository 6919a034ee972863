"""`kbc serve`: the side-by-side explorer (web page and JSON API) on loopback by default."""

from __future__ import annotations

import click

from bridge.cli_options import data_dir_option


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default; 0.0.0.0 exposes it to the network).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@data_dir_option
@click.option("--corpus", default="trex", show_default=True, help="The corpus whose relations and gold KB are asked.")
@click.option("--relations", multiple=True, help="Only these relations (faster start-up).")
@click.option("--predictors", multiple=True, metavar="NAME=SPEC",
              help="Predictors shown beside the gold KB, as for `kbc run` (freq re-oracle bert=/models/bert ...).")
@click.option("--set", "sets", multiple=True, metavar="[NAME.]KEY=VALUE", help="Predictor option (repeatable).")
@click.option("--run", "runs", multiple=True, type=click.Path(file_okay=False),
              help="A finished `kbc run` directory to browse (repeatable).")
@click.option("--text-index", default=None,
              help="Evidence paragraphs: 'lama' (the LAMA evidence index, built on first use) or a tantivy index path.")
@click.option("--coherency", default=None, metavar="NAME",
              help="Show this predictor's round trip (the object, then the subject asked back).")
@click.option("--store", default=None, help="Graph store path, or a SPARQL query endpoint URL.")
@click.option("--device", default="cpu", show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=32, show_default=True)
def serve(host, port, data_dir, corpus, relations, predictors, sets, runs, text_index, coherency, store, device,
          batch_size) -> None:
    """Every KB and LM answer to one query side by side, and the runs you finished, in the browser.

    Models load once at start-up; then each query asks the gold KB (SPARQL), the inferred graph,
    every predictor, the text index and the coherency round trip. API: /api/query, /api/runs,
    /openapi.json (and /docs).

    \b
    Examples:
      kbc serve --predictors freq re-oracle bert=/models/bert-base-cased
      kbc serve --run runs/lama --text-index lama
    """
    from pathlib import Path

    import uvicorn

    from bridge.options import parse_sets
    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    split = [v for value in predictors for v in value.split()]
    rels = [v for value in relations for v in value.split()]
    cfg = ExplorerConfig(data_dir=data_dir, corpus=corpus, relations=rels, predictors=split,
                         options=parse_sets(sets), store=store, text_index=text_index, coherency=coherency,
                         runs=[Path(r) for r in runs], device=device, batch_size=batch_size)
    browsed = Runs(cfg.runs)
    explorer = Explorer.start(cfg)
    app = create_app(explorer, browsed)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"kbc serve: {explorer.corpus.name}, {len(explorer.relations)} relations, "
               f"{len(explorer.columns)} predictors, ready in {explorer.startup_seconds} s", err=True)
    click.echo(f"open http://{shown}:{port}/  (API: http://{shown}:{port}/docs; Ctrl-C stops)")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        explorer.close()
