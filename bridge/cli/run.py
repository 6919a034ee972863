"""`kbc run lama` and `kbc ls`."""

from __future__ import annotations

import json
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

import click

from bridge.cli.choices import NamedChoice
from bridge.cli.options import (
    data_dir_option,
    show_progress,
    store_path_option,
    store_timeout_option,
    store_update_option,
)
from bridge.cli.value_types import FloatRange, Int, IntRange, PathType
from eval.corpora import CORPORA
from eval.errors import ConfigError
from eval.uncertainty import DEFAULT_BOOTSTRAP, MAX_BOOTSTRAP, check_bootstrap
from lm.precision import DTYPES

# click parameter -> keys accepted in a --config file (flags given on the command line win)
FILE_KEYS = {
    "corpora": ("corpus", "corpora"), "predictors": ("predictors",), "data_dir": ("data_dir",), "out": ("out",),
    "relations": ("relations",), "depth": ("depth",), "limit": ("limit",), "seed": ("seed",),
    "device": ("device",), "dtype": ("dtype",), "batch_size": ("batch_size",), "store": ("store",),
    "store_update": ("store_update",), "store_timeout": ("store_timeout",), "sets": ("set",),
    "compat": ("compat",), "setting": ("setting",), "prompts": ("prompts",), "context": ("context",),
    "prompt_draws": ("prompt_draws",), "template": ("template",), "bootstrap": ("bootstrap",),
    "bootstrap_seed": ("bootstrap_seed",), "executor": ("executor",), "ray_address": ("ray_address",),
    "workers": ("workers",), "gpus_per_worker": ("gpus_per_worker",), "threads_per_worker": ("threads_per_worker",),
}


# the type each --config value must have (a file skips click's conversion, so it is checked here)
INT_KEYS = {"depth": 1, "limit": 1, "seed": None, "batch_size": 1, "prompt_draws": 1, "bootstrap": 0,
            "bootstrap_seed": None, "workers": 1, "threads_per_worker": 1}  # key -> least value
FLOAT_KEYS = {"store_timeout": (0.0, True), "gpus_per_worker": (0.0, False)}  # key -> (least value, excluded)
STR_KEYS = ("data_dir", "out", "device", "store", "store_update", "prompts", "context", "ray_address")
PATH_KEYS = ("data_dir", "out", "store", "store_update")
CHOICE_KEYS = {"dtype": DTYPES, "compat": ("lama", "lm-pub-quiz"), "setting": ("raw", "filtered"),
               "template": ("0", "1", "2", "all"), "executor": ("local", "ray")}
LIST_KEYS = ("corpora", "relations")  # a list of strings, or one string of space-separated values
# may be null (YAML `~`): the default
NULLABLE = ("limit", "data_dir", "store", "store_update", "compat", "ray_address", "workers")
MAX_RUN_FILE = 1 << 20  # bytes: settings, not data


def _shown(value) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, (dict, list)):  # never serialized whole: a value may be large
        kind, unit = ("table", "keys") if isinstance(value, dict) else ("list", "items")
        return f"a {kind} ({len(value)} {unit})"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_file_value(path: Path, key: str, param: str, value):
    """`value` of `key` in a run file, checked as the flag would be; a one-line ConfigError otherwise."""

    def bad(expected: str):
        return ConfigError(f"--config {path}: {key}: expected {expected}, got {_shown(value)}")

    if value is None:
        if param in NULLABLE:
            return None
        raise bad("an integer" if param in INT_KEYS else "a number" if param in FLOAT_KEYS else
                  "a list of strings" if param in LIST_KEYS else "a value")
    if param in INT_KEYS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        low = INT_KEYS[param]
        if low is not None and value < low:
            raise bad(f"an integer of at least {low}")
    elif param in FLOAT_KEYS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        low, excluded = FLOAT_KEYS[param]
        if not (value > low if excluded else value >= low) or value == float("inf"):  # also refuses nan
            raise bad(f"a finite number {'above' if excluded else 'of at least'} {low:g}")
        value = float(value)
    elif param in STR_KEYS:
        if not isinstance(value, str):
            raise bad("a string")
        if not value.strip() and param in PATH_KEYS:  # "" would mean the current folder, or quietly the default
            raise bad("a path (leave the key out for the default)")
    elif param in CHOICE_KEYS:
        if not isinstance(value, str) or value not in CHOICE_KEYS[param]:
            raise bad("one of " + ", ".join(repr(c) for c in CHOICE_KEYS[param]))
    elif param in LIST_KEYS:
        if not isinstance(value, (str, list)) or isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
    elif param == "predictors":
        if isinstance(value, dict):
            for name, spec in value.items():
                if not isinstance(spec, (str, dict)):
                    raise ConfigError(f"--config {path}: predictors.{name}: expected a spec string or a table "
                                      f"with spec = \"...\", got {_shown(spec)}")
                for option, v in (spec.items() if isinstance(spec, dict) else ()):
                    if isinstance(v, (dict, list)) or v is None:
                        raise ConfigError(f"--config {path}: predictors.{name}.{option}: expected a string, "
                                          f"number or boolean, got {_shown(v)}")
        elif not isinstance(value, (str, list)) or isinstance(value, list) and not all(
                isinstance(v, str) for v in value):
            raise bad("a list of NAME=SPEC strings or a table of name = spec")
    elif param == "sets":
        items = value.items() if isinstance(value, dict) else None
        if items is None and not isinstance(value, str) and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise bad("a table of KEY = value or a list of \"[NAME.]KEY=VALUE\" strings")
        for option, v in items or ():
            if isinstance(v, (dict, list)) or v is None:
                raise ConfigError(f"--config {path}: {key}.{option}: expected a string, number or boolean, "
                                  f"got {_shown(v)}")
    return value


