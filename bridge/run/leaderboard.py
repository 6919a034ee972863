"""One table of every predictor of several run directories: a metric's total with its stderr and interval.

Runs must be of one experiment; a run asked other questions (other question settings, or other data versions of
the relations it shares) than the first is left out, and the board's notes say which and why, so the numbers
ranked together measure the same thing. Runs over different relations (one `--relations` subset per
model) are compared over the relations every run holds, and the board's notes say what was left out.
Scope `shared` scores every ranked predictor on the units that every ranked predictor of every run answered
(matched by uid), with the runs' own bootstrap settings where they agree, and gives each predictor's own-scope
value beside it: a predictor left out (no value of the metric, as a generating one has no P@1, or no unit
answered) is named in the notes and restricts no one's units, so adding a run never moves the numbers of the
predictors it does not rank beside. `own` reads each run's summary.json, so its numbers and intervals are
exactly the run's. Rank is by value, best first, whatever the order of the rows.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridge.experiments.base import check_setting, counted
from bridge.predictors.registry import REFERENCE, apart_briefs, shown_spec, side_of, spec_of, upper_bound_text
from bridge.run.config import ALL_ANSWERS, changed_choices
from bridge.run.depth import list_depth, past_depth, same_depth, within_depth
from bridge.run.freshness import check_scored, read_steadily
from bridge.run.reading import note_reading
from bridge.run.summaries import (
    answered_none,
    answered_nothing,
    answered_units,
    generating,
    headline_metric,
    in_scoring_order,
    lead_metric,
    mrr_cutoff,
    run_config,
    sample_flags,
    scorable,
    scored_on,
    scored_rows,
    silent_note,
)
from eval.cells import count_of
from eval.errors import ConfigError, DataError
from eval.generated_scores import GENERATED_METRICS, rates_in_percent
from eval.metrics import DESCRIPTIVE, LOWER_IS_BETTER
from eval.report import NONE_ANSWERED, SUBSET_METRICS, held_metric, relation_order
from eval.uncertainty import DEFAULT_BOOTSTRAP

# `relations`: the relations of the corpus the row is scored over (those every run of the board holds), space-separated
# `bootstrap`, `bootstrap_seed`: the resamples and seed behind `ci_low`/`ci_high` (the run's own, read from its
# summary.json in scope `own`)
FIELDS = ("rank", "run", "predictor", "corpus", "setting", "scope", "metric", "value", "stderr", "ci_low", "ci_high",
          "n_facts", "relations", "own_value", "own_n_facts", "upper_bound", "side", "spec", "parameters", "dtype",
          "device", "bootstrap", "bootstrap_seed")
META = ("side", "spec", "parameters", "dtype", "device")  # what each predictor is, from the run's config
SORTS = ("value", "predictor", "run")
SCOPES = ("shared", "own")
# else p@1
VALUES = ("value", "stderr", "ci_low", "ci_high", "n_facts")


def upper_bound(config: dict, predictor: str) -> bool:
    """Whether a run's predictor is an upper bound (reads gold evidence), not a baseline."""
    ident = (config.get("predictor_specs") or {}).get(predictor) or {}
    return upper_bound_text(config, predictor, ident.get("spec", predictor)) is not None


def _ranked(board: list[dict], lower_first: bool = False) -> list[int]:
    """Competition ranks by value, best first (the lowest first for a metric where less is better): equal values
    share a rank (1, 2, 2, 4)."""
    if lower_first:
        return [1 + sum(other["value"] < row["value"] for other in board) for row in board]
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


def _summary_rows(run: Path) -> list[dict]:
    """The rows of a run's summary.json, or a one-line error saying how to get them."""
    path = run / "summary.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: missing; --scope own reads each run's summary (finish or rerun the run)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: unreadable summary ({exc}); rerun the run to rewrite it") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{path}: not a list of summary rows; rerun the run to rewrite it")
    return rows


def _summary_totals(run: Path, corpus: str, setting: str, experiment: str) -> dict[tuple[str, str], dict]:
    """Per (predictor, metric), the `own` `all` row in a run's summary.json (LM-KBC's rates in percent, however
    old the run)."""
    return {(r.get("predictor"), r.get("metric")): r for r in rates_in_percent(_summary_rows(run), experiment)
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
                 "aliases": "alias file content",
                 "question_facts": "relations and --limit the questions are drawn from"}


def settings_diff(mine: dict, theirs: dict) -> str:
    """Each question setting two runs differ in, as the flag that sets it (`--questions-per-relation 5 vs 20`,
    theirs first); "" where they agree."""
    keys = [k for k in dict.fromkeys([*mine, *theirs]) if mine.get(k) != theirs.get(k)]
    return "; ".join(f"{SETTING_FLAGS.get(k, '--' + k.replace('_', '-'))} {_shown(theirs.get(k))} vs "
                     f"{_shown(mine.get(k))}" for k in keys)


