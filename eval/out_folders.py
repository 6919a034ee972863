"""Output folders a command owns: one it makes, an empty one, or one it wrote before (it holds the command's
marker file). A command writes into no other folder: not a data folder, not a folder of someone's files."""

from __future__ import annotations

from pathlib import Path

from eval.errors import ConfigError


def check_own_folder(out: Path, marker: str, refusal: str) -> None:
    """Refuse `out` (with `refusal`, which names the fix) unless it is new, empty, or holds `marker`."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / marker).is_file())):
        raise ConfigError(refusal)
