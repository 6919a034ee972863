"""Runs named predictors over LAMA corpora: validated first, resumable, written as produced.

Layout of an output directory:
  config.json                                       what ran, with which identity, data versions, timings
  predictions/<corpus>/<name>/<relation>.jsonl      one line per query, appended as produced
  summary.json / summary.md / curves.json / dropped.json / instances.parquet   rebuilt from all files
A rerun skips every query already written; a rerun with more predictors, corpora or relations adds them.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from bridge.experiments.base import Experiment, StageInput, StageRecords, asks_all, depth_for, dropped_unit
from bridge.predictors.base import parameter_count
from bridge.predictors.kmir import closure_change
from bridge.predictors.registry import PredictorContext, threshold_refusal
from bridge.run.attempts import DONE, FRESH, attempt_sample, finishes, finishing, fresh, part_asked
from bridge.run.config import (
    PlannedPredictor,
    RunConfig,
    default_cache_dir,
    has_records,
    merge_config,
    plan_run,
    read_config,
)
from bridge.run.executors import Chunk, ExecutorSettings, LocalExecutor, Recorder
from bridge.run.inputs import prompt_file_name
from bridge.run.name_clashes import check_file_names
from bridge.run.older_names import rename_older_files
from bridge.run.progress import QueryBar, cached_part
from bridge.run.prompt_models import check_prompt_models
from bridge.run.record_digests import RecordAppender, claim
from bridge.run.results import done_uids, predictions_path, read_done
from bridge.run.run_lock import LOCK, RunLock
from bridge.run.summaries import collect
from bridge.run.usage_log import UsageLog, log_path
from eval.cells import count_of
from eval.corpora import resolve_run_data_dir
from eval.datadir import ENV_VAR as DATA_ENV
from eval.durable import make_dirs
from eval.errors import ConfigError, KbcError
from eval.jsonl import jsonl_text, write_json
from eval.lama import Corpus, joined_versions
from eval.relations import relation_id
from eval.types import QUERIES_PER_CALL, Entity, Fact, Prediction, Query
from kb.store import GraphStore, entity_iri, open_store

__all__ = ["RunConfig", "collect", "default_cache_dir", "run_experiment", "run_lama"]

log = logging.getLogger("kbc")


# what a run writes into --out before its config.json: an attempt stopped there left a folder that is still its own
OWN_BEFORE_CONFIG = frozenset({LOCK, ".kbc-records"})


def check_out(out: Path, data_dirs: list[Path]) -> None:
    """Refuse an `out` the run does not own: inside the data it reads (or any data folder), or a folder of other
    files (a `kbc report` output, someone's notes): a run writes only into a new or empty folder, or its own."""
    from bridge.report.out_dir import MARKER
    from eval.out_folders import refuse_in_data

    refuse_in_data(out, ", and a run writes its files into --out; pass a folder outside the data", data_dirs)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    _outside_other_runs(out)
    if not out.is_dir() or (out / "config.json").is_file():
        return
    others = sorted(p.name for p in out.iterdir() if p.name not in OWN_BEFORE_CONFIG)
    if (out / MARKER).is_file():
        raise ConfigError(f"--out {out} is a `kbc report` output folder, not a run directory; name a new or empty "
                          "folder, or a run directory of `kbc run`")
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ConfigError(f"--out {out} holds files but no run (no config.json; {shown}); name a new or empty "
                          "folder, or a run directory of `kbc run`")


def _outside_other_runs(out: Path) -> None:
    """Refuse a new `out` inside another run's folder: that folder is the other run's, and its readers (`kbc report`,
    `kbc leaderboard`) would meet a second run's files in it. Its `analysis/` folder is the exception: `kbc analyze`
    writes the runs it makes of a run there (`evidence-run`)."""
    from bridge.run.directory import run_dir_holding
    from bridge.run.fact_columns import ANALYSIS

    if (out / "config.json").is_file():  # a run of its own already: a rerun
        return
    holder = run_dir_holding(out.parent)
    if holder is not None and out.resolve().relative_to(holder).parts[:1] != (ANALYSIS,):
        raise ConfigError(f"--out {out} is inside the run directory {holder}; pass a folder outside it (a run "
                          "writes only into a folder of its own)")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in ("kbcompare", "torch", "transformers", "rdflib", "pyoxigraph", "tantivy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def run_lama(cfg: RunConfig, progress: bool = True, setting: str = "raw") -> list[dict]:
    """The LAMA probe (see `bridge.experiments.lama`)."""
    from bridge.experiments.lama import LamaExperiment

    return run_experiment(cfg, LamaExperiment(), progress, setting)


def run_experiment(cfg: RunConfig, experiment: Experiment, progress: bool = True, setting: str = "raw",
                   executor: ExecutorSettings | None = None) -> list[dict]:
    """Validate, run what is not done yet, and rebuild the summaries of the whole directory.

    `executor` says where chunks are answered (default: here); it never changes what is written."""
    from lm.loading import check_device

    # before any data is read: Ray actors check CUDA on their own machines (the driver may have no GPU)
    check_device(cfg.device, here=executor is None or executor.kind != "ray")
    if executor is not None:
        executor.check()
    check_set_corpora(cfg.corpora, experiment)
    data_dir = resolve_run_data_dir(cfg.corpora, cfg.data_dir)
    given = cfg.data_dir or os.environ.get(DATA_ENV)  # the folder named, not only the part of it this run reads
    check_out(cfg.out, [Path(given)] if given else [data_dir])
    check_relations(cfg, data_dir)
    plan = plan_run(cfg, data_dir, getattr(experiment, "resolve", None))
    check_file_names(cfg.out, [p.name for p in plan.predictors],
                     {name: list(corpus.relations) for name, corpus in plan.corpora.items()},
                     getattr(experiment, "extra_relations", dict)())
    check_generation(plan.predictors, experiment.name, getattr(experiment, "settings", {}).get("context", "none"))
    check_prompt_models(getattr(experiment, "settings", {}).get("prompts"), plan.predictors, data_dir)
    check_dtype(cfg.dtype, plan.predictors, list(plan.corpora))
    with_rule = [p.name for p in plan.predictors if "set" in p.options]
    if with_rule and not (getattr(experiment, "set_valued", False) or getattr(experiment, "set_rules", False)):
        raise ConfigError(f"--set {with_rule[0]}.set: a set rule applies to set-valued answers (`kbc run lmkbc`, "
                          "`kbc run lama --answers set`) only")
    for p in plan.predictors:
        why = threshold_refusal(p.name, p.spec, p.options.get("set", ""), getattr(experiment, "set_valued", False))
        if why:
            raise ConfigError(why)
        if (getattr(experiment, "set_valued", False) and "set" not in p.options
                and p.options.get("answer") != "generate"
                and getattr(p.factory, "__module__", "") == "bridge.predictors.lm"):
            log.warning("%s: no set rule (--set %s.set=threshold:X, top:K or threshold-tuned): every answer it ranks "
                        "counts", p.name, p.name)
    no_sets = [p for p in plan.predictors if "set" not in p.declared]  # predictors that say how to answer a set
    if no_sets and getattr(experiment, "set_valued", False):
        able = ", ".join(p.name for p in plan.predictors if "set" in p.declared) or "none of this run"
        from bridge.run.options import shown

        raise ConfigError(f"predictor {no_sets[0].name} ({shown(no_sets[0].spec)}) gives no set answers; `kbc run "
                          f"{experiment.name}` takes gold, freq, re-naive, re-oracle and language models "
                          f"(here: {able})")
    check = getattr(experiment, "check", None)
    if check is not None:
        check(plan.corpora, data_dir)  # the experiment's own inputs (prompt files, ...) before any work
    inputs = getattr(experiment, "input_versions", None)
    if inputs is not None:  # files of its own its questions are read from: part of each relation's data version
        for name, digests in inputs(plan.corpora, data_dir).items():
            plan.versions[name] = joined_versions(plan.versions[name], digests)
    for name, corpus in plan.corpora.items():
        asked = len(plan.asked[name])
        sampled = f"; asking a sample of {asked} (--limit {cfg.limit}, seed {cfg.seed})" if cfg.limit else ""
        # the sample is of every relation, and --compat lama's label duplicates are of what was read: on the total line
        total, _, sources = corpus.summary(removed=plan.removed.get(name)).partition("\n")
        log.info("%s%s%s%s", total, sampled, left_out_note(experiment, plan.asked[name]),
                 f"\n{sources}" if sources else "")
    # the cluster is joined before anything is written: an unreachable one stops the run with one line
    with open_executor(executor) as pool:
        out = cfg.out
        try:
            make_dirs(out)  # synced into its parent: a power cut loses no run folder with the records in it
        except OSError as exc:
            raise ConfigError(f"cannot create --out {out}: {exc.strerror}") from None
        cache = cfg.cache_dir or default_cache_dir()
        with RunLock(out):
            claim(out)  # digests of every record line from here on (`bridge.run.record_digests`)
            rename_older_files(out, [p.name for p in plan.predictors],
                               {name: list(corpus.relations) for name, corpus in plan.corpora.items()},
                               experiment.stages)
            config_path = out / "config.json"
            earlier = read_config(config_path)
            started_afresh = {}
            if earlier is not None:
                check_part_asked(out, earlier, plan, cfg)
                started_afresh = fresh(out, earlier, {(c, p.name, r) for c, corpus in plan.corpora.items()
                                                      for p in plan.predictors for r in corpus.relations})
            config = merge_config(earlier, cfg, plan, experiment.name, getattr(experiment, "settings", {}))
            if getattr(experiment, "scoring", None):  # this command's: every summary is rescored from the records
                was = (earlier or {}).get("scoring")
                if was and was != experiment.scoring:
                    log.warning("%s: summaries scored again from its records with %s", out, ", ".join(
                        f"{key} {value} (was {was.get(key, 'not recorded')})"
                        for key, value in experiment.scoring.items() if was.get(key) != value))
                config["scoring"] = experiment.scoring
            from lm.served import recorded_text

            run = {"argv": [recorded_text(a) for a in sys.argv],  # a query's values are not written
                   "started": _now(), "device": cfg.device, "batch_size": cfg.batch_size,
                   "executor": pool.describe(),  # with the cluster joined and the workers used
                   "limit": cfg.limit, "seed": cfg.seed, "relations": cfg.relations, "corpora": list(plan.corpora),
                   "asked": {name: list(corpus.relations) for name, corpus in plan.corpora.items()},
                   "predictors": [p.name for p in plan.predictors], "versions": package_versions()}
            if started_afresh:
                run[FRESH] = started_afresh
            prompt_file = prompt_file_name(getattr(experiment, "settings", {}))
            if prompt_file is not None:  # the name its rows' prompt ids come from: a refused rerun's message names it
                run["prompt_file"] = prompt_file
            _note_other_samples(config["runs"], cfg)
            _note_other_relations(config["runs"], {n: list(c.relations) for n, c in plan.corpora.items()}, cfg.out)
            config.setdefault("cache_scope", uuid.uuid4().hex)  # this directory's own: a resume finds its responses
            config["runs"].append(run)
            usage = UsageLog(log_path(out, len(config["runs"])))  # what asking a model costs, kept as it is spent
            run["usage_log"] = usage.path.name
            config["data_dir"] = str(data_dir)
            if cfg.compat:
                config.setdefault("compat_removed", {}).update(plan.removed)
            config.setdefault("load_reports", {}).update(
                {n: [r.to_dict() for r in c.reports] for n, c in plan.corpora.items()})
            filters = {n: c.filter_details for n, c in plan.corpora.items() if c.filter_details}
            if filters:  # LAMA-UHN: the filters and the person-name filter's model, for summary.md
                config.setdefault("fact_filters", {}).update(filters)
            write_json(config_path, config)
            scoring = False
            try:
                # opened at its first use: only predictors and stages that read it fill what they read
                with open_store(cfg.store, cfg.store_update, cache / "store", cfg.store_timeout, lazy=True) as store:
                    for name, corpus in plan.corpora.items():
                        source = plan.valid_sources[name][0] if name in plan.valid_sources else corpus
                        valid = _valid_objects(source)
                        for p in plan.predictors:
                            job = Job(p, corpus, plan.asked[name], valid, cfg, store, cache, data_dir, config, progress,
                                      pool, usage=usage)
                            job.run(experiment)
                            _add_relation_labels(config, name, experiment)
                            write_json(config_path, config)
                scoring = True  # the attempt ends when its summaries are written, which add to config.json
                rows = collect(out, setting, cfg.bootstrap, cfg.bootstrap_seed)
            except BaseException as exc:  # the log says how the attempt ended: a resume is told from a clean run
                ended = {"failed": _now(), "error": failure_line(exc)}
                raise
            else:
                ended = {"finished": _now()}
                from bridge.report.out_dir import stale_report

                stale = stale_report(out)
                if stale:
                    log.warning(stale)
            finally:
                usage.close()
                if scoring:
                    config = read_config(config_path) or config
                config["runs"][-1].update(ended)
                try:
                    write_json(config_path, config)
                except OSError:
                    if "failed" not in ended:
                        raise
                    # the full or read-only disk that stopped the attempt refuses its record too: the line names
                    # the write that failed first; the attempt is left with no end recorded, as after a kill
            return rows


def check_part_asked(out: Path, config: dict, plan, cfg: RunConfig) -> None:
    """Refuse a command into a directory where an earlier attempt left a predictor's relation part-asked that this
    command does not ask again whole (`bridge.run.attempts`): its summaries would score that relation over the
    facts asked before the stop, a subset chosen by where it stopped. One line names them and the command that
    finishes them."""
    sample = (cfg.limit, cfg.seed) if cfg.limit else (None, None)
    asks = {(c, p.name, r) for c, corpus in plan.corpora.items() for p in plan.predictors for r in corpus.relations}
    left = [x for x in part_asked(out, config)
            if not ((x.corpus, x.predictor, x.relation) in asks and finishes(sample, attempt_sample(x.attempt)))]
    if left:
        what, command = finishing(left, config, out)
        raise ConfigError(f"--out {out}: {what}, which this command does not ask again whole (the same --limit and "
                          f"--seed, or no --limit); finish it first with {command}, or use another --out")


def _add_relation_labels(config: dict, corpus: str, experiment: Experiment) -> None:
    """Labels of relations the experiment's questions ask beyond the corpus's own (KMIR's derived relations), so
    that tables name them: kept apart from `relation_types`, which lists the relations the run asks of the data."""
    made = getattr(experiment, "relation_labels", None)
    if made is None:
        return
    labels = config.setdefault("relation_labels", {}).setdefault(corpus, {})
    for rel, label in made(corpus).items():
        labels.setdefault(rel, label)


def cache_line(predictor) -> str | None:
    """How many of a language model's scored results came from its result cache, when any did: a rerun that reads
    them is seconds where the first run took minutes, and the line says why (None under Ray, whose workers hold
    the cache, and where nothing was read)."""
    cache = result_cache(predictor)
    if cache is None or not cache.hits:
        return None
    return (f"{cache.hits:,} of {cache.hits + cache.misses:,} scored results read from the result cache "
            f"({cache.path}), {cache.misses:,} computed")


def result_cache(predictor):
    """A language model's result cache (`lm.cache.ResultCache`), where it keeps one in this process; else None."""
    from lm.cache import ResultCache

    cache, held = None, predictor
    for _ in range(3):  # a statement scorer holds the engine that holds the cache: one level further down
        cache = getattr(held, "cache", None)
        if held is None or isinstance(cache, ResultCache):
            break
        held = getattr(held, "scorer", None)
    return cache if isinstance(cache, ResultCache) else None


def sample_tally(spent: dict[str, int], sampled: dict[str, int]) -> dict[str, int]:
    """A predictor's tally with the rest of the attempt's sample, so that its counts line adds up to the sample:
    queries recorded before the run was resumed, recorded without asking (left out, a slot it does not answer),
    and those never handed over (the run stopped first)."""
    handed = sampled["recorded"] + sampled["left_out"] + spent.get("queries", 0)
    return {**spent, "recorded": sampled["recorded"], "left_out": sampled["left_out"],
            "not_asked": max(0, sampled["sample"] - handed)}


def failure_line(exc: BaseException) -> str:
    """What ended a run, on one line, for its record in config.json."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    text = str(exc).strip().splitlines()
    return text[0] if isinstance(exc, KbcError) and text else f"{type(exc).__name__}: {text[0] if text else ''}"


GENERATION_EXPERIMENTS = ("lama", "lmkbc", "coherency", "kmir")  # experiments that score a written answer


def check_generation(predictors: list[PlannedPredictor], experiment: str, context: str = "none") -> None:
    """A predictor answering by generation has no ranking: experiments that compare scores are refused rather
    than scored wrong, and so are prompts an experiment cannot word its questions in and evidence contexts (its
    prompt holds none: the run would be labelled with a context it never saw)."""
    from bridge.predictors.generation import is_server

    for p in predictors:
        if not (p.options.get("answer") == "generate" or is_server(p.spec)):
            continue
        if experiment not in GENERATION_EXPERIMENTS:
            raise ConfigError(f"predictor {p.name} answers by generation, which `kbc run {experiment}` cannot score "
                              f"(it needs ranked answers); generation answers `kbc run "
                              f"{'`, `kbc run '.join(GENERATION_EXPERIMENTS)}`")
        if context != "none":
            raise ConfigError(f"predictor {p.name} answers by generation, whose prompt holds no evidence context; "
                              f"leave --context {context} out")
        style = p.options.get("prompt", "question")
        if experiment == "kmir" and (style != "question" or int(p.options.get("shots", 0) or 0)
                                     or p.options.get("question_file")):
            raise ConfigError(f"predictor {p.name}: `kbc run kmir` asks each question as written, zero-shot; "
                              f"leave {p.name}.prompt, {p.name}.shots and {p.name}.question_file unset")
        if experiment == "coherency" and (style == "lmkbc2024" or p.options.get("question_file")):
            raise ConfigError(f"predictor {p.name}: `kbc run coherency` asks subjects back, which a question about "
                              f"the subject cannot word; use {p.name}.prompt=question or lama without a question file")


def check_dtype(dtype: str, predictors: list[PlannedPredictor], corpora: list[str]) -> None:
    """A precision that no model of the run loads in is refused rather than ignored (and recorded nowhere): a served
    model's precision is the server's, a KB has none. LAMA-UHN's name filter is a local model that takes it."""
    from bridge.predictors.generation import is_server

    if dtype == "float32" or any(c.endswith("-uhn") for c in corpora):
        return
    if any("dtype" in getattr(p.factory, "settings", ()) for p in predictors):
        return
    served = [p.name for p in predictors if is_server(p.spec)]
    why = (f"{', '.join(served)} {'is' if len(served) == 1 else 'are'} served: the server sets the precision"
           if served else "none of them is a local model")
    raise ConfigError(f"--dtype {dtype} applies to local models, and no predictor of this run loads one ({why}); "
                      "drop --dtype")


def open_executor(settings: ExecutorSettings | None):
    """The executor asked for; Ray is imported (and the cluster joined) only for `--executor ray`."""
    if settings is None or settings.kind == "local":
        return LocalExecutor()
    from bridge.run.ray_executor import RayExecutor

    return RayExecutor.connect(settings)


def check_relations(cfg: RunConfig, data_dir: Path) -> None:
    """`--relations` ids checked against the corpora's relation lists before any corpus is parsed (the same
    check and message as after loading; skipped where only the facts tell which relations a corpus has)."""
    if not cfg.relations:
        return
    from bridge.run.config import restrict_relations
    from eval.corpora import CORPORA
    from eval.lama import relation_ids

    if any(name not in CORPORA for name in cfg.corpora):
        return  # an unknown corpus: the loader names it
    found = {name: relation_ids(name, data_dir) for name in cfg.corpora}
    if any(rels is None for rels in found.values()):
        return
    outlines = {name: Corpus(name, dict(rels), []) for name, rels in found.items()}
    for outline in outlines.values():
        restrict_relations(outline, list(cfg.relations), outlines, data_dir)


def _note_other_samples(runs: list[dict], cfg: RunConfig) -> None:
    """Reruns add to a directory: say so when an earlier run asked another sample, as the scores then
    cover the union of the samples rather than one seeded sample."""
    other = sorted({(r.get("limit"), r.get("seed")) for r in runs} - {(cfg.limit, cfg.seed)}, key=str)
    if other and (cfg.limit or any(limit for limit, _ in other)):
        shown = ", ".join(f"--limit {limit or 'none'} --seed {seed}" for limit, seed in other)
        log.warning("%s also holds facts asked with %s: its scores cover every fact asked so far; use another "
                    "--out for one sample alone", cfg.out, shown)


def _note_other_relations(runs: list[dict], asked: dict[str, list[str]], out: Path) -> None:
    """Say so when earlier runs into this directory asked relations this one does not (a narrower --relations or
    --corpus): the summaries are rebuilt from every record the directory holds, theirs included."""
    now = {(c, r) for c, rels in asked.items() for r in rels}
    held = [(c, r) for run in runs for c, rels in (run.get("asked") or {}).items() for r in rels]
    other = [key for key in dict.fromkeys(held) if key not in now]
    if not other:
        return
    named = [r if c in asked else f"{c}/{r}" for c, r in other]
    shown = ", ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
    log.warning("%s also holds %d relation%s this run does not ask (%s): its summaries cover every relation asked so "
                "far; use another --out for these relations alone", out, len(named), "" if len(named) == 1 else "s",
                shown)


def check_set_corpora(corpora: list[str], experiment: Experiment) -> None:
    """Corpora asked one way only go with their experiment, and it with them alone: set-valued corpora (LM-KBC)
    with the one scoring sets (`set_valued`), negated/misprimed LAMA with the one asking probes (`probes`)."""
    from eval.corpora import FEWREL, SET_CORPORA
    from eval.negated import PROBE_CORPORA

    for names, flag, command, what in ((SET_CORPORA, "set_valued", "lmkbc", "has set-valued answers (zero, one or "
                                        "many objects)"),
                                       (PROBE_CORPORA, "probes", "negated", "is negated/misprimed LAMA"),
                                       ((FEWREL,), "classifies", "fewrel", "is relation classification")):
        mine = getattr(experiment, flag, False)
        wrong = [c for c in corpora if (c in names) != mine]
        if wrong and mine:
            raise ConfigError(f"--corpus {wrong[0]}: `kbc run {experiment.name}` asks {', '.join(names)} only")
        if wrong and any(c in names for c in corpora):
            raise ConfigError(f"--corpus {next(c for c in corpora if c in names)} {what}: run it with "
                              f"`kbc run {command}`")


def _valid_objects(corpus: Corpus) -> dict[str, dict[str, set[str]]]:
    """Per relation, subject key -> all valid object labels: what a graph holding exactly that relation's facts
    (`GraphStore.ensure_relations`) answers, computed from the facts without the store."""
    if corpus.facts and (corpus.facts[0].cloze or getattr(corpus.facts[0], "objects", None) is not None):
        return {}  # cloze corpora (SQuAD, ConceptNet) have no subject identity to filter by; set corpora hold theirs
    return {rel: valid_objects_of(facts) for rel, facts in corpus.by_relation().items()}


def valid_objects_of(facts: list[Fact]) -> dict[str, set[str]]:
    """`GraphStore.valid_objects` of a graph holding exactly `facts`, computed from the facts themselves.

    The graph gives an object IRI every label it has there, as a subject or an object of any fact, so
    the labels are gathered per IRI, as the store does. Entity keys name IRIs one to one, unless an id
    itself looks like a label key (`label:...`): then the IRIs are spelt out.
    """
    spelt = any(e.id and e.id.startswith("label:") for f in facts for e in (f.subject, f.object))

    def ident(entity: Entity) -> str:
        return str(entity_iri(entity)) if spelt else entity.key

    labels: dict[str, set[str]] = {}
    for fact in facts:
        labels.setdefault(ident(fact.subject), set()).add(fact.subject.label)
        labels.setdefault(ident(fact.object), set()).add(fact.object.label)
    valid: dict[str, set[str]] = {}
    for fact in facts:
        valid.setdefault(fact.subject.key, set()).update(labels[ident(fact.object)])
    return valid


@dataclass
class Job:
    """One predictor over one corpus: every stage of the experiment, built lazily, resumed per query."""

    p: PlannedPredictor
    corpus: Corpus
    facts: list[Fact]
    valid: dict[str, dict[str, set[str]]]
    cfg: RunConfig
    store: GraphStore
    cache: Path
    data_dir: Path
    config: dict
    progress: bool
    executor: object = field(default_factory=LocalExecutor)
    predictor: object = None
    axioms: str | None = None
    # this attempt's sample of queries (the stages reached): recorded before it, recorded without asking, the rest
    # handed to the predictor or left when it stopped (`sample_tally`)
    sampled: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("sample", "recorded", "left_out"), 0))
    usage: UsageLog | None = None  # where what asking a model cost is kept as it grows (`bridge.run.usage_log`)

    def run(self, experiment: Experiment) -> None:
        started = time.monotonic()
        self.axioms = getattr(experiment, "axioms_path", None)  # what `kb-inferred` reasons with
        try:
            earlier: StageRecords = {}
            for stage in experiment.stages:
                given = StageInput(self.corpus, self.facts, self.valid, earlier, self.data_dir, self.cache, self.store,
                                   dict(self.p.options), self.cfg.depth)
                queries = experiment.queries(stage, given)
                self._stage(experiment, stage, queries, last=stage == experiment.stages[-1])
                if stage != experiment.stages[-1]:
                    earlier[stage] = {uid: r for rel in queries for uid, r in read_done(self._path(rel, stage)).items()}
            self._done(list(self.corpus.relations))
        finally:
            if self.predictor is not None:
                tally = getattr(self.predictor, "tally", None)  # what a predictor asking a model cost
                spent = None
                if tally is not None:
                    spent = sample_tally(tally(), self.sampled)
                    log.info("%s / %s: %s", self.corpus.name, self.p.name, self.predictor.report_line(spent))
                if hasattr(self.predictor, "on_spent"):
                    self.predictor.on_spent = None
                cached = cache_line(self.predictor)
                if cached:
                    log.info("%s / %s: %s", self.corpus.name, self.p.name, cached)
                self.executor.release(self.predictor)
                seconds = self.config["seconds"].setdefault(self.corpus.name, {})
                seconds[self.p.name] = round(seconds.get(self.p.name, 0.0) + time.monotonic() - started, 3)
                if spent is not None:  # last: a disk that refuses it leaves the rest done
                    self._log_usage(spent, durable=True)

    def _log_usage(self, spent: dict[str, int] | None = None, durable: bool = False) -> None:
        """Append what asking cost since the last line (`spent`, else the predictor's tally now) to this attempt's
        usage file: where a predictor asks a model, each response and each chunk's records are counted as they
        come, so that a kill loses no chunk written before it (`bridge.run.usage_log`)."""
        tally = getattr(self.predictor, "tally", None)
        if self.usage is None or tally is None or (spent is None and not hasattr(self.predictor, "on_spent")):
            return  # under Ray the actors hold the counts, asked once the job ends: a call per chunk would wait
        self.usage.add(self.corpus.name, self.p.name, spent if spent is not None else tally(), durable)

    def _done(self, relations: list[str]) -> None:
        """Note in this attempt's entry of the runs log that these relations' queries are all recorded: what an
        interrupted attempt leaves part-asked is then known (`bridge.run.attempts`)."""
        if not relations:
            return
        done = self.config["runs"][-1].setdefault(DONE, {}).setdefault(self.corpus.name, {})
        mine = done.setdefault(self.p.name, [])
        mine.extend(r for r in relations if r not in mine)

    def _path(self, rel: str, stage: str) -> Path:
        return predictions_path(self.cfg.out, self.corpus.name, self.p.name, rel, stage)

    def _build(self):
        """The predictor, made once per corpus and only when some query is left to ask."""
        if self.predictor is None:
            cfg = self.cfg
            ctx = PredictorContext(self.corpus, self.store, self.cache, self.data_dir, cfg.device, cfg.dtype,
                                   cfg.batch_size, dict(self.p.options), self.progress, cfg.compat,
                                   self.config["cache_scope"],
                                   f"{self.config['cache_scope']}/{len(self.config['runs'])}", self.p.name,
                                   self.axioms, self.facts, Path(cfg.out))
            predictor = self.executor.build(self.p.factory, self.p.spec, ctx, self.p.name)
            described = {**predictor.describe(), "slots": list(_slots(predictor))}
            before = self.config["predictor_configs"].get(self.corpus.name, {}).get(self.p.name)
            why = closure_change(before, described)
            if why and has_records(cfg.out, self.p.name, self.corpus.name):
                self.executor.release(predictor)
                raise ConfigError(f"{cfg.out}: predictor {self.p.name!r} answered {self.corpus.name} there {why}")
            self.predictor = predictor
            if hasattr(predictor, "on_spent"):  # a model asked in this process: each response counted as it comes
                predictor.on_spent = self._log_usage
            scale = getattr(self.predictor, "score_scale", None)
            if scale is not None:  # what its answers' scores are, shown beside them (`kbc show`)
                described["scores"] = scale
            count = parameter_count(self.predictor)
            if count is not None:  # what a leaderboard lists beside the model
                described.setdefault("parameters", count)
            self.config["predictor_configs"].setdefault(self.corpus.name, {})[self.p.name] = described
            size = getattr(self.predictor, "answer_space_size", None)
            spaces = self.config["answer_space"].setdefault(self.corpus.name, {})
            spaces.setdefault(self.p.name, {}).update({rel: size(rel) if size else None
                                                       for rel in self.corpus.relations})
            own = getattr(self.predictor, "own_evidence", None)
            if own is not None:  # per relation, how many of its facts have evidence of their own to read or leave out
                self.config.setdefault("own_evidence", {}).setdefault(self.corpus.name, {}).setdefault(
                    self.p.name, {}).update(own(self.corpus.facts))
            # on disk before its first record: a rerun that finds every query recorded builds no predictor, so a
            # description written only after the job (lost to a full disk or a kill) would be missing for good
            write_json(cfg.out / "config.json", self.config)
        return self.predictor

    def _stage(self, experiment: Experiment, stage: str, queries: dict[str, list[tuple[Query, Fact]]],
               last: bool = True) -> None:
        # per relation, done as the last stage records it whole (not where its queries ask relations beyond the
        # corpus's own: KMIR's derived ones are done with the whole job)
        mark = self._done if last and set(queries) <= set(self.corpus.relations) else (lambda relations: None)
        where = f"{self.corpus.name} / {self.p.name}" + (f" / {stage}" if stage else "")
        todo: list[tuple[str, list, Path]] = []
        for rel, pairs in queries.items():
            path = self._path(rel, stage)
            done = done_uids(path)
            rest = [(q, f) for q, f in pairs if q.uid not in done]
            self.sampled["sample"] += len(pairs)
            self.sampled["recorded"] += len(pairs) - len(rest)
            if rest:
                todo.append((rel, rest, path))
        asked = sum(len(x) for x in queries.values())
        said = resume_line(where, asked, asked - sum(len(rest) for _, rest, _ in todo))
        if said:
            log.info(said)
        mark([rel for rel in queries if rel not in {r for r, _, _ in todo}])  # recorded whole before
        if not todo:
            return
        predictor = self._build()
        todo, ruled = _drop_left_out(experiment, todo)  # first: every predictor drops these, whatever it answers
        todo, empty = _unanswerable(predictor, todo)
        for rel, pairs in empty.items():
            path = self._path(rel, stage)
            with RecordAppender(path) as handle:
                handle.write([jsonl_text(experiment.record(stage, query, fact, Prediction(query.uid, ()),
                                                           self.valid.get(rel, {})), str(path))
                              for query, fact, _ in pairs])
        if empty:
            slots = sorted({q.slot for pairs in empty.values() for q, _, _ in pairs})
            log.warning("%s: does not answer the %s slot: %d queries get no answer (scored wrong)", where,
                        " or ".join(slots), sum(len(p) for p in empty.values()))
        if getattr(experiment, "set_valued", False):  # no single gold object to check: every pair is asked
            gone: dict[str, list] = {}
        else:
            todo, gone = _drop_unsupported(predictor, todo, getattr(experiment, "instance_slots", ()))
        todo, unsuited = _drop_unsuitable(experiment, predictor, todo)
        for rel, items in unsuited.items():
            gone.setdefault(rel, []).extend(items)
        written = {rel: [*ruled.get(rel, []), *gone.get(rel, [])] for rel in {**ruled, **gone}}
        self.sampled["left_out"] += sum(map(len, written.values())) + sum(map(len, empty.values()))
        for rel, items in written.items():  # the load line counted those `ruled`; the line below the others
            path = self._path(rel, stage)
            with RecordAppender(path) as handle:
                handle.write([jsonl_text(_dropped_record(query, fact, reason), str(path))
                              for query, fact, reason in items])
        if gone:  # counted in the unit of summary.md's table of dropped units, with the other count beside
            log.info(_dropped_line(where, gone, dropped_unit(experiment, getattr(experiment, "settings", {}))))
        total = sum(len(rest) for _, rest, _ in todo)
        cost = getattr(predictor, "cost", None)
        if cost and total:
            log.info("%s: %s", where, cost([q for _, rest, _ in todo for q, _ in rest]))
        fits = getattr(predictor, "check_fits", None)  # inputs the model cannot take: refused before any is asked
        if fits and total:
            fits([q for _, rest, _ in todo for q, _ in rest])
        chunk_size = getattr(predictor, "chunk_size", QUERIES_PER_CALL)
        scorer = progress_hook(predictor)
        # where a query's cost is its candidates' sentences (or statements), from 6 to hundreds by relation, the bar
        # counts those: counted in queries, its rate and time left would follow the relation it is on
        work = getattr(predictor, "work", None) if scorer is None else None
        weigh = (lambda pairs: sum(work(q) for q, _ in pairs)) if work is not None else len
        bar = QueryBar(sum(weigh(rest) for _, rest, _ in todo), where.replace(" / ", " "), not self.progress, tqdm,
                       getattr(predictor, "work_unit", "query") if work is not None else "query")
        moved = [0]  # bar steps already made inside the current chunk by the scorer's batches or the answers come
        if scorer is not None:
            def step(n: int) -> None:
                moved[0] += n
                bar.computed(n)

            def skip(n: int) -> None:
                moved[0] += n
                bar.from_cache(n)

            scorer.on_batch = step
            if hasattr(scorer, "on_cached"):
                scorer.on_cached = skip
        cache = result_cache(predictor)
        chunks = {rel: [rest[start:start + chunk_size] for start in range(0, len(rest), chunk_size)]
                  for rel, rest, _ in todo}
        depths = {rel: self.cfg.depth + max((len(v) for v in self.valid.get(rel, {}).values()), default=0)
                  for rel, _, _ in todo}
        if asks_all(experiment, stage):  # every answer the predictor has: its whole answer space, whatever --depth
            depths = {rel: max(depth, whole_space(predictor, rel)) for rel, depth in depths.items()}
        recorder = Recorder(experiment, stage, {rel: self.valid.get(rel, {}) for rel, _, _ in todo}, self.p.name)
        # every chunk of the stage, in file order: an executor may answer several at once, handing them back in order
        lines = self.executor.map(predictor, (
            Chunk(rel, [q for q, _ in chunk], [f for _, f in chunk], depth_for(experiment, stage, chunk, depths[rel]),
                  str(path))
            for rel, _, path in todo for chunk in chunks[rel]), recorder)
        try:
            for rel, _rest, path in todo:
                with RecordAppender(path) as handle:
                    for chunk in chunks[rel]:
                        moved[0] = 0
                        looked = (cache.hits, cache.misses) if cache is not None else (0, 0)
                        written = handle.write(next(lines))  # a chunk's records are made together: on disk as
                        # they come; batches count prompts, the rest per record (or its work), the cache's apart
                        self._log_usage(durable=True)  # what they cost, on disk with them
                        done = weigh(chunk) if work is not None and written == len(chunk) else written
                        cached = cached_part(done, *((cache.hits - looked[0], cache.misses - looked[1])
                                                     if cache is not None else (0, 0)))
                        rest = max(0, done - moved[0])
                        bar.from_cache(min(cached, rest))
                        bar.computed(rest - min(cached, rest))
                mark([rel])
            mark(list(queries))
        finally:
            lines.close()  # chunks still in flight are cancelled; every record written stays
            bar.close()
            if scorer is not None:
                scorer.on_batch = None
                if hasattr(scorer, "on_cached"):
                    scorer.on_cached = None