def same_settings(configs: dict[Path, dict], needs: str = "a leaderboard") -> None:
    """Runs asked the same questions: else name each setting that differs, as the flag that sets it (`needs`: what
    the error line says needs them, the command that was run)."""
    (first, mine), *rest = [(run, c.get("settings", {})) for run, c in configs.items()]
    for run, theirs in rest:
        diff = settings_diff(mine, theirs)
        if diff:
            raise ConfigError(f"{run} and {first} differ in question settings ({diff}); {needs} needs runs "
                              "asked the same questions")


def _same_settings_runs(configs: dict[Path, dict]) -> tuple[dict[Path, dict], list[str]]:
    """The runs asked the same questions as the first (its question settings), and a note naming each run left out
    and how its settings differ: runs asked other questions are never ranked together, nor does one stop the others
    being ranked."""
    first = next(iter(configs))
    mine = configs[first].get("settings", {})
    apart = {run: diff for run, config in configs.items() if (diff := settings_diff(mine, config.get("settings", {})))}
    notes = [f"left out {run}: it and {first} differ in question settings ({diff}); runs asked other questions are "
             "never ranked together" for run, diff in apart.items()]
    return {run: config for run, config in configs.items() if run not in apart}, notes


def _shown(value) -> str:
    return "not given" if value is None else str(value)


def _corpora(configs: dict[Path, dict], corpus: str | None) -> tuple[list[str], list[str]]:
    """The corpora of the board (`corpus`, else every corpus all runs hold) and a note for those left out."""
    held = [set(config["corpora"]) for config in configs.values()]
    if corpus:
        for run, config in configs.items():
            if corpus not in config["corpora"]:
                raise ConfigError(f"{run} holds no {corpus} results (it has {', '.join(config['corpora'])})")
        return [corpus], []
    first = next(iter(configs.values()))["corpora"]
    # the first run's corpora in the order it asked them (as its summary.md), then the others by name
    every = sorted(set.union(*held), key=lambda c: (c not in first, first.index(c) if c in first else 0, c))
    wanted = [c for c in every if all(c in h for h in held)]
    if not wanted:
        listed = "; ".join(f"{run}: {', '.join(c['corpora']) or 'none'}" for run, c in configs.items())
        raise ConfigError(f"no corpus is held by every run ({listed}); pick runs of one corpus")
    left = [c for c in every if c not in wanted]
    return wanted, [f"left out: {', '.join(left)} (not held by every run)"] if left else []


def shared_relations(configs: dict[Path, dict], corpus: str, needs: str = "a leaderboard"
                     ) -> tuple[list[str], list[str]]:
    """The relations of `corpus` every run holds (in report order), and a note per run on what it held besides.

    Their data versions must agree: the same relation of other data is not the same question."""
    held = {run: config["relation_types"].get(corpus, {}) for run, config in configs.items()}
    shared = [r for r in next(iter(held.values())) if all(r in h for h in held.values())]
    if not shared:
        listed = "; ".join(f"{run}: {', '.join(relation_order(list(h))) or 'none'}" for run, h in held.items())
        raise ConfigError(f"{corpus}: no relation is held by every run ({listed}); {needs} compares runs "
                          "over the relations they share")
    same_data(configs, corpus, shared, needs)
    notes = [f"{corpus}: left out {', '.join(relation_order(extra))} of {run} (not held by every run)"
             for run, h in held.items() if (extra := [r for r in h if r not in shared])]
    if notes:
        notes.insert(0, f"{corpus}: scored over the {count_of(len(shared), 'relations')} every "
                        f"run holds: {', '.join(relation_order(shared))}")
    return relation_order(shared), notes


def other_data(configs: dict[Path, dict], corpus: str, shared: list[str]) -> dict[Path, tuple[str, str]]:
    """The runs whose `shared` relations of `corpus` differ from the first run's in data version (an edited file,
    another data folder) or in how their questions were chosen, each with how (`differ in trex data versions
    (P36)`) and what it needs the same of (`data`, `questions`)."""
    first_run, first = next(iter(configs.items()))
    found = {}
    for run, config in configs.items():
        theirs, mine = config["data_versions"].get(corpus, {}), first["data_versions"].get(corpus, {})
        differ = [r for r in shared if theirs.get(r) != mine.get(r)]
        choices = changed_choices(first.get("version_choices", {}).get(corpus, {}),
                                  config.get("version_choices", {}).get(corpus, {}), differ, f"in {first_run}",
                                  f"in {run}", "differs")
        if differ and choices:
            found[run] = (f"differ in {corpus} questions ({', '.join(differ[:5])}: {choices})", "questions")
        elif differ:
            found[run] = (f"differ in {corpus} data versions ({', '.join(differ[:5])})", "data")
    return found


