"""The lock readers hold shared on a folder of the cache that `kbc cache clear` may empty (a text index, the
LAMA-UHN data): readers never wait for one another, and a clear takes it exclusively without waiting, so that it
refuses, naming the readers (`eval.lock_holders`), while one holds it. A reader that waited for a clear finds the
file it locked removed and locks the one there now (or none: the folder is gone, and so is what it held)."""

from __future__ import annotations

import fcntl
import io
import os
from pathlib import Path

from eval.errors import KbcError
from eval.lock_holders import holders_text

READERS_LOCK = "kbc-readers.lock"


def hold_shared(lock: Path) -> io.FileIO | None:
    """`lock` held shared until the handle returned is closed (or collected); waits while a clear holds it. None
    where the file can be neither made nor opened (a read-only folder without one, a folder gone): no clear of kbc's
    can then remove what it guards either."""
    while True:
        try:
            handle = io.FileIO(lock, "a")
        except OSError:
            try:
                handle = io.FileIO(lock, "r")  # a read-only folder: a clear cannot empty it, yet it may lock it
            except OSError:
                return None
        try:
            fcntl.flock(handle, fcntl.LOCK_SH)
        except OSError:
            handle.close()
            return None
        if still_named(lock, handle):
            return handle
        handle.close()  # a clear removed it while this waited: lock the one there now


class ReadersLock:
    """`lock` taken exclusively by a clear, without waiting: a KbcError naming the readers (`what` is read by ...)
    where any holds it. Released with the file removed once the folder is emptied (`release(remove=True)`)."""

    def __init__(self, lock: Path, what: str) -> None:
        self.lock, self.what = Path(lock), what
        self.handle: io.FileIO | None = None

    def acquire(self) -> None:
        while self.handle is None:
            handle = io.FileIO(self.lock, "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise KbcError(f"{self.what} is being read by {holders_text(self.lock)}") from None
            if still_named(self.lock, handle):
                self.handle = handle
            else:
                handle.close()

    def release(self, remove: bool = False) -> None:
        if self.handle is None:
            return
        if remove:
            self.lock.unlink(missing_ok=True)
        self.handle.close()
        self.handle = None


def still_named(lock: Path, handle: io.FileIO | int) -> bool:
    """Whether `lock` still names the file `handle` (or descriptor) has open: a clear may have removed it meanwhile."""
    try:
        st = os.stat(lock)
    except FileNotFoundError:
        return False
    held = os.fstat(handle if isinstance(handle, int) else handle.fileno())
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)