def _load_yaml(text: str, path: Path):
    """YAML without aliases: `*alias` can repeat a node so often that a few lines expand beyond any memory."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise ConfigError(f"--config {path}:{mark.line + 1}: YAML aliases (*name) are not accepted in run "
                                  "files; write the value out")
            return super().compose_node(parent, index)

    loader = NoAliases(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_run_file(path: Path) -> dict:
    """A run file (TOML, or YAML by suffix) as flag values: lists for multi-value flags, `NAME.KEY=V` sets."""
    try:
        if not stat.S_ISREG(path.stat().st_mode) and not path.is_dir():  # a pipe would block the read for ever
            raise ConfigError(f"--config {path}: not a regular file (a named pipe, socket or device)")
        if path.stat().st_size > MAX_RUN_FILE:
            raise ConfigError(f"--config {path}: {path.stat().st_size} bytes; a run file holds at most "
                              f"{MAX_RUN_FILE // 1024} KiB of settings")
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark is ignored, as in the data files
        if path.suffix.lower() in (".yaml", ".yml"):
            data = _load_yaml(text, path) or {}
        else:
            data = tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror}") from None
    except ConfigError:
        raise
    except Exception as exc:  # TOML and YAML parsers raise their own error types
        raise ConfigError(f"--config {path}: not valid {path.suffix.lstrip('.') or 'TOML'} "
                          f"({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a table of settings")
    known = {k for keys in FILE_KEYS.values() for k in keys}
    unknown = sorted(set(data) - known)
    if unknown:
        close = _close_key(unknown[0], data[unknown[0]], known)
        raise ConfigError(f"--config {path}: unknown key {unknown[0]!r}"
                          + (f" (did you mean {close!r}?)" if close else f"; known: {', '.join(sorted(known))}"))
    out: dict = {}
    for param, keys in FILE_KEYS.items():
        for key in keys:
            if key in data:
                value = check_file_value(path, key, param, data[key])
                if value is not None or param in NULLABLE:
                    out[param] = value
    from bridge.run.options import parse_sets

    preds, sets = out.get("predictors"), []
    sources: dict[str, str] = {}  # an option's key -> where the file holds it, for the error lines
    if isinstance(preds, dict):  # {name: spec} or {name: {spec: ..., option: value}}
        out["predictors"], sets = predictor_table(preds, f"--config {path}: predictor {{name!r}} needs spec = \"...\"")
        sources.update({k: f"--config {path}: predictors.{k}" for k in parse_sets(sets)})
    raw_sets = out.get("sets", {})
    if isinstance(raw_sets, dict):
        sets += [f"{k}={option_text(v)}" for k, v in raw_sets.items()]
        sources.update({k: f"--config {path}: set.{k}" for k in raw_sets})
    elif isinstance(raw_sets, list):
        sets += [str(s) for s in raw_sets]
        sources.update({k: f"--config {path}: set {k}" for k in parse_sets(str(s) for s in raw_sets)})
    if sets:
        out["sets"] = sets
        out["option_sources"] = sources
    for param in ("corpora", "relations", "sets"):  # predictors: `predictor_items` splits them
        if isinstance(out.get(param), str):
            out[param] = out[param].split()
    for param in ("out", "store"):  # no shell expands a file's `~/runs`: it would be a folder named `~` here
        if isinstance(out.get(param), str) and out[param].startswith("~"):
            out[param] = str(Path(out[param]).expanduser())
    return out


def _merged_sets(from_file: list[str], sources: dict[str, str], given: list[str], own_predictors: bool
                 ) -> tuple[list[str], dict[str, str]]:
    """The run file's options, then `--set`'s (which win key by key), and where each kept key was written.

    The options of the file's predictor tables go with those predictors: `--predictors` on the command line
    drops them."""
    from bridge.run.options import parse_sets

    overridden = set(parse_sets(given))
    kept = [item for item in from_file if item.partition("=")[0] not in overridden
            and not (own_predictors and ": predictors." in sources.get(item.partition("=")[0], ""))]
    kept_keys = set(parse_sets(kept))
    return kept + given, {k: v for k, v in sources.items() if k in kept_keys}


MANY_KEYS = ("set", "predictors", "corpus", "corpora", "relations")  # the keys whose value may be a list or table


def _close_key(key: str, value: object, known: set[str]) -> str | None:
    """The known key an unknown one most likely meant: among those that take a list or table when `value` is one
    (`settings: [...]` means `set`, not `setting`), a key it starts with first, else the closest spelling."""
    import difflib

    pool = [k for k in known if k in MANY_KEYS] if isinstance(value, (list, dict)) else sorted(known)
    prefixes = [k for k in pool if key.startswith(k) or k.startswith(key)]
    if prefixes:
        return max(prefixes, key=len)
    close = difflib.get_close_matches(key, pool, n=1) or difflib.get_close_matches(key, known, n=1)
    return close[0] if close else None


def option_text(value: object) -> str:
    """A value as `--set` and run files spell it (booleans lower-case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def predictor_table(preds: Mapping, no_spec: str) -> tuple[list[str], list[str]]:
    """`NAME=SPEC` items and `NAME.KEY=VALUE` options of a table of name -> spec or name -> {"spec": ..., option:
    value}, as run files and the API give predictors; `no_spec` (with `{name!r}`) is the error for a missing spec."""
    items, sets = [], []
    for name, value in preds.items():
        if isinstance(value, Mapping):
            value = dict(value)
            spec = value.pop("spec", None)
            if not spec:
                raise ConfigError(no_spec.format(name=name))
            sets += [f"{name}.{k}={option_text(v)}" for k, v in value.items()]
            value = spec
        items.append(f"{name}={value}")
    return items, sets


@click.group()
def run() -> None:
    """Run experiments."""


def run_options(default_out: str, default_corpus: str | None = None):
    """The options every experiment takes (one place, so `kbc run X` commands agree). `default_corpus`: the corpus
    asked when none is given (the command sets it); without one, --corpus is required."""
    needed = "required, here or in --config"
    corpus = f"default: {default_corpus}" if default_corpus else needed
    options = [
        click.option("--corpus", "corpora", multiple=True, type=NamedChoice(CORPORA),
                     help=f"Corpora to probe (several values after one flag, or the flag repeated); {corpus}."),
        click.option("--predictors", multiple=True, metavar="NAME=SPEC",
                     help="NAME=SPEC or SPEC: registry names (`kbc ls`), local model paths or hub ids; "
                          f"NAME is the column; {needed}."),
        data_dir_option,
        click.option("--out", type=PathType(file_okay=False), default=default_out, show_default=True,
                     help="Output directory; rerunning into it resumes and adds predictors, corpora, relations."),
        click.option("--relations", multiple=True,
                     help="Only these relation ids: each must be a relation of some chosen corpus, and every chosen "
                          "corpus must hold at least one of them."),
        click.option("--depth", type=IntRange(min=1), default=100, show_default=True,
                     help="Answers ranked per query (LM-KBC: ranked answers kept per record; a set without a "
                          "rule holds every answer, whatever the depth)."),
        click.option("--limit", type=IntRange(min=1), default=None,
                     help="A seeded sample of at most N facts per relation (answer spaces stay whole)."),
        click.option("--seed", type=Int(), default=0, show_default=True,
                     help="Seed of the --limit sample, of the --prompt-draws draws and of KMIR's questions."),
        click.option("--device", default="cpu", show_default=True, help="cpu, cuda or cuda:N (LM predictors)."),
        click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True,
                     help="Local LM predictors' precision (a server sets its own); bfloat16 and float16 are fast "
                          "on GPUs and CPUs with instructions for them (warned otherwise)."),
        click.option("--batch-size", type=IntRange(min=1), default=32, show_default=True,
                     help="Inputs per forward pass of local LM predictors. On a CPU 32 to 128 (128 scored 5-23% "
                          "faster than 32 with 2- and 4-layer BERTs, 256 no faster than 128); on a GPU 512, and "
                          "2048 for a masked LM in bfloat16."),
        store_path_option,
        store_update_option(exposed=True),
        store_timeout_option(exposed=True),
        click.option("--set", "sets", multiple=True, metavar="[NAME.]KEY=VALUE",
                     help="Predictor option; NAME. scopes it to one predictor (repeatable; `kbc ls NAME` lists keys)."),
        click.option("--prompts", default="lama", show_default=True,
                     help="Prompt set: lama, pararel, autoprompt:MODEL, lpaqa:MODEL, ... or a JSONL file; "
                          "several prompts per relation ask each fact once per prompt."),
        click.option("--context", default="none", show_default=True,
                     help="Evidence given with each prompt: none, gold (the fact's own evidence, object hidden) "
                          "or retrieved[:K] (BM25 paragraphs, the fact's own excluded)."),
        click.option("--template", type=click.Choice(["0", "1", "2", "all"]), default="0", show_default=True,
                     help="BEAR corpora: the template each relation is asked with, or all three (a prompt set)."),
        click.option("--prompt-draws", type=IntRange(min=1), default=10, show_default=True,
                     help="Seeded draws of one random prompt per relation (min/avg/max P@1; coherency's in "
                          "`kbc run coherency`)."),
        click.option("--compat", type=click.Choice(["lama", "lm-pub-quiz"]), default=None,
                     help="Behave as LAMA's released code (label deduplication, its tokenization, MRR cut-off), or "
                          "as lm-pub-quiz (statement scoring: labels verbatim, the first character upper-cased)."),
        click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True,
                     help="Setting shown in the printed table and summary.md (summary.json holds both)."),
        click.option("--config", "config_file", type=PathType(dir_okay=False, exists=True),
                     help="TOML or YAML file with the same settings as the flags (flags win)."),
        click.option("--bootstrap", type=IntRange(min=0, max=MAX_BOOTSTRAP), default=DEFAULT_BOOTSTRAP,
                     show_default=True, help="Resamples behind each summary cell's 95% interval (0: stderr only)."),
        click.option("--bootstrap-seed", type=Int(), default=0, show_default=True, help="Seed of those resamples."),
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="Where chunks of queries are answered: this process, or Ray actors (pip install -e "
                          "'.[ray]' in the checkout); the files written are the same."),
        click.option("--ray-address", default=None,
                     help="Ray cluster: auto (a running one), HOST:PORT or ray://HOST:PORT; default: RAY_ADDRESS, "
                          "else the one `ray start` left on this machine, else a cluster started for this run."),
        click.option("--workers", type=IntRange(min=1), default=None,
                     help="Ray actors per predictor (default: as many as the cluster's CPUs, or GPUs, hold)."),
        click.option("--gpus-per-worker", type=FloatRange(min=0), default=0.0, show_default=True,
                     help="GPUs each Ray actor of a language model holds (fractions share a GPU)."),
        click.option("--threads-per-worker", type=IntRange(min=1), default=1, show_default=True,
                     help="CPU threads (and Ray CPUs) each actor takes."),
        click.option("--quiet", is_flag=True, help="No progress bars."),
        click.pass_context,
    ]

    def wrap(command):
        for option in reversed(options):
            command = option(command)
        return command

    return wrap