def same_data(configs: dict[Path, dict], corpus: str, shared: list[str], needs: str = "a leaderboard") -> None:
    """Refuse runs whose `shared` relations of `corpus` are other data or other questions (`other_data`): the same
    relation of other data is not the same question."""
    first_run = next(iter(configs))
    for run, (how, what) in other_data(configs, corpus, shared).items():
        raise ConfigError(f"{run} and {first_run} {how}; {needs} needs runs of the same {what}")


def _same_data_runs(configs: dict[Path, dict], corpus: str | None) -> tuple[dict[Path, dict], list[str]]:
    """The runs of the board: those holding `corpus` (where one is named; none named and none held by every run,
    the first run's first), and of those, the ones asked with the first's question settings whose data and
    questions of the relations they share agree with the first's; and a note naming each run left out and why. A
    run of other data or questions is never ranked beside, nor does it stop the others being ranked."""
    notes = []
    wanted = corpus
    if wanted is None and not set.intersection(*(set(c["corpora"]) for c in configs.values())):
        wanted = next(iter(configs.values()))["corpora"][0]
    if wanted is not None:
        held = {run: c for run, c in configs.items() if wanted in c["corpora"]}
        if not held:
            listed = "; ".join(f"{run}: {', '.join(c['corpora']) or 'none'}" for run, c in configs.items())
            raise ConfigError(f"no run holds {wanted} results ({listed})")
        notes += [f"{wanted}: left out {run} (no {wanted} results; it has {', '.join(c['corpora']) or 'none'})"
                  for run, c in configs.items() if run not in held]
        configs = held
    configs, apart_settings = _same_settings_runs(configs)
    notes += apart_settings
    first = next(iter(configs))
    while True:  # leaving a run out can widen what the rest share: check again over that
        corpora = [wanted] if wanted else [c for c in configs[first]["corpora"]
                                           if all(c in cfg["corpora"] for cfg in configs.values())]
        apart: dict[Path, str] = {}
        for c in corpora:
            held = {run: cfg["relation_types"].get(c, {}) for run, cfg in configs.items()}
            shared = [r for r in held[first] if all(r in h for h in held.values())]
            for run, (how, what) in other_data(configs, c, shared).items():
                apart.setdefault(run, f"left out {run}: it and {first} {how}; runs of other {what} are never "
                                      "ranked together")
        if not apart:
            return configs, notes
        notes += list(apart.values())
        configs = {run: cfg for run, cfg in configs.items() if run not in apart}


def set_brief(config: dict, predictor: str) -> str | None:
    """`set=top:1`, `set=threshold-tuned`, or `all answers` (an LM-KBC set without a rule): how a predictor's ranked
    answers became sets; None where they did not."""
    ident = (config.get("predictor_specs") or {}).get(predictor) or {}
    rule = (ident.get("options") or {}).get("set")
    return f"set={rule}" if rule else "all answers" if ident.get("sets") == ALL_ANSWERS else None


def describe_predictor(config: dict, corpus: str, predictor: str, apart: str = "") -> dict:
    """`META` of one predictor of a run: its side (kb, lm, baseline; reference for the gold KB), spec (a served
    model's name and server; a fine-tuned FewRel classifier's lr, epochs and batch size after it, a set rule after a
    predictor answering sets: `freq (set=top:1)`; `apart`, the generation settings that tell it from another row of
    the same spec: `fake at http://host/v1 (prompt=lama, shots=2)`), parameter count, dtype and device (None where the
    run recorded none, as for a KB)."""
    from bridge.experiments.fewrel_training import training_brief

    described = (config.get("predictor_configs", {}).get(corpus) or {}).get(predictor) or {}
    spec = shown_spec(config, predictor)
    trained = training_brief(config, predictor) if corpus == "fewrel" else None  # two trainings of one spec apart
    # two set rules, or two prompts or samplings, of one spec apart
    brief = "; ".join(b for b in (trained or set_brief(config, predictor), apart) if b)
    # the gold KB answers from the gold facts themselves: a reference (100 by construction), never a rival; KMIR's
    # lookups are no such thing (a reasoning question's answer is not among the gold facts)
    reference = spec_of(config, predictor) == REFERENCE and config.get("experiment", "lama") != "kmir"
    return {"side": "reference" if reference else side_of(config, predictor),
            "spec": f"{spec} ({brief})" if brief else spec,
            "parameters": described.get("parameters"),
            "dtype": described.get("dtype"), "device": described.get("device")}


@dataclass
class Board:
    """A leaderboard's rows (`FIELDS`) and its notes: what the scope left out, said once above the table;
    `unit`: what `n_facts` counts (facts; KMIR's questions); `warnings`: see below."""

    rows: list[dict]
    notes: list[str] = field(default_factory=list)
    unit: str = "facts"
    # numbers that stand on a small part of what the runs scored (`bridge.run.overlap`): said before the notes, on
    # stderr and in every format
    warnings: list[str] = field(default_factory=list)


