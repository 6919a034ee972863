"""What kbc keeps in its cache (`eval.datadir.cache_root`), and removing it without harm: `kbc cache`.

Each kind of cache is a folder of the root (`KINDS`). Pruning removes only what can never be read again: a snapshot
whose data files are gone or changed (`eval.snapshot.why_dead`), a remembered digest of a file gone or changed
(`eval.file_digests.why_dead`), and the temporary file of a writer killed mid-write (a name only kbc's writers give,
untouched for `STALE_AFTER`). Clearing removes whole kinds, holding the locks the graph store, the LM caches, text
index builds and the readers of a text index or of the LAMA-UHN data take (`kb.store_disk.store_alone`,
`lm.cache.caches_alone`, `kb.text.index.builds_alone`, `eval.readers_lock`), so it refuses, naming the process,
while another kbc uses them. Nothing here follows a symbolic link (kbc makes none:
a link is reported and left), nor touches an entry of the root that is no kind's or a file in `snapshots/` or
`digests/` that is no name kbc gives: those are reported as not kbc's.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from eval import file_digests, snapshot
from eval.datadir import cache_root
from eval.errors import KbcError
from eval.readers_lock import READERS_LOCK, ReadersLock

# kind -> what it holds, in the order `kbc cache info` lists them
KINDS: dict[str, str] = {
    "store": "graph store (gold, inferred and extracted-KB graphs)",
    "lm": "LM result and response caches",
    "index": "text indexes (tantivy), Elasticsearch build locks",
    "entities": "E-BERT entity maps",
    "re": "extracted KB (relation-extraction triples)",
    "snapshots": "parsed corpora",
    "digests": "remembered file digests (model weights, data files)",
    "uhn": "LAMA-UHN data",
    "matplotlib": "matplotlib's font list and settings (kbc report)",
}
STALE_AFTER = 30 * 60  # seconds a temporary file is left untouched before it counts as a killed writer's
# temporary names kbc's writers give, per kind (a path under the kind's folder; a folder for LAMA-UHN's builds)
TEMPORARY: dict[str, re.Pattern] = {
    "snapshots": snapshot.SNAPSHOT_TMP,
    "digests": file_digests.ENTRY_TMP,
    "re": re.compile(r"[^/]+\.[0-9]+\.tmp"),  # eval.checked_json.write_checked
    "entities": re.compile(r"map-[0-9a-f]{16}\.npz\.tmp\.npz"),  # lm.entities.mapping.LinearMap.save
    "uhn": re.compile(r"\.[0-9a-f]{16}\.(tmp|old)-[0-9a-f]{8}"),  # eval.uhn.build_uhn
    "lm": re.compile(r"served_first_answers/[0-9a-f]{64}\.json\.tmp"),  # eval.jsonl.write_json
}
# a served model's first answer per run (`bridge.predictors.generation`): what a resumed run checks the server
# against, so that it never scores other weights as the same model; not computed again, so never cleared
FIRST_ANSWERS = "served_first_answers"
SQLITE_SIDE = ("-wal", "-shm", "-journal")  # what SQLite keeps beside a database `X`: `X-wal`, `X-shm`, `X-journal`
# the only names kbc gives in these kinds: anything else there is reported, never removed
NAMED = {"snapshots": snapshot.SNAPSHOT_NAME, "digests": file_digests.ENTRY_NAME}


def root_source() -> str:
    """Why the cache is where it is."""
    return "from KBC_CACHE" if os.environ.get("KBC_CACHE") else "the default; KBC_CACHE is not set"


@dataclass
class Usage:
    """Bytes and files of a tree, and the links in it (not followed)."""
    bytes: int = 0
    files: int = 0
    links: list[Path] = field(default_factory=list)

    def add(self, other: Usage) -> None:
        self.bytes += other.bytes
        self.files += other.files
        self.links += other.links


def usage(path: Path, apart: frozenset[Path] = frozenset()) -> Usage:
    """What the tree at `path` holds, its links counted but not followed, the entries `apart` left out."""
    found = Usage()
    if (st := _lstat(path)) is None:
        return found
    if stat.S_ISLNK(st.st_mode):
        found.links.append(path)
    elif stat.S_ISDIR(st.st_mode):
        for entry in _entries(path):
            if entry not in apart:
                found.add(usage(entry, apart))
    else:
        found.bytes, found.files = st.st_size, 1
    return found


def _lstat(path: Path) -> os.stat_result | None:
    """`path`'s own status; None where it is gone: another kbc renames its entries in and out while this looks."""
    try:
        return path.lstat()
    except FileNotFoundError:
        return None


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


