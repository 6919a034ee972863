"""Options shared by several `kbc` commands."""

from __future__ import annotations

import click

data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="LAMA data directory (default: $KBC_DATA, else ./data/lama).",
)


def show_progress(quiet: bool) -> bool:
    """Progress bars unless the command's `--quiet` or the global `kbc -q` (warnings and errors only)."""
    import logging

    return not quiet and logging.getLogger("kbc").getEffectiveLevel() <= logging.INFO
