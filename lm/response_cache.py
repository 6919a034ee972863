"""Generated responses kept on disk, so that a rerun or a resumed run asks a model nothing it already answered.

A response is keyed by the SHA-256 of (fingerprint, model name, prompt, generation parameters), the fingerprint
being whatever its caller can vouch for: a local model's weights, or a server's URL with one run's token (or with
what the server says of the model, where the user shares its responses across runs). It is stored with a SHA-256
of its key and text: a row whose digest does not match (a damaged or edited file) is never served; it is deleted
and asked again, and counted as damaged.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from lm.cache import shared_lock
from lm.generation import Generated, GenerationParams


def response_key(fingerprint: str, model: str, prompt: str | list[dict], params: GenerationParams) -> str:
    blob = json.dumps([fingerprint, model, prompt, params.describe()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _digest(key: str, value: str) -> str:
    return hashlib.sha256(f"{key}\0{value}".encode()).hexdigest()


class ResponseCache:
    """An SQLite table key -> (response JSON, its digest); shared by processes (WAL, waits for writers)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # held while the file is open, as a result cache holds its own: `kbc cache clear` refuses while it is
        self._lock = shared_lock(path)
        self.db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
                        "digest TEXT NOT NULL)")
        self.db.commit()
        self.damaged = 0

    def get(self, key: str) -> Generated | None:
        row = self.db.execute("SELECT value, digest FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        value, digest = row
        try:
            ok = digest == _digest(key, value)
            data = json.loads(value) if ok else None
            found = Generated(str(data["text"]), int(data["prompt_tokens"]), int(data["completion_tokens"]),
                              run=data.get("run"), cut=data.get("cut") is True) if ok else None
        except (ValueError, KeyError, TypeError):
            found = None
        if found is None:
            self.damaged += 1
            self.db.execute("DELETE FROM responses WHERE key = ?", (key,))
            self.db.commit()
        return found

    def put(self, key: str, response: Generated, run: str | None = None) -> None:
        """Keep `response` (committed at once: a crash after it loses nothing); `run`: the run that asked it, so
        that a resumed run tells its own answers from those of other runs."""
        kept = {"text": response.text, "prompt_tokens": response.prompt_tokens,
                "completion_tokens": response.completion_tokens, **({"cut": True} if response.cut else {})}
        value = json.dumps({**kept, "run": run} if run else kept, ensure_ascii=False)
        self.db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?)", (key, value, _digest(key, value)))
        self.db.commit()

    def close(self) -> None:
        self.db.close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None
