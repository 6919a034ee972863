"""bench/ray_scaling.py keeps each configuration's fastest times and checks the records of every round against the
first run's, so that `same_records=` speaks for every run it made."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_later_round_with_other_records_is_caught():
    sys.path.insert(0, str(ROOT))
    from bench.ray_scaling import keep

    records = {"predictions/trex/bert/P19.jsonl": [{"uid": "a", "score": -1.0}]}
    raw = {"predictions/trex/bert/P19.jsonl": b'{"uid": "a", "score": -1.0}\n'}
    other = {"predictions/trex/bert/P19.jsonl": [{"uid": "a", "score": -2.0}]}
    runs: dict[str, tuple] = {}
    agree: list[tuple[bool, bool]] = []
    keep(runs, "in-process", (3.0, 2.0, records, raw), agree)
    keep(runs, "ray-1", (4.0, 2.5, records, raw), agree)
    assert agree == [(True, True), (True, True)]
    keep(runs, "in-process", (2.5, 2.2, other, b"other"), agree)  # a second round, faster overall, other records
    assert agree[-1] == (False, False)
    assert runs["in-process"][:2] == (2.5, 2.0) and runs["ray-1"][:2] == (4.0, 2.5)
