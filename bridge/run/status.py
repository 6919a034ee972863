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


def run_status(out: Path, config: dict) -> dict:
    """Where `out` stands, as data (`kbc ls RUN --json`): attempts, how the last one ended, its sample, and per
    corpus and predictor the whole records written, the relations recorded whole and those under way."""
    runs = config["runs"]
    last = runs[-1] if runs else {}
    if writing(out):
        state, detail = "writing", holder_text(out) or "a kbc run"
    elif "finished" in last:
        state, detail = "finished", None
    elif "error" in last:
        state, detail = "stopped", last["error"]
    else:
        state, detail = "no end recorded", None
    asked = last.get("asked") or {}
    done = last.get("done") or {}
    predictors = []
    for corpus, relations in asked.items():
        for predictor in last.get("predictors", []):
            counts = {rel: _records(recorded_path(out, corpus, predictor, rel)) for rel in relations}
            whole = done.get(corpus, {}).get(predictor, [])
            predictors.append({"corpus": corpus, "predictor": predictor, "records": sum(counts.values()),
                               "relations": len(relations),
                               "relations_whole": len([r for r in relations if r in whole]),
                               "under_way": {rel: n for rel, n in counts.items() if n and rel not in whole}})
    return {"run": str(out), "experiment": config.get("experiment", "run"), "attempts": len(runs), "state": state,
            "detail": detail, "finished": last.get("finished"), "failed": last.get("failed"),
            "sample": {"limit": last["limit"], "seed": last.get("seed")} if last.get("limit") else None,
            "predictors": predictors}


def status_lines(out: Path, config: dict) -> list[str]:
    """`run_status` as `kbc ls RUN` prints it."""
    status = run_status(out, config)
    states = {"writing": f"being written now by {status['detail']}",
              "finished": f"last attempt finished {status['finished']}",
              "stopped": f"last attempt stopped ({status['detail']}) {status['failed'] or ''}".rstrip(),
              "no end recorded": "last attempt has no end recorded (killed?): rerun its command to resume"}
    state = states[status["state"]]
    lines = [f"{out}: {status['experiment']}, {status['attempts']} attempt(s); {state}"]
    if status["sample"]:
        lines.append(f"  sample: --limit {status['sample']['limit']} --seed {status['sample']['seed']}")
    for row in status["predictors"]:
        lines.append(f"  {row['corpus']} / {row['predictor']}: {row['records']:,} records; "
                     f"{row['relations_whole']} of {row['relations']} relations recorded whole")
        if row["under_way"]:
            lines.append(f"    under way: {', '.join(f'{rel} {n:,}' for rel, n in row['under_way'].items())}")
    return lines
