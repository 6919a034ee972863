"""JSONL reading that names the file and line of anything malformed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from eval.errors import DataError


def read_jsonl(path: Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object); blank lines are skipped, bad lines raise DataError."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    empty = True
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            empty = False
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            missing = [k for k in required if k not in row]
            if missing:
                raise DataError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
            yield lineno, row
    if empty:
        raise DataError(f"{path}: file is empty")


def write_jsonl_line(handle, row: dict) -> None:
    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