@dataclass
class Inventory:
    root: Path
    kinds: dict[str, Usage]  # what kbc made, each kind's
    foreign: list[Path]  # entries of the root that are no kind's
    not_kbcs: list[Path] = field(default_factory=list)  # files of `snapshots/` and `digests/` kbc does not name
    others: Usage = field(default_factory=Usage)  # what `foreign` and `not_kbcs` hold: counted in no kind

    @property
    def links(self) -> list[Path]:
        return [link for u in self.kinds.values() for link in u.links]


def inventory(root: Path | None = None) -> Inventory:
    """What each kind holds, and apart from them what is not kbc's (so that the kinds' sizes are what kbc made)."""
    root = cache_root() if root is None else root
    foreign, others = not_kinds(root), not_kbcs(root, list(KINDS))
    found = Inventory(root, {kind: usage(root / kind, frozenset(others)) for kind in KINDS}, foreign, others)
    for path in foreign + others:
        found.others.add(usage(path))
    return found


def not_kinds(root: Path) -> list[Path]:
    """The entries of the cache folder that are no kind's: named by every command, never removed."""
    return [p for p in _entries(root) if p.name not in KINDS]


@dataclass
class Dead:
    """An entry that can never be used again: its path, size and why."""
    path: Path
    kind: str
    bytes: int
    why: str
    identity: tuple[int, int, int]  # inode, size, mtime when judged: removed only if still the same


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def dead_entries(root: Path, now: float | None = None) -> tuple[list[Dead], list[Path]]:
    """What pruning removes, and the entries of `snapshots/` and `digests/` that are not kbc's (links among them:
    left alone, never followed)."""
    now = time.time() if now is None else now
    dead: list[Dead] = []
    foreign: list[Path] = []
    for kind, why_dead in (("snapshots", snapshot.why_dead), ("digests", file_digests.why_dead)):
        if (root / kind).is_symlink():
            continue  # kbc makes no link: one is reported, never followed
        for path in _entries(root / kind):
            if (st := _lstat(path)) is None:
                continue
            if TEMPORARY[kind].fullmatch(path.name):
                continue  # judged below, by its age
            if not _named_by_kbc(kind, path, st):
                foreign.append(path)  # a link too: kbc makes none
                continue
            try:
                why = why_dead(path)
            except OSError:
                continue  # unreadable here: whether it is used cannot be told, so it stays
            if why is not None:
                dead.append(Dead(path, kind, st.st_size, why, _identity(st)))
    dead += _stale_temporaries(root, now)
    return dead, foreign