# a key of the command's `ctx.meta`: when present, `execute` puts the summary rows and the output directory there
# instead of printing tables, so that the Python API runs exactly what `kbc run NAME` runs
ROWS_ONLY = "kbc.rows_only"


def execute(ctx: click.Context, make_experiment, params: dict, headline: tuple[str, str],
            accepted: tuple[str, ...] = ()) -> list[dict]:
    """Merge a run file into the flags, run the experiment, print the headline table.

    `make_experiment(params)` builds the experiment from the merged flags; `accepted`: the corpora the command asks
    (named where --corpus is missing).
    """
    from bridge.run.config import read_config
    from bridge.run.options import parse_sets, predictor_items
    from bridge.run.runner import RunConfig, run_experiment
    from bridge.run.summaries import open_spaces, relation_info, shown_extra
    from eval.report import METRIC_NAMES, table

    config_file, quiet = params.pop("config_file"), params.pop("quiet")
    sources: dict[str, str] = {}
    if config_file:
        from_file = read_run_file(Path(config_file))
        file_sources = from_file.pop("option_sources", {})
        for param, value in from_file.items():
            given = ctx.get_parameter_source(param) != click.core.ParameterSource.DEFAULT
            if param == "sets":
                params["sets"], sources = _merged_sets(value, file_sources, list(params["sets"]) if given else [],
                                                       ctx.get_parameter_source("predictors")
                                                       != click.core.ParameterSource.DEFAULT)
            elif not given:
                params[param] = value
    for required in ("corpora", "predictors"):
        if not params[required]:
            flag = "--corpus" if required == "corpora" else "--predictors"
            choose = f"; choose one or more of {', '.join(accepted)}" if required == "corpora" and accepted else ""
            raise ConfigError(f"missing {flag} (on the command line or in --config){choose}")
    if params["relations"] and not _split(params["relations"]):  # `--relations "$EMPTY"` would ask every one
        raise ConfigError("--relations names no relation; give relation ids (e.g. --relations P19 P36), or leave "
                          "it out to ask every relation")
    cfg = RunConfig(
        corpora=_split(params["corpora"]), predictors=predictor_items(_values(params["predictors"])),
        out=Path(params["out"]),
        data_dir=params["data_dir"], relations=_split(params["relations"]), depth=int(params["depth"]),
        device=params["device"], dtype=params["dtype"], batch_size=int(params["batch_size"]),
        options=parse_sets(params["sets"]), option_sources=sources, store=params["store"],
        store_update=params["store_update"],
        store_timeout=float(params["store_timeout"]), limit=params["limit"], seed=int(params["seed"]),
        compat=params["compat"], template=str(params.get("template", "0")),
        bootstrap=check_bootstrap(int(params["bootstrap"])), bootstrap_seed=int(params["bootstrap_seed"]),
        split=str(params.get("split", "val")),  # LM-KBC's split (its command's flag, or its run file's)
    )
    experiment = make_experiment(params)
    setting = params["setting"]
    from bridge.experiments.base import check_setting

    check_setting(experiment, setting)
    from bridge.run.executors import ExecutorSettings

    executor = ExecutorSettings(params["executor"], params["ray_address"], params["workers"],
                                float(params["gpus_per_worker"]), int(params["threads_per_worker"]))
    rows = run_experiment(cfg, experiment, progress=show_progress(quiet), setting=setting, executor=executor)
    if ROWS_ONLY in ctx.meta:  # a caller from Python (`kbcompare.run`) takes the rows; the tables are for people
        ctx.meta[ROWS_ONLY] = (rows, Path(params["out"]))
        return rows
    metric, title = headline
    if not rows:  # a split without gold objects (LM-KBC's test file): answered, nothing to score
        click.echo(f"nothing scored: the split asked has no gold objects; the answers are in {params['out']}")
        return rows
    config = read_config(Path(params["out"]) / "config.json") or {}
    from bridge.experiments.base import counted

    unit = counted(experiment, metric)  # what the rows' `n_facts` count (KMIR: questions), as summary.md names it
    headline_table = table(rows, metric, setting, "shared", relations=relation_info(config),
                           open_spaces=open_spaces(config), unit=unit)
    if headline_table:  # none when every predictor answered by generation (no ranking: exact match below)
        click.echo(f"{title}, setting {setting}, shared {unit}")
        click.echo(headline_table)
    elif all(r["metric"] == "units_answered" for r in rows):  # gold or kb on cloze facts: all not applicable
        click.echo(f"nothing scored: no predictor answered any fact it was asked; why each was dropped is in "
                   f"{Path(params['out']) / 'dropped.json'}")
    # where the run scores raw and filtered, each table says which it shows, as the headline's does
    scored = getattr(experiment, "scored_settings", ("raw", "filtered"))
    which = f", setting {setting}" if len(scored) > 1 else ""
    for extra in shown_extra(experiment, rows):
        click.echo(f"\n{METRIC_NAMES.get(extra, extra)}{which}, shared {counted(experiment, extra)}")
        click.echo(table(rows, extra, setting, "shared", relations=relation_info(config),
                         open_spaces=open_spaces(config), unit=counted(experiment, extra)))
    from bridge.predictors.registry import upper_bound_note

    upper = upper_bound_note(config)
    if upper:
        click.echo(upper)
    from bridge.run.summaries import scoring_notes

    for note in scoring_notes(config, defaults=False):  # tables alike of runs scored otherwise
        click.echo(note)
    if getattr(experiment, "set_valued", False):
        from eval.set_report import empty_notes

        for note in empty_notes(rows, setting):
            click.echo(note)
    out = params["out"]
    click.echo(f"\nwritten: {out}/summary.md (own and shared scopes), {out}/summary.json, {out}/instances.parquet, "
               f"{out}/predictions/")
    return rows


