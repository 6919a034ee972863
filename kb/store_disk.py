"""The embedded graph store's folder, shared by every kbc process on a machine.

RocksDB (under Oxigraph) lets one process open a folder to write, and others open it read-only only
while nobody writes. So a store folder holds generations: `LIVE` names the published one, which is
never written again. Readers open it read-only and hold a shared lock on its `kbc-readers` file,
which keeps it on disk while they use it. A writer takes `writer.lock` (waiting a bounded time, and
naming the holder from `writer.json`), checkpoints the live generation into a work folder (hard
links), writes there, checkpoints that into a new generation and publishes it by replacing `LIVE`.
A writer cut short leaves only a work folder, which the next writer deletes: no reader ever sees a
half-written store.
`kbc-store.json` marks a folder as a graph store made by kbc; no other folder is written into.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pyoxigraph as ox

from eval.durable import fsync_tree, write_atomic
from eval.errors import ConfigError, DataError, KbcError
from eval.lock_holders import holders_text
from eval.native_paths import check_native_path
from kb.writer_lock import WriterLock, writer_wait

GRAPH_NS = "urn:kbc:graph:"  # every graph kbc writes is named under it

log = logging.getLogger("kbc")

MARK = "kbc-store.json"
LIVE = "LIVE"
WRITER_LOCK = "writer.lock"
WRITER_INFO = "writer.json"
READERS = "kbc-readers"
_GENERATION = re.compile(r"gen-[0-9]+")
_WORK = re.compile(r"work-[0-9]+")
_OURS = re.compile(rf"{re.escape(MARK)}|{LIVE}(\.tmp)?|{re.escape(WRITER_LOCK)}|{re.escape(WRITER_INFO)}"
                   r"|(gen|work)-[0-9]+")
# the files RocksDB keeps in a database folder: a store of the earlier one-folder layout holds only these
_ROCKSDB = re.compile(r"CURRENT|IDENTITY|LOCK|LOG(\.old\.[0-9]+)?|MANIFEST-[0-9]+|OPTIONS-[0-9]+(\.dbtmp)?"
                      r"|[0-9]+\.(sst|log|blob)")


_NOT_DAMAGE = ("No space left on device", "Permission denied", "Read-only file system", "Disk quota exceeded")


def _one_line(exc: object, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "..."


def _held_only(root: Path) -> list[str]:
    """The names in the folder `root` but its writer lock and the lock holder's record: a folder holding only
    these holds no store (`kbc cache clear` empties a store while holding the lock)."""
    return sorted(p.name for p in root.iterdir() if p.name not in (WRITER_LOCK, WRITER_INFO))


def holds_nothing(root: Path) -> bool:
    """No store at `root` yet: no folder there, or an empty one (a new store's first file is its mark)."""
    root = Path(root)
    if root.is_symlink() and not root.exists():
        return False  # a dangling link: opening it says what is wrong
    return not root.exists() or (root.is_dir() and not _held_only(root))


class StoreFolder:
    """One store folder: the published generation to read, and the writer's lock and copy."""

    def __init__(self, root: Path, wait: float | None = None) -> None:
        self.root = Path(root)
        check_native_path(self.root, "the graph store",
                          "give the store a folder named in ASCII: KBC_CACHE=DIR or --store DIR")
        self.wait = writer_wait() if wait is None else wait
        self.live: str | None = None  # the generation read
        self.view: ox.Store = ox.Store()
        self.writer: ox.Store | None = None  # the copy being written, once a write started
        self._copy: Path | None = None
        self._reader_fd: int | None = None
        self._writer_fd: int | None = None
        self._lock = WriterLock(self.root / WRITER_LOCK, self.root / WRITER_INFO,
                                f"the graph store {self.root} is being written",
                                "or use another cache: KBC_CACHE=DIR, or --store DIR",
                                "wait for it to finish, or give this command its own store: KBC_CACHE=DIR kbc ... "
                                "(another cache) or --store DIR", self.wait)
        self._claim_folder()
        self._open_live()

    # -- the folder ----------------------------------------------------------------------------------
    def _claim_folder(self) -> None:
        """Mark a new or empty folder as a store; refuse a folder holding anything else."""
        root = self.root
        if root.exists() and not root.is_dir():
            raise ConfigError(f"--store {root} is a file; pass a directory (new, empty, or a kbc graph store)")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only HOME holding the default cache, a full disk
            raise ConfigError(f"cannot make the graph store {root} ({exc.strerror or exc}); set KBC_CACHE to a "
                              "writable folder, or give --store DIR") from None
        if (root / MARK).is_file():
            return
        entries = _held_only(root)
        if entries and not (root / MARK).is_file():  # the mark is the first file a new store gets
            if "CURRENT" in entries and all(_ROCKSDB.fullmatch(n) or _OURS.fullmatch(n) for n in entries):
                self._migrate()
                return
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise ConfigError(f"--store {root} is not empty ({shown}) and holds no kbc graph store ({MARK} is "
                              "missing); kbc writes a store only into a new or empty folder or one it made: pass "
                              "another --store DIR, or another cache with KBC_CACHE=DIR")
        self._mark()

    def _mark(self) -> None:
        try:
            fd = os.open(self.root / MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        with os.fdopen(fd, "w") as handle:
            json.dump({"what": "kbc graph store", "layout": "generations named by LIVE"}, handle)

    def _migrate(self) -> None:
        """Move a store of the earlier layout (one RocksDB folder) into a first generation, once."""
        try:  # looked at read-only first: a database kbc did not write is left as it is
            seen = ox.Store.read_only(str(self.root))
            graphs = [g.value for g in seen.named_graphs()]
            default = bool(seen.query("ASK { ?s ?p ?o }"))
        except (OSError, RuntimeError) as exc:
            raise ConfigError(f"--store {self.root} holds a database kbc cannot read ({_one_line(exc)}); if an "
                              "earlier kbc made it, delete the folder (a cache: it is rebuilt from the data), "
                              "else pass another --store DIR") from None
        del seen
        if default or not all(g.startswith(GRAPH_NS) for g in graphs):
            raise ConfigError(f"--store {self.root} holds an Oxigraph database that kbc did not write; pass "
                              "another --store DIR, or another cache with KBC_CACHE=DIR")
        self.claim(refresh=False)
        try:
            if (self.root / MARK).is_file():
                return
            try:  # read-write: a checkpoint of a read-only database would leave out its write-ahead log
                old = ox.Store(str(self.root))
            except OSError as exc:
                raise KbcError(f"cannot open the graph store {self.root}: {_one_line(exc)} (is a kbc of an earlier "
                               "version using it?)") from None
            except RuntimeError as exc:
                raise self.damaged(exc) from None
            first = self._checkpoint(old)
            del old
            self._mark()
            for path in self.root.iterdir():
                if path.is_file() and _ROCKSDB.fullmatch(path.name):
                    path.unlink()
            log.info("graph store %s: moved into its first generation %s (readers no longer lock it)",
                     self.root, first.name)
        finally:
            self._release()

    def damaged(self, why: object) -> KbcError:
        text = _one_line(why)
        if any(reason in text for reason in _NOT_DAMAGE):  # the disk or its permissions, not the store's files
            return KbcError(f"the graph store {self.root}: {text}")
        return DataError(f"the graph store {self.root} is damaged ({text}); it is a cache: delete the "
                         f"folder {self.root} and kbc rebuilds what it needs from the data")

    # -- reading -------------------------------------------------------------------------------------
    def _live_name(self) -> str | None:
        pointer = self.root / LIVE
        try:
            name = pointer.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise self.damaged(f"{pointer} is unreadable: {_one_line(exc)}") from None
        if not _GENERATION.fullmatch(name):
            raise self.damaged(f"{pointer} names no generation ({name[:40]!r})")
        return name

    def _open_live(self) -> None:
        """Read the published generation (an empty store before the first one)."""
        self._close_view()
        for _ in range(1000):  # a writer may publish (and delete the old one) between our steps
            name = self._live_name()
            if name is None:
                return
            try:
                fd = os.open(self.root / name / READERS, os.O_RDONLY)
            except FileNotFoundError:
                if self._live_name() == name:
                    raise self.damaged(f"{LIVE} names {name}, whose {READERS} file is missing") from None
                continue
            fcntl.flock(fd, fcntl.LOCK_SH)
            if self._live_name() != name:
                os.close(fd)
                continue
            try:
                self.view = ox.Store.read_only(str(self.root / name))
            except (OSError, RuntimeError) as exc:
                os.close(fd)
                raise self.damaged(exc) from None
            self.live, self._reader_fd = name, fd
            return
        raise KbcError(f"the graph store {self.root}: its published generation kept changing while opening it")

    def _close_view(self) -> None:
        self.view = ox.Store()
        self.live = None
        if self._reader_fd is not None:
            os.close(self._reader_fd)
            self._reader_fd = None

    def newer_published(self) -> bool:
        """Whether a generation newer than the one read was published since (another process wrote): one small
        file read, cheap enough to ask on every query."""
        return self.writer is None and self._live_name() != self.live

    def current(self) -> ox.Store:
        """The store to read: the writer's copy while one is written, else the published generation."""
        return self.writer if self.writer is not None else self.view

    # -- writing -------------------------------------------------------------------------------------
    def claim(self, refresh: bool = True) -> None:
        """Take the writer lock (waiting for another writer at most `wait` seconds), then read the newest
        generation, so that checks made from here on see what every other process wrote."""
        if self._writer_fd is not None:
            return
        self._lock.acquire()
        self._writer_fd = self._lock.fd
        if refresh and self._live_name() != self.live:
            self._open_live()

    def writable(self) -> ox.Store:
        """The writer's copy of the published generation, made on the first write after `claim`."""
        if self._writer_fd is None:
            raise RuntimeError("claim() the store before writing")
        if self.writer is None:
            copy = self.root / f"work-{time.time_ns()}"
            try:
                if self.live is not None:
                    self.view.backup(str(copy))
                self.writer = ox.Store(str(copy))
            except (OSError, RuntimeError) as exc:
                shutil.rmtree(copy, ignore_errors=True)
                raise self.damaged(exc) from None
            self._copy = copy
        return self.writer

    def publish(self) -> None:
        """Publish what was written (if anything) as the live generation, and let other writers in."""
        try:
            if self.writer is not None:
                work, writer = self._copy, self.writer
                self.writer, self._copy = None, None
                try:  # whatever still holds the work copy, the published checkpoint stays out of its reach
                    self._checkpoint(writer)
                finally:
                    del writer
                    shutil.rmtree(work, ignore_errors=True)
                self._open_live()
                self._collect()
        finally:
            self._release()

    def _checkpoint(self, writer: ox.Store) -> Path:
        """Publish a checkpoint of a read-write database as the live generation.

        A checkpoint flushes the write-ahead log into table files first, so the read-only copies
        taken from it later miss nothing (those of a read-only database would leave the log out).
        """
        generation = self.root / f"gen-{time.time_ns()}"
        try:
            writer.backup(str(generation))
        except (OSError, RuntimeError) as exc:
            shutil.rmtree(generation, ignore_errors=True)
            raise self.damaged(exc) from None
        (generation / READERS).touch()
        fsync_tree(generation)  # on disk before the pointer names it: a power cut keeps the old generation or this
        write_atomic(self.root / LIVE, generation.name.encode("utf-8"), self.root / f"{LIVE}.tmp")
        return generation

    def abandon(self) -> None:
        """Drop what was written since `claim` (a failed write never reaches readers)."""
        try:
            copy, self.writer, self._copy = self._copy, None, None
            if copy is not None:
                shutil.rmtree(copy, ignore_errors=True)
        finally:
            self._release()

    def _collect(self) -> None:
        """Delete generations no process reads any more, and copies of writers that were cut short."""
        for generation in self.root.iterdir():
            if _WORK.fullmatch(generation.name):  # we hold the writer lock: its writer is gone
                shutil.rmtree(generation, ignore_errors=True)
            if generation.name == self.live or not _GENERATION.fullmatch(generation.name):
                continue
            try:
                fd = os.open(generation / READERS, os.O_RDONLY)
            except OSError:  # never published: a writer was cut short before `LIVE` named it
                shutil.rmtree(generation, ignore_errors=True)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue  # still read
            shutil.rmtree(generation, ignore_errors=True)
            os.close(fd)

    def _release(self) -> None:
        if self._writer_fd is not None:
            self._lock.release()
            self._writer_fd = None

    def close(self) -> None:
        if self.writer is not None or self._copy is not None:
            self.abandon()
        self._release()
        self._close_view()


@contextmanager
def store_alone(root: Path) -> Iterator[WriterLock | None]:
    """The store folder `root` held against every other kbc process while the block runs: its writer lock, and each
    generation's readers' lock taken exclusively (so no process reads or writes it, and one that comes waits); a
    KbcError naming who uses it where one does. Gives the writer lock (None where there is no store folder), to be
    released with the lock file removed once the folder is emptied (`WriterLock.release(remove=True)`)."""
    root = Path(root)
    if root.is_symlink() or not root.is_dir():
        yield None
        return
    lock = WriterLock(root / WRITER_LOCK, root / WRITER_INFO, f"the graph store {root} is being written", "", "", 0)
    if not lock.try_acquire():
        raise KbcError(f"the graph store {root} is being written by {lock.holder()}")
    with ExitStack() as held:
        held.callback(lock.release)
        for generation in sorted(root.iterdir()):
            if not _GENERATION.fullmatch(generation.name) or generation.is_symlink():
                continue
            try:
                fd = os.open(generation / READERS, os.O_RDONLY)
            except OSError:
                continue  # never published: no reader ever opened it
            held.callback(os.close, fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise KbcError(f"the graph store {root} is being read by {holders_text(generation / READERS)}") \
                    from None
        yield lock
