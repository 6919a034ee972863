"""One writer per run directory (`RunLock`), and whether one is writing there now (`writing`): a reader that finds
a run's files changed while a run writes them says to wait, not to rerun what the lock would refuse."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from eval.errors import ConfigError, DataError

LOCK = ".kbc.lock"
BUSY = (errno.EAGAIN, errno.EACCES)  # what a non-blocking flock of a held lock fails with


class RunLock:
    """One writer per output directory: a second run into it is refused, not interleaved, naming the process that
    holds it (its record in the lock file, as the graph store's writer is named: `kb.store_disk.this_process`)."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK
        self.handle = None

    def __enter__(self) -> RunLock:
        import fcntl

        self.handle = self.path.open("a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self.handle.close()
            if exc.errno in BUSY:
                holder = holder_text(self.path.parent)
                raise ConfigError(f"another kbc run is writing to {self.path.parent}{f': {holder}' if holder else ''}; "
                                  "wait for it or use another --out") from None
            raise
        from kb.writer_lock import this_process

        self.handle.truncate(0)
        self.handle.write(json.dumps(this_process()))
        self.handle.flush()
        return self

    def __exit__(self, *exc) -> None:
        self.handle.truncate(0)  # no holder left named
        self.handle.close()


def holder_text(out: Path) -> str | None:
    """The process holding `out`'s lock, as a message names it ("process 123 (`kbc run ...`, since ...)"); None
    where the lock file holds no such record (a run of an earlier kbc, or one that is just taking the lock)."""
    from kb.writer_lock import holder_text as process_holder

    try:
        return process_holder(json.loads((out / LOCK).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def writing(out: Path) -> bool:
    """Whether a live run holds the lock of `out` now. Asked without creating or writing anything, and only where
    a reader is about to refuse the run (its shared lock is held for an instant)."""
    import fcntl

    try:
        handle = (out / LOCK).open("rb")
    except OSError:  # no lock file: no run ever wrote here, or one from before locks
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            return exc.errno in BUSY
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


class BeingWritten(DataError):
    """A run refused because a `kbc run` is writing to it, or changed its files while they were read: read it again
    once that run ends (the explorer shows such a run as being written, and keeps nothing it read of it)."""


def writing_now(out: Path) -> str | None:
    """The refusal of a run a live `kbc run` (or `kbc analyze`) is writing to, whose files are not what its summaries
    were scored from until it ends; None when none is: rerunning it is then the fix, else the lock refuses that."""
    if not writing(out):
        return None
    return f"{out}: a kbc run is writing to it now; wait for it to finish, then read it again"