ANSWERS = click.option("--answers", type=click.Choice(["ranked", "set"]), default="ranked", show_default=True,
                       help="set: also score N-M relations set against set (set-p, set-r, set-f1 over every valid "
                       "object).")


def lama_experiment(p: dict):
    """The LAMA experiment of `kbc run lama` and `kbc run bear` (BEAR is asked through it) from their flags."""
    from bridge.experiments.lama import TEMPLATES_SET, LamaExperiment

    prompts = p["prompts"]
    if str(p.get("template", "0")) == "all":
        if prompts != "lama":
            raise ConfigError(f"--template all asks each BEAR relation's own templates; drop --prompts {prompts}")
        prompts = TEMPLATES_SET
    return LamaExperiment(prompts, p["context"], p["prompt_draws"], p["seed"], p.get("answers", "ranked"))


@run.command("lama", short_help="The LAMA probe: P@k of every predictor on one query set.")
@run_options("runs/lama")
@ANSWERS
def run_lama(ctx: click.Context, **params) -> None:
    """The LAMA probe: every predictor on the same queries, P@k raw and filtered, own and shared facts.

    \b
    Example:
      kbc run lama --corpus trex google_re --predictors freq bert=/models/bert-base-cased \\
        --set bert.candidates=common --data-dir ../shared/data/lama --out runs/lama
    """
    execute(ctx, lama_experiment, params, ("p@1", "P@1 (%) in the layout of LAMA Table 2"))


