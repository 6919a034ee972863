"""On-disk cache of LM results keyed by (model, prompt, candidates), so reruns and later experiments reuse them.

One SQLite file per cache directory. A key is the hash of everything that determines the result
(model fingerprint, dtype, scoring mode, candidate set, prompt); the value is the top-`depth`
candidate positions and log-probabilities. A stored entry serves any request of equal or smaller depth.
Statement scoring stores whole rows (`get_rows`/`put_rows`): a statement's per-token log-probabilities,
keyed by the model, the PLL variant and the statement (`lm.statement`).

A cache must never change a number, so every row carries a SHA-256 over its key and value, checked on each
read: a row that fails it is never served but recomputed and replaced. The file is marked as kbc's (SQLite's
application id) with its format; a marked file that is damaged, or a cache of an earlier format, is dropped and
rebuilt with a warning. A file that is not a kbc cache is refused with one error line. A cache that cannot be
written (a read-only file or folder, a full disk) is still read; new results are computed without being stored.

Several kbc processes may share one cache. Each holds a shared lock on `<file>.lock` while it has the file open, and
a file is dropped only under the exclusive lock, after SQLite's own check confirms the damage: deleting a database
(or its -wal and -shm files) that another process has open loses that process's results and can corrupt the new
file. A process that finds the cache damaged while others use it, or after it stopped writing it (a lock held
too long, a full disk), computes without it; the next kbc to use the cache alone rebuilds it. Only SQLite's
"malformed" and "not a database" errors count as damage: a busy, locked or changed database is a moment's
contention, never a reason to drop a file.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from eval.errors import DataError, KbcError
from eval.lock_holders import holders_text

log = logging.getLogger("kbc")

APPLICATION_ID = 0x6B626372  # "kbcr": marks a file as kbc's result cache
FORMAT = 2  # SQLite user_version; 2: a checksum per row. Bump when rows change meaning: older files are rebuilt
SCHEMA = ("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, depth INTEGER, pos BLOB, score BLOB, "
          "extra INTEGER, checksum BLOB)")
EARLIER_COLUMNS = (["key", "depth", "pos", "score", "extra"],)  # the tables of earlier formats, rebuilt on sight
SQLITE_MAGIC = b"SQLite format 3\x00"
FIX = "delete it to start an empty cache, set KBC_CACHE to another folder, or run with --set cache=off"


def row_checksum(key: str, depth: int, pos: bytes, score: bytes, extra: int) -> bytes:
    """SHA-256 over a row's key and value, each part length-prefixed so no two rows share one."""
    k, d, e = key.encode("utf-8"), str(depth).encode(), str(extra).encode()
    return hashlib.sha256(b"".join((len(k).to_bytes(8, "little"), k, len(d).to_bytes(8, "little"), d,
                                    len(pos).to_bytes(8, "little"), pos, len(score).to_bytes(8, "little"), score,
                                    len(e).to_bytes(8, "little"), e))).digest()  # one call: a row per query


def _intact(key: object, depth: object, pos: object, score: object, extra: object, checksum: object) -> bool:
    """Whether a stored row is the one written under its key (types first: an edited cell may change its type)."""
    if not (isinstance(key, str) and isinstance(depth, int) and isinstance(extra, int)
            and isinstance(pos, bytes) and isinstance(score, bytes) and isinstance(checksum, bytes)):
        return False
    if len(pos) % 4 or len(score) % 4 or depth > len(score) // 4:
        return False
    return row_checksum(key, depth, pos, score, extra) == checksum


SQLITE_BUSY, SQLITE_CORRUPT, SQLITE_NOTADB = 5, 11, 26  # primary result codes: busy, a damaged file
CANNOT_WRITE = {3, 5, 6, 8, 10, 13, 14}  # PERM, BUSY, LOCKED, READONLY, IOERR, FULL, CANTOPEN


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file itself is damaged (not busy, locked, changed under us or unwritable)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return not isinstance(exc, sqlite3.OperationalError)
    return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)


