"""Where a run directory stands, for `kbc ls RUN` from another terminal while a long run writes it: whether a run
holds it now, how its last attempt ended, and per predictor the records written of each relation asked. Read
without taking the lock or changing a file."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.run.older_names import recorded_path
from bridge.run.run_lock import holder_text, writing


def read_config(out: Path) -> dict | None:
    """A run directory's config (None: `out` holds none, so it is no run directory, e.g. a model folder)."""
    try:
        config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) and isinstance(config.get("runs"), list) else None


def _records(path: Path) -> int:
    """Whole lines of a prediction file (a torn last line, cut by a crash, is asked again on resume: not counted)."""
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def status_lines(out: Path, config: dict) -> list[str]:
    runs = config["runs"]
    last = runs[-1] if runs else {}
    if writing(out):
        state = f"being written now by {holder_text(out) or 'a kbc run'}"
    elif "finished" in last:
        state = f"last attempt finished {last['finished']}"
    elif "error" in last:
        state = f"last attempt stopped ({last['error']}) {last.get('failed', '')}".rstrip()
    else:
        state = "last attempt has no end recorded (killed?): rerun its command to resume"
    lines = [f"{out}: {config.get('experiment', 'run')}, {len(runs)} attempt(s); {state}"]
    if last.get("limit"):
        lines.append(f"  sample: --limit {last['limit']} --seed {last.get('seed')}")
    asked = last.get("asked") or {}
    done = last.get("done") or {}
    for corpus, relations in asked.items():
        for predictor in last.get("predictors", []):
            counts = {rel: _records(recorded_path(out, corpus, predictor, rel)) for rel in relations}
            whole = done.get(corpus, {}).get(predictor, [])
            lines.append(f"  {corpus} / {predictor}: {sum(counts.values()):,} records; "
                         f"{len([r for r in relations if r in whole])} of {len(relations)} relations recorded whole")
            started = [f"{rel} {n:,}" for rel, n in counts.items() if n and rel not in whole]
            if started:
                lines.append(f"    under way: {', '.join(started)}")
    return lines