@run.command("bear", short_help="BEAR: each fact's answer options ranked; accuracy.")
@run_options("runs/bear", default_corpus="bear")
@ANSWERS
def run_bear(ctx: click.Context, **params) -> None:
    """BEAR (lm-pub-quiz): each fact's answer options ranked, accuracy per relation; the same run as
    `kbc run lama --corpus bear` (default corpus: bear; bear-big also).

    \b
    Example:
      kbc run bear --predictors freq random bert=/models/bert-base-cased --set bert.scoring=statement \\
        --data-dir ../shared/data --out runs/bear
    """
    from eval.bear import BEAR_CORPORA

    corpora = _split(params["corpora"]) or ["bear"]
    other = [c for c in corpora if c not in BEAR_CORPORA]
    if other:
        raise ConfigError(f"--corpus {' '.join(other)}: `kbc run bear` asks {' or '.join(BEAR_CORPORA)}; use "
                          f"`kbc run lama --corpus {' '.join(other)}` for other corpora")
    params["corpora"] = tuple(corpora)
    execute(ctx, lama_experiment, params, ("p@1", "BEAR accuracy (%): the right option ranked first"))


def _values(values) -> list[str]:
    """A flag's values: the flag repeated, or a list or one string from a run file."""
    return [values] if isinstance(values, str) else [str(v) for v in values]


