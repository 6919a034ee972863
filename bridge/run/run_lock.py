"""One writer per run directory (`RunLock`), and whether one is writing there now (`writing`): a reader that finds
a run's files changed while a run writes them says to wait, not to rerun what the lock would refuse."""

from __future__ import annotations

import errno
from pathlib import Path

from eval.errors import ConfigError

LOCK = ".kbc.lock"
BUSY = (errno.EAGAIN, errno.EACCES)  # what a non-blocking flock of a held lock fails with


class RunLock:
    """One writer per output directory: a second run into it is refused, not interleaved."""

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
                raise ConfigError(f"another kbc run is writing to {self.path.parent}; wait for it or use another --out"
                                  ) from None
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()


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