def _named_by_kbc(kind: str, path: Path, st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and bool(NAMED[kind].fullmatch(path.name))


def not_kbcs(root: Path, kinds: list[str]) -> list[Path]:
    """The files in `snapshots/` and `digests/` (of `kinds`) under names kbc neither gives nor writes aside: a
    clear leaves them, as a prune does (links are reported as links)."""
    found = []
    for kind in NAMED:
        if kind not in kinds or (root / kind).is_symlink():
            continue
        for path in _entries(root / kind):
            if (st := _lstat(path)) is None:
                continue
            if not (stat.S_ISLNK(st.st_mode) or TEMPORARY[kind].fullmatch(path.name)
                    or _named_by_kbc(kind, path, st)):
                found.append(path)
    return found


def first_answers(root: Path, kinds: list[str]) -> list[Path]:
    """The served runs' first answers (`FIRST_ANSWERS`) a clear of `kinds` leaves: a run resumed after it still
    checks that its server answers as when it started."""
    folder = root / "lm" / FIRST_ANSWERS
    if "lm" not in kinds or (root / "lm").is_symlink() or folder.is_symlink():
        return []
    return [p for p in _walk(folder) if p.is_file() and not p.is_symlink()]


def _stale_temporaries(root: Path, now: float) -> Iterator[Dead]:
    for kind, pattern in TEMPORARY.items():
        folder = root / kind
        if folder.is_symlink():
            continue
        for path in _walk(folder):
            if not pattern.fullmatch(path.relative_to(folder).as_posix()):
                continue
            if (st := _lstat(path)) is None:
                continue
            age = now - _newest(path)
            if age >= STALE_AFTER and not stat.S_ISLNK(st.st_mode):
                yield Dead(path, kind, usage(path).bytes, f"a killed writer's temporary file, untouched for "
                           f"{_duration(age)}", _identity(st))


def _walk(folder: Path) -> Iterator[Path]:
    """Every entry under `folder`, its links not followed; a matched temporary folder is not entered."""
    for path in _entries(folder):
        yield path
        if path.is_dir() and not path.is_symlink() and not path.name.startswith("."):
            yield from _walk(path)


def _newest(path: Path) -> float:
    """The last time anything in the tree at `path` was written (a writer may still be filling a folder)."""
    st = _lstat(path)
    newest = st.st_mtime if st is not None else 0.0
    if path.is_dir() and not path.is_symlink():
        for entry in _entries(path):
            newest = max(newest, _newest(entry))
    return newest


def _duration(seconds: float) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = round(seconds / size)
            return f"{n} {unit}" + ("" if n == 1 else "s")
    return f"{seconds:.0f} s"


class RemoveFailed(KbcError):
    """An entry of the cache that could not be removed, or a lock file that could not be made: the one line naming
    the path, what was removed before it and the fix, so that a user knows what is gone and how to finish."""


class _Unremovable(Exception):
    """`path` could not be removed (or listed) while a folder was emptied: made into a `RemoveFailed` by the caller,
    which knows what went before it."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(str(path))
        self.path, self.error = path, error


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def _fix(path: Path, command: str) -> str:
    return (f"make {path.parent} writable (`chmod u+w {path.parent}`) or remove {path} by hand, then run "
            f"`kbc cache {command}` again (what is removed is computed again when next needed)")


def remove_failed(path: Path, error: OSError, removed: str, command: str) -> RemoveFailed:
    """The refusal of an entry that could not be removed: `removed` says what was, before it."""
    return RemoveFailed(f"cannot remove {path} ({_reason(error)}); {removed}; {_fix(path, command)}")


def _unlink(path: Path, missing_ok: bool = True) -> None:
    """Remove file `path`; one that cannot be removed is an `_Unremovable` (one gone is a FileNotFoundError unless
    `missing_ok`)."""
    try:
        path.unlink(missing_ok=missing_ok)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _Unremovable(path, exc) from None


def remove_dead(found: list[Dead]) -> list[Dead]:
    """Remove each entry that is still what was judged (a writer may have replaced it since); the ones removed. An
    entry that cannot be removed is a `RemoveFailed` saying what was removed before it."""
    removed: list[Dead] = []
    for entry in found:
        try:
            if _identity(entry.path.lstat()) != entry.identity:
                continue
            if entry.path.is_dir():
                empty(entry.path, set())
                entry.path.rmdir()
            else:
                _unlink(entry.path, missing_ok=False)
        except FileNotFoundError:
            continue
        except _Unremovable as exc:
            raise remove_failed(exc.path, exc.error, _pruned(removed), "prune") from None
        except OSError as exc:
            raise remove_failed(entry.path, exc, _pruned(removed), "prune") from None
        removed.append(entry)
    return removed


def _pruned(removed: list[Dead]) -> str:
    """What a prune stopped by a failure removed before it."""
    if not removed:
        return "nothing was removed before it"
    size = sum(e.bytes for e in removed)
    return f"removed before it: {len(removed)} {'entry' if len(removed) == 1 else 'entries'} ({size:,} bytes)"


def empty(folder: Path, keep: set[Path], dry: bool = False, removed: Usage | None = None) -> Usage:
    """Remove what `folder` holds but `keep` and links (reported in what is returned, as the bytes and files
    removed); pointers to a published version (`LIVE`, `CURRENT`) first, so no reader finds one half removed, then
    SQLite's files beside a database (`SQLITE_SIDE`) before it: stopped in between, a log left beside no database
    would be replayed into the next one made under its name. `dry`: remove nothing, say what would go. A file that
    cannot be removed, or a folder that cannot be listed, is an `_Unremovable`; `removed` gathers what was removed
    before it."""
    removed = Usage() if removed is None else removed
    try:
        entries = _entries(folder)
    except OSError as exc:
        raise _Unremovable(folder, exc) from None
    for path in sorted(entries, key=lambda p: (p.name not in ("LIVE", "CURRENT"), not p.name.endswith(SQLITE_SIDE))):
        if (st := _lstat(path)) is None:
            continue  # renamed or removed by its writer since it was listed
        if stat.S_ISLNK(st.st_mode):
            removed.links.append(path)
        elif path in keep:
            continue
        elif stat.S_ISDIR(st.st_mode):
            empty(path, keep, dry, removed)
            if not dry:
                try:
                    path.rmdir()
                except OSError:
                    pass  # holds a link or a kept file
        else:
            if not dry:
                _unlink(path)
            removed.bytes += st.st_size
            removed.files += 1
    return removed


def clear(root: Path, kinds: list[str], check_only: bool = False) -> dict[str, Usage]:
    """Empty each kind's folder (the folder stays), holding the locks of those other kbc processes take; a KbcError
    naming the process that uses one, before anything is removed. `check_only`: take the locks, let go, and say
    what clearing would remove. Either way the counts leave out the files clearing keeps (the LM caches' lock
    files) and those it makes itself (a writer lock taken where none was, the holder's record): what is asked
    about is what is removed, and a declined clear leaves no file of its own."""
    from kb.store_disk import store_alone
    from kb.text.index import builds_alone
    from lm.cache import caches_alone

    existed = _sizes([root / kind for kind in ("store", "index", "uhn") if kind in kinds])
    with ExitStack() as held:
        keep: set[Path] = set()
        owned: list = []  # writer and readers' locks whose files go once their folder is emptied
        try:
            if "store" in kinds and (lock := held.enter_context(store_alone(root / "store"))) is not None:
                owned.append(lock)
            if "lm" in kinds:
                keep |= {Path(f"{p}.lock") for p in held.enter_context(caches_alone(root / "lm"))}
            if "index" in kinds:
                owned += held.enter_context(builds_alone(root / "index"))
            if "uhn" in kinds and (root / "uhn").is_dir() and not (root / "uhn").is_symlink():
                uhn = ReadersLock(root / "uhn" / READERS_LOCK, f"the LAMA-UHN data {root / 'uhn'}")
                uhn.acquire()
                held.callback(uhn.release)
                owned.append(uhn)
        except KbcError as exc:  # another process uses one: the user learns that nothing went, and when to retry
            raise KbcError(f"{exc}; nothing removed: clear again once it ends") from None
        except OSError as exc:  # a lock file that cannot be made (a read-only folder): nothing went yet
            path = Path(exc.filename) if exc.filename else root
            raise RemoveFailed(f"cannot make the lock file {path} ({_reason(exc)}), which keeps other kbc processes "
                               f"out while the cache is cleared; nothing removed; {_fix(path, 'clear')}") from None
        # a writer lock's file and its holder's record; a readers' lock keeps no record (the kernel names readers)
        keep |= {path for lock in owned for path in (lock.lock, getattr(lock, "info", lock.lock))}
        keep |= set(not_kbcs(root, kinds))
        keep |= set(first_answers(root, kinds))
        done: dict[str, Usage] = {}
        try:
            for kind in kinds:
                done[kind] = Usage(links=[root / kind]) if (root / kind).is_symlink() else Usage()
                if not (root / kind).is_symlink():
                    empty(root / kind, keep, check_only, done[kind])
        except _Unremovable as exc:
            raise remove_failed(exc.path, exc.error, cleared(done), "clear") from None
        for lock in owned:
            kind = lock.lock.relative_to(root).parts[0]
            if not check_only or lock.lock not in existed:
                try:
                    lock.release(remove=True)
                except OSError as exc:
                    raise remove_failed(lock.lock, exc, cleared(done), "clear") from None
            if lock.lock in existed:  # removed with the lock let go: one of the files the kind held
                done[kind].files += 1
                done[kind].bytes += existed[lock.lock]
        return done


def cleared(done: dict[str, Usage]) -> str:
    """What a clear stopped by a failure removed before it, kind by kind."""
    held = [f"{kind} {u.files} {'file' if u.files == 1 else 'files'} ({u.bytes:,} bytes)"
            for kind, u in done.items() if u.files]
    return f"removed before it: {', '.join(held)}" if held else "nothing was removed before it"



def _sizes(folders: list[Path]) -> dict[Path, int]:
    """Each file under `folders` and its size (one another process removes meanwhile left out)."""
    sizes = {}
    for folder in folders:
        for path in _walk(folder):
            try:
                sizes[path] = path.lstat().st_size
            except FileNotFoundError:
                continue
    return sizes
