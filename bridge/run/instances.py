"""`RUN/instances.parquet`: every prediction record of a run as one long table.

One row per (corpus, predictor, fact), so any per-fact question is a pandas one-liner instead of
a walk over JSONL folders. Dropped facts are rows too (with their reason, no ranks, and null
`correct_*`), so that averaging `correct_raw` per relation gives the P@1 the summaries report.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from bridge.run.directory import open_run
from bridge.run.parquet_files import write_frame
from bridge.run.results import complete_records, right
from eval.durable import replacing
from eval.errors import naming

FILENAME = "instances.parquet"
log = logging.getLogger("kbc")
# `json.dumps(value, ensure_ascii=False)`, from one encoder made once: a run has a line per query (the values are
# parsed records, trees without cycles)
_CELL = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode

COLUMNS: dict[str, str] = {
    "corpus": "string",
    "predictor": "string",
    "relation": "string",
    "uid": "string",
    "subject": "string",
    "subject_id": "string",
    "gold": "string",
    "gold_id": "string",
    "prompt": "string",
    "dropped": "string",
    "rank_raw": "Int64",
    "rank_filtered": "Int64",
    "rank_exact_raw": "Int64",
    "rank_exact_filtered": "Int64",
    "correct_raw": "boolean",
    "correct_filtered": "boolean",
    "top1": "string",
    "answers": "string",
    "generation": "string",  # the raw text of an answer written by generation (null for a ranking)
    "parsed": "string",  # the answers read from it, as JSON text (a list, as KMIR's and LM-KBC's tables hold it)
    "unlinked": "string",  # those of them naming no entity of the corpus, as JSON text
    "abstained": "boolean",  # whether it said it does not know
}


_FIELDS = ("dropped", "answers", "subject", "subject_id", "gold", "gold_id", "prompt", "rank_raw", "rank_filtered",
           "rank_exact_raw", "rank_exact_filtered", "generation", "parsed", "unlinked", "abstained")


def instances_frame(run_dir: Path) -> pd.DataFrame:
    """The long table of a run directory (what `write_instances` stores), built column by column."""
    run = open_run(run_dir)
    owners: list[tuple[str, str]] = []
    records: list[dict] = []
    for corpus in run.corpora:
        for predictor in run.predictors:
            for path in run.relation_files(corpus, predictor):
                mine = complete_records(path).values()  # parsed once per command, shared with the scoring
                records += mine
                owners += [(corpus, predictor)] * len(mine)

    # the optional fields of every record in one pass over the records, a column each
    got = dict(zip(_FIELDS, map(list, zip(*[tuple(map(r.get, _FIELDS)) for r in records])))) if records \
        else dict.fromkeys(_FIELDS, [])
    field = got.__getitem__
    dropped, answers = field("dropped"), field("answers")
    columns = {
        "corpus": [c for c, _ in owners],
        "predictor": [p for _, p in owners],
        "relation": [r["relation"] for r in records],
        "uid": [r["uid"] for r in records],
        **{name: field(name) for name in ("subject", "subject_id", "gold", "gold_id")},
        "prompt": [p if p is None or isinstance(p, str) else _CELL(p)  # chat turns: JSON
                   for p in field("prompt")],
        "dropped": dropped,
        **{name: field(name) for name in ("rank_raw", "rank_filtered", "rank_exact_raw", "rank_exact_filtered")},
        **{f"correct_{s}": [None if d is not None else right(r, s) for d, r in zip(dropped, records)]
           for s in ("raw", "filtered")},
        "top1": [a[0][0] if a else None for a in answers],
        "answers": [None if d is not None else _CELL(a or []) for d, a in zip(dropped, answers)],
        "generation": field("generation"),
        **{name: [None if v is None else _CELL(v) for v in field(name)] for name in ("parsed", "unlinked")},
        "abstained": field("abstained"),
    }
    frame = pd.DataFrame(columns, columns=list(COLUMNS)).astype(COLUMNS)
    if any("set" in r for r in records):  # `--answers set`: each fact's set and its scores beside the ranks
        types = run.config.get("relation_types") or {}
        return frame.assign(**_set_columns(records, [types.get(c) or {} for c, _ in owners])).astype(SET_COLUMNS)
    return frame


SET_COLUMNS: dict[str, str] = {
    "set": "string",  # the answers its set rule kept, as JSON text
    "set_gold": "string",  # every valid object of its subject, as JSON text
    "set_p": "Float64",  # LM-KBC's precision, recall and F1 of the two, as fractions 0-1: on N-M relations only,
    "set_r": "Float64",  # as the summaries' `set-p`, `set-r`, `set-f1` (percent) are the mean of their facts'
    "set_f1": "Float64",
}


def _set_columns(records: list[dict], types: list[dict]) -> dict[str, list]:
    """`SET_COLUMNS` of each record: null where it was dropped or has no set; scores null off the N-M relations."""
    from eval.set_metrics import LAMA_SET_TYPES, score_pair

    out: dict[str, list] = {name: [] for name in SET_COLUMNS}
    for record, held in zip(records, types):
        has = "set" in record and record.get("dropped") is None
        out["set"].append(_CELL(record["set"]) if has else None)
        out["set_gold"].append(_CELL(record["set_gold"]) if has else None)
        pair = (score_pair(record["relation"], record["uid"], record["set"], record["set_gold"])
                if has and held.get(record["relation"]) in LAMA_SET_TYPES else None)
        for name in ("p", "r", "f1"):
            out[f"set_{name}"].append(None if pair is None else getattr(pair, name))
    return out


def units_frame(units: list[dict], derived: Callable[[dict], dict] | None = None) -> pd.DataFrame:
    """The scored units of an experiment other than LAMA (coherency rounds, KMIR questions), one row each;
    nested values (answer lists, excluded answers) as JSON text. `derived`: the experiment's own columns of a unit
    (an LM-KBC pair's P/R/F1, a negated fact's top answer), so that its scores can be recomputed from the table.
    Ranks are nullable ints and right-or-wrong columns nullable booleans, as in LAMA's table."""
    rows = [{k: _CELL(v) if isinstance(v, list | dict) else v for k, v in u.items()} for u in units]
    if derived is not None:
        for row, unit in zip(rows, units):
            row.update(derived(unit))
    frame = pd.DataFrame(rows)
    kinds = {name: COLUMNS[name] for name in frame.columns
             if name.startswith(("rank_", "correct_")) and name in COLUMNS}
    return frame.astype(kinds) if kinds else frame


