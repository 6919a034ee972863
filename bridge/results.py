"""Per-query prediction files: appended as answers arrive, read back to resume and to score."""

from __future__ import annotations

import json
import re
from pathlib import Path

from eval.errors import DataError
from eval.metrics import Ranked

TOP_SAVED = 10


def slug(name: str) -> str:
    """A file-system-safe relation id (predictor names are checked to be safe already)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "predictor"


def predictions_path(out: Path, corpus: str, predictor: str, relation: str, stage: str = "") -> Path:
    """`predictions/<corpus>/<predictor>/[<stage>/]<relation>.jsonl` (one-stage experiments have no stage folder)."""
    folder = out / "predictions" / corpus / slug(predictor)
    return (folder / stage if stage else folder) / f"{slug(relation)}.jsonl"


# fields the scorers compute with, and the types they must have
_INT_OR_NULL = ("rank_raw", "rank_filtered", "rank_exact_raw", "rank_exact_filtered", "round")
_BOOLS = ("symmetric", "first_correct", "second_correct", "same_as_first", "coherent", "correct")
_LISTS = ("answers", "excluded", "other_valid")
_NUMBERS = ("f1", "em")


def parse_record(path: Path, lineno: int, raw: bytes) -> dict | None:
    """One complete line of a predictions file, checked; None for a torn last line (no newline yet).

    A complete line that does not parse, or whose fields have the wrong types, is damage, not a
    crash mid-write: scoring around it would change the numbers, so it is an error naming the line.
    """
    if not raw.endswith(b"\n"):
        return None
    where = f"{path}:{lineno}"
    fix = "delete that line (or the file) and rerun to recompute it"
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise DataError(f"{where}: malformed JSON ({exc.__class__.__name__}); {fix}") from None
    if not isinstance(record, dict) or not isinstance(record.get("uid"), str) \
            or not isinstance(record.get("relation"), str):
        raise DataError(f"{where}: a prediction record needs string 'uid' and 'relation'; {fix}")
    for key, ok in [*((k, lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)))
                      for k in _INT_OR_NULL),
                    *((k, lambda v: isinstance(v, bool)) for k in _BOOLS),
                    *((k, lambda v: isinstance(v, list)) for k in _LISTS),
                    *((k, lambda v: isinstance(v, int | float) and not isinstance(v, bool)) for k in _NUMBERS)]:
        if key in record and not ok(record[key]):
            raise DataError(f"{where}: field {key!r} has the wrong type ({record[key]!r}); {fix}")
    return record


def read_done(path: Path) -> dict[str, dict]:
    """Records already written, by query uid. A torn last line (crash mid-write) is cut off."""
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    good_bytes = 0
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, 1):
            record = parse_record(path, lineno, raw)
            if record is None:
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
