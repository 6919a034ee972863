"""The per-fact statistic columns (`kbc analyze stats`) and how they join the per-fact table.

The one module both sides use: the run's table writer (`bridge.run.instances`) and the analyses that
compute the statistics (`bridge.analysis.stats`), so neither imports the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from eval.errors import DataError

if TYPE_CHECKING:  # pandas loads on use: where a run's tables are read, not where their paths are named
    import pandas as pd

ANALYSIS = "analysis"
FACT_STATS = "fact_stats.parquet"
TEXT_STATS = ("sm", "om", "cooc_paragraphs", "cooc_sentences")
OTHER_STATS = ("st", "swp", "socs")
LOG_PROB_KINDS = ("masked-lm", "causal-lm-typed", "seq2seq-span")


def analysis_dir(run_dir: Path) -> Path:
    return Path(run_dir) / ANALYSIS


def fact_uid(uid: str) -> str:
    """The fact a unit asks about (`<fact>@<prompt>` units of a prompt set share their fact's stats)."""
    return uid.split("@", 1)[0]


def prompt_of(uid: str) -> str | None:
    """The prompt id of a unit of a prompt set (`<fact>@<prompt>`, as `pararel:0`); None for a fact asked once."""
    return uid.split("@", 1)[1] if "@" in uid else None


def read_fact_stats(run_dir: Path) -> pd.DataFrame | None:
    path = analysis_dir(run_dir) / FACT_STATS
    if not path.exists():
        return None
    from bridge.run.parquet_files import read_frame

    try:
        return read_frame(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: unreadable ({exc}); delete it and run `kbc analyze stats` again") from None


# -- joining to the per-fact table ---------------------------------------------------------------
def predictor_kinds(run_config: dict) -> dict[str, str | None]:
    """Each predictor's kind (None: it names none) as the run recorded it when the predictor was built,
    in any corpus: a run stopped early has it only for the corpora it reached."""
    kinds: dict[str, str | None] = {}
    for configs in run_config.get("predictor_configs", {}).values():
        for name, d in configs.items():
            if isinstance(d, dict) and (d.get("kind") or name not in kinds):
                kinds[name] = d.get("kind") or kinds.get(name)
    return kinds


def log_prob_predictors(run_config: dict) -> dict[str, set[str]]:
    """Per corpus of the run, the predictors whose answer scores are log-probabilities."""
    logp = {name for name, kind in predictor_kinds(run_config).items() if kind in LOG_PROB_KINDS}
    corpora = set(run_config.get("corpora") or []) | set(run_config.get("predictor_configs", {}))
    return {corpus: set(logp) for corpus in corpora}


def lpfp_column(frame: pd.DataFrame, run_config: dict) -> pd.Series:
    """Log-probability of the first prediction, for log-probability predictors only."""
    import pandas as pd

    out = pd.Series(pd.NA, index=frame.index, dtype="Float64")
    pairs = [(c, p) for c, names in log_prob_predictors(run_config).items() for p in names]
    if frame.empty or not pairs:
        return out
    keys = pd.Series(list(zip(frame["corpus"], frame["predictor"])), index=frame.index)
    rows = keys.isin(pairs) & frame["answers"].notna()

    def first(text: str) -> float | None:
        answers = json.loads(text)
        return float(answers[0][1]) if answers else None

    out[rows] = [first(a) for a in frame.loc[rows, "answers"]]
    return out


def with_fact_stats(frame: pd.DataFrame, run_dir: Path, run_config: dict | None = None) -> pd.DataFrame:
    """The per-fact table with the statistic columns (and LPFP) when `fact_stats.parquet` exists."""
    stats = read_fact_stats(run_dir)
    if stats is None:
        return frame
    if run_config is None:
        from bridge.run.directory import open_run

        run_config = open_run(run_dir).config
    base = frame.drop(columns=[c for c in (*TEXT_STATS, *OTHER_STATS, "lpfp") if c in frame.columns])
    keyed = stats.drop(columns=["relation"]).rename(columns={"uid": "_fact"})
    base = base.assign(_fact=base["uid"].map(fact_uid) if len(base) else base["uid"])
    joined = base.merge(keyed, how="left", on=["corpus", "_fact"]).drop(columns=["_fact"])
    joined.index = frame.index
    joined["lpfp"] = lpfp_column(joined, run_config)
    return joined
