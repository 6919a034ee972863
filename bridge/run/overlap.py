"""When numbers over the units two or more runs share stand on a small part of what the runs scored.

Runs of other `--limit` samples (or other `--seed`s) share few facts: a leaderboard's shared scope, or a report's
delta table across two runs, is then over a handful of them, each run's own score over many more. Below
`SHARED_SHARE` of the smaller run's units that is said as a warning, naming the cause and the fix, wherever the
numbers are shown (stdout, stderr, the report's page, the Python API's notes and `warnings.warn`).
"""

from __future__ import annotations

SHARED_SHARE = 0.5  # under half of the smaller run's scored units: the shared numbers are a small part of it


def few_shared(shared: int, per_run: dict[str, int], samples: dict[str, str | None], unit: str = "facts",
               per_relation: dict[str, int] | None = None, fix: str = "`--scope own`",
               keyword: bool = False) -> str | None:
    """The warning line where `shared` units are under `SHARED_SHARE` of the smaller run's (`per_run`: run -> the
    units it scored), else None. `samples`: run -> its `--limit/--seed` flags (None: every fact), which name the
    cause where they differ; `per_relation`: the shared units of each relation; `fix`: the way to numbers over each
    run's own units in the caller's words; `keyword`: the caller takes keywords (Python), not flags."""
    if len(per_run) < 2:
        return None
    smaller = min(per_run.values())
    if smaller == 0 or shared >= SHARED_SHARE * smaller:
        return None
    spread = ""
    if per_relation:
        low, high = min(per_relation.values()), max(per_relation.values())
        spread = f"; {low} per relation" if low == high else f"; {low}-{high} per relation"
    head = f"only {shared} of the {smaller} {unit} the smaller run scored are shared ({shared / smaller:.0%}{spread})"
    if len(set(samples.values())) > 1:
        listed = "; ".join(f"{run} `{flags}`" if flags else f"{run} every fact" for run, flags in samples.items())
        cause = f"the runs scored different samples ({listed})"
        rerun = "rerun them with the same seed=, or without limit=" if keyword else \
            "rerun them with the same --seed, or without --limit"
    else:
        cause = "the runs' predictors answered different facts"
        rerun = "rerun them over the same facts"
    return f"{head}: {cause}; for numbers over each run's own {unit} use {fix}, or {rerun}"