def short(row: dict) -> bool:
    """A row whose shared-scope count is less than half of its own: its own-scope value is shown beside."""
    return row.get("own_n_facts") is not None and 2 * row["n_facts"] < row["own_n_facts"]


def _restricted(config: dict, corpus: str, relations: list[str]) -> dict:
    """`config` as if the run held only `relations` of `corpus`: its units are then read for those alone."""
    types = config["relation_types"][corpus]
    return {**config, "relation_types": {**config["relation_types"], corpus: {r: types[r] for r in relations}}}


def leaderboard_rows(run_dirs: Sequence[Path | str], corpus: str | None = None, metric: str | None = None,
                     setting: str = "raw", scope: str = "shared", bootstrap: int | None = None,
                     seed: int | None = None, sort: str = "value") -> list[dict]:
    """The rows of `board`."""
    return board(run_dirs, corpus, metric, setting, scope, bootstrap, seed, sort).rows


def board(run_dirs: Sequence[Path | str], corpus: str | None = None, metric: str | None = None,
          setting: str = "raw", scope: str = "shared", bootstrap: int | None = None,
          seed: int | None = None, sort: str = "value", flag: str = "--metric") -> Board:
    """Rows of `FIELDS`, one per (run, predictor, corpus): the `all` value of `metric` and its uncertainty.

    `metric` None: the experiment's headline metric. `bootstrap`/`seed` None (scope `shared`): the runs'
    recorded summary settings where they agree, else the defaults; scope `own` takes each run's summary.json.
    `rank` is by value within each corpus, best first (the lowest first where less is better, `LOWER_IS_BETTER`),
    equal values sharing a rank; a figure that scores no one (`DESCRIPTIVE`) is refused; rows are sorted best
    first (`sort="value"`; ties by run and predictor), or by predictor or run name. Only the relations every
    run holds are scored (`shared_relations`), and the shared scope is the units every predictor that has
    `metric` answered; the notes say what was left out. Nothing to rank (no predictor with the metric and an
    answered unit, or no unit they all answered) is a `ConfigError`, never an empty board, as is a metric no run
    holds. `flag`: how the caller names the metric parameter in its errors (`--metric`; `metric=` for a keyword or
    a query field).
    """
    paths = [Path(run) for run in run_dirs]
    return read_steadily(paths, lambda: _board(run_dirs, corpus, metric, setting, scope, bootstrap, seed, sort, flag))


