"""`kbc data download|stats`."""

from __future__ import annotations

import click

from bridge.cli_options import data_dir_option
from eval.lama import CORPORA, load_corpus


@click.group()
def data() -> None:
    """Get and describe the evaluation data."""


@data.command("download")
@click.option("--dest", type=click.Path(file_okay=False), default="data", show_default=True,
              help="Directory to unpack into (the LAMA files land in DEST/lama).")
@click.option("--url", default=None, help="Override the release URL.")
@click.option("--sha256", default=None, help="Expected SHA-256 of the archive (default: the known release).")
def download(dest, url, sha256) -> None:
    """Fetch the official LAMA release (data.zip), verify it and unpack it atomically."""
    from eval.download import LAMA_SHA256, LAMA_URL, download_lama

    path = download_lama(dest, url or LAMA_URL, sha256 or LAMA_SHA256)
    click.echo(f"LAMA data ready in {path}; use --data-dir {path} or export KBC_DATA={path}")


@data.command("stats")
@click.option("--corpus", "corpora", multiple=True, type=click.Choice(CORPORA),
              default=("trex", "google_re", "squad"), show_default=True)
@data_dir_option
def stats(corpora, data_dir) -> None:
    """Rows read, kept and dropped per relation, and the data version."""
    for name in corpora:
        corpus = load_corpus(name, data_dir)
        click.echo(f"# {name}: {len(corpus.facts)} facts, {len(corpus.relations)} relations, "
                   f"version {corpus.version}")
        click.echo(corpus.summary(verbose=True))
