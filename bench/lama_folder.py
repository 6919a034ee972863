"""The LAMA folder a benchmark reads: `--data-dir`, else $KBC_DATA, else `../shared/data/lama` beside the repository
(where the benchmarks' figures were measured). A folder that is not there ends the benchmark at once in one `error:`
line, before anything is timed."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def default_lama() -> str:
    return os.environ.get("KBC_DATA", str(ROOT.parent / "shared" / "data" / "lama"))


def lama_folder(given: str | Path | None) -> Path:
    """The LAMA folder of `given` (or the default), or SystemExit with the one-line reason."""
    from eval.datadir import resolve_data_dir
    from eval.errors import KbcError

    try:
        return resolve_data_dir(given or default_lama())
    except KbcError as exc:
        raise SystemExit(f"error: {exc}") from None
