"""Files switched in whole, and kept through a power cut.

A file written aside and renamed over its target (`os.replace`) is never seen half-written by a reader, but the
rename alone does not survive a power cut or a kernel crash: the new name can reach the disk before the file's bytes
(an empty or zero-filled file at the target), or the rename itself can be lost. `replacing` also syncs the file
before the rename and its folder after it, so that what a user computed is on disk once the call returns.

Durable (synced), as each took long to compute or is what a resume trusts: a run's summaries (`summary.json`,
`curves.json`, `dropped.json`, `config.json`, `summary.md`, `instances.parquet`) and the stamp of what they were
scored from, its prediction records (synced per chunk, `bridge.run.record_digests`) and the usage counts of a
generating predictor (with them, `bridge.run.usage_log`), cached LLM answers
(`eval.jsonl.write_json`), training checkpoints and the markers that finish a model, built entity files and their
manifest, a graph store's and a text index's live generation, downloaded and derived data, report pages and analysis
outputs. Not synced (`durable=False`): caches that carry their own check and are computed again when they fail it
(parsed-data snapshots, remembered file digests, checksummed JSON caches): a power cut costs them time, never a
number.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

# a folder that cannot be opened or synced (Windows opens no folder; some network file systems refuse the call):
# its entries reach the disk when the system gets to them, as they did before
_NO_DIR_SYNC = frozenset({errno.EACCES, errno.EPERM, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def fsync_file(path: str | Path) -> None:
    """Put the bytes written to `path` on disk (opened to read, which POSIX syncs, so a read-only file is synced too;
    Windows syncs only a handle opened to write)."""
    fd = os.open(path, (os.O_RDWR | os.O_BINARY) if os.name == "nt" else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: str | Path) -> None:
    """Put the entries of `folder` (names just made, renamed or removed) on disk, where the system allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        if exc.errno in _NO_DIR_SYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """Sync every file and folder under `folder`, and `folder` itself: a folder about to be renamed into place."""
    for root, dirs, files in os.walk(folder):
        for name in files:
            fsync_file(Path(root, name))
        for name in dirs:
            fsync_dir(Path(root, name))
    fsync_dir(folder)


def make_dirs(folder: Path) -> None:
    """`folder.mkdir(parents=True, exist_ok=True)`, each folder it makes synced into its parent."""
    made = []
    at = folder
    while not at.is_dir():
        made.append(at)
        if at.parent == at:
            break
        at = at.parent
    folder.mkdir(parents=True, exist_ok=True)
    for new in reversed(made):
        fsync_dir(new.parent)


@contextlib.contextmanager
def replacing(path: Path, tmp: Path | None = None, durable: bool = True) -> Iterator[Path]:
    """Yield the temporary path to write; once the block ends, switch it in at `path` (synced first where
    `durable`, and the folder after). A block that raises leaves `path` as it was and no temporary file."""
    tmp = tmp if tmp is not None else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        if durable:
            fsync_file(tmp)
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes | Iterable[bytes], tmp: Path | None = None, durable: bool = True) -> None:
    """Write `data` (bytes, or parts written one after another) at `path` whole: a reader, and after a power cut
    the disk where `durable`, holds the old file or the new one, never a part."""
    with replacing(path, tmp, durable) as aside, aside.open("wb") as handle:
        for part in (data,) if isinstance(data, bytes | bytearray) else data:
            handle.write(part)
