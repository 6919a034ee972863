"""Comparing a run made on Ray with a local one: the same records, scores within 1e-6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def records(out: Path) -> dict[str, list[dict]]:
    return {str(p.relative_to(out)): [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted((out / "predictions").rglob("*.jsonl"))}


def same(a, b, where: str) -> None:
    """Equal records: scores within 1e-6, everything else (uids, order, ranks, answers) exactly."""
    if isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, abs=1e-6), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def assert_same_run(local: Path, remote: Path) -> int:
    mine, theirs = records(local), records(remote)
    assert list(mine) == list(theirs)
    for path, lines in mine.items():
        same(lines, theirs[path], path)
    assert json.loads((local / "dropped.json").read_text()) == json.loads((remote / "dropped.json").read_text())
    return sum(len(lines) for lines in mine.values())