def _board(run_dirs: Sequence[Path | str], corpus: str | None, metric: str | None, setting: str, scope: str,
           bootstrap: int | None, seed: int | None, sort: str, flag: str) -> Board:
    """`board`, read once (`read_steadily`: a run that a `kbc run` starts writing meanwhile is refused)."""
    from bridge.experiments import get

    runs = distinct_runs(run_dirs)
    if scope not in SCOPES:
        raise ConfigError(f"scope {scope!r}: use one of {', '.join(SCOPES)}")
    if sort not in SORTS:
        raise ConfigError(f"sort {sort!r}: use one of {', '.join(SORTS)}")
    configs = {run: run_config(run) for run in runs}
    _same(configs, "experiment", lambda c: c.get("experiment", "lama"))
    configs, notes = _same_data_runs(configs, corpus)
    runs = list(configs)
    corpora, more = _corpora(configs, corpus)
    notes += more
    notes += _samples_note(configs)
    relations = {}
    for c in corpora:
        relations[c], left = shared_relations(configs, c)
        notes += left
    for run, config in configs.items():  # what is read below is what each run scored, or no board
        check_scored(run, config)
        note_reading(run, config)
    first = next(iter(configs.values()))
    experiment = get(first.get("experiment", "lama"))
    check_setting(experiment, setting)
    # none asked: what the runs' own tables lead with (exact match where every predictor generates)
    held = [r for run in runs for r in _summary_rows(run)]
    asked = metric
    metric = held_metric(metric, (r.get("metric") for r in held)) if metric else lead_metric(experiment.name, held,
                                                                                               setting)
    scores = score_metrics(r.get("metric") for r in held)
    if metric in DESCRIPTIVE:
        raise ConfigError(f"{_given(flag, metric)} counts {DESCRIPTIVE[metric]}, not how well it answers: nothing to "
                          f"rank by; rank by {_by(flag, [headline_metric(experiment.name)])}")
    # no run holds it, in any setting or corpus (runs holding no score at all: said below, with why)
    if asked and scores and metric not in {r.get("metric") for r in held}:
        close = difflib.get_close_matches(metric, scores, n=1)
        raise ConfigError(f"{_given(flag, metric)}: no metric of that name in these runs"
                          + (f" (did you mean {close[0]}?)" if close else "") + f"; rank by {_by(flag, scores)}")
    same_depth(configs, (metric,), corpora=corpora)
    cutoff = mrr_cutoff(first)
    recorded = {run: ((c.get("summary") or {}).get("bootstrap"), (c.get("summary") or {}).get("seed"))
                for run, c in configs.items()}
    if scope == "shared" and (bootstrap is None or seed is None) and len(set(recorded.values())) > 1:
        listed = "; ".join(f"{run}: {_resamples(*made)}" for run, made in recorded.items())
        used = _resamples(_recorded(configs, "bootstrap", bootstrap, DEFAULT_BOOTSTRAP),
                          _recorded(configs, "seed", seed, 0))
        notes.append(f"the runs' summaries drew their intervals differently ({listed}); the intervals here draw "
                     f"{used}, for every row alike")
    bootstrap = _recorded(configs, "bootstrap", bootstrap, DEFAULT_BOOTSTRAP)
    seed = _recorded(configs, "seed", seed, 0)
    out: list[dict] = []
    warnings: list[str] = []
    unit = UNIT_NAMES.get(experiment.name, "facts")
    for c in corpora:
        asked = set(relations[c])  # in the run's own order, as its summary scored them
        types = {r: t for r, t in first["relation_types"][c].items() if r in asked}
        units: dict[tuple[Path, str], dict[str, dict]] = {}
        silent: dict[str, dict[str, int]] = {}  # `run/predictor` that answered nothing: never ranked, named in notes
        for run, config in configs.items():
            answered, lost, _ = answered_units(run, _restricted(config, c, relations[c]), experiment, c, unscored=True)
            silent.update({f"{run}/{name}": why for name, why in answered_none(lost, answered).items()})
            units.update({(run, name): kept for name, mine in answered.items() if (kept := scorable(experiment, mine))})
        unit = unit_name(experiment.name, units)
        notes += silent_note(c, silent, "not ranked (no score)")
        # own scope reads each run's summary, unless a run holds relations left out: its total would count them
        from_summary = scope == "own" and all(len(cfg["relation_types"][c]) == len(relations[c])
                                              for cfg in configs.values())
        totals = {run: _summary_totals(run, c, setting, experiment) for run in runs} if from_summary else {}
        own: dict[tuple[Path, str], dict] = {}  # the own-scope `metric` row of each predictor that has one
        lacking: list[tuple[Path, str, list[str], str]] = []  # predictors with no total of `metric`
        elsewhere: set[str] = set()  # the settings other than `setting` that hold a total of `metric`
        for (run, name), mine in units.items():
            if from_summary:
                row = totals[run].get((name, metric))
                held = sorted({m for p, m in totals[run] if p == name and m})
                known = f"{run / 'summary.json'} metrics: {', '.join(held) or 'none (rerun the run)'}"
                if row is None:
                    elsewhere |= {other for other in ("raw", "filtered") if other != setting
                                  and (name, metric) in _summary_totals(run, c, other, experiment)}
            else:
                items = in_scoring_order(mine.values())
                scored = (scored_rows(experiment, {"corpus": c, "predictor": name}, items, types, cutoff, bootstrap,
                                      seed)[0] if scope == "own" else experiment.summarize(items, types, cutoff)[0])
                scored = within_depth(scored, list_depth(configs[run], c, name))  # as its summary: no P@k past it
                row = _total(scored, metric, setting)
                totals_held = [r for r in scored if r["group"] == "all" and not r.get("prompt")]
                held = sorted({r["metric"] for r in totals_held if r["setting"] == setting})
                elsewhere |= {r["setting"] for r in totals_held if r["metric"] == metric and r["setting"] != setting}
                known = "metrics: " + ", ".join(held)
            if row is None:
                lacking.append((run, name, held, known))
            else:
                own[(run, name)] = row
        if lacking and not own:  # no predictor has the metric: a metric of no board
            run, name, _, known = lacking[0]
            usable = score_metrics(m for _, _, held, _ in lacking for m in held)
            fix = (f"use {_by(flag.replace('metric', 'setting'), sorted(elsewhere))}" if elsewhere
                   else f"rank by {_by(flag, usable)}" if usable else known)
            raise ConfigError(f"{run}: no {metric} ({setting}) total for {name} in {c}; {fix}")
        if not own:
            why = "; ".join(answered_nothing(name, reasons) for name, reasons in silent.items())
            raise ConfigError(f"{c}: no predictor of these runs answered a {one_unit(unit)}, so none can be ranked"
                              + (f" ({why})" if why else ""))
        notes += [_lacking_note(c, metric, setting, configs[run], run, name, held, experiment.name, flag)
                  for run, name, held, _ in lacking]
        ranked = {key: units[key] for key in own}  # those left out (no metric, no answer) restrict no one's scope
        shared = set.intersection(*(set(scored_on(experiment, m, metric)) for m in ranked.values()))
        if scope == "shared" and not shared:
            samples = {sample_flags(configs[run]) for run, _ in ranked}
            why = (" (the runs scored different samples: --seed/--limit; rerun them with the same --seed, or "
                   "without --limit)" if len(samples) > 1 else "")
            raise ConfigError(f"{c}: no {one_unit(unit)} is answered by every predictor ranked on {metric} of these "
                              f"runs{why}; try --scope own")
        rows = []
        for (run, name), mine in ranked.items():
            row, mine_own = own[(run, name)], {"own_value": None, "own_n_facts": None}
            # each row says what it is scored over, however it is written out: a relation none of its units is in
            # counts in no total
            covered = _covered(relations[c], mine, shared if scope == "shared" else scored_on(experiment, mine,
                                                                                              metric))
            if scope == "shared":
                mine_own = {"own_value": row.get("value"), "own_n_facts": row.get("n_facts")}
                scored, _, _ = scored_rows(experiment, {"corpus": c, "predictor": name},
                                           in_scoring_order(mine[u] for u in shared), types, cutoff, bootstrap,
                                           seed)
                row = _total(scored, metric, setting)
                if row is None:
                    raise ConfigError(f"{c}: {run}/{name} has no {metric} ({setting}) over the "
                                      f"{count_of(len(shared), unit)} every ranked predictor answered; try --scope own")
            for key in VALUES:
                value = row.get(key)
                if (value is None and key != "value") or (not isinstance(value, bool) and isinstance(
                        value, (int, float)) and math.isfinite(value)):
                    continue
                raise DataError(f"{run / 'summary.json'}: {name} {c} {metric} {key} {value!r} is no number; "
                                "rerun the run to rewrite it")
            drawn = recorded[run] if from_summary else (bootstrap, seed)
            rows.append({"run": str(run), "predictor": name, "corpus": c, "setting": setting, "scope": scope,
                         "metric": metric, **{k: row.get(k) for k in VALUES}, "relations": covered, **mine_own,
                         "upper_bound": upper_bound(configs[run], name), **describe_predictor(configs[run], c, name),
                         "bootstrap": drawn[0], "bootstrap_seed": drawn[1]})
        if scope == "shared":
            notes += _shared_notes(c, shared, ranked, rows, unit, metric)
            warned = _few_shared(c, shared, ranked, {run: configs[run] for run, _ in ranked}, unit, relations[c],
                                 flag.endswith("="))
            warnings += [warned] if warned else []
            sampled = len({sample_flags(cfg) for cfg in configs.values()}) > 1  # other samples: few facts shared
            if not getattr(experiment, "pooled_total", False) and (sampled or len(shared) < _every(ranked)):
                notes += _weights_note(c, shared, next(iter(ranked.values())), unit)
        elif len({r["n_facts"] for r in rows}) > 1:
            notes.append(_own_counts_note(c, rows, unit))
        described = [(configs[Path(r["run"])], r["predictor"], r["spec"]) for r in rows]
        for r, apart in zip(rows, apart_briefs(described)):
            if apart:  # rows of one model apart by how it was asked
                r["spec"] = describe_predictor(configs[Path(r["run"])], c, r["predictor"], apart)["spec"]
        rows = [{"rank": rank, **r} for rank, r in zip(_ranked(rows, metric in LOWER_IS_BETTER), rows)]
        key = {"value": lambda r: (r["rank"], r["run"], r["predictor"]),
               "predictor": lambda r: (r["predictor"], r["run"]), "run": lambda r: (r["run"], r["predictor"])}[sort]
        out += sorted(rows, key=key)
    notes += _one_sample_note(configs)
    return Board(out, notes, counted(experiment, metric), warnings)