def _split(values) -> list[str]:
    """Accept `--x a --x b`, `--x "a b"` and lists from a run file, keeping order."""
    return list(dict.fromkeys(v for value in _values(values) for v in value.split()))


@click.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def ls(name: str | None, as_json: bool) -> None:
    """List the registered predictors, or the options one accepts (NAME: a registry name or model path); NAME a
    `kbc run` directory: where it stands (a run writing it now, records per predictor), from another terminal."""
    from bridge.predictors.registry import available, resolve
    from bridge.run.options import accepted, default_name
    from bridge.run.status import read_config, run_status, status_lines

    config = read_config(Path(name)) if name is not None and Path(name).is_dir() else None
    if config is not None:
        from bridge.run.reading import note_reading

        note_reading(Path(name), config)
        click.echo(json.dumps(run_status(Path(name), config), indent=1) if as_json
                   else "\n".join(status_lines(Path(name), config)))
        return
    if name is None:
        entries = available()
        if as_json:
            click.echo(json.dumps(entries, indent=1))
            return
        for entry, help_ in entries.items():
            click.echo(f"{entry:16s} {help_}")
        click.echo("(any Hugging Face model id or local model directory is accepted as well; `kbc ls NAME` shows "
                   "its options)")
        return
    factory = resolve(name)
    options = accepted(factory)
    if as_json:
        click.echo(json.dumps({k: o.describe() for k, o in options.items()}, indent=1))
        return
    click.echo(f"{name}: {available().get(name, 'language model (' + factory.__name__.removeprefix('make_') + ')')}")
    if not options:
        click.echo("  takes no options")
    key = default_name(name)
    if options and key != name:
        click.echo(f"  (as `--predictors {name}` it is named {key}; as `--predictors NAME={name}`, --set NAME.…)")
    for opt in options.values():
        required = " [required]" if opt.required else ""
        click.echo(f"  --set {key}.{opt.describe()}{required}")
    _fewrel_options(name, key)


