"""`kbc run lama` and `kbc ls`."""

from __future__ import annotations

from pathlib import Path

import click

from bridge.cli_options import data_dir_option
from bridge.registry import available
from eval.errors import ConfigError
from eval.lama import CORPORA


def _parse_sets(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


@click.group()
def run() -> None:
    """Run experiments."""


@run.command("lama")
@click.option("--corpus", "corpora", multiple=True, type=click.Choice(CORPORA), required=True,
              help="Corpora to probe (repeat the option or list several values).")
@click.option("--predictors", multiple=True, required=True,
              help="Predictor names (`kbc ls`), Hugging Face model ids or local model paths.")
@data_dir_option
@click.option("--out", type=click.Path(file_okay=False), default="runs/lama", show_default=True,
              help="Output directory; rerunning into it resumes.")
@click.option("--relations", multiple=True, help="Only these relation ids.")
@click.option("--depth", type=int, default=100, show_default=True, help="Answers ranked per query.")
@click.option("--limit", type=int, default=None, help="At most this many facts per relation.")
@click.option("--device", default="cpu", show_default=True, help="cpu or cuda (LM predictors).")
@click.option("--dtype", type=click.Choice(["float32", "bfloat16"]), default="float32", show_default=True)
@click.option("--batch-size", type=int, default=32, show_default=True)
@click.option("--store", default=None, help="Graph store path, or a SPARQL endpoint URL.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Predictor option (repeatable).")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def run_lama(corpora, predictors, data_dir, out, relations, depth, limit, device, dtype, batch_size, store,
             sets, quiet) -> None:
    """The LAMA probe: every predictor on the same queries, P@k raw and filtered.

    \b
    Example:
      kbc run lama --corpus trex --corpus google_re --predictors freq --data-dir ../shared/data/lama
    """
    from bridge.runner import RunConfig
    from bridge.runner import run_lama as run_
    from eval.report import table

    cfg = RunConfig(
        corpora=_split(corpora), predictors=_split(predictors), out=Path(out), data_dir=data_dir,
        relations=_split(relations), depth=depth, device=device, dtype=dtype, batch_size=batch_size,
        options=_parse_sets(sets), store=store, limit=limit,
    )
    rows = run_(cfg, progress=not quiet)
    click.echo("P@1 (%), LAMA Table 2 layout")
    click.echo(table(rows, "p@1"))
    click.echo(f"\nwritten: {out}/summary.json, {out}/summary.md, {out}/curves.json, {out}/predictions/")


def _split(values: tuple[str, ...]) -> list[str]:
    """Accept both `--x a --x b` and `--x "a b"`, keeping order."""
    return list(dict.fromkeys(v for value in values for v in value.split()))


@click.command()
def ls() -> None:
    """List the registered predictors."""
    for name, help_ in available().items():
        click.echo(f"{name:16s} {help_}")
    click.echo("(any Hugging Face model id or local model directory is accepted as well)")
