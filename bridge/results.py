"""Per-query prediction files: appended as answers arrive, read back to resume and to score."""

from __future__ import annotations

import json
import re
from pathlib import Path

from eval.metrics import Ranked

TOP_SAVED = 10


def slug(name: str) -> str:
    """A file-system-safe relation id (predictor names are checked to be safe already)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "predictor"


def predictions_path(out: Path, corpus: str, predictor: str, relation: str, stage: str = "") -> Path:
    """`predictions/<corpus>/<predictor>/[<stage>/]<relation>.jsonl` (one-stage experiments have no stage folder)."""
    folder = out / "predictions" / corpus / slug(predictor)
    return (folder / stage if stage else folder) / f"{slug(relation)}.jsonl"


def read_done(path: Path) -> dict[str, dict]:
    """Records already written, by query uid. A torn last line (crash mid-write) is cut off."""
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    good_bytes = 0
    with path.open("rb") as handle:
        for raw in handle:
            try:
                record = json.loads(raw)
            except ValueError:
                break
            if not raw.endswith(b"\n"):
                break
            done[record["uid"]] = record
            good_bytes += len(raw)
    if good_bytes < path.stat().st_size:
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
    return done


def to_ranked(record: dict) -> Ranked:
    return Ranked(record["relation"], record["rank_raw"], record["rank_filtered"],
                  record.get("rank_exact_raw"), record.get("rank_exact_filtered"))
