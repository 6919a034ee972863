"""The SHA-256 of every byte of a file, remembered so that an unchanged multi-GB checkpoint is read once.

A file's identity must change with any byte of it (a model edited in place must never be taken for the old one),
so it is always a hash of the whole content. What is remembered is keyed by the path, device, inode, size,
mtime and ctime of the file: every write sets the ctime to the current time and no user can set it back
(restoring the mtime sets the ctime too), so an edited file never matches a remembered key. File times move in
clock ticks, so a file changed less than `RACY_NS` ago is hashed but not remembered: a second write within the
same tick would otherwise keep the key. Remembered digests live in `<cache>/digests/`, one small JSON file each,
with a SHA-256 over key and digest; one that fails it (or does not parse) is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from pathlib import Path

from eval.datadir import cache_root, file_key, writer_id
from eval.durable import write_atomic
from eval.jsonl import refuse_special

RACY_NS = 2_000_000_000  # files changed more recently than this are not remembered
BLOCK = 1 << 20
_MEMO: dict[tuple, str] = {}  # this process's digests, under the same keys


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of the file's bytes (OSError where it cannot be read)."""
    path = Path(path)
    refuse_special(path, str(path))  # a pipe (a vocabulary file given as one) would block the read for ever
    key = _key(path, os.stat(path))
    known = _MEMO.get(key) or _recall(key)
    if known:
        return known
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    hexdigest = digest.hexdigest()
    # remembered only when settled and unchanged while it was read
    if time.time_ns() - max(key[-2], key[-1]) > RACY_NS and _key(path, os.stat(path)) == key:
        _MEMO[key] = hexdigest
        _remember(key, hexdigest)
    return hexdigest


def _key(path: Path, stat: os.stat_result) -> tuple:
    return file_key(path.resolve(), stat)


def _check(key: tuple, hexdigest: str) -> str:
    return hashlib.sha256(json.dumps([list(key), hexdigest]).encode()).hexdigest()


def _entry(key: tuple) -> Path:
    name = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]
    return cache_root() / "digests" / f"{name}.json"


def _recall(key: tuple) -> str | None:
    """A digest remembered by an earlier process, if its entry is intact and for exactly this key."""
    try:
        entry = json.loads(_entry(key).read_text(encoding="utf-8"))
        if entry["key"] == list(key) and entry["check"] == _check(key, entry["sha256"]):
            _MEMO[key] = entry["sha256"]
            return entry["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent, damaged or edited: hashed again (and rewritten)
    return None


def _remember(key: tuple, hexdigest: str) -> None:
    """Best effort: a cache that cannot be written only costs the next process a read of the file."""
    path = _entry(key)
    entry = json.dumps({"key": list(key), "sha256": hexdigest, "check": _check(key, hexdigest)})
    with contextlib.suppress(OSError):  # not synced: an entry a power cut damaged is not recalled, only hashed again
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, entry.encode("utf-8"), path.with_name(f"{path.name}.{writer_id()}.tmp"), durable=False)


ENTRY_NAME = re.compile(r"[0-9a-f]{32}\.json")  # `_entry`'s names
ENTRY_TMP = re.compile(r"[0-9a-f]{32}\.json\.[0-9]+(-[0-9]+)?\.tmp")  # `_remember`'s, while it writes


def why_dead(entry: Path) -> str | None:
    """Why the remembered digest `entry` can never be recalled again (None where it may be): its file is gone, or
    is no longer the one hashed (another inode, size, mtime or ctime: an edit sets the ctime, which no one can set
    back), or the entry is damaged (recall refuses it)."""
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        key = data["key"]
        if data["check"] != _check(tuple(key), data["sha256"]) or len(key) != 6:
            return "damaged"
        try:
            now = _key(Path(key[0]), os.stat(key[0]))
        except (FileNotFoundError, NotADirectoryError):
            return f"its file {key[0]} is gone"
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return "damaged"
    return None if list(now) == key else f"its file {key[0]} changed"
