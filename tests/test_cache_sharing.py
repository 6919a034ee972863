"""Several kbc processes share one result cache (KBC_CACHE): one process's error, passing or real, must never delete
the file under the others, which would lose their results and could corrupt the file they go on writing."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lm.cache import ResultCache

HOLDER = """
import sys
import numpy as np
from lm.cache import ResultCache

cache = ResultCache(sys.argv[1])
cache.put_many([(ResultCache.key("held"), np.arange(3), np.array([-1.0, -2.0, -3.0]), 1)])
print("ready", flush=True)
sys.stdin.readline()
cache.put_many([(ResultCache.key("later"), np.arange(3), np.array([-4.0, -5.0, -6.0]), 1)])
print(len(cache), flush=True)
sys.stdin.readline()
"""


class Holder:
    """Another kbc process with the cache open: it stored one row and stores another when told."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "ready"

    def store_another(self) -> int:
        """Rows the holder counts after storing its second one."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def holder(tmp_path):
    started: list[Holder] = []

    def start(path: Path) -> Holder:
        started.append(Holder(path))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def _error(kind: type, message: str, code: int) -> sqlite3.Error:
    exc = kind(message)
    exc.sqlite_errorcode = code
    return exc


def _keys(path: Path) -> set[str]:
    """The keys another, later process finds."""
    cache = ResultCache(path)
    try:
        wanted = [ResultCache.key(k) for k in ("held", "later")]
        return {k for k, v in zip(("held", "later"), wanted, strict=True) if v in cache.get_many(wanted, 3)}
    finally:
        cache.close()


@pytest.mark.parametrize(
    "error",
    [
        _error(sqlite3.OperationalError, "database schema has changed", 17),
        _error(sqlite3.OperationalError, "locking protocol", 15),
        _error(sqlite3.OperationalError, "no such table: results", 1),
        _error(sqlite3.DatabaseError, "database disk image is malformed", 11),  # said of a sound file
    ],
    ids=["schema", "protocol", "no-table", "malformed"],
)
def test_an_error_in_one_process_keeps_the_cache_another_uses(tmp_path, holder, caplog, error):
    path = tmp_path / "results.sqlite"
    other = holder(path)
    mine = ResultCache(path)

    def fail(db):
        raise error

    caplog.set_level(logging.WARNING, "kbc")
    assert mine._run(fail, "computed") == "computed"
    assert other.store_another() == 2
    assert _keys(path) == {"held", "later"}  # nothing the other process stored is lost
    assert not any("dropped" in m for m in caplog.messages), caplog.messages
    mine.put_many([(ResultCache.key("mine"), np.arange(3), np.zeros(3), 1)])
    assert len(mine) == 3  # and this process goes on using it


def _damage(path: Path) -> None:
    """Overwrite the pages after the first with noise: SQLite reads them as a malformed file."""
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.seek(4096)
        handle.write(np.random.default_rng(0).integers(0, 256, size - 4096, dtype=np.uint8).tobytes())


def _filled(path: Path) -> None:
    cache = ResultCache(path)
    cache.put_many((ResultCache.key(str(i)), np.arange(5), np.zeros(5), 1) for i in range(3000))
    cache._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.close()


def test_a_damaged_cache_in_use_elsewhere_is_left_to_the_last_user(tmp_path, holder, caplog):
    path = tmp_path / "results.sqlite"
    _filled(path)
    other = holder(path)
    _damage(path)
    inode = path.stat().st_ino
    caplog.set_level(logging.WARNING, "kbc")
    mine = ResultCache(path)
    keys = [ResultCache.key(str(i)) for i in range(3000)]
    assert mine.get_many(keys, 1) == {} and mine.get_many(keys, 1) == {}
    mine.put_many([(ResultCache.key("mine"), np.arange(3), np.zeros(3), 1)])
    assert path.stat().st_ino == inode  # not deleted under the process that has it open
    assert [m for m in caplog.messages if "damaged" in m] == [
        f"{path}: damaged result cache (database disk image is malformed), in use by another kbc process; results "
        "are computed without the cache until a kbc run that uses it alone rebuilds it"
    ]
    mine.close()
    os.kill(other.proc.pid, signal.SIGKILL)  # its lock goes with it
    other.proc.wait()
    caplog.clear()
    alone = ResultCache(path)
    assert alone.get_many(keys, 1) == {}
    alone.put_many([(ResultCache.key("again"), np.arange(3), np.zeros(3), 1)])
    assert len(alone) == 1 and alone.writable
    assert len(caplog.messages) == 1 and caplog.messages[0].endswith(
        "; dropped and rebuilt, its results are computed again"
    ), caplog.messages
    alone.close()


def test_a_sound_file_said_to_be_malformed_again_is_kept(tmp_path, caplog):
    """SQLite's check on a fresh connection decides: a file it finds sound is kept however often an error says not."""
    path = tmp_path / "results.sqlite"
    cache = ResultCache(path)
    cache.put_many([(ResultCache.key("held"), np.arange(3), np.zeros(3), 1)])

    def fail(db):
        raise _error(sqlite3.DatabaseError, "database disk image is malformed", 11)

    caplog.set_level(logging.WARNING, "kbc")
    assert cache._run(fail, "computed") == "computed" and len(cache) == 1  # carried on with the file
    assert cache._run(fail, "computed") == "computed" and not cache.writable and len(cache) == 0
    assert caplog.messages == [
        f"{path}: database disk image is malformed, again, though SQLite finds the file sound; results are computed "
        "without the cache until a kbc run that uses it alone rebuilds it"
    ]
    cache.close()
    assert _keys(path) == {"held"}


