"""JSON files of computed results kept in the cache, each carrying a SHA-256 of its content.

The first line is `{"sha256": "<hex>"}`, the rest the JSON it covers (gzip-compressed for a `.gz` path). A file
that fails its check, does not parse or predates the check (an earlier kbc version) is never used: the caller
computes it again and rewrites it. A cache costs time, never a different number.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
from pathlib import Path

from eval.durable import write_atomic
from eval.file_names import NAME_BYTES

log = logging.getLogger("kbc")


def write_checked(path: Path, obj: object) -> None:
    """Write `obj` aside, then switch it in, so a reader never sees half a file (not synced: a file a power cut
    damaged fails its check and is computed again)."""
    body = json.dumps(obj, ensure_ascii=False).encode("utf-8", NAME_BYTES)  # eval.file_names
    data = json.dumps({"sha256": hashlib.sha256(body).hexdigest()}).encode() + b"\n" + body
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, gzip.compress(data, mtime=0) if path.suffix == ".gz" else data,
                 path.with_name(f"{path.name}.{os.getpid()}.tmp"), durable=False)


def read_checked(path: Path, what: str = "cache file") -> object | None:
    """The object written at `path`; None (with a warning unless absent) where it cannot be trusted."""
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        head, _, body = data.partition(b"\n")
        if json.loads(head).get("sha256") == hashlib.sha256(body).hexdigest():
            return json.loads(body)
        why = "its content does not match its checksum"
    except FileNotFoundError:
        return None
    except (OSError, EOFError, ValueError, AttributeError) as exc:  # gzip, JSON and a header that is no object
        why = f"unreadable: {type(exc).__name__}"
    log.warning("%s: damaged, edited or from an earlier kbc version (%s); the %s is computed again", path, why, what)
    return None
