"""Where the data lives: the LAMA copy is `--data-dir`, else `$KBC_DATA`, else `./data/lama`; every other corpus is
looked for in that folder and beside it, so the default is `./data/`, where `kbc data download` puts them."""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from eval.errors import DataError, MissingData
from eval.jsonl import refuse_special

ENV_VAR = "KBC_DATA"
DOWNLOAD_DIR = Path("data")  # `kbc data download --dest`'s default
DEFAULT_DIR = DOWNLOAD_DIR / "lama"
HOW_TO_GET = (
    "run `kbc data download lama` (fetches the official LAMA release into ./data/lama), "
    f"or point --data-dir / {ENV_VAR} at a copy"
)


def data_root(data_dir: str | Path | None = None) -> Path:
    """The folder a corpus is looked for in and beside: `data_dir`, else `$KBC_DATA`, else `./data/lama` (so
    `./data/<corpus>`, where `kbc data download` puts it by default, is found with no flag)."""
    return Path(data_dir or os.environ.get(ENV_VAR) or DEFAULT_DIR).expanduser()


def no_data(what: str, tried: Iterable[Path], name: str, fix: str) -> DataError:
    """The error of a corpus found in none of the folders `tried`: they are named, with the download that puts
    it where it is looked for, and `fix` (the flag or variable that points at a copy)."""
    where = ", ".join(str(p) for p in dict.fromkeys(tried))
    return MissingData(f"no {what} found (looked in {where}); run `kbc data download {name}` (into ./{DOWNLOAD_DIR}/) "
                     f"or {fix}")


def absolute_path(path: str | Path) -> Path:
    """`path` made absolute as given, symlinks kept: the data folders beside it are those beside the link,
    not those beside its target."""
    return Path(os.path.abspath(Path(path).expanduser()))


def lama_in(folder: Path) -> Path | None:
    """The LAMA data directory `folder` holds as a subfolder (`lama/` or `data/`), else None."""
    return next((folder / sub for sub in ("lama", "data") if (folder / sub / "relations.jsonl").is_file()), None)


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The directory holding `relations.jsonl`; accepts the LAMA dir itself or a parent of it."""
    given = data_dir or os.environ.get(ENV_VAR) or DEFAULT_DIR
    root = Path(given).expanduser()
    found = root if optional_file([root / "relations.jsonl"], "relation list") else lama_in(root)
    if found is not None:
        return absolute_path(found)
    if not root.exists():
        raise MissingData(f"LAMA data directory {root} does not exist; {HOW_TO_GET}")
    raise MissingData(f"{root} holds no LAMA data (no relations.jsonl); {HOW_TO_GET}")


def optional_file(candidates: Iterable[Path], what: str) -> Path | None:
    """The first of `candidates` that is a file, or None when none exists.

    One that exists but is no file (a folder, a dangling link, a link loop) is a DataError: taking it for "no
    file" would quietly run without what it should hold.
    """
    for cand in candidates:
        if cand.is_file():
            return cand
        if cand.exists() or cand.is_symlink():
            kind = "a directory" if cand.is_dir() else _broken_link(cand) if not cand.exists() else "not a regular file"
            raise DataError(f"{cand}: the {what} is {kind}; put the file there or remove it")
    return None


def _broken_link(path: Path) -> str:
    """What a link that leads to no file is: one that loops back on itself needs another fix than a missing target."""
    try:
        path.stat()
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a link loop"
    return "a dangling link"


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else `$KBC_CACHE`, else `~/.cache/kbcompare`: one root for every cache the project keeps."""
    return Path(cache_dir or os.environ.get("KBC_CACHE") or Path.home() / ".cache" / "kbcompare").expanduser()


def fingerprint(paths: list[Path]) -> str:
    """A short content hash of the data files a run read, stored in its config."""
    return hash_files(paths)[0]


def sha256_file(path: Path) -> str:
    """The SHA-256 of one file's bytes, streamed."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_key(path: Path, stat: os.stat_result) -> tuple:
    """What changes whenever a file's bytes may have: its path, device, inode, size, mtime and ctime (every write
    sets the ctime to the current time, and setting the mtime back sets it too)."""
    return (str(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def writer_id() -> str:
    """`<pid>-<thread>`: a temporary file's name part no other writer, in this process or another, shares."""
    return f"{os.getpid()}-{threading.get_ident()}"


SETTLED_NS = 2_000_000_000  # a file changed more recently than this may change again within its time's tick
KEEP_HASHED = 64
_HASHED: OrderedDict[tuple, tuple[str, list[str]]] = OrderedDict()  # this process's `hash_files`, by file keys
_HASHED_LOCK = threading.Lock()


def _keys(paths: list[Path]) -> tuple | None:
    """The `file_key` of each file, where every one has settled (None where one has not)."""
    keys = tuple(file_key(p, p.stat()) for p in paths)
    now = time.time_ns()
    return keys if all(now - max(k[-2], k[-1]) > SETTLED_NS for k in keys) else None


def hash_files(paths: list[Path], each: bool = False) -> tuple[str, list[str]]:
    """The `fingerprint` of `paths` (file names and bytes, in path order) and, with `each`, every file's own
    SHA-256 in that order, from one streamed read of each file. A process asked again about the same files, each
    with the same `file_key` as when read and settled, is answered from memory: a command or notebook that loads a
    corpus several times reads its bytes once."""
    ordered = sorted(paths)
    keys = _keys(ordered)
    with _HASHED_LOCK:
        known = _HASHED.get((keys, each)) if keys is not None else None
    if known is not None:
        return known[0], list(known[1])
    found = _hash_files(ordered, each)
    if keys is not None and _keys(ordered) == keys:  # unchanged while read
        with _HASHED_LOCK:
            _HASHED[(keys, each)] = (found[0], list(found[1]))
            while len(_HASHED) > KEEP_HASHED:
                _HASHED.popitem(last=False)
    return found


def _hash_files(paths: list[Path], each: bool) -> tuple[str, list[str]]:
    digest = hashlib.sha256()
    digests: list[str] = []
    for path in paths:
        digest.update(path.name.encode())
        mine = hashlib.sha256() if each else None
        refuse_special(path, str(path), "data file")  # a pipe would block the read for ever
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                if mine is not None:
                    mine.update(block)
        if mine is not None:
            digests.append(mine.hexdigest())
    return digest.hexdigest()[:16], digests