def _cannot_write(exc: sqlite3.OperationalError) -> bool:
    """A failure to write (permissions, a full disk, a lock held too long), not a damaged file."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in CANNOT_WRITE
    return any(why in str(exc) for why in ("readonly", "unable to open", "locked", "full", "disk I/O"))


def shared_lock(path: Path):
    """`<path>.lock`, held shared while this process uses the cache (None where it cannot be made or locked)."""
    lock = Path(f"{path}.lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = lock.open("a")
        except PermissionError:
            handle = lock.open("r")  # a read-only cache: it is never rebuilt, yet others may still lock it
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_SH)  # waits while another process rebuilds the file
    except OSError:
        handle.close()
        return None
    return handle


@contextmanager
def caches_alone(folder: Path) -> Iterator[list[Path]]:
    """Every SQLite cache in `folder` (`*.sqlite`: result and response caches) held against every other kbc process
    while the block runs: the exclusive lock on each one's `<file>.lock`, which each process using it holds shared
    (one that comes waits). Gives the caches' files; a KbcError naming who uses one where one does."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        yield []
        return
    with ExitStack() as held:
        files = {p for p in folder.glob("*.sqlite") if p.is_file() and not p.is_symlink()}
        # a lock alone: a process locked it and has yet to make the cache file (or could not make it)
        files |= {p.with_suffix("") for p in folder.glob("*.sqlite.lock") if p.is_file() and not p.is_symlink()}
        files = sorted(files)
        for path in files:
            lock = Path(f"{path}.lock")
            handle = held.enter_context(lock.open("a"))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise KbcError(f"the LM cache {path} is in use by {holders_text(lock)}") from None
        yield files


