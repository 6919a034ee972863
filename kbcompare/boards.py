"""Comparing and ranking runs as DataFrames: what `kbc compare` and `kbc leaderboard` report, computed by the same
functions."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from bridge.run.reading import gathered_notes
from kbcompare.runs import Run, warn_readings

# the leaderboard's numeric columns as nullable dtypes: a missing value (a KB's parameters, the own value of scope
# `own`) is <NA>, and the column stays numeric
BOARD_DTYPES = {"rank": "Int64", "value": "Float64", "stderr": "Float64", "ci_low": "Float64", "ci_high": "Float64",
                "n_facts": "Int64", "own_value": "Float64", "own_n_facts": "Int64", "upper_bound": "boolean",
                "parameters": "Int64", "bootstrap": "Int64", "bootstrap_seed": "Int64"}


class FewSharedWarning(UserWarning):
    """A leaderboard's shared scope, or a comparison across two runs, keeps a small part of what the runs scored
    (runs of other `--limit` samples): its numbers stand on few facts."""


COMPARE_COLUMNS = ("corpus", "group", "n", "queries", "both", "only_a", "only_b", "neither", "p1_a", "p1_b", "p_value",
                   "difference", "ci_low", "ci_high")


def _path(run: Run | str | Path) -> Path:
    """A run given as a `Run` or as its directory."""
    return Path(getattr(run, "run_dir", run))


def compare(run: Run | str | Path, a: str, b: str, *, setting: str = "raw", corpus: str | Iterable[str] = (),
            bootstrap: int = 1000, seed: int = 0, b_run: Run | str | Path | None = None) -> pd.DataFrame:
    """Predictors `a` and `b` of one run on the units both answered, as `kbc compare RUN A B`: per corpus one row
    per group (relation, or question kind) with its facts `n`, its `queries` (more than `n` where a prompt set asks
    a fact several ways), the 2x2 counts of queries, each one's share right (`p1_a`, `p1_b`, in percent) and the
    paired test's p, then the `all` row whose shares are the run's total (macro over groups, as the summaries) with
    the difference A - B in points and its bootstrap interval (facts resampled, a fact's queries together).
    `.attrs["test"]` names the test per corpus: "mcnemar" (each fact one query), "sign-flip" (over facts) or
    "sign" (LM-KBC pairs, each with its F1: the `p1` columns hold F1 as a fraction, 0-1, as LM-KBC's summaries, and
    `difference` and its interval a difference of fractions; `.attrs["scale"]` says "fraction", else "percent");
    `.attrs["metric"]` what the shares right measure ("P@1", or "EM": KMIR's questions and written answers).
    `b_run`: B is a predictor of that other run, compared over the relations both runs hold (`.attrs["notes"]`
    says what was left out, and names a run read unfinished, its last attempt interrupted say; where A and B share
    under half of what the smaller of them answered, a `FewSharedWarning` is raised and the notes start with it)."""
    from bridge.cli.compare import comparison

    corpora = [corpus] if isinstance(corpus, str) else list(corpus)
    with gathered_notes() as readings:
        result, _text, _listed = comparison(_path(run), a, b, setting, corpora, None, bootstrap, seed,
                                            None if b_run is None else _path(b_run), keyword=True)
    rows = []
    for name, found in result["corpora"].items():
        if not found["overall"]["n"]:
            continue
        for group, counts in found["relations"].items():
            rows.append({"corpus": name, "group": group, **counts})
        ci = found["ci"] or (None, None)
        rows.append({"corpus": name, "group": "all", **found["overall"], "p1_a": found["macro_p1_a"],
                     "p1_b": found["macro_p1_b"], "difference": found["difference"], "ci_low": ci[0],
                     "ci_high": ci[1]})
    frame = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    frame.attrs.update({"a": result["a"], "b": result["b"], "setting": setting, "run": result["run"],
                        "metric": result["metric"],
                        "scale": next((found["scale"] for found in result["corpora"].values() if "scale" in found),
                                      "percent"),
                        "test": {name: found["test"] for name, found in result["corpora"].items() if "test" in found},
                        "b_run": result.get("b_run", result["run"]),
                        "notes": [*(f"warning: {w}" for w in result.get("warnings", [])), *result.get("notes", []),
                                  *result.get("incomplete", []), *readings.values()]})
    for warned in result.get("warnings", []):
        warnings.warn(warned, FewSharedWarning, stacklevel=2)
    warn_readings(readings.values())
    return frame


def leaderboard(*runs: Run | str | Path, corpus: str | None = None, metric: str | None = None, setting: str = "raw",
                scope: str = "shared", bootstrap: int | None = None, seed: int | None = None,
                sort: str = "value") -> pd.DataFrame:
    """Every predictor of these runs ranked on one metric with its stderr and 95% interval, as `kbc leaderboard`:
    one row per (run, predictor, corpus), best first, with what each predictor is (side, spec, parameters, dtype,
    device). `metric` None: the experiment's headline (exact match `em` where every predictor of the runs
    writes its answers by generation, as `table()`). Runs over different relations are scored over those all
    hold: each row's `relations` lists them, and `.attrs["notes"]` says what was left out. Numbers are nullable
    numeric columns (`Int64`, `Float64`: a KB's `parameters`, scope `own`'s `own_value`, are <NA>). Where the shared
    scope keeps under half of what the smaller run scored (runs of other `--limit`/`--seed` samples), a
    `FewSharedWarning` is raised with `warnings.warn` and the notes start with that `warning: ...` line."""
    from bridge.run.leaderboard import FIELDS, board

    paths = [_path(r) for item in runs for r in (item if isinstance(item, list | tuple) else [item])]
    with gathered_notes() as readings:
        found = board(paths, corpus, metric, setting, scope, bootstrap, seed, sort, flag="metric=")
    frame = pd.DataFrame(found.rows, columns=list(FIELDS))
    for column in FIELDS:  # numbers as numbers, a missing one <NA> (a KB has no parameter count); text as text
        values = [r[column] for r in found.rows]
        frame[column] = pd.Series(values, index=frame.index, dtype=BOARD_DTYPES.get(column, object))
    frame.attrs["notes"] = [*(f"warning: {w}" for w in found.warnings), *found.notes, *readings.values()]
    for warned in found.warnings:
        warnings.warn(warned, FewSharedWarning, stacklevel=2)
    warn_readings(readings.values())
    return frame