def _fewrel_options(name: str, key: str) -> None:
    """What `kbc run fewrel` takes of a predictor it fine-tunes (bert and the E-BERT forms): other options than
    the probing predictor of that name, training's among them."""
    from bridge.predictors.relations import FORMS, resolve_factory
    from bridge.run.options import accepted

    if name not in FORMS:
        return
    click.echo(f"  in `kbc run fewrel` (a relation classifier fine-tuned on {name}'s input form):")
    for opt in accepted(resolve_factory(name, name, None)).values():
        required = " [required]" if opt.required else ""
        click.echo(f"    --set {key}.{opt.describe()}{required}")


@run.command("coherency", short_help="Factual coherency: ask the object, then ask back.")
@run_options("runs/coherency")
def run_coherency(ctx: click.Context, **params) -> None:
    """Factual coherency (Algorithm 1): ask the object, ask back for the subject (and the reverse).

    \b
    Example:
      kbc run coherency --corpus trex --predictors freq gold re-oracle bert=/models/bert-base-uncased \\
        gpt2=/models/gpt2 --data-dir ../shared/data/lama --out runs/coherency
    """
    from bridge.experiments.coherency import CoherencyExperiment

    execute(ctx, lambda p: CoherencyExperiment(p["prompts"], p["context"], p["prompt_draws"], p["seed"]), params,
            ("coherency", "Coherency (%), mean of both rounds"))



@run.command("lmkbc", short_help="LM-KBC 2024: object sets, macro/micro P, R, F1.")
@run_options("runs/lmkbc", default_corpus="lmkbc2024")
@click.option("--split", default="val", show_default=True,
              help="The split asked: train, val, or a split file of the challenge's format; one without objects "
              "(the test file) is answered and written to submission/<predictor>.jsonl, and scores nothing.")
def run_lmkbc(ctx: click.Context, **params) -> None:
    """LM-KBC 2024: each subject's set of objects (possibly empty), scored as the challenge (macro/micro P, R, F1).

    \b
    Example:
      kbc run lmkbc --predictors gold freq bert=/models/bert-large-cased --set freq.set=threshold-tuned \\
        --set bert.set=threshold:0.1 --data-dir ../shared/data --out runs/lmkbc
    """
    from bridge.experiments.lmkbc import LmkbcExperiment

    if not params["corpora"]:
        params["corpora"] = ("lmkbc2024",)
    for key, default in (("prompts", "lama"), ("context", "none"), ("template", "0")):
        if str(params.get(key, default)) != default:
            raise ConfigError(f"--{key} does not apply to `kbc run lmkbc`: each relation is asked with the challenge's "
                              "own template")
    headline = ("macro-f1", "LM-KBC 2024 macro F1 (Total: over all pairs, as evaluate.py)")
    execute(ctx, lambda p: LmkbcExperiment(str(p["split"])), params, headline)


for _option in run_lmkbc.params:  # LM-KBC asks each relation's own template; no evidence, no prompt sets
    if _option.name in ("prompts", "context", "prompt_draws", "template", "compat"):
        _option.hidden = True


@run.command("fewrel", short_help="FewRel relation classification (E-BERT Table 2).")
@run_options("runs/fewrel", default_corpus="fewrel")
def run_fewrel(ctx: click.Context, **params) -> None:
    """FewRel relation classification (E-BERT Table 2): fine-tuned BERT, E-BERT, AVG and CONCAT, and the KB.

    \b
    Example:
      kbc run fewrel --predictors bert ebert ebert-avg ebert-concat kb --set model=/models/bert-base-cased \\
        --set wikipedia2vec=/models/enwiki.npz --set titles=/models/qid_titles.tsv --device cuda \\
        --data-dir ../shared/data --out runs/fewrel
    """
    from bridge.experiments.fewrel import FewrelExperiment

    if not params["corpora"]:
        params["corpora"] = ("fewrel",)
    for key, default in (("prompts", "lama"), ("context", "none"), ("template", "0")):
        if str(params.get(key, default)) != default:
            raise ConfigError(f"--{key} does not apply to `kbc run fewrel`: each sentence is the input")
    execute(ctx, lambda p: FewrelExperiment(p["out"]), params,
            ("f1-macro", "FewRel F1 (%) (Total: macro over relations)"))


