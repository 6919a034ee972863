"""Options shared by several `kbc` commands."""

from __future__ import annotations

import os
from pathlib import Path

import click

from bridge.cli.value_types import FloatRange, IntRange, PathType
from eval.errors import ConfigError
from kb.text.index import ES_TIMEOUT

# every command reads a corpus in and beside the folder given (`eval.datadir`), so one text says what each accepts
data_dir_option = click.option(
    "--data-dir",
    type=PathType(file_okay=False),
    default=None,
    help="A LAMA copy, the data folder holding it (with bear/, fewrel/, lmkbc2024/, negated_misprimed_lama/ beside "
         "it), or a corpus's own folder (default: $KBC_DATA, else ./data/lama).",
)



def _checked_device(ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """`--device` refused as it is read, before any data or model is (`lm.loading.check_device`)."""
    if value is not None and not ctx.resilient_parsing:
        from lm.loading import check_device

        check_device(value)
    return value


device_option = click.option("--device", default="cpu", show_default=True, callback=_checked_device,
                             help="cpu, cuda or cuda:N (local language models).")
batch_size_option = click.option("--batch-size", type=IntRange(min=1), default=32, show_default=True,
                                 help="Inputs per forward pass of a local language model.")


def show_progress(quiet: bool) -> bool:
    """Progress bars unless the command's `--quiet` or the global `kbc -q` (warnings and errors only)."""
    import logging

    return not quiet and logging.getLogger("kbc").getEffectiveLevel() <= logging.INFO


def open_cli_store(path: str | None, filled_by: str | None = None):
    """The store named by `--store` (with `--store-update` and `--store-timeout` of this command).

    `filled_by` is for a command that reads the store only: the command that fills one (its `--store`
    is added). An embedded store that does not exist is then refused, and nothing is written: a
    mistyped path must not read as an empty store.
    """
    from kb.store import open_store, store_path
    from kb.store_disk import holds_nothing

    if path is None:
        from bridge.run.runner import default_cache_dir

        default = default_cache_dir() / "store"
    else:
        default = Path(path)
    if filled_by and not (path or "").startswith(("http://", "https://")):
        folder = store_path(path) if path else default
        if holds_nothing(folder):
            if path:
                raise ConfigError(f"no graph store at {folder}; fill one with `{filled_by} --store {path}` (or "
                                  "check the --store path)")
            raise ConfigError(f"no graph store at {folder} (the cache's); fill one with `{filled_by}`, or name "
                              "one with --store DIR")
    update, timeout = store_settings()
    return open_store(path, update, default, timeout=timeout)


def store_settings() -> tuple[str | None, float]:
    """This command's `--store-update` and `--store-timeout` (`store_option`), for a command that hands them on."""
    meta = click.get_current_context().meta
    return meta.get(_UPDATE_KEY), meta.get(_TIMEOUT_KEY, STORE_TIMEOUT)


_UPDATE_KEY, _TIMEOUT_KEY, _ES_TIMEOUT_KEY = "kbc.store_update", "kbc.store_timeout", "kbc.es_timeout"


def _remember(key: str):
    def callback(ctx: click.Context, _param: click.Parameter, value):
        if value is not None:
            ctx.meta[key] = value
        return value
    return callback


# one wording wherever a command takes a store (kbc run, kb, serve, analyze evidence)
STORE_HELP = "Graph store path (default: the cache's), or a SPARQL query endpoint URL."
STORE_UPDATE_HELP = "SPARQL 1.1 Update endpoint URL of a remote --store (needed to load facts into it)."
STORE_TIMEOUT_HELP = "Seconds one request to a SPARQL endpoint may take in all (answer included)."


STORE_TIMEOUT = 30.0  # seconds, the default of --store-timeout


def store_timeout_option(exposed: bool = False):
    """`--store-timeout`, any number of seconds above 0 wherever a command takes it; `exposed`: as the command's
    `store_timeout` argument, else kept for `store_settings`."""
    kept = {} if exposed else {"expose_value": False, "callback": _remember(_TIMEOUT_KEY)}
    return click.option("--store-timeout", type=FloatRange(min=0, min_open=True), default=STORE_TIMEOUT,
                        show_default=True, help=STORE_TIMEOUT_HELP, **kept)


def store_update_option(exposed: bool = False):
    """`--store-update`; `exposed`: as the command's `store_update` argument, else kept for `store_settings`."""
    kept = {} if exposed else {"expose_value": False, "callback": _remember(_UPDATE_KEY)}
    return click.option("--store-update", default=None, metavar="URL", help=STORE_UPDATE_HELP, **kept)


def store_path_option(func):
    """`--store` alone, for a command that reads no remote store's update endpoint."""
    return click.option("--store", type=PathType(), default=None, metavar="PATH|URL", help=STORE_HELP)(func)


def store_option(func):
    """`--store`, plus `--store-update` and `--store-timeout`, which `open_cli_store` and `store_settings` read from
    the context.

    The last two do not reach the command's arguments, so commands take a single `store` argument.
    """
    return store_path_option(store_update_option()(store_timeout_option()(func)))


def es_url_option(func):
    """`--es-url`, plus `--es-timeout`, which `es_timeout` reads from the context (commands take `es_url` only)."""
    func = click.option("--es-timeout", type=FloatRange(min=0, min_open=True), default=ES_TIMEOUT, show_default=True,
                        expose_value=False, callback=_remember(_ES_TIMEOUT_KEY),
                        help="Seconds one request to Elasticsearch may take in all (answer included).")(func)
    return click.option("--es-url", default=lambda: os.environ.get("KBC_ES_URL"),
                        help="Elasticsearch URL (default: $KBC_ES_URL).")(func)


def es_timeout() -> float:
    """This command's `--es-timeout` (the default outside a command)."""
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_ES_TIMEOUT_KEY, ES_TIMEOUT) if ctx is not None else ES_TIMEOUT
