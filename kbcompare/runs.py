"""Experiments from Python: `run` runs exactly what `kbc run NAME` runs and hands back its tables as DataFrames.

The options are the command's own (same defaults, same checks, same messages), so a run started here and one
started from the shell write the same run directory, share the same caches and can resume each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import click
import pandas as pd

from bridge.cli import HELP_OPTIONS
from bridge.cli.run import ROWS_ONLY, option_text, predictor_table
from bridge.cli.run import run as run_group
from bridge.run.results import forget_records
from eval.corpora import close_hint
from eval.errors import ConfigError
from lm.batches import callers_threads

if TYPE_CHECKING:
    from bridge.report.data import RunData

# keyword -> the command's parameter name, where the two differ
ALIASES = {"corpus": "corpora", "settings": "sets", "config": "config_file"}
HIDDEN = ("quiet",)  # `progress=` says it
SETTINGS = ("raw", "filtered")  # `table(setting=)`: which gold rank counts
SCOPES = ("shared", "own")  # `table(scope=)`: the units every predictor answered, or each one's own
# what `predictors=` takes: `--predictors`' items, or a run file's table of name -> spec or {"spec": ..., KEY: V}
PredictorSpecs = str | Iterable[str] | Mapping[str, "str | Mapping[str, object]"]
# what `settings=` takes: `--set`'s items, or a mapping of `[NAME.]KEY` -> value
SettingItems = str | Iterable[str] | Mapping[str, object]


def experiments() -> list[str]:
    """The experiments `run` takes: the subcommands of `kbc run`."""
    return sorted(run_group.commands)


def _command(experiment: str) -> click.Command:
    command = run_group.commands.get(experiment)
    if command is None:
        raise ConfigError(f"unknown experiment {experiment!r}{close_hint(experiment, run_group.commands)}; known: "
                          f"{', '.join(experiments())}")
    return command


def predictor_items(predictors: PredictorSpecs) -> tuple[list[str], list[str]]:
    """`NAME=SPEC` items and `NAME.KEY=VALUE` options of a list, or of a mapping of name -> spec or
    name -> {"spec": ..., option: value} (as a run file's predictors table)."""
    if not isinstance(predictors, Mapping):
        return ([predictors] if isinstance(predictors, str | Path) else [str(p) for p in predictors]), []
    return predictor_table(predictors, "predictor {name!r} needs a 'spec'")


def settings_items(settings: SettingItems) -> list[str]:
    """`[NAME.]KEY=VALUE` items of a mapping {"bert.candidates": "common"} or a list of such strings."""
    if isinstance(settings, Mapping):
        return [f"{k}={option_text(v)}" for k, v in settings.items()]
    return [settings] if isinstance(settings, str) else list(settings)


def command_context(experiment: str, options: dict) -> tuple[click.Command, click.Context]:
    """The `kbc run EXPERIMENT` command and its context with `options` (keyword names of the flags) converted and
    checked as the flags are; a ConfigError with click's message for a bad value."""
    command = _command(experiment)
    ctx = command.make_context(f"kbc run {experiment}", [], help_option_names=HELP_OPTIONS)
    params = {p.name: p for p in command.params if p.name not in HIDDEN}
    known = sorted({*params, *ALIASES} - set(ALIASES.values()))
    for key, value in options.items():
        name = ALIASES.get(key, key)
        param = params.get(name)
        if param is None:
            raise ConfigError(f"kbc run {experiment} has no option {key!r}{close_hint(key, known)}; known: "
                              f"{', '.join(known)}")
        if getattr(param, "multiple", False) and isinstance(value, str | Path):
            value = [value]
        try:
            ctx.params[name] = param.process_value(ctx, value)
        except click.UsageError as exc:
            raise ConfigError(" ".join(exc.format_message().split())) from None
        ctx.set_parameter_source(name, click.core.ParameterSource.COMMANDLINE)
    ctx.meta[ROWS_ONLY] = None
    return command, ctx


def run(experiment: str = "lama", *, corpus: str | Iterable[str] | None = None,
        predictors: str | Iterable[str] | Mapping[str, str | Mapping[str, object]] | None = None,
        data_dir: str | Path | None = None, out: str | Path | None = None,
        settings: str | Iterable[str] | Mapping[str, object] | None = None, progress: bool = False,
        **options: object) -> Run:
    """Run `kbc run EXPERIMENT` with these options and return its run directory as DataFrames.

    `predictors`: ["freq", "bert=/models/bert"] or {"bert": "/models/bert"} or {"bert": {"spec": ..., KEY: V}};
    `settings`: predictor options as `--set` takes them, {"bert.candidates": "common"} or ["bert.candidates=common"].
    Every other flag of the command is a keyword of the same name (`relations=["P19"]`, `limit=100`,
    `config="run.toml"`, `answers="set"`, ...); the defaults are the command's (`out`: runs/EXPERIMENT).
    Errors are `KbcError`s with the command's one-line messages.
    """
    given = {k: v for k, v in options.items() if v is not None}
    if predictors is not None:
        items, extra = predictor_items(predictors)
        given["predictors"] = items
        if extra:
            given["settings"] = extra
    if settings is not None:
        given["settings"] = [*given.get("settings", []), *settings_items(settings)]
    for key, value in (("corpus", corpus), ("data_dir", data_dir), ("out", out)):
        if value is not None:
            given[key] = [str(v) for v in value] if key == "corpus" and not isinstance(value, str) else str(value)
    command, ctx = command_context(experiment, given)
    ctx.params["quiet"] = not progress
    try:
        with ctx, console_bars(), callers_threads():  # the caller's torch threads kept: they are the process's
            command.invoke(ctx)
    except click.UsageError as exc:
        raise ConfigError(" ".join(exc.format_message().split())) from None
    finally:  # the run's records, parsed while it ran, are not kept for the next run of this process
        written = ctx.meta.get(ROWS_ONLY) or (None, ctx.params.get("out"))
        if written[1] is not None:
            forget_records(written[1])
    _rows, run_dir = ctx.meta[ROWS_ONLY]
    return load_run(run_dir)


def with_gold_ranks(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with `gold_rank_<setting>` (the list rank, else the exact rank: as `eval.rank_table` counts P@k) after
    `rank_exact_<setting>`, where it has both; the table read from disk stays as it is."""
    settings = [s for s in ("raw", "filtered") if f"rank_{s}" in frame and f"rank_exact_{s}" in frame]
    if not settings:
        return frame
    frame = frame.copy()
    for setting in settings:
        listed, exact = frame[f"rank_{setting}"].astype("Int64"), frame[f"rank_exact_{setting}"].astype("Int64")
        frame.insert(frame.columns.get_loc(f"rank_exact_{setting}") + 1, f"gold_rank_{setting}",
                     listed.fillna(exact))
    return frame


@contextmanager
def console_bars():
    """Progress bars on the console, never tqdm's notebook widgets: a model library imported while a run starts
    (`tqdm.auto`) warns in a notebook without ipywidgets, though no bar of ours is a widget."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        yield


def load_run(path: str | Path) -> Run:
    """A finished run directory (from `run` or `kbc run`), or a DataError saying what it lacks. One an earlier kbc
    version scored under another reading of the data files is read as it was scored, with an
    `EarlierReadingWarning` saying so and how to rescore it."""
    from bridge.report.data import load_run as report_run
    from bridge.run.reading import gathered_notes

    with gathered_notes() as notes:
        data = report_run(path)
    warn_readings(notes.values())
    return Run(data)


def warn_readings(notes: Iterable[str]) -> None:
    """Each note on a run scored under another reading of the data (`bridge.run.reading`), as a Python warning
    pointing at the caller of the API function that read it."""
    import warnings

    from bridge.run.reading import EarlierReadingWarning

    for note in notes:
        warnings.warn(note, EarlierReadingWarning, stacklevel=3)


class Run:
    """One run directory: its summaries, per-fact table and headline tables as pandas DataFrames."""

    def __init__(self, data: RunData) -> None:
        self._data = data  # bridge.report.data.RunData: what `kbc report` reads, with the same checks

    def __repr__(self) -> str:
        return (f"Run({str(self.run_dir)!r}: {self.experiment}, corpora {', '.join(self.corpora)}; predictors "
                f"{', '.join(self.predictors)})")

    @property
    def run_dir(self) -> Path:
        """The run directory, as given (relative paths stay relative)."""
        return Path(self._data.path)

    @property
    def config(self) -> dict:
        """`config.json`: what ran, with which options, data versions and timings."""
        return self._data.config

    @property
    def experiment(self) -> str:
        """The `kbc run` subcommand that wrote it: lama (BEAR runs too), coherency, kmir, lmkbc, fewrel, negated."""
        return self._data.experiment

    @property
    def corpora(self) -> list[str]:
        """The corpora it asked, in the run's order (`table(corpus=)` takes one of them)."""
        return self._data.corpora

    @property
    def predictors(self) -> list[str]:
        """The predictors' names, as `compare` and the `predictor` columns name them."""
        return self._data.predictors

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Every row of `summary.json` (corpus, predictor, setting, scope, group, metric, value, n_facts, ...)."""
        return pd.DataFrame(self._data.summary)

    @cached_property
    def facts(self) -> pd.DataFrame:
        """The per-fact table `instances.parquet`: one row per corpus, predictor and scored unit (a LAMA fact,
        a coherency instance, a KMIR question), dropped ones with their reason.

        A ranking run's facts add `gold_rank_raw` and `gold_rank_filtered`: the gold's rank as P@k counts it, its
        place in the saved answer list (`rank_*`) or, where it ranks below that list, the exact rank the predictor
        reported (`rank_exact_*`); null where neither is known, a miss at every k. `rank_*` alone is null below the
        list: `(rank_raw <= k)` would count those facts as neither right nor asked."""
        from eval.errors import DataError

        frame = self._data.instances
        if frame is None:
            from bridge.run.attempts import rerun_hint

            raise DataError(f"{self.run_dir / 'instances.parquet'}: missing; {rerun_hint(self.config, self.run_dir)} "
                            "to write it")
        return with_gold_ranks(frame)

    def table(self, metric: str | None = None, setting: str = "raw", scope: str = "shared",
              corpus: str | None = None) -> pd.DataFrame:
        """The headline table `kbc run` prints: one row per (corpus, predictor), one column per group (relations
        for small runs, relation types for large ones) and `all`; values as in summary.json.

        `metric` None: the experiment's headline (p@1, coherency, f1, macro-f1, f1-macro, overlap; exact match `em`
        for a LAMA run whose predictors all write their answers by generation). `macro-f1` and `f1-macro` (so
        `macro-p`/`precision-macro`, `macro-r`/`recall-macro`) name one metric: either asks for the one the run
        holds. A predictor that answered nothing has a
        row of no values (NaN), and `.attrs["notes"]` says why; one that has no `metric` (a generating predictor
        has no p@1, a ranking one no em) has no row, and the notes name it with the metric that scores it. A metric
        taken over some of the answered facts (negated's p@1-drop, overlap, became-prime, spearman) is NaN where
        none of them qualifies, for a relation, a predictor or the whole run, and the notes say so."""
        from bridge.run.summaries import generating, lead_metric, relation_info, silent_in, silent_note
        from eval.report import SUBSET_METRICS, held_metric, subset_what, table_groups

        for name, value, accepted in (("setting", setting, SETTINGS), ("scope", scope, SCOPES)):
            if value not in accepted:
                raise ConfigError(f"{name}={value!r}: use one of {', '.join(map(repr, accepted))}")

        metric = (held_metric(metric, (r.get("metric") for r in self._data.summary)) if metric
                  else lead_metric(self.experiment, self._data.summary, setting))
        rows = [r for r in self._data.summary if r.get("metric") == metric and r.get("setting") == setting
                and r.get("scope", "own") == scope and not r.get("prompt")]
        # a metric taken over some of the answered facts: each predictor that answered has a row, NaN where none
        # of its facts is one the metric is taken over (summary.md's `-`), even where no predictor has any
        asked_rows = [r for r in self._data.summary if r.get("metric") == "p@1" and r.get("setting") == setting
                      and r.get("scope", "own") == scope and not r.get("prompt")] if metric in SUBSET_METRICS else []
        silent = silent_in(self._data.summary)
        if not rows and not asked_rows:
            held = sorted({r.get("metric") for r in self._data.summary if r.get("metric")})
            why = "".join(f"; {line}" for c, names in silent.items()
                          for line in silent_note(c, names, "it has no score"))
            raise ConfigError(f"{self.run_dir / 'summary.json'} has no {metric} ({setting}, {scope}) rows; metrics: "
                              f"{', '.join(held) or 'none'}{why}")
        corpora = [corpus] if corpus else list(dict.fromkeys(r["corpus"] for r in asked_rows or rows))
        info = relation_info(self.config)
        frames = []
        notes: list[str] = []
        for c in corpora:
            mine = [r for r in rows if r["corpus"] == c]
            asked = [r for r in asked_rows if r["corpus"] == c]
            if not mine and not asked:
                raise ConfigError(f"{self.run_dir} has no corpus {c!r} (it has {', '.join(self.corpora)})")
            # the columns `kbc run` prints: a relation no fact of which every predictor answered is one, NaN
            groups = table_groups([r for r in self._data.summary if not r.get("prompt")], c, info.get(c, {}))
            if scope == "shared" and metric not in SUBSET_METRICS:
                # only a group some predictor has an own score of: a 1-1 relation has no set-f1 in either scope
                owned = {r["group"] for r in self._data.summary if r.get("metric") == metric and r["corpus"] == c
                         and r.get("setting") == setting and r.get("scope", "own") == "own" and not r.get("prompt")}
                unshared = [g for g in groups if g in owned and all(r["group"] != g for r in mine)]
                if unshared and len(unshared) < len(groups):
                    notes.append("{}: {} {} NaN for every predictor: no fact of {} was answered by every predictor "
                                 "(scope='own' has each one's)".format(
                                     c, ", ".join(unshared), "is" if len(unshared) == 1 else "are",
                                     "it" if len(unshared) == 1 else "them"))
            if asked:  # a relation answered but with no fact the metric is taken over: NaN, said
                empty = [g for g in groups if all(r["group"] != g for r in mine)]
                if empty:
                    notes.append("{}: {} {} NaN for every predictor: no fact of {} {} ({})".format(
                        c, ", ".join(empty), "is" if len(empty) == 1 else "are",
                        "it" if len(empty) == 1 else "them", subset_what(metric, scope), SUBSET_METRICS[metric][1]))
                unscored = [p for p in dict.fromkeys(r["predictor"] for r in asked)
                            if all(r["predictor"] != p for r in mine)]
                if unscored and len(empty) < len(groups):  # every column NaN: the note above says it all
                    notes.append("{}: {} {} NaN throughout: no fact {} answered {} ({})".format(
                        c, ", ".join(unscored), "is" if len(unscored) == 1 else "are",
                        "it" if len(unscored) == 1 else "they", *SUBSET_METRICS[metric]))
            index = ["corpus", "predictor"]
            frame = pd.DataFrame(mine).pivot_table(index=index, columns="group", values="value", aggfunc="first",
                                                   sort=False) if mine else pd.DataFrame(
                index=pd.MultiIndex.from_tuples([], names=index))
            order = [(c, p) for p in dict.fromkeys(r["predictor"] for r in asked or mine)]
            none = pd.MultiIndex.from_tuples([(c, p) for p in silent.get(c, {})], names=index)
            frames.append(frame.reindex(index=pd.MultiIndex.from_tuples(order, names=index).append(none),
                                        columns=groups))
        out = pd.concat(frames)
        if len(frames) > 1 and "all" in out.columns:  # corpora of other groups: each one's, then the totals
            out = out[[g for g in out.columns if g != "all"] + ["all"]]
        out.columns.name = metric
        out.attrs["notes"] = [line for c in corpora for line in silent_note(c, silent.get(c, {}))] + notes
        out.attrs["notes"] += [self._lacking_note(c, metric, setting, rows + asked_rows, generating(self.config, c))
                               for c in corpora if self._lacking(c, rows + asked_rows)]
        return out

    def _lacking(self, corpus: str, rows: list[dict]) -> list[str]:
        """The predictors of `corpus` that answered but have none of `rows` (another kind of score); those that
        answered nothing have their own note."""
        from eval.report import NONE_ANSWERED

        scored = {r["predictor"] for r in rows if r["corpus"] == corpus}
        rest = [r for r in self._data.summary if r.get("corpus") == corpus]
        answered = {r["predictor"] for r in rest} - {r["predictor"] for r in rest if r.get("metric") == NONE_ANSWERED}
        return [p for p in self.predictors if p in answered and p not in scored]

    def _lacking_note(self, corpus: str, metric: str, setting: str, rows: list[dict], written: list[str]) -> str:
        from eval.report import SUBSET_METRICS

        lacking = self._lacking(corpus, rows)
        gen = [p for p in lacking if p in written]
        rest = [p for p in lacking if p not in written]
        parts = []
        if gen:
            parts.append(f"{', '.join(gen)} (answers written by generation, no ranking: table(metric='em') gives "
                         "their exact match)")
        if rest and metric in SUBSET_METRICS:  # taken over some of the answered facts, of which they had none
            parts.append("{} (no fact it answered {}: {})".format(", ".join(rest), *SUBSET_METRICS[metric]))
        elif rest:
            held = sorted({r["metric"] for r in self._data.summary if r.get("corpus") == corpus
                           and r.get("predictor") in rest and r.get("setting") == setting and not r.get("prompt")
                           and r.get("metric") != "answer_space"})
            parts.append(f"{', '.join(rest)} (metrics: {', '.join(held) or 'none'})")
        return f"{corpus}: no {metric} ({setting}) row for {'; '.join(parts)}"