def test_a_cache_another_process_is_setting_up_is_waited_for(tmp_path, monkeypatch, caplog):
    """Two processes opening a new cache at once: SQLite answers the second's switch to WAL "busy" at once, without
    waiting; that cache is still written, not taken for one that cannot be."""
    busy = [_error(sqlite3.OperationalError, "database is locked", 5)] * 2
    real = sqlite3.connect

    class Racing(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql == "PRAGMA journal_mode=WAL" and busy:
                raise busy.pop()
            return super().execute(sql, *args)

    monkeypatch.setattr("lm.cache.sqlite3.connect", lambda *a, **k: real(*a, factory=Racing, **k))
    caplog.set_level(logging.WARNING, "kbc")
    cache = ResultCache(tmp_path / "results.sqlite")
    cache.put_many([(ResultCache.key("held"), np.arange(3), np.zeros(3), 1)])
    assert cache.writable and len(cache) == 1 and not busy and caplog.messages == []
    cache.close()


def test_a_cache_opened_in_one_thread_closes_in_another(tmp_path):
    """The explorer opens caches in its worker threads; one collected in another thread still closes and lets
    its shared lock go, instead of raising from its finalizer."""
    import threading

    made: list[ResultCache] = []
    worker = threading.Thread(target=lambda: made.append(ResultCache(tmp_path / "results.sqlite")))
    worker.start()
    worker.join()
    cache = made.pop()
    cache.close()
    assert cache._db is None and cache._lock is None


def test_a_cache_this_process_stopped_writing_and_then_finds_damaged_is_left_alone(tmp_path, caplog):
    """Writing stopped after a lock held too long; damage found later: told once, computed without the cache."""
    path = tmp_path / "results.sqlite"
    _filled(path)
    inode = path.stat().st_ino
    caplog.set_level(logging.WARNING, "kbc")
    mine = ResultCache(path)
    keys = [ResultCache.key(str(i)) for i in range(3000)]
    assert len(mine.get_many(keys[:3], 1)) == 3

    def locked(db):
        raise _error(sqlite3.OperationalError, "database is locked", 5)

    assert mine._run(locked, None) is None and not mine.writable
    _damage(path)
    assert mine.get_many(keys, 1) == {} and mine.get_many(keys, 1) == {}
    mine.put_many([(ResultCache.key("mine"), np.arange(3), np.zeros(3), 1)])
    assert len(mine) == 0 and path.stat().st_ino == inode  # not deleted: others may be writing it
    assert [m for m in caplog.messages if "damaged" in m] == [
        f"{path}: damaged result cache (database disk image is malformed), which this process had stopped writing; "
        "results are computed without the cache until a kbc run that uses it alone rebuilds it"
    ]
    mine.close()


def test_cache_opened_in_another_thread_closes_after_sqlite_names_are_cleared(tmp_path, monkeypatch):
    """A cache a server or `kbcompare.Sides` opened in a worker thread may be collected at interpreter exit, after
    the sqlite3 module's names are cleared: closing it then prints no `Exception ignored ... TypeError`."""
    import threading
    import types

    import lm.cache

    held: list[ResultCache] = []

    def open_and_use() -> None:
        held.append(ResultCache(tmp_path / "results.sqlite"))
        assert len(held[0]) == 0  # a connection of this thread, which SQLite refuses to close from another

    worker = threading.Thread(target=open_and_use)
    worker.start()
    worker.join()
    monkeypatch.setattr(lm.cache, "sqlite3", types.SimpleNamespace(ProgrammingError=None))
    held[0].close()
    assert held[0]._db is None
