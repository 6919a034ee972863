"""What asking a model by generation cost, kept as the run goes rather than when an attempt ends, so that an
attempt killed by SIGKILL or a power cut still counts what it asked, sent and answered.

Each attempt appends to its own file, `RUN/.kbc-usage/<attempt>.jsonl`: one JSON line per predictor and corpus each
time its counts grow (`{"corpus": ..., "predictor": ..., "sent": 3, ...}`, the `RUN_TOTALS` added since the line
before). A line is written as each response is counted (where the predictor runs in this process) and as each chunk's
records are written, synced to disk with them, and once more as the attempt ends: a kill loses at most the last
line being written, a power cut what came after the last chunk's records. A request whose answer a kill kept from
the cache is counted, and counted again when the resumed run asks it anew, as a server charges both.

A reader sums every file. A torn last line (a kill mid-write) is left out; any other line that is not one of these
is refused naming it. config.json's `usage` holds what attempts of earlier versions added as they ended: it is read
as well.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eval.durable import fsync_dir, make_dirs
from eval.errors import DataError, naming

FOLDER = ".kbc-usage"
FIX = "delete that file (its counts are then left out of the run's usage) or use a new --out"


def log_path(out: Path, attempt: int) -> Path:
    """The usage file of attempt number `attempt` (its place in config.json's runs log, from 1)."""
    return out / FOLDER / f"{attempt}.jsonl"


class UsageLog:
    """Appends one attempt's counts as they grow: what each predictor's tally added since the line before."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: dict[tuple[str, str], dict[str, int]] = {}
        self._fd: int | None = None

    def add(self, corpus: str, predictor: str, tally: dict[str, int], durable: bool = False) -> None:
        """Append what `tally` (a predictor's counts so far in this attempt) holds beyond what was written of it;
        synced where `durable` (with a chunk's records), else on disk once the process ends, killed or not."""
        from bridge.predictors.generation import RUN_TOTALS

        was = self._written.setdefault((corpus, predictor), {})
        grown = {k: int(tally.get(k, 0)) - was.get(k, 0) for k in RUN_TOTALS}
        grown = {k: n for k, n in grown.items() if n}
        if grown:
            line = json.dumps({"corpus": corpus, "predictor": predictor, **grown}, sort_keys=True) + "\n"
            with naming(self.path):  # a full disk: the line names the file
                os.write(self._open(), line.encode("utf-8"))
            for k, n in grown.items():
                was[k] = was.get(k, 0) + n
        if durable and self._fd is not None:
            with naming(self.path):
                os.fsync(self._fd)

    def _open(self) -> int:
        if self._fd is None:
            make_dirs(self.path.parent)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            fsync_dir(self.path.parent)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_usage(out: Path) -> dict[str, dict[str, dict[str, int]]]:
    """corpus -> predictor -> counts (every one of `RUN_TOTALS`), summed over every attempt's usage file in run
    `out` (none: empty)."""
    from bridge.predictors.generation import RUN_TOTALS

    total: dict[str, dict[str, dict[str, int]]] = {}
    folder = out / FOLDER
    if not folder.is_dir():
        return total
    for path in sorted(folder.glob("*.jsonl")):
        for corpus, predictor, counts in _lines(path):
            mine = total.setdefault(corpus, {}).setdefault(predictor, dict.fromkeys(RUN_TOTALS, 0))
            for k, n in counts.items():
                mine[k] = mine.get(k, 0) + n
    return total


def _lines(path: Path) -> list[tuple[str, str, dict[str, int]]]:
    from bridge.predictors.generation import RUN_TOTALS

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc}); {FIX}") from None
    lines = raw.split(b"\n")
    lines.pop()  # after the last newline: empty, or a line a kill tore mid-write (left out)
    out = []
    for number, line in enumerate(lines, 1):
        try:
            item = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            item = None
        if not (isinstance(item, dict) and isinstance(item.get("corpus"), str)
                and isinstance(item.get("predictor"), str)
                and all(k in ("corpus", "predictor") or (k in RUN_TOTALS and type(v) is int)
                        for k, v in item.items())):
            raise DataError(f"{path}:{number}: not a line of counts this run wrote (garbled or edited); {FIX}")
        out.append((item.pop("corpus"), item.pop("predictor"), item))
    return out