def resume_line(where: str, asked: int, recorded: int) -> str | None:
    """What a rerun says of a predictor's stage already recorded, all of it or a part; None where it asks every
    query (a stage that asks nothing, as LM-KBC's train without tuning, says nothing either)."""
    if not asked or not recorded:
        return None
    if recorded >= asked:
        return f"{where}: all {asked} queries done, skipped"
    return f"{where}: {recorded} of {asked} queries recorded earlier; asking {asked - recorded}"


def whole_space(predictor, relation: str) -> int:
    """How many answers make all a predictor has for a relation: its answer space's size, or no bound where it
    ranks no fixed list (beams, generations, a KB's lookups: each answers all it holds)."""
    size = getattr(predictor, "answer_space_size", None)
    known = size(relation) if size is not None else None
    return known if known is not None else sys.maxsize


def progress_hook(predictor):
    """What tells the progress bar of each batch or answer inside a chunk (`on_batch(n)`): a ranking predictor's
    scorer, a generating predictor itself; None: the bar moves per chunk."""
    scorer = getattr(predictor, "scorer", None)
    if scorer is not None and hasattr(scorer, "on_batch"):
        return scorer
    return predictor if hasattr(predictor, "on_batch") else None


def _drop_unsupported(predictor, todo: list, instance_slots: tuple[str, ...] = ()) -> tuple[list, dict[str, list]]:
    """Split off facts a predictor cannot answer (optional `filter_facts(facts) -> (kept, {reason: n})`).

    A query is kept when the predictor can answer its fact in the query's slot and, for an
    experiment whose instance spans several slots (coherency asks both ways), in each of those it
    answers: one instance set for every round. Returns the remaining work and, per relation,
    (query, fact, reason) of each dropped fact. The runner writes dropped facts as records too, so a
    rerun skips them and the counts stay exact.
    """
    filter_facts = getattr(predictor, "filter_facts", None)
    if filter_facts is None:
        return todo, {}
    answered = _slots(predictor)

    def check(facts: list, slot: str):
        # object queries use the plain call, which every predictor with the hook takes
        return filter_facts(facts) if slot == "object" else filter_facts(facts, slot=slot)

    def needed(query) -> list[str]:
        return list(dict.fromkeys([query.slot, *(s for s in instance_slots if s in answered)]))

    def reason(query, fact) -> str:
        for slot in needed(query):
            why = next(iter(check([fact], slot)[1]), None)
            if why:
                return why
        return "unsupported"

    keep: set[tuple[int, str]] = set()  # (fact, slot) pairs the predictor can answer, asked once per slot
    pairs = [pair for _rel, rest, _path in todo for pair in rest]
    for slot in dict.fromkeys(s for q, _ in pairs for s in needed(q)):
        kept, _reasons = check(list({id(f): f for q, f in pairs if slot in needed(q)}.values()), slot)
        keep.update((id(f), slot) for f in kept)
    # one reason per fact; asked one by one only for the (few) dropped facts
    return _split(todo, lambda q, f: None if all((id(f), s) in keep for s in needed(q)) else reason(q, f))