def write_instances(run_dir: Path, units: list[dict] | None = None,
                    derived: Callable[[dict], dict] | None = None) -> Path:
    """Write `RUN/instances.parquet` atomically (a reader never sees half a file); returns its path.

    `units`: the experiment's scored units (for experiments whose records are not LAMA queries), with the
    experiment's `derived` columns (`units_frame`).
    """
    run_dir = Path(run_dir)
    if units is None:
        from bridge.run.fact_columns import with_fact_stats

        frame = with_fact_stats(instances_frame(run_dir), run_dir)
    else:
        frame = units_frame(units, derived)
    return atomic_parquet(frame, run_dir / FILENAME)


def in_current_layout(frame: pd.DataFrame, run_dir: Path, config: dict) -> pd.DataFrame:
    """A LAMA run's `instances.parquet` as this kbc writes it: one an earlier version wrote lacks columns added
    since (`--answers set`'s set columns), so it is built again from the prediction records, which hold them, as a
    rescoring would write it; a note says so. Other tables are returned as read."""
    if config.get("experiment", "lama") != "lama":
        return frame
    wanted = [*COLUMNS, *(SET_COLUMNS if (config.get("settings") or {}).get("answers") == "set" else ())]
    missing = [c for c in wanted if c not in frame.columns]
    if not missing:
        return frame
    from bridge.run.fact_columns import with_fact_stats

    log.info("%s: written by an earlier kbc version, without %s; built again from the prediction records "
             "(rerun the run's command into it to rewrite the file)", Path(run_dir) / FILENAME, ", ".join(missing))
    return with_fact_stats(instances_frame(run_dir), run_dir)


def atomic_parquet(frame: pd.DataFrame, target: Path) -> Path:
    """Write `frame` aside, then switch it in: a reader, and the disk after a power cut, never holds half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with replacing(target, target.parent / f".{target.name}.{os.getpid()}.tmp") as tmp, naming(target):
        write_frame(frame, tmp)
    return target
