"""Checksums of a tantivy index generation: recorded at build time, checked on open.

tantivy reads a damaged norm or posting file without complaint and returns other BM25 scores,
so `kbc-meta.json` records each file's size and SHA-256 when the index is built. Hashing an
index of hundreds of MB on every open would be slow, so a verified generation keeps
`kbc-verified.json` (each file's size and modification time when its digest last matched):
an open re-hashes only the files whose size or time changed since.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

VERIFIED = "kbc-verified.json"
SKIP = ("kbc-meta.json", VERIFIED)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_digests(generation: Path) -> dict[str, dict]:
    """{file name: {"size", "sha256"}} of the index files (tantivy's hidden lock files left out)."""
    return {f.name: {"size": f.stat().st_size, "sha256": _sha256(f)} for f in sorted(generation.iterdir())
            if f.is_file() and not f.name.startswith(".") and f.name not in SKIP}


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def record_verified(generation: Path, names) -> None:
    """Remember the files as verified now (a read-only index simply stays unremembered)."""
    try:
        stamps = {name: _stamp(generation / name) for name in names}
        (generation / VERIFIED).write_text(json.dumps(stamps))
    except OSError:
        pass


def _verified(generation: Path) -> dict:
    try:
        stamps = json.loads((generation / VERIFIED).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def check_files(generation: Path, recorded: object, full: bool = False) -> str | None:
    """Why the generation's files differ from `recorded` (a `file_digests` result), or None when they match.
    `full`: hash every file, also those whose size and time are unchanged since they last matched."""
    if not isinstance(recorded, dict) or not recorded:
        return "it records no file checksums (built by an older kbcompare)"
    stamps = {} if full else _verified(generation)
    changed = False
    for name, want in sorted(recorded.items()):
        path = generation / name
        if not isinstance(want, dict) or not path.is_file():
            return f"its file {name} is missing"
        stamp = _stamp(path)
        if stamps.get(name) == stamp:
            continue
        if stamp[0] != want.get("size"):
            return f"its file {name} has {stamp[0]} bytes, not the {want.get('size')} it was built with"
        if _sha256(path) != want.get("sha256"):
            return f"its file {name} differs from the one it was built with: SHA-256 mismatch"
        changed = True
    if changed:
        record_verified(generation, recorded)
    return None
