"""LAMA Fig. 4 from an evidence run: the gold's rank per evidence sentence, and its spread per relation.

`evidence.parquet` has one row per (predictor, fact, sentence); the rank is the exact rank where
the predictor reports one (LMs rank every candidate), else the rank in its answer list (null when
the gold is not in it). `evidence_summary.json` gives per relation the facts with at least two
ranked sentences, the median rank over all their sentences and the mean over facts of the
standard deviation of the rank across a fact's sentences (0 when the wording never matters).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd

from bridge.run.directory import open_run

EVIDENCE = "evidence.parquet"
SUMMARY = "evidence_summary.json"
RUN_FOLDER = "evidence-run"
COLUMNS: dict[str, str] = {"corpus": "string", "predictor": "string", "relation": "string", "uid": "string",
                           "evidence": "Int64", "rank": "Int64", "n_evidences": "Int64"}


def sentence_rank(record: dict) -> int | None:
    """The gold's rank of one sentence's query: exact where the predictor reports one (LMs rank every candidate),
    else its place in the answer list (None when the gold is not in it)."""
    rank = record.get("rank_exact_raw")
    return rank if rank is not None else record.get("rank_raw")


def evidence_frame(evidence_run: Path) -> pd.DataFrame:
    from bridge.experiments.evidence import split_uid

    run = open_run(evidence_run)
    rows = []
    for corpus in run.corpora:
        for predictor in run.predictors:
            for r in run.records(corpus, predictor):
                if "dropped" in r:
                    continue
                fact, i = split_uid(r["uid"])
                rows.append({"corpus": corpus, "predictor": predictor, "relation": r["relation"], "uid": fact,
                             "evidence": i, "rank": sentence_rank(r),
                             "n_evidences": r.get("n_evidences")})
    frame = pd.DataFrame(rows, columns=list(COLUMNS)).astype(COLUMNS)
    return frame.sort_values(["corpus", "predictor", "relation", "uid", "evidence"], ignore_index=True)


def summary_rows(frame: pd.DataFrame) -> list[dict]:
    out = []
    for (corpus, predictor, relation), group in frame.groupby(["corpus", "predictor", "relation"], sort=True):
        ranks = group[group["rank"].notna()]
        per_fact = [g["rank"].astype(float).tolist() for _, g in ranks.groupby("uid")]
        per_fact = [r for r in per_fact if len(r) >= 2]
        all_ranks = [x for r in per_fact for x in r]
        out.append({"corpus": corpus, "predictor": predictor, "relation": relation, "n_facts": len(per_fact),
                    "median_rank": statistics.median(all_ranks) if all_ranks else None,
                    "mean_rank_std": statistics.fmean(statistics.pstdev(r) for r in per_fact) if per_fact else None})
    return out
