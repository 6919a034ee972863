"""One table of every predictor of several run directories: a metric's total with its stderr and interval.

Runs must be of one experiment, with the same relations, data versions and question settings, so their
numbers measure the same thing. Scope `shared` scores every predictor on the units that every
predictor of every run answered (matched by uid), with the runs' own bootstrap settings where they agree;
`own` reads each run's summary.json, so its numbers and intervals are exactly the run's. Rank is by value,
best first, whatever the order of the rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from bridge.predictors.registry import upper_bound_text
from bridge.run.freshness import check_scored
from bridge.run.summaries import answered_units, mrr_cutoff, run_config, scored_rows
from eval.errors import ConfigError, DataError
from eval.uncertainty import DEFAULT_BOOTSTRAP

FIELDS = ("rank", "run", "predictor", "corpus", "setting", "scope", "metric", "value", "stderr", "ci_low", "ci_high",
          "n_facts", "upper_bound")
SORTS = ("value", "predictor", "run")
HEADLINE = {"lama": "p@1", "coherency": "coherency", "kmir": "f1", "lmkbc": "macro-f1"}  # else p@1
VALUES = ("value", "stderr", "ci_low", "ci_high", "n_facts")


def headline_metric(experiment: str) -> str:
    """The metric a leaderboard of `experiment` runs shows when none is asked for."""
    return HEADLINE.get(experiment, "p@1")


def upper_bound(config: dict, predictor: str) -> bool:
    """Whether a run's predictor is an upper bound (reads gold evidence), not a baseline."""
    ident = (config.get("predictor_specs") or {}).get(predictor) or {}
    return upper_bound_text(config, predictor, ident.get("spec", predictor)) is not None


def _ranked(board: list[dict]) -> list[int]:
    """Competition ranks by value, best first: equal values share a rank (1, 2, 2, 4)."""
    return [1 + sum(other["value"] > row["value"] for other in board) for row in board]


def _recorded(configs: dict[Path, dict], key: str, given: int | None, default: int) -> int:
    """`given`, else the runs' recorded summary setting where they all agree, else `default`."""
    if given is not None:
        return given
    found = {(c.get("summary") or {}).get(key) for c in configs.values()}
    return found.pop() if len(found) == 1 and None not in found else default


def distinct_runs(run_dirs: Sequence[Path | str]) -> list[Path]:
    """The run directories named, each once however it was spelled (`runs/a`, `runs/../runs/a/`, a symlink to
    it), in the order first named."""
    if not run_dirs:
        raise ConfigError("name at least one run directory")
    seen: dict[Path, Path] = {}
    for run in map(Path, run_dirs):
        seen.setdefault(run.resolve(), run)
    return list(seen.values())


def _summary_totals(run: Path, corpus: str, setting: str) -> dict[tuple[str, str], dict]:
    """Per (predictor, metric), the `own` `all` row in a run's summary.json."""
    path = run / "summary.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: missing; --scope own reads each run's summary (finish or rerun the run)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: unreadable summary ({exc}); rerun the run to rewrite it") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{path}: not a list of summary rows; rerun the run to rewrite it")
    return {(r.get("predictor"), r.get("metric")): r for r in rows
            if r.get("corpus") == corpus and r.get("scope") == "own" and r.get("group") == "all"
            and r.get("setting") == setting and not r.get("prompt")}


def _same(configs: dict[Path, dict], what: str, get) -> None:
    first, *rest = configs.items()
    for run, config in rest:
        if get(config) != get(first[1]):
            raise ConfigError(f"{run} and {first[0]} differ in {what}; a leaderboard needs runs of the same "
                              f"{what}")


# run settings recorded under another name than their flag
SETTING_FLAGS = {"prompts_digest": "--prompts file content", "instance_of": "instance-of file content",
                 "aliases": "alias file content"}


def _same_settings(configs: dict[Path, dict]) -> None:
    """Runs asked the same questions: else name each setting that differs, as the flag that sets it."""
    (first, mine), *rest = [(run, c.get("settings", {})) for run, c in configs.items()]
    for run, theirs in rest:
        keys = [k for k in dict.fromkeys([*mine, *theirs]) if mine.get(k) != theirs.get(k)]
        if keys:
            diff = "; ".join(f"{SETTING_FLAGS.get(k, '--' + k.replace('_', '-'))} {_shown(theirs.get(k))} vs "
                             f"{_shown(mine.get(k))}" for k in keys)
            raise ConfigError(f"{run} and {first} differ in question settings ({diff}); a leaderboard needs runs "
                              "asked the same questions")


def _shown(value) -> str:
    return "not given" if value is None else str(value)


