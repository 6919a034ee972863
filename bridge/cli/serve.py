"""`kbc serve`: the side-by-side explorer (web page and JSON API) on loopback by default."""

from __future__ import annotations

import dataclasses
import errno
import socket

import click

from bridge.cli.options import (
    batch_size_option,
    data_dir_option,
    device_option,
    store_path_option,
    store_timeout_option,
)
from bridge.cli.value_types import IntRange, PathType
from eval.cells import count_of
from eval.errors import ConfigError, DataError


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (not yet listening), or a one-line error saying why it cannot be.

    Bound before the models load and before the URL is printed, and then handed to the server, so a
    port in use is reported at once and nothing can take it in between. It listens once the models are
    loaded, before the URL is printed: a client that connects on seeing the URL is then answered, not refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use; pass --port with a free port (--port 0 picks one) "
                              "or stop what listens there") from None
        if exc.errno == errno.EACCES:
            raise ConfigError(f"port {port} needs administrator rights on this system; pass --port 1024 or "
                              "higher") from None
        reason = exc.strerror or str(exc)
        raise ConfigError(f"--host {host} --port {port}: cannot listen there ({reason}); pass --host 127.0.0.1 "
                          "or an address of this machine") from None
    sock.set_inheritable(True)
    return sock


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback by default; 0.0.0.0 exposes it to the network).")
@click.option("--port", type=IntRange(0, 65535), default=8000, show_default=True)
@data_dir_option
@click.option("--corpus", default="trex", show_default=True, help="The corpus whose relations and gold KB are asked.")
@click.option("--relations", multiple=True, help="Only these relations (faster start-up).")
@click.option("--predictors", multiple=True, metavar="NAME=SPEC",
              help="Predictors shown beside the gold KB, as for `kbc run` (freq re-oracle bert=/models/bert ...).")
@click.option("--set", "sets", multiple=True, metavar="[NAME.]KEY=VALUE", help="Predictor option (repeatable).")
@click.option("--run", "runs", multiple=True, type=PathType(file_okay=False),
              help="A finished `kbc run` directory to browse (repeatable).")
@click.option("--text-index", "--index", "text_index", default=None,
              help="Evidence paragraphs: 'lama' (the LAMA evidence index, built on first use) or a tantivy index path.")
@click.option("--coherency", default=None, metavar="NAME",
              help="Show this predictor's round trip (the object, then the subject asked back).")
@store_path_option
@store_timeout_option(exposed=True)
@device_option
@batch_size_option
def serve(host, port, data_dir, corpus, relations, predictors, sets, runs, text_index, coherency, store,
          store_timeout, device, batch_size) -> None:
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

    from bridge.run.options import parse_sets, predictor_items
    from bridge.run.reading import say_gathered
    from bridge.serve.app import create_app
    from bridge.serve.explorer import ExplorerConfig
    from bridge.serve.runs import Runs, recorded_data_dir, refuse_other_data

    rels = [v for value in relations for v in value.split()]
    cfg = ExplorerConfig(data_dir=data_dir, corpus=corpus, relations=rels, predictors=predictor_items(predictors),
                         options=parse_sets(sets), store=store, store_timeout=store_timeout, text_index=text_index,
                         coherency=coherency, runs=[Path(r) for r in runs], device=device, batch_size=batch_size)
    sock = listen_socket(host, port)
    port = sock.getsockname()[1]  # the port chosen when --port 0
    try:
        browsed = Runs(cfg.runs)
        say_gathered()  # the runs of another reading, said before it serves (their pages say it too)
        recorded = None if data_dir else recorded_data_dir(browsed, corpus)
        if recorded:
            cfg = dataclasses.replace(cfg, data_dir=recorded)
        other = [] if data_dir or recorded else \
            list(dict.fromkeys(c for r in browsed.runs.values() for c in r.run.corpora))
        explorer = start_on(cfg, recorded, other)
        if recorded:
            try:
                refuse_other_data(browsed, explorer, recorded)
            except BaseException:
                explorer.close()
                raise
    except BaseException:
        sock.close()
        raise
    app = create_app(explorer, browsed)
    sock.listen(socket.SOMAXCONN)  # the server accepts what connects from here on (uvicorn listens again)
    shown = f"[{host}]" if ":" in host else host
    n_rel, n_pred = len(explorer.relations), len(explorer.columns)
    click.echo(f"kbc serve: {explorer.corpus.name}, {count_of(n_rel, 'relations')}, "
               f"{count_of(n_pred, 'predictors')}, ready in {explorer.startup_seconds} s", err=True)
    click.echo(f"open http://{shown}:{port}/  (API: http://{shown}:{port}/docs; Ctrl-C stops)")
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled once it has shut down
        pass
    finally:
        explorer.close()
        sock.close()
    if not server.started:
        raise SystemExit(3)


def start_on(cfg, recorded: str | None, other: list[str] | None = None):
    """`Explorer.start`, its data `error:` naming the folder the runs recorded where that is what it read: the user
    named no folder, so the line says where it came from and that --data-dir names another. `other`: the corpora
    of the --run directories where none asked --corpus (no folder recorded for it): the line names --corpus."""
    from bridge.serve.explorer import Explorer

    try:
        return Explorer.start(cfg)
    except DataError as exc:
        if recorded:
            raise DataError(f"{exc} (in the data folder the --run directories recorded, {recorded}); pass "
                            "--data-dir with the data they were made from") from exc
        if other:
            raise DataError(f"{exc}; the --run directories asked {', '.join(other)}, not {cfg.corpus}: pass "
                            f"--corpus {other[0]} to read the data folder they recorded") from exc
        raise