def _resamples(n: int | None, seed: int | None) -> str:
    """`1,000 bootstrap resamples, seed 0`, as a board says what its intervals were drawn with."""
    if n is None:
        return "bootstrap not recorded"
    return "no bootstrap interval" if n == 0 else f"{n:,} bootstrap resamples, seed {seed}"


# ranked figures that are no mean of per-unit scores, so none has an interval (summary.json holds none either)
NO_INTERVAL = ("consistency", "micro-p", "micro-r", "micro-f1", "robust_all", "robust_partial", "robust_none")


def intervals_line(rows: list[dict]) -> str:
    """What the 95% intervals of `rows` were drawn with: one setting, or each run's own (scope `own`); where no row
    has one, why not, rather than a setting that drew nothing."""
    if rows and all(r.get("ci_low") is None for r in rows) and all(r.get("bootstrap") for r in rows):
        metric = rows[0].get("metric", "")
        if metric in NO_INTERVAL or "_prompt_" in metric:
            return f"95% CI: none; {metric} is not a mean of per-unit scores."
        return "95% CI: none; no relation (or group) has two facts or more to resample."
    drawn = {r["run"]: _resamples(r.get("bootstrap"), r.get("bootstrap_seed")) for r in sorted(rows,
                                                                                             key=lambda r: r["run"])}
    if len(set(drawn.values())) == 1:
        return f"95% CI: {next(iter(drawn.values()))}."
    return "95% CI: each run's own: " + "; ".join(f"{run}: {what}" for run, what in drawn.items()) + "."


