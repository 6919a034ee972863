"""Output folders a command owns: one it makes, an empty one, or one it wrote before (it holds the command's
marker file). A command writes into no other folder: not a data folder, not a folder of someone's files."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from eval.datadir import absolute_path
from eval.errors import ConfigError


def check_own_folder(out: Path, marker: str, refusal: str) -> None:
    """Refuse `out` (with `refusal`, which names the fix) unless it is new, empty, or holds `marker`."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / marker).is_file())):
        raise ConfigError(refusal)


@contextlib.contextmanager
def removed_if_left_empty(folder: str | Path) -> Iterator[None]:
    """Inside the block, a command may create `folder` (and the missing folders above it). When the block fails
    and left no file in what it created, that is removed: a failed command leaves no empty folder behind. A
    folder that existed before is never removed."""
    top = None
    for cand in (absolute_path(folder), *absolute_path(folder).parents):
        if cand.exists() or cand.is_symlink():
            break
        top = cand
    try:
        yield
    except BaseException:
        if top is not None:
            _remove_empty_tree(top)
        raise


def _remove_empty_tree(top: Path) -> None:
    if not top.is_dir() or top.is_symlink() or any(not p.is_dir() or p.is_symlink() for p in top.rglob("*")):
        return
    with contextlib.suppress(OSError):  # someone put something there meanwhile: it stays
        for folder in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            folder.rmdir()
        top.rmdir()
