"""One writer at a time for a folder kbc writes (a graph store, a text index), across processes.

A writer takes an exclusive `flock` on the folder's lock file, waiting a bounded time (`$KBC_STORE_WAIT`, else
1800 s) and naming the holder it waits for from the info file the holder wrote. The lock file may be removed by
its holder (a folder left holding nothing of its own); a writer that locked a file removed meanwhile tries again
on the new one, so two writers never hold locks on two files of the same name.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from eval.errors import ConfigError, KbcError
from eval.lock_holders import kbc_command
from eval.readers_lock import still_named

log = logging.getLogger("kbc")

WAIT_ENV = "KBC_STORE_WAIT"
DEFAULT_WAIT = 1800.0  # a first relation-extraction build holds the lock for minutes


def writer_wait() -> float:
    """Seconds a writer waits for another one: `$KBC_STORE_WAIT`, else 1800."""
    text = os.environ.get(WAIT_ENV)
    if text is None:
        return DEFAULT_WAIT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{WAIT_ENV}={text!r}: give the seconds a command waits for another one writing the "
                          "graph store or building a text index (a number, 0 or more)")
    return value


# tells this process's own records from another's: a process id alone may be another container's (a forked child
# keeps the token, not the id)
PROCESS_TOKEN = uuid.uuid4().hex


def command_line(argv: list[str] | None = None) -> str:
    """How this process was started: `kbc ARGS` for the command, else the Python program and its arguments (a
    script or a notebook kernel calling the Python API), which would read as some `kbc` command otherwise."""
    return kbc_command(["python", *(sys.argv if argv is None else argv)])  # sys.argv lacks the interpreter


def this_process() -> dict:
    """This process as a message names it to another: its id, its command line and since when."""
    return {"pid": os.getpid(), "command": command_line(), "since": datetime.now(UTC).isoformat(timespec="seconds"),
            "token": PROCESS_TOKEN}


def process_text(info: object) -> str | None:
    """`this_process()`'s record as a message says it; None where it is not such a record."""
    try:
        return f"process {int(info['pid'])} (`{info['command']}`, since {info['since']})"  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return None


def holder_text(info: object) -> str | None:
    """The holder of a lock as a refusal names it: `process_text`, saying so where it is this very process (another
    run of the Python API, in another thread)."""
    text = process_text(info)
    if text and info.get("token") == PROCESS_TOKEN and info["pid"] == os.getpid():  # type: ignore[index,union-attr]
        return f"{text}, in another thread of this process"
    return text


class WriterLock:
    """The lock `lock` (a file) with the holder's record in `info`.

    `busy` says what is locked ("the graph store X is being written"); `waiting` and `gave_up` are the hints added
    to the message while waiting and to the error after `wait` seconds.
    """

    def __init__(self, lock: Path, info: Path, busy: str, waiting: str, gave_up: str,
                 wait: float | None = None) -> None:
        self.lock, self.info = Path(lock), Path(info)
        self.busy, self.waiting, self.gave_up = busy, waiting, gave_up
        self.wait = writer_wait() if wait is None else wait
        self.fd: int | None = None
        self.waited = False  # whether another writer held it when asked

    def acquire(self) -> None:
        if self.fd is not None:
            return
        deadline = time.monotonic() + self.wait
        while True:
            fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        raise KbcError(f"{self.busy} by {self.holder()}, still after {self.wait:g} s; "
                                       f"{self.gave_up}") from None
                    if not self.waited:
                        log.warning("%s by %s; waiting up to %g s ($%s) for it (%s)", self.busy, self.holder(),
                                    self.wait, WAIT_ENV, self.waiting)
                        self.waited = True
                    time.sleep(0.1)
            if still_named(self.lock, fd):
                break
            os.close(fd)  # its holder removed the file before letting go: lock the one there now
        self.fd = fd
        self.info.write_text(json.dumps(this_process()), encoding="utf-8")

    def try_acquire(self) -> bool:
        """Take the lock where no other process holds it, without waiting; False where one does (`holder` names
        it). For a command that must not wait on others' work (`kbc cache clear`)."""
        while self.fd is None:
            fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            if not still_named(self.lock, fd):
                os.close(fd)
                continue
            self.fd = fd
            self.info.write_text(json.dumps(this_process()), encoding="utf-8")
        return True

    def holder(self) -> str:
        try:
            info = json.loads(self.info.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "another process"
        return holder_text(info) or "another process"

    def release(self, remove: bool = False) -> None:
        """Let the next writer in; `remove`: delete the lock file too (while still holding it)."""
        if self.fd is None:
            return
        self.info.unlink(missing_ok=True)
        if remove:
            self.lock.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