def is_fraction(metric: str) -> bool:
    """Whether `metric` is a fraction (0-1: MRR, LM-KBC's P/R/F1), printed to three decimals as the summaries print
    it, not percent."""
    from eval.set_metrics import FRACTIONS

    return metric == "mrr" or metric in FRACTIONS


def score_metrics(metrics) -> list[str]:
    """The metrics among `metrics` that score how well a predictor answers (sorted, once each): not the counts and
    sizes of `DESCRIPTIVE`, nor the row of a predictor that answered nothing."""
    return sorted({m for m in metrics if m and m not in DESCRIPTIVE and m != NONE_ANSWERED})


def _given(flag: str, value: str) -> str:
    """`--metric p1` on the command line, `metric='p1'` where the parameter is a keyword or a query field."""
    return f"{flag}{value!r}" if flag.endswith("=") else f"{flag} {value}"


def _by(flag: str, names: list[str]) -> str:
    """`--metric mrr or p@1`, or `metric='mrr' or 'p@1'`: the values that would do, as the caller names them."""
    if flag.endswith("="):
        return flag + _either([repr(n) for n in names])
    return f"{flag} {_either(names)}"


def _either(names: list[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _lacking_note(corpus: str, metric: str, setting: str, config: dict, run: Path, name: str, held: list[str],
                  experiment: str, flag: str = "--metric") -> str:
    """Why a predictor is not ranked on `metric` where others are: a written answer has no rank (P@k, MRR), a
    ranking no written-answer score (exact match, abstentions); and the metric that would rank it."""
    if name in generating(config, corpus):
        what = "generates answers"
        hint = next((m for m in GENERATED_METRICS if m in held), None)
    elif past_depth(metric, depth := list_depth(config, corpus, name)):
        what = f"ranked to --depth {depth} (P@k past it unknown)"
        hint = headline_metric(experiment) if headline_metric(experiment) in held else None
    elif metric in SUBSET_METRICS:  # taken over some of the answered facts, of which it had none
        what = "no fact it answered {} ({})".format(*SUBSET_METRICS[metric])
        hint = headline_metric(experiment) if headline_metric(experiment) in held else None
    else:
        what = "ranks answers" if experiment == "lama" else "is scored otherwise"
        hint = headline_metric(experiment) if headline_metric(experiment) in held else None
    fix = f"rank by {_by(flag, [hint])} to compare it" if hint else f"its metrics: {', '.join(held) or 'none'}"
    return f"{corpus}: {run}/{name} left out: {what}, has no {metric} ({setting}); {fix}"


def _total(scored: list[dict], metric: str, setting: str) -> dict | None:
    """The `all` row of `metric` in `setting` among an experiment's scored rows (None: the predictor has none)."""
    return next((r for r in scored if r["group"] == "all" and r["metric"] == metric and r["setting"] == setting
                 and not r.get("prompt")), None)


def _samples_note(configs: dict[Path, dict]) -> list[str]:
    """Where the runs asked other samples (`--limit`, `--seed`; or a sample beside every fact): each run's, as runs
    of other seeds share few facts. Runs of one sample ask the same facts, as each run's summary says."""
    flags = {run: sample_flags(config) for run, config in configs.items()}
    if len(set(flags.values())) < 2:
        return []
    listed = "; ".join(f"{run} `{f}`" if f else f"{run} every fact" for run, f in flags.items())
    return [f"samples, not every fact: {listed} (at most --limit facts per relation, drawn with --seed)"]


def _one_sample_note(configs: dict[Path, dict]) -> list[str]:
    """Where every run asked the one `--limit` sample: that the board is over it, so that it is never read as every
    fact's (`_samples_note` names each run's where they differ)."""
    flags = {sample_flags(config) for config in configs.values()}
    if len(flags) != 1 or not (shared := flags.pop()):
        return []
    who = "the run" if len(configs) == 1 else f"all {len(configs)} runs"
    return [f"a sample, not every fact: {who} asked `{shared}` (at most --limit facts per relation, drawn with "
            "--seed)"]


def _every(units: dict) -> int:
    """How many units some predictor of `units` answered."""
    return len(set().union(*(set(m) for m in units.values())))


def _weights_note(corpus: str, shared: set, records: dict[str, dict], unit: str) -> list[str]:
    """How many of the shared units each relation holds, where the Total is a mean over relations and they differ:
    a relation of few units weighs as much as one of many."""
    counts: dict[str, int] = {}
    for uid in shared:
        rel = str(records[uid].get("relation"))
        counts[rel] = counts.get(rel, 0) + 1
    if len(set(counts.values())) < 2:  # one relation, or all of one size: the mean over relations is over units
        return []
    order = relation_order(list(counts))
    least = min(order, key=lambda r: counts[r])
    return [f"{corpus}: the {len(shared)} shared {unit} per relation: "
            + ", ".join(f"{r} {counts[r]}" for r in order)
            + f"; the Total is the mean over the {len(counts)} relations, so {least}'s {counts[least]} "
              f"{one_unit(unit) + ' weighs' if counts[least] == 1 else unit + ' weigh'} 1/{len(counts)} of it"]


def _shared_notes(corpus: str, shared: set, units: dict, rows: list[dict], unit: str, metric: str) -> list[str]:
    """What the shared scope left out of `corpus`: the units some predictor ranked on `metric` answered that not
    all did, naming those predictors (they define the scope); and the rows whose shared count is less than half of
    their own (`short`: those the table shows the own value of)."""
    every = _every(units)
    notes = []
    if every > len(shared):
        names = ", ".join(f"{run}/{name}" for run, name in units)
        notes.append(f"{corpus}: {len(shared)} of {every} {unit} answered by every predictor ranked on {metric} "
                     f"({names}); the rest are left out of the shared scope")
    kept = [f"{r['run']}/{r['predictor']} ({r['n_facts']} of {r['own_n_facts']})" for r in rows if short(r)]
    if kept:
        notes.append(f"{corpus}: the shared scope keeps less than half of what {', '.join(kept)} answered; "
                     "their own-scope values are shown beside")
    return notes


def _covered(order: list[str], records: dict[str, dict], uids) -> str:
    """The relations of `order` that hold one of `uids` (`records`: uid -> its record), space-separated: those a
    row's value is a mean over."""
    held = {str(records[uid].get("relation")) for uid in uids}
    return " ".join(r for r in order if r in held)


UNIT_NAMES = {"coherency": "round trips", "kmir": "questions", "lmkbc": "pairs", "fewrel": "sentences"}
# a run over a prompt set asks each fact once per prompt (uids `<fact>@<prompt id>`): its units are not facts
PROMPTED_UNIT_NAMES = {"lama": "(fact, prompt) queries", "coherency": "(fact, round, prompt) round trips"}


def unit_name(experiment: str, units: dict[tuple[Path, str], dict[str, dict]]) -> str:
    """What the notes count: facts, round trips, ..., or one per prompt where a run asked several per relation (the
    table's #facts still counts facts)."""
    plain = UNIT_NAMES.get(experiment, "facts")
    prompted = any("@" in str(uid) for mine in units.values() for uid in mine)
    return PROMPTED_UNIT_NAMES.get(experiment, plain) if prompted else plain


def one_unit(unit: str) -> str:
    """`unit_name`'s plural as one: `facts` -> `fact`, `(fact, prompt) queries` -> `(fact, prompt) query`."""
    return unit[:-3] + "y" if unit.endswith("ies") else unit[:-1]


def _few_shared(corpus: str, shared: set, units: dict[tuple[Path, str], dict], configs: dict[Path, dict],
                unit: str, asked: list[str], keyword: bool = False) -> str | None:
    """The warning (`bridge.run.overlap.few_shared`) where the shared scope of several runs keeps under half of
    the units the smaller run's ranked predictors answered; `asked`: the relations the board covers, those sharing
    no unit counted as 0 per relation; `keyword`: the fix in a caller's keywords (Python, the explorer's query),
    not flags."""
    from bridge.run.overlap import few_shared

    per_run: dict[str, set] = {}
    for (run, _), mine in units.items():
        per_run.setdefault(str(run), set()).update(mine)
    first = next(iter(units.values()))
    per_relation: dict[str, int] = dict.fromkeys(asked, 0)
    for uid in shared:
        rel = str(first[uid].get("relation"))
        per_relation[rel] = per_relation.get(rel, 0) + 1
    warned = few_shared(len(shared), {run: len(u) for run, u in per_run.items()},
                        {str(run): sample_flags(config) for run, config in configs.items()}, unit, per_relation,
                        'scope="own"' if keyword else "`--scope own`", keyword)
    return f"{corpus}: {warned}" if warned else None


def _own_counts_note(corpus: str, rows: list[dict], unit: str) -> str:
    """Scope `own` ranks each predictor over its own units: where their counts differ, the values are not over the
    same units, which the board says."""
    counts = sorted(r["n_facts"] for r in rows)
    return (f"{corpus}: --scope own ranks each predictor over its own {unit}, {counts[0]} to {counts[-1]} of them: "
            f"the values are not over the same {unit}; --scope shared ranks them over the {unit} all answered")