def _drop_left_out(experiment, todo: list) -> tuple[list, dict[str, list]]:
    """Facts an experiment leaves out for every predictor (optional `left_out(fact) -> reason`: coherency's
    instance rule), dropped like any other fact so that they are counted."""
    check = getattr(experiment, "left_out", None)
    return _split(todo, lambda q, f: check(f)) if check is not None else (todo, {})


def left_out_note(experiment, facts: list[Fact]) -> str:
    """What the load line adds for the facts an experiment leaves out (`left_out`): how many, and why."""
    check = getattr(experiment, "left_out", None)
    if check is None:
        return ""
    reasons = Counter(why for f in facts if (why := check(f)))
    if not reasons:
        return ""
    why = "; ".join(f"{reason}: {n}" for reason, n in reasons.most_common())
    n = sum(reasons.values())
    return (f"; {experiment.name} leaves out {n} of them ({why}), dropped for every predictor: "
            f"{count_of(len(facts) - n, 'facts')} remain")


def _drop_unsuitable(experiment, predictor, todo: list) -> tuple[list, dict[str, list]]:
    """Facts an experiment leaves out for this predictor (optional `unsuitable(predictor, fact) -> reason`)."""
    check = getattr(experiment, "unsuitable", None)
    return _split(todo, lambda q, f: check(predictor, f)) if check is not None else (todo, {})