def _corpora(configs: dict[Path, dict], corpus: str | None) -> list[str]:
    wanted = [corpus] if corpus else next(iter(configs.values()))["corpora"]
    for run, config in configs.items():
        missing = [c for c in wanted if c not in config["corpora"]]
        if missing:
            hint = "" if corpus else "; pick one held by every run with --corpus"
            raise ConfigError(f"{run} holds no {', '.join(missing)} results (it has {', '.join(config['corpora'])})"
                              f"{hint}")
    return wanted


def leaderboard_rows(run_dirs: Sequence[Path | str], corpus: str | None = None, metric: str | None = None,
                     setting: str = "raw", scope: str = "shared", bootstrap: int | None = None,
                     seed: int | None = None, sort: str = "value") -> list[dict]:
    """Rows of `FIELDS`, one per (run, predictor, corpus): the `all` value of `metric` and its uncertainty.

    `metric` None: the experiment's headline metric. `bootstrap`/`seed` None (scope `shared`): the runs'
    recorded summary settings where they agree, else the defaults; scope `own` takes each run's summary.json.
    `rank` is by value within each corpus, best first, equal values sharing a rank; rows are sorted best
    first (`sort="value"`; ties by run and predictor), or by predictor or run name.
    """
    from bridge.experiments import get

    runs = distinct_runs(run_dirs)
    if scope not in ("shared", "own") or sort not in SORTS:
        raise ConfigError(f"scope {scope!r} / sort {sort!r}: use shared or own / one of {', '.join(SORTS)}")
    configs = {run: run_config(run) for run in runs}
    _same(configs, "experiment", lambda c: c.get("experiment", "lama"))
    _same_settings(configs)
    corpora = _corpora(configs, corpus)
    for c in corpora:
        _same(configs, f"{c} relations", lambda cfg, c=c: sorted(cfg["relation_types"].get(c, {})))
        _same(configs, f"{c} data versions", lambda cfg, c=c: cfg["data_versions"].get(c, {}))
    for run, config in configs.items():  # what is read below is what each run scored, or no board
        check_scored(run, config)
    first = next(iter(configs.values()))
    experiment = get(first.get("experiment", "lama"))
    metric = metric or headline_metric(experiment.name)
    cutoff = mrr_cutoff(first)
    bootstrap = _recorded(configs, "bootstrap", bootstrap, DEFAULT_BOOTSTRAP)
    seed = _recorded(configs, "seed", seed, 0)
    out: list[dict] = []
    for c in corpora:
        types = first["relation_types"].get(c, {})
        units = {(run, name): mine for run, config in configs.items()
                 for name, mine in answered_units(run, config, experiment, c)[0].items()}
        shared = set.intersection(*(set(m) for m in units.values())) if units else set()
        totals = {run: _summary_totals(run, c, setting) for run in runs} if scope == "own" else {}
        board = []
        for (run, name), mine in units.items():
            items = [mine[u] for u in sorted(shared)] if scope == "shared" else list(mine.values())
            if not items:
                continue
            if scope == "own":
                row = totals[run].get((name, metric))
                held = sorted({m for p, m in totals[run] if p == name and m})
                known = f"{run / 'summary.json'} metrics: {', '.join(held) or 'none (rerun the run)'}"
            else:
                scored, _, _ = scored_rows(experiment, {"corpus": c, "predictor": name}, items, types, cutoff,
                                           bootstrap, seed)
                row = next((r for r in scored if r["group"] == "all" and r["metric"] == metric
                            and r["setting"] == setting and not r.get("prompt")), None)
                known = "metrics: " + ", ".join(sorted({r["metric"] for r in scored
                                                         if r["group"] == "all" and not r.get("prompt")}))
            if row is None:
                raise ConfigError(f"{run}: no {metric} ({setting}) total for {name} in {c}; {known}")
            for key in VALUES:
                value = row.get(key)
                if (value is None and key != "value") or (not isinstance(value, bool) and isinstance(
                        value, (int, float)) and math.isfinite(value)):
                    continue
                raise DataError(f"{run / 'summary.json'}: {name} {c} {metric} {key} {value!r} is no number; "
                                "rerun the run to rewrite it")
            board.append({"run": str(run), "predictor": name, "corpus": c, "setting": setting, "scope": scope,
                          "metric": metric, **{k: row.get(k) for k in VALUES},
                          "upper_bound": upper_bound(configs[run], name)})
        if scope == "shared" and not board:
            raise ConfigError(f"{c}: no fact is answered by every predictor of these runs; try --scope own")
        board = [{"rank": rank, **r} for rank, r in zip(_ranked(board), board)]
        key = {"value": lambda r: (r["rank"], r["run"], r["predictor"]),
               "predictor": lambda r: (r["predictor"], r["run"]), "run": lambda r: (r["run"], r["predictor"])}[sort]
        out += sorted(board, key=key)
    return out