class ResultCache:
    # bound here, not looked up in `sqlite3` when closing: a cache collected at interpreter exit may close after
    # the sqlite3 module's names are cleared, and an `except` naming a cleared class raises TypeError
    _CLOSE_ERRORS: tuple[type[Exception], ...] = (sqlite3.ProgrammingError,)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self.writable = True
        self._warned_damage = False
        self._rebuilt = False
        self._rechecked = False
        self._stopped = False  # computing without the cache (told once)
        self._db: sqlite3.Connection | None = None
        self._lock = shared_lock(self.path)
        self._open()

    # --- opening ---------------------------------------------------------------------------------
    def _open(self) -> None:
        """Connect, refusing a file that is not kbc's and rebuilding one of an earlier format."""
        owned = self._owner()
        if owned == "earlier":
            if not self._replace():
                self._stop("a result cache of an earlier kbc version, in use by another kbc process")
                return
            log.warning("%s: a result cache of an earlier kbc version; dropped and rebuilt", self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._setup(owned)
        except sqlite3.DatabaseError as exc:
            if _is_damage(exc):
                self._damaged(exc)
            else:
                self._open_read_only(exc)
        except OSError as exc:
            self._no_store(exc.strerror or str(exc))
            if self.path.is_file():
                self._open_read_only(exc)

    def _setup(self, owned: str) -> None:
        """Connect and mark the file, again while another process is setting it up (SQLite then answers "busy" at
        once, without waiting: switching a new file to WAL takes it whole), for as long as a write may wait."""
        deadline = time.monotonic() + 60
        for pause in itertools.chain((0.01, 0.02, 0.05, 0.1, 0.2), itertools.repeat(0.5)):
            try:
                self._connect(owned)
                return
            except sqlite3.OperationalError as exc:
                self._close_db()
                if getattr(exc, "sqlite_errorcode", 0) & 0xFF != SQLITE_BUSY or time.monotonic() > deadline:
                    raise
            time.sleep(pause)

    def _connect(self, owned: str) -> None:
        """Open in WAL mode and mark the file as kbc's cache of this format; a file that cannot be written fails."""
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        # no disk sync per write (a run writes once per chunk): a power cut may lose the last rows, which are
        # computed again, and never corrupts the file in WAL mode
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("BEGIN IMMEDIATE")  # table and marks at once; a file that cannot be written fails here
        try:
            self._db.execute(SCHEMA)
            if owned in ("new", "earlier"):
                self._db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self._db.execute(f"PRAGMA user_version={FORMAT}")
            self._db.commit()
        finally:
            if self._db.in_transaction:
                self._db.rollback()

    def _owner(self) -> str:
        """"new" (absent or empty), "ours", "earlier" (a kbc cache of an earlier format); else an error."""
        try:
            with self.path.open("rb") as handle:
                head = handle.read(100)
        except FileNotFoundError:
            return "new"
        except IsADirectoryError:
            raise DataError(f"{self.path}: is a folder, not a result cache; {FIX}") from None
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read the result cache ({exc.strerror or exc}); {FIX}") from None
        if not head:
            return "new"
        if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
            raise DataError(f"{self.path}: not a kbc result cache (not an SQLite database); {FIX}")
        try:  # through SQLite: the header of a cache in use may still be in its write-ahead log
            app, version, tables = self._describe()
        except sqlite3.DatabaseError as exc:
            if int.from_bytes(head[68:72], "big") == APPLICATION_ID:
                return "ours"  # kbc's, but unreadable: opening it decides whether it is rebuilt
            raise DataError(f"{self.path}: not a readable kbc result cache ({exc}); {FIX}") from None
        if app == APPLICATION_ID:
            return "ours" if version == FORMAT else "earlier"
        if not tables:
            return "new"
        if app == 0 and list(tables) == ["results"] and tables["results"] in EARLIER_COLUMNS:
            return "earlier"
        raise DataError(f"{self.path}: an SQLite database that is not a kbc result cache "
                        f"(tables: {', '.join(sorted(tables))}); {FIX}")

    def _describe(self) -> tuple[int, int, dict[str, list[str]]]:
        """Application id, format and tables (with their columns) of the file, read without writing."""
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60)
        try:
            app = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {name: [c[1] for c in db.execute(f"PRAGMA table_info({name})")]
                      for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            db.close()
        return app, version, tables

    def _open_read_only(self, exc: Exception) -> None:
        """A cache kbc may not write: read what it holds (immutable where SQLite cannot even keep its lock file)."""
        self._close_db()
        self._no_store(str(exc))
        if not self.path.is_file():
            return
        for mode in ("mode=ro", "immutable=1"):
            try:
                db = sqlite3.connect(f"file:{self.path}?{mode}", uri=True, timeout=60)
                db.execute("SELECT COUNT(*) FROM results").fetchone()
            except sqlite3.OperationalError:
                continue
            except sqlite3.DatabaseError as err:
                raise DataError(f"{self.path}: a damaged result cache that cannot be rebuilt here ({err}); "
                                f"{FIX}") from None
            self._db = db
            return

    def _no_store(self, why: str) -> None:
        if self.writable:
            log.warning("%s: cannot write the result cache (%s); results are computed without being stored "
                        "(make it writable, or set KBC_CACHE to a writable folder)", self.path, why)
        self.writable = False

    def _replace(self) -> bool:
        """Delete the file where no other kbc process has it open; False, the file left alone, where one has."""
        self._close_db()
        if self._lock is None:
            return False
        try:  # not atomic: the shared lock may be lost on failure, harmless with the file closed here
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        try:
            for suffix in ("", "-wal", "-shm"):
                try:
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                except OSError as exc:
                    raise DataError(f"{self.path}: cannot replace the result cache ({exc.strerror or exc}); "
                                    f"{FIX}") from None
            return True
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_SH)

    def _confirmed(self) -> bool:
        """Whether SQLite's own check on a fresh connection finds the damage: a passing error never costs a cache."""
        try:
            db = sqlite3.connect(self.path, timeout=60)
            try:
                return db.execute("PRAGMA quick_check").fetchall() != [("ok",)]
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            return _is_damage(exc)

    def _stop(self, why: str) -> None:
        """Compute without the cache from here on (once told), leaving the file to the next process."""
        self._close_db()
        if not self._stopped:
            log.warning("%s: %s; results are computed without the cache until a kbc run that uses it alone "
                        "rebuilds it", self.path, why)
        self._stopped = True
        self.writable = False

    def _damaged(self, exc: Exception) -> None:
        """The file is kbc's (it was opened as one) but SQLite cannot read it: start it again, empty."""
        if not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
            raise DataError(f"{self.path}: a damaged result cache that cannot be rebuilt here ({exc}); {FIX}")
        if not self.writable:  # writing it stopped (a lock held too long, a full disk): others are at it
            self._stop(f"damaged result cache ({exc}), which this process had stopped writing")
            return
        self._close_db()
        if not self._confirmed():  # a passing error on a sound file: carry on with it, or stop if it comes again
            if self._rechecked:
                self._stop(f"{exc}, again, though SQLite finds the file sound")
            else:
                self._rechecked = True
                self._open()
            return
        if self._rebuilt or not self._replace():
            self._stop(f"damaged result cache ({exc}), in use by another kbc process")
            return
        self._rebuilt = True
        log.warning("%s: damaged result cache (%s); dropped and rebuilt, its results are computed again",
                    self.path, exc)
        self._open()

    def _run(self, action, fallback):
        """`action(db)`, or `fallback` where the file is damaged (then rebuilt) or cannot be written."""
        if self._db is None:
            return fallback
        try:
            return action(self._db)
        except sqlite3.DatabaseError as exc:
            if _is_damage(exc):
                self._damaged(exc)
            elif _cannot_write(exc):
                self._no_store(str(exc))
            else:
                log.debug("%s: %s; this batch is computed without the cache", self.path, exc)
        return fallback

    # --- rows ------------------------------------------------------------------------------------
    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()

    def _select(self, keys: list[str], where: str = "", args: tuple = ()) -> list[tuple]:
        """Intact rows for `keys`; rows failing their checksum are left out (and deleted where writable)."""
        def read(db: sqlite3.Connection) -> list[tuple]:
            rows = []
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows += db.execute(f"SELECT key, depth, pos, score, extra, checksum FROM results "
                                   f"WHERE key IN ({marks}){where}", (*chunk, *args)).fetchall()
            return rows

        rows = self._run(read, [])
        bad = [r[0] for r in rows if not _intact(*r)]
        if bad:
            self._forget(bad)
            rows = [r for r in rows if _intact(*r)]
        return rows

    def _forget(self, keys: list) -> None:
        if not self._warned_damage:
            log.warning("%s: cached results failed their integrity check (a damaged or edited cache); they are "
                        "not used but computed again", self.path)
            self._warned_damage = True
        if self.writable:
            def delete(db: sqlite3.Connection) -> None:
                with db:
                    db.executemany("DELETE FROM results WHERE key = ?", [(k,) for k in keys])
            self._run(delete, None)

    def get_many(self, keys: list[str], depth: int) -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
        """Entries at least `depth` deep, cut to `depth`: key -> (positions, log-probs, n_tokens)."""
        found = {key: (np.frombuffer(pos, dtype=np.int32)[:depth], np.frombuffer(score, dtype=np.float32)[:depth],
                       extra)
                 for key, _, pos, score, extra, _ in self._select(keys, " AND depth >= ?", (depth,))}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray, np.ndarray, int]]) -> None:
        rows = []
        for k, p, s, n in items:
            pos, score = np.asarray(p, dtype=np.int32).tobytes(), np.asarray(s, dtype=np.float32).tobytes()
            rows.append((k, len(p), pos, score, int(n), row_checksum(k, len(p), pos, score, int(n))))
        if not self.writable or not rows:
            return

        def write(db: sqlite3.Connection) -> None:
            with db:
                db.executemany(
                    "INSERT INTO results (key, depth, pos, score, extra, checksum) VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET depth=excluded.depth, pos=excluded.pos, score=excluded.score, "
                    "extra=excluded.extra, checksum=excluded.checksum WHERE excluded.depth > results.depth",
                    rows,
                )
        self._run(write, None)

    def get_rows(self, keys: list[str]) -> dict[str, np.ndarray]:
        """Whole stored score rows (statement scoring's per-token scores), whatever their length: key -> scores."""
        found = {key: np.frombuffer(score, dtype=np.float32) for key, _, _, score, _, _ in self._select(keys)}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_rows(self, items: Iterable[tuple[str, Sequence[float]]]) -> None:
        """Store whole score rows as float32 (statement token scores are float32 values: stored exactly)."""
        self.put_many((k, np.zeros(0, dtype=np.int32), np.asarray(v, dtype=np.float32), len(v)) for k, v in items)

    def __len__(self) -> int:
        return self._run(lambda db: db.execute("SELECT COUNT(*) FROM results").fetchone()[0], 0)

    def _close_db(self) -> None:
        """Close the connection, from any thread (a cache dropped in a server's other thread is collected there: its
        connection, which SQLite lets only its own thread close, is closed as it is freed)."""
        db, self._db = getattr(self, "_db", None), None
        if db is not None:
            try:
                db.close()
            except self._CLOSE_ERRORS:  # another thread's connection: SQLite frees it with the object
                pass

    def close(self) -> None:
        """Close the file and release the shared lock."""
        self._close_db()
        if getattr(self, "_lock", None) is not None:
            self._lock.close()  # releases the shared lock: another process may now rebuild a damaged file
            self._lock = None

    def __del__(self) -> None:
        self.close()  # a cache dropped without close() still lets others rebuild once it is gone
