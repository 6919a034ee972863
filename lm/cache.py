"""On-disk cache of LM results keyed by (model, prompt, candidates), so reruns and later experiments reuse them.

One SQLite file per cache directory. A key is the hash of everything that determines the result
(model fingerprint, dtype, scoring mode, candidate set, prompt); the value is the top-`depth`
candidate positions and log-probabilities. A stored entry serves any request of equal or smaller depth.
Statement scoring stores whole rows (`get_rows`/`put_rows`): a statement's per-token log-probabilities,
keyed by the model, the PLL variant and the statement (`lm.statement`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

SCHEMA = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, depth INTEGER, pos BLOB, score BLOB, extra INTEGER)"


class ResultCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()

    def get_many(self, keys: list[str], depth: int) -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
        """Entries at least `depth` deep, cut to `depth`: key -> (positions, log-probs, n_tokens)."""
        found: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, depth, pos, score, extra FROM results WHERE key IN ({marks}) AND depth >= ?",
                (*chunk, depth),
            )
            for key, _, pos, score, extra in rows:
                found[key] = (np.frombuffer(pos, dtype=np.int32)[:depth],
                              np.frombuffer(score, dtype=np.float32)[:depth], int(extra))
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray, np.ndarray, int]]) -> None:
        rows = [(k, len(p), np.asarray(p, dtype=np.int32).tobytes(), np.asarray(s, dtype=np.float32).tobytes(), int(n))
                for k, p, s, n in items]
        with self._db:
            self._db.executemany(
                "INSERT INTO results (key, depth, pos, score, extra) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET depth=excluded.depth, pos=excluded.pos, score=excluded.score, "
                "extra=excluded.extra WHERE excluded.depth > results.depth",
                rows,
            )

    def get_rows(self, keys: list[str]) -> dict[str, np.ndarray]:
        """Whole stored score rows (statement scoring's per-token scores), whatever their length: key -> scores."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, score in self._db.execute(f"SELECT key, score FROM results WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(score, dtype=np.float32)
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_rows(self, items: Iterable[tuple[str, Sequence[float]]]) -> None:
        """Store whole score rows as float32 (statement token scores are float32 values: stored exactly)."""
        self.put_many((k, np.zeros(0, dtype=np.int32), np.asarray(v, dtype=np.float32), len(v)) for k, v in items)

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def close(self) -> None:
        self._db.close()
