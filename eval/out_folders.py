"""Output folders a command owns: one it makes, an empty one, or one it wrote before (it holds the command's
marker file). A command writes into no other folder: not a data folder, not a folder of someone's files."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from eval.datadir import absolute_path, lama_in
from eval.errors import ConfigError


def _read_only(folder: Path) -> bool:
    """Whether `folder`'s mode grants no one writing: a shared data root marked so by its owner (a process that may
    write anyway, as root may, still honours the mark)."""
    try:
        return folder.stat().st_mode & 0o222 == 0
    except OSError:
        return False


def in_data(path: str | Path, data_dirs: Iterable[Path] = (), replaced: bool = False) -> str | None:
    """Where `path` sits among data folders, as words for an error (`is inside the LAMA data directory D`), or None
    when it is outside them: a LAMA data directory, a folder holding one, a read-only folder holding one (a shared
    data root) and `data_dirs` (the data a command reads, the folder itself, one inside it or one holding it) are
    inputs, and no command writes there. `replaced`: `path` is an earlier output of the command in the LAMA layout
    (a LAMA-UHN build), which it replaces whole: its own `relations.jsonl` makes it no input, unless it is read."""
    resolved = Path(path).expanduser().resolve()
    chain = (resolved, *resolved.parents)
    inside = next((d for d in chain[1 if replaced else 0:] if (d / "relations.jsonl").is_file()), None)
    if inside is not None:
        return f"is inside the LAMA data directory {inside}"
    holds = lama_in(resolved)
    if holds is not None:
        return f"holds the LAMA data directory {holds}"
    for folder in chain:
        lama = lama_in(folder)
        if lama is not None and _read_only(folder):
            return f"is inside the read-only data folder {folder} (it holds {lama.name}/)"
    for data in data_dirs:
        data = Path(data).expanduser().resolve()
        if resolved == data:
            return f"is the data directory {data}"
        if data in resolved.parents:
            return f"is inside the data directory {data}"
        if resolved in data.parents:
            return f"holds the data directory {data}"
    return None


def refuse_in_data(out: str | Path, fix: str, data_dirs: Iterable[Path] = (), replaced: bool = False) -> None:
    """Refuse `out` where it sits among data folders (`in_data`): `--out OUT <where><fix>`, `fix` saying what to
    pass instead."""
    where = in_data(out, data_dirs, replaced)
    if where is not None:
        raise ConfigError(f"--out {out} {where}{fix}")


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