# a quick check must not take them for a smaller training: they narrow what is asked, never what is trained on
FEWREL_NARROWING = {
    "relations": "Only these relations' test sentences are asked; every model still trains and is selected on the "
                 "train and dev parts of every relation in the file.",
    "limit": "A seeded sample of at most N test sentences per relation is asked; training still reads the whole "
             "train and dev parts (`--set epochs=1` shortens it).",
}
for _option in run_fewrel.params:
    if _option.name in ("prompts", "context", "prompt_draws", "template", "compat", "depth"):
        _option.hidden = True
    _option.help = FEWREL_NARROWING.get(_option.name, _option.help)


@run.command("negated", short_help="Negated and misprimed LAMA: top-1 overlap.")
@run_options("runs/negated")
@click.option("--misprimes", type=click.Choice(["high_ranked", "low_ranked", "random"]), default="random",
              show_default=True, help="How the misprime of each fact was drawn (Kassner & Schütze 2020).")
def run_negated(ctx: click.Context, **params) -> None:
    """Negated and misprimed LAMA: each fact asked positive, negated and misprimed; top-1 overlap, misprime share.
    --corpus is one or more of negated-trex, negated-google_re, negated-conceptnet, negated-squad (no default).

    \b
    Example:
      kbc run negated --corpus negated-trex negated-google_re --predictors bert=/models/bert-large-cased \\
        --data-dir ../shared/data --out runs/negated
    """
    from bridge.experiments.negated import NegatedExperiment
    from bridge.run.summaries import headline_metric

    for key, default in (("prompts", "lama"), ("context", "none"), ("template", "0")):
        if str(params.get(key, default)) != default:
            raise ConfigError(f"--{key} does not apply to `kbc run negated`: each fact is asked with its own sentences")
    from eval.negated import PROBE_CORPORA

    # no default: the four corpora differ in size and in the --misprimes variants staged (SQuAD has no low_ranked)
    execute(ctx, lambda p: NegatedExperiment(p["misprimes"]), params,
            (headline_metric("negated"), "Top-1 overlap (%) positive/negated"), accepted=PROBE_CORPORA)


for _option in run_negated.params:
    if _option.name in ("prompts", "context", "prompt_draws", "template"):
        _option.hidden = True


@run.command("kmir", short_help="KMIR-style questions over KBs and LMs.")
@run_options("runs/kmir")
@click.option("--questions-per-relation", type=IntRange(min=1), default=20, show_default=True,
              help="Asked facts drawn per relation (and derived facts per axiom) to build questions from; "
                   "reasoning questions add the facts they rest on, so a relation may hold more.")
@click.option("--axioms", type=PathType(dir_okay=False), default=None,
              help="Turtle file of OWL 2 property axioms for the derived facts (default: kb/axioms.ttl).")
@click.option("--instance-of", type=PathType(dir_okay=False), default=None,
              help="X-FACTR instance-of lists for entity types (default: <data>/../xfactr/TREx_instanceof.txt).")
def run_kmir(ctx: click.Context, **params) -> None:
    """KMIR-style questions: triple completion, statement checking, entity distinction, predicate reasoning.

    \b
    Example:
      kbc run kmir --corpus trex --predictors freq kb kb-inferred bert=/models/bert-base-cased \\
        gpt2=/models/gpt2 --data-dir ../shared/data/lama --out runs/kmir
    """
    from bridge.experiments.kmir import KmirExperiment

    def make(p: dict) -> KmirExperiment:
        return KmirExperiment(p["questions_per_relation"], p["axioms"], p["instance_of"], p["seed"],
                              prompts=p["prompts"], context=p["context"], prompt_draws=p["prompt_draws"],
                              limit=p["limit"])

    execute(ctx, make, params, ("f1", "F1 (%) of KMIR-style questions per kind"))


for _option in run_kmir.params:  # KMIR questions carry their own wording: refused there, so not advertised
    if _option.name in ("prompts", "context", "prompt_draws"):
        _option.hidden = True