def _unanswerable(predictor, todo: list) -> tuple[list, dict[str, list]]:
    """Queries for a slot the predictor does not answer: they get no answers (scored wrong, not hidden)."""
    slots = _slots(predictor)
    return _split(todo, lambda q, f: None if q.slot in slots else f"does not answer the {q.slot} slot")


def _split(todo: list, reason_of) -> tuple[list, dict[str, list]]:
    """The work left once `reason_of(query, fact)` (None: keep it) takes some queries out, and per relation
    the (query, fact, reason) of those taken."""
    kept_todo, gone = [], {}
    for rel, rest, path in todo:
        reasons = [reason_of(q, f) for q, f in rest]
        taken = [(q, f, why) for (q, f), why in zip(rest, reasons) if why]
        if taken:
            gone[rel] = taken
        rest = [pair for pair, why in zip(rest, reasons) if not why]
        if rest:
            kept_todo.append((rel, rest, path))
    return kept_todo, gone


def _slots(predictor) -> tuple[str, ...]:
    """The slots a predictor answers; one that does not say answers the object only."""
    return tuple(getattr(predictor, "slots", ("object",)))


def _dropped_line(where: str, gone: dict[str, list], unit: str) -> str:
    """The log line of what a predictor cannot answer, per reason and per relation, in `unit` (a fact asked
    several ways counts once as a fact, once per query otherwise), with facts or queries beside where they differ."""
    def tally(items: list) -> Counter:
        if unit == "facts":
            return Counter({f.uid: why for _, f, why in items}.values())
        return Counter(why for _, _, why in items)

    # per the relation each query asks, as summary.md's table of dropped units (a KMIR question of a P36 fact may
    # ask P1376), not the relation of the fact it was made from
    asks: dict[str, list] = {}
    for rel, items in gone.items():
        for item in items:
            asks.setdefault(relation_id(getattr(item[0], "relation", rel)), []).append(item)
    per_rel = {rel: tally(asks[rel]) for rel in sorted(asks)}
    reasons: Counter = Counter()
    for counts in per_rel.values():
        reasons.update(counts)
    listed = ", ".join(f"{rel} {sum(c.values())}" for rel, c in per_rel.items())
    why = "; ".join(f"{reason}: {n}" for reason, n in reasons.items())
    n = sum(reasons.values())
    queries = sum(len(items) for items in gone.values())
    facts = len({f.uid for items in gone.values() for _, f, _ in items})
    other, named = (queries, "queries") if unit == "facts" else (facts, "facts")
    beside = f" ({count_of(other, named)})" if other != n else ""
    return f"{where}: dropped {count_of(n, unit)}{beside} it cannot answer ({why}); per relation: {listed}"


def _dropped_record(query, fact, reason: str) -> dict:
    return {"uid": query.uid, "relation": relation_id(query.relation), "subject": fact.subject.label,
            "subject_id": fact.subject.id, "gold": fact.object.label, "gold_id": fact.object.id, "dropped": reason}
