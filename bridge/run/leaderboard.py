"""One table of every predictor of several run directories: a metric's total with its stderr and interval.

Runs must be of one experiment, with the same relations, data versions and question settings, so their
numbers measure the same thing. Scope `shared` scores every predictor on the units that every
predictor of every run answered (matched by uid); `own` on the units each answered, which gives the
very numbers (and intervals) of the run's own summary.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bridge.run.summaries import answered_units, mrr_cutoff, run_config, scored_rows
from eval.errors import ConfigError
from eval.uncertainty import DEFAULT_BOOTSTRAP

FIELDS = ("rank", "run", "predictor", "corpus", "setting", "scope", "metric", "value", "stderr", "ci_low", "ci_high",
          "n_facts")
SORTS = ("value", "predictor", "run")


def _same(configs: dict[Path, dict], what: str, get) -> None:
    first, *rest = configs.items()
    for run, config in rest:
        if get(config) != get(first[1]):
            raise ConfigError(f"{run} and {first[0]} differ in {what}; a leaderboard needs runs of the same "
                              f"{what}")


def _corpora(configs: dict[Path, dict], corpus: str | None) -> list[str]:
    wanted = [corpus] if corpus else next(iter(configs.values()))["corpora"]
    for run, config in configs.items():
        missing = [c for c in wanted if c not in config["corpora"]]
        if missing:
            hint = "" if corpus else "; pick one held by every run with --corpus"
            raise ConfigError(f"{run} holds no {', '.join(missing)} results (it has {', '.join(config['corpora'])})"
                              f"{hint}")
    return wanted


def leaderboard_rows(run_dirs: Sequence[Path | str], corpus: str | None = None, metric: str = "p@1",
                     setting: str = "raw", scope: str = "shared", bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                     sort: str = "value") -> list[dict]:
    """Rows of `FIELDS`, one per (run, predictor, corpus): the `all` value of `metric` and its uncertainty.

    Sorted best first (`sort="value"`; ties by run and predictor), or by predictor or run name;
    `rank` numbers the rows within each corpus in that order.
    """
    from bridge.experiments import get

    runs = [Path(r) for r in run_dirs]
    if not runs:
        raise ConfigError("name at least one run directory")
    if len(set(runs)) != len(runs):
        raise ConfigError("a run directory is named twice")
    if scope not in ("shared", "own") or sort not in SORTS:
        raise ConfigError(f"scope {scope!r} / sort {sort!r}: use shared or own / one of {', '.join(SORTS)}")
    configs = {run: run_config(run) for run in runs}
    _same(configs, "experiment", lambda c: c.get("experiment", "lama"))
    _same(configs, "question settings (--compat, --prompts, --context)", lambda c: c.get("settings", {}))
    corpora = _corpora(configs, corpus)
    for c in corpora:
        _same(configs, f"{c} relations", lambda cfg, c=c: sorted(cfg["relation_types"].get(c, {})))
        _same(configs, f"{c} data versions", lambda cfg, c=c: cfg["data_versions"].get(c, {}))
    first = next(iter(configs.values()))
    experiment = get(first.get("experiment", "lama"))
    cutoff = mrr_cutoff(first)
    out: list[dict] = []
    for c in corpora:
        types = first["relation_types"].get(c, {})
        units = {(run, name): mine for run, config in configs.items()
                 for name, mine in answered_units(run, config, experiment, c)[0].items()}
        shared = set.intersection(*(set(m) for m in units.values())) if units else set()
        board = []
        for (run, name), mine in units.items():
            items = [mine[u] for u in sorted(shared)] if scope == "shared" else list(mine.values())
            if not items:
                continue
            head = {"corpus": c, "predictor": name}
            scored, _, _ = scored_rows(experiment, head, items, types, cutoff, bootstrap, seed)
            row = next((r for r in scored if r["group"] == "all" and r["metric"] == metric
                        and r["setting"] == setting and not r.get("prompt")), None)
            if row is None:
                known = sorted({r["metric"] for r in scored if r["group"] == "all" and not r.get("prompt")})
                raise ConfigError(f"{run}: no {metric} ({setting}) total for {name} in {c}; metrics: "
                                  f"{', '.join(known)}")
            board.append({"run": str(run), "predictor": name, "corpus": c, "setting": setting, "scope": scope,
                          "metric": metric, **{k: row[k] for k in ("value", "stderr", "ci_low", "ci_high",
                                                                   "n_facts")}})
        if scope == "shared" and not board:
            raise ConfigError(f"{c}: no fact is answered by every predictor of these runs; try --scope own")
        key = {"value": lambda r: (-r["value"], r["run"], r["predictor"]),
               "predictor": lambda r: (r["predictor"], r["run"]), "run": lambda r: (r["run"], r["predictor"])}[sort]
        out += [{"rank": i, **r} for i, r in enumerate(sorted(board, key=key), 1)]
    return out
