"""What a run is asked to do, checked in full before any work: predictors, options, corpora, relations.

A run directory accumulates: each predictor name keeps the identity it was first run with (the
spec and the settings that change its answers), each relation the data version its facts came
from. A rerun that adds predictors, corpora or relations works; one that would mix answers of a
different identity or data under the same name is refused.
"""

from __future__ import annotations

import errno
import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from bridge.experiments.base import CHOICE_RULE, CONTEXT_RULE, END_MARKER_RULE, PROVENANCE_RULE, QUESTION_FACTS
from bridge.predictors.registry import Factory, resolve
from bridge.run.options import NamedSpec, Option, accepted, identity_options, parse_predictors, scope_options
from eval.bear import BEAR_CORPORA
from eval.corpora import CORPORA, LMKBC, close_hint, load_corpus
from eval.datadir import cache_root
from eval.errors import ConfigError, DataError
from eval.lama import READING, Corpus, relation_versions, version_choices
from eval.relations import stored_type
from eval.types import Fact

COMPAT = ("lama", "lm-pub-quiz")
ALL_ANSWERS = "all answers, whatever the depth"  # an LM-KBC set without a rule (`LmkbcExperiment.asks_all`)


def default_cache_dir() -> Path:
    return cache_root()


def check_cache(cache: Path) -> None:
    """A cache folder that cannot be one (a file, a symlink loop) refused in one line naming it, rather than
    failing later on a file kbc would write inside it."""
    try:
        cache.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"the cache {cache} is a symlink loop; point KBC_CACHE at a directory") from None
        if exc.errno == errno.ENOTDIR:
            raise ConfigError(f"the cache {cache} lies under a file; point KBC_CACHE at a directory") from None
        if cache.is_symlink():  # a drive not mounted, say: its folder is not made in the mount point's place
            raise ConfigError(f"the cache {cache} is a symbolic link to {os.readlink(cache)}, which does not exist; "
                              "make that folder, or point KBC_CACHE at a directory") from None
        return  # absent: made on first use
    if not cache.is_dir():
        raise ConfigError(f"the cache {cache} is a file; point KBC_CACHE at a directory")


@dataclass
class RunConfig:
    corpora: list[str]
    predictors: list[str]  # NAME=SPEC or SPEC
    out: Path
    data_dir: str | None = None
    relations: list[str] = field(default_factory=list)
    depth: int = 100
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 32
    options: dict[str, str] = field(default_factory=dict)  # KEY or NAME.KEY -> value
    option_sources: dict[str, str] = field(default_factory=dict)  # KEY -> where a run file holds it (error lines)
    cache_dir: Path | None = None
    store: str | None = None  # graph store path, or a SPARQL endpoint URL
    store_update: str | None = None  # SPARQL 1.1 Update endpoint of a remote store
    store_timeout: float = 30.0
    limit: int | None = None  # a seeded sample of at most this many facts per relation
    seed: int = 0
    compat: str | None = None  # "lama": as LAMA's released code
    template: str = "0"  # BEAR corpora: the template asked (0, 1, 2), or "all" (each relation's three, a prompt set)
    bootstrap: int = 1000  # resamples behind each summary cell's 95% interval (0: standard errors only)
    bootstrap_seed: int = 0
    split: str = "val"  # LM-KBC: the split asked (train, val, or a split file; one without objects is not scored)

    def check_values(self) -> None:
        for key, value, low in (("--depth", self.depth, 1), ("--batch-size", self.batch_size, 1),
                                ("--limit", self.limit, 1), ("--seed", self.seed, None)):
            if value is None and key == "--limit":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{key} {value!r}: expected an integer")
            if low is not None and value < low:
                raise ConfigError(f"{key} {value}: must be at least {low}")
        timeout = self.store_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout):
            raise ConfigError(f"--store-timeout {timeout!r}: expected a number of seconds")
        if self.store_timeout <= 0:
            raise ConfigError(f"--store-timeout {self.store_timeout}: must be positive")
        if self.compat not in (None, *COMPAT):
            raise ConfigError(f"--compat {self.compat}: use one of {', '.join(COMPAT)}")
        if self.template not in ("0", "1", "2", "all"):
            raise ConfigError(f"--template {self.template}: use 0, 1, 2 or all")
        if self.template != "0" and not any(c in BEAR_CORPORA for c in self.corpora):
            raise ConfigError(f"--template {self.template} picks a BEAR template; add --corpus bear or bear-big")
        unknown = [c for c in self.corpora if c not in CORPORA]
        if unknown:
            raise ConfigError(f"unknown corpus {unknown[0]!r}{close_hint(unknown[0], CORPORA)}; choose from "
                              f"{', '.join(CORPORA)}")
        if not self.corpora:
            raise ConfigError("no corpus given (--corpus trex google_re ...)")
        if not self.predictors:
            raise ConfigError("no predictor given (--predictors freq bert=/models/bert-base-cased ...)")


@dataclass
class PlannedPredictor:
    name: str
    spec: str
    factory: Factory
    options: dict[str, str]
    declared: dict[str, Option]

    def identity(self, cfg: RunConfig, data_dir: Path | None = None) -> dict:
        """Everything that changes this predictor's answers; a rerun under the same name must match it. A factory
        with a `data(spec, data_dir, cache_dir)` reads data beside the corpus asked (FewRel's KB: T-REx), whose
        versions it returns: recorded under `data`."""
        from bridge.predictors.generation import is_server
        from lm.served import query_digest, recorded_url

        served = is_server(self.spec)
        ident = {"spec": recorded_url(self.spec) if served else self.spec,
                 "options": identity_options(self.options, self.declared), "depth": cfg.depth}
        if served and query_digest(self.spec):  # a query's values are not written: its digest tells queries apart
            ident["query_digest"] = query_digest(self.spec)
        data = getattr(self.factory, "data", None)
        if data is not None and data_dir is not None:
            ident["data"] = data(self.spec, data_dir, cfg.cache_dir or default_cache_dir())
        for key in getattr(self.factory, "pinned", ()):  # defaults that once differed: a rerun must match them
            ident["options"].setdefault(key, self.declared[key].default)
        extra = getattr(self.factory, "identity_extra", {})  # how its records rank or read, where that once differed
        ident.update(extra(self.spec) if callable(extra) else extra)
        files = self.files()
        if files:
            ident["files"] = files
        if "dtype" in getattr(self.factory, "settings", ()):
            ident["dtype"] = cfg.dtype
        if cfg.compat:
            ident["compat"] = cfg.compat
        if LMKBC in cfg.corpora and not self.options.get("set"):
            ident["sets"] = ALL_ANSWERS  # every answer it has, whatever the depth (once: its top `depth`)
        if self.options.get("answer") == "generate" or served:
            from bridge.predictors.generation import applied_options
            from eval.answer_text import ANSWER_RULE

            ident["answer_rule"] = ANSWER_RULE  # how its generations are read: answers of two rules never mix
            # every setting of its generation as applied, defaults included
            ident["options"] = dict(sorted(applied_options(ident["options"], served).items()))
        return ident


    def files(self) -> dict[str, str]:
        """Fingerprints of the local files it reads (model folders, vocabularies, maps): weights replaced at the
        same path change its identity, checked on every rerun without loading anything. Hub ids have none. A
        factory's `fingerprints` ({option: function of the options}) fingerprint inputs of their own kind."""
        from bridge.predictors.registry import ENTRIES
        from lm.loading import files_fingerprint

        out: dict[str, str] = {}
        if self.spec not in ENTRIES and Path(self.spec).expanduser().exists():
            out["spec"] = files_fingerprint(self.spec)
        for key, value in sorted(self.options.items()):
            opt = self.declared.get(key)
            if opt is not None and opt.identity and opt.kind in ("model", "path") and Path(value).expanduser().exists():
                out[key] = files_fingerprint(value)
        for key, fingerprint in getattr(self.factory, "fingerprints", {}).items():  # inputs that are no plain files
            if key in self.options:
                out[key] = fingerprint(self.options)
        return out


@dataclass
class Plan:
    predictors: list[PlannedPredictor]
    corpora: dict[str, Corpus]  # full corpora restricted to the chosen relations
    asked: dict[str, list[Fact]]  # per corpus, the facts asked (all, or the --limit sample)
    versions: dict[str, dict[str, str]]  # corpus -> relation -> data version
    removed: dict[str, dict[str, int]] = field(default_factory=dict)  # --compat lama: label duplicates per relation
    # where the filtered setting's other valid objects come from, when not the corpus itself: a LAMA-UHN
    # corpus filters facts out of the questions, never out of what counts as a right answer
    valid_sources: dict[str, tuple[Corpus, dict[str, str]]] = field(default_factory=dict)
    data_dir: Path | None = None  # where the corpora (and named prompt sets, instance-of lists) were read
    choices: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # corpus -> `version_choices`


def plan_predictors(cfg: RunConfig, resolver=None, data_dir: Path | None = None) -> list[PlannedPredictor]:
    """`resolver(name, spec)`: an experiment's own factory for a predictor (None: the registry's). Each factory's
    `check_options(name, options, corpora)` refuses options that cannot work together, or that the way it answers
    the run's corpora would not use (a language model's, `bridge.predictors.lm.check_scoring_options`); with the
    run's `data_dir`, its `check_inputs(spec, options, corpora, data_dir)` finds the data files it reads there (a
    masked LM's common vocabulary) before any predictor runs."""
    specs: list[NamedSpec] = parse_predictors(cfg.predictors)
    factories = {p.name: (resolver(p.name, p.spec) if resolver else None) or resolve(p.spec) for p in specs}
    declared = {name: accepted(f) for name, f in factories.items()}
    scope_options(cfg.options, specs, declared, cfg.option_sources)
    from bridge.predictors.generation import is_server
    from bridge.predictors.registry import ENTRIES

    for p in specs:  # models named by hub id: reachable or cached, checked before any predictor runs
        models = [p.spec] if p.spec not in ENTRIES and not is_server(p.spec) else []
        models += [v for k, v in p.options.items()
                   if declared[p.name].get(k) and declared[p.name][k].kind in ("model", "masked-model")]
        for model in models:
            from lm.loading import check_available

            check_available(model)
        check_options = getattr(factories[p.name], "check_options", None)  # options that cannot work together
        if check_options is not None:
            check_options(p.name, p.options, list(cfg.corpora))
        check_inputs = getattr(factories[p.name], "check_inputs", None)
        if check_inputs is not None and data_dir is not None:
            check_inputs(p.spec, p.options, list(cfg.corpora), data_dir)
    return [PlannedPredictor(p.name, p.spec, factories[p.name], p.options, declared[p.name]) for p in specs]


def plan_run(cfg: RunConfig, data_dir: Path, resolver=None) -> Plan:
    """Validate everything and load the data; no predictor is built and nothing is scored yet."""
    cfg.check_values()
    cache = cfg.cache_dir or default_cache_dir()
    check_cache(cache)  # before loading: a corpus's snapshot is the first thing kept there
    predictors = plan_predictors(cfg, resolver, data_dir)
    loaded = {name: _load(name, data_dir, cfg) for name in cfg.corpora}
    corpora = {name: restrict_relations(c, cfg.relations, loaded, data_dir) for name, c in loaded.items()}
    removed: dict[str, dict[str, int]] = {}
    if cfg.compat == "lama":
        from eval.compat import lama_dedup

        for name, corpus in corpora.items():
            corpus.facts, removed[name] = lama_dedup(corpus.facts)
    asked = {name: sample(c.facts, cfg.limit, cfg.seed) for name, c in corpora.items()}
    versions = {name: relation_versions(c) for name, c in corpora.items()}
    sources = {}
    for name, corpus in corpora.items():
        if name.endswith("-uhn"):
            base = load_corpus(name.removesuffix("-uhn"), data_dir, list(corpus.relations), cache_dir=cfg.cache_dir)
            sources[name] = (base, relation_versions(base))
    choices = {name: version_choices(c) for name, c in corpora.items()}
    return Plan(predictors, corpora, asked, versions, removed, sources, data_dir, choices)


def _load(name: str, data_dir: Path, cfg: RunConfig) -> Corpus:
    kwargs: dict = {"compat": cfg.compat} if cfg.compat else {}
    kwargs["cache_dir"] = cfg.cache_dir  # snapshots and LAMA-UHN data go where the run's other caches go
    if name == LMKBC:
        kwargs["split"] = cfg.split
    if name in BEAR_CORPORA and cfg.template in ("1", "2"):
        kwargs["template"] = int(cfg.template)
    if name.endswith("-uhn"):
        from lm.name_ranker import uhn_name_ranker

        kwargs["name_ranker"] = uhn_name_ranker(None, cfg.device, cfg.dtype, cfg.batch_size)
    return load_corpus(name, data_dir, **kwargs)


RELATIONS_LISTED = 10  # up to this many relations, an unknown one's error lists them; more: where to see them
ID_MATCH = 0.8  # how alike an unknown relation id and a known one must be to suggest it (P999 is no typo of P7959)


def restrict_relations(corpus: Corpus, relations: list[str], loaded: dict[str, Corpus],
                       data_dir: Path | None = None) -> Corpus:
    """The corpus limited to the `--relations` it has; an id no chosen corpus has is an error, which says when
    a corpus lists the relation but has no data for it (`data_dir`: where it was read)."""
    if not relations:
        return corpus
    known = {rel for c in loaded.values() for rel in c.relations}
    unknown = [r for r in relations if r not in known]
    if unknown:
        raise ConfigError(f"--relations {unknown[0]}: {_no_relation(unknown[0], loaded, data_dir)}")
    mine = [r for r in relations if r in corpus.relations]
    if not mine:
        raise ConfigError(f"--relations names no relation of corpus {corpus.name}; drop --corpus {corpus.name} or "
                          f"add one of its relations (e.g. {next(iter(corpus.relations), '?')})")
    corpus.keep_relations(mine)
    return corpus


def _no_relation(relation: str, loaded: dict[str, Corpus], data_dir: Path | None) -> str:
    """Why no chosen corpus has `relation`, and what to pick instead."""
    import difflib

    from eval.lama import folders_without_data
    from eval.negated import lama_relation_without_probes

    for name in loaded if data_dir is not None else ():
        folders = folders_without_data(name, relation, data_dir)
        if folders:
            return (f"corpus {name} knows this relation (relations.jsonl lists it) but has no data for it: no "
                    f"{relation}.jsonl in {' or '.join(map(str, folders))}")
        if lama_relation_without_probes(name, relation, data_dir):
            return (f"corpus {name} has no data for this LAMA relation: the negated and misprimed T-REx files hold "
                    f"{len(loaded[name].relations)} other relations (`kbc data stats --corpus {name}` lists them)")
    known = sorted({rel for c in loaded.values() for rel in c.relations})
    same = [rel for rel in known if rel.lower() == relation.lower()]  # `p36`: ids are case-sensitive
    close = same or difflib.get_close_matches(relation, known, n=1, cutoff=ID_MATCH)
    line = f"no chosen corpus ({', '.join(loaded)}) has this relation"
    if close:
        return f"{line} (did you mean {close[0]!r}?)"
    if len(known) <= RELATIONS_LISTED:
        return f"{line}; choose from {', '.join(known)}"
    listing = " ".join(f"--corpus {name}" for name in loaded)
    return f"{line}; `kbc data stats {listing}` lists {'their' if len(loaded) > 1 else 'its'} {len(known)} relations"


def sample(facts: list[Fact], limit: int | None, seed: int) -> list[Fact]:
    """At most `limit` facts per relation, drawn with `seed`, kept in data order."""
    if not limit:
        return facts
    by_rel: dict[str, list[int]] = {}
    for i, fact in enumerate(facts):
        by_rel.setdefault(fact.relation, []).append(i)
    keep: set[int] = set()
    for rel, idx in by_rel.items():
        rng = random.Random(f"{seed}:{rel}")
        keep.update(idx if len(idx) <= limit else rng.sample(idx, limit))
    return [f for i, f in enumerate(facts) if i in keep]


def new_config(experiment: str = "lama") -> dict:
    """The config of an empty run directory: every entry a rerun's identity checks and the runner fills."""
    return {"corpora": [], "predictors": [], "predictor_specs": {}, "data_versions": {}, "relation_types": {},
            "runs": [], "predictor_configs": {}, "answer_space": {}, "seconds": {}, "settings": {},
            "experiment": experiment}


# entries of a run config that map each corpus to a map (relation or predictor -> ...)
PER_CORPUS = ("data_versions", "version_choices", "relation_types", "relation_labels", "predictor_configs",
              "answer_space", "seconds", "compat_removed", "usage", "own_evidence")


def _config_gap(config) -> str | None:
    """What a run config lacks that the identity checks need (each entry of `new_config`, of its type), else None.

    A config missing any of them cannot say what its results were made with, so it is refused, never read as
    "no constraints"."""
    if not isinstance(config, dict):
        return "not a JSON object"
    for key, empty in new_config().items():
        if not isinstance(config.get(key), type(empty)):
            return f"no {key!r} {type(empty).__name__}" if key not in config else \
                f"{key!r} is {type(config[key]).__name__}, not {type(empty).__name__}"
    for key in ("corpora", "predictors"):
        if not all(isinstance(v, str) for v in config[key]):
            return f"{key!r} holds a non-name"
    specs = config["predictor_specs"]
    bad = next((n for n, ident in specs.items() if not isinstance(ident, dict) or not isinstance(ident.get("spec"), str)
                or not isinstance(ident.get("files", {}), dict)), None)
    if bad is not None:
        return f"predictor_specs[{bad!r}] is no identity with a 'spec'"
    unrecorded = [n for n in config["predictors"] if n not in specs]
    if unrecorded:
        return f"predictor {unrecorded[0]!r} has no identity in 'predictor_specs'"
    for key in ("data_versions", "relation_types"):
        bad = next((c for c in config["corpora"] if c not in config[key]), None)
        if bad is not None:
            return f"{key!r} has no entry for corpus {bad!r}"
    for key in PER_CORPUS:  # corpus -> {...}: the runner adds to each
        per = config.get(key, {})
        bad = next((c for c, inner in per.items() if not isinstance(inner, dict)), None) if isinstance(per, dict) \
            else key
        if bad is not None:
            return f"{key!r} is no map of corpora to maps" if bad == key else f"{key}[{bad!r}] is no map"
    if not isinstance(config.get("load_reports", {}), dict):
        return "'load_reports' is no map of corpora"
    if not all(isinstance(v, str) for c in config["data_versions"].values() for v in c.values()):
        return "'data_versions' holds a version that is no string"
    if config["corpora"] and not config["settings"]:
        return "'settings' is empty"
    return None


def read_config(path: Path) -> dict | None:
    """A run directory's config.json (None when there is none); one that lacks what the identity checks need
    is refused."""
    if not path.exists():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable run config ({exc}); {ELSEWHERE}") from None
    gap = _config_gap(config)
    if gap:
        raise DataError(f"{path}: not a kbc run config ({gap}); {ELSEWHERE}")
    return config


# a run's records are not read without the config that says what made them; a rerun elsewhere costs little
ELSEWHERE = ("move the directory aside or use another --out (the same command into a new --out reads the scores of "
             "the language models it runs back from the LM result cache, so little is computed again)")


def _complete_line(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.readline().endswith(b"\n")  # the first line: only a torn last line lacks one


def has_records(out: Path, name: str, corpus: str = "*") -> bool:
    """Whether predictor `name` wrote any complete record in `out` (of `corpus`, default any): a name whose earlier
    attempt wrote none (it failed first) does not hold the directory to that attempt's settings."""
    from bridge.run.results import slug

    return any(_complete_line(f) for f in (out / "predictions").glob(f"{corpus}/{slug(name)}/**/*.jsonl")
               if f.is_file())


def relation_has_records(out: Path, corpus: str, relation: str) -> bool:
    """Whether any predictor wrote a complete record of `relation` of `corpus` in `out`."""
    from bridge.run.results import slug

    return any(_complete_line(f) for f in (out / "predictions" / corpus).glob(f"*/**/{slug(relation)}.jsonl")
               if f.is_file())


def merge_config(old: dict | None, cfg: RunConfig, plan: Plan, experiment: str = "lama",
                 questions: dict | None = None) -> dict:
    """The directory's config with this run added; refuses a name or relation whose results would mix."""
    config = old if old is not None else new_config(experiment)
    if config["experiment"] != experiment:
        raise ConfigError(f"{cfg.out} holds results of `kbc run {config['experiment']}`; use another --out "
                          f"for `kbc run {experiment}`")
    # what changes the facts (label deduplication) or the questions (prompts, contexts): one per directory
    # input files (prompt sets, instance-of lists) by a digest of their content, not their path
    from bridge.run.inputs import PATH_FREE, prompt_file_change, question_identity

    questions_given = questions or {}
    questions = question_identity(questions_given, plan.data_dir) if plan.data_dir is not None else questions
    settings = {"compat": cfg.compat, **(questions or {})}
    before = config["settings"]
    if before.get("context") and before.get("context") != settings.get("context"):  # written as `retrieved:1` once
        from bridge.experiments.lama import canonical_context

        try:
            before = {**before, "context": canonical_context(str(before["context"]))}
        except ConfigError:
            pass
    if QUESTION_FACTS in settings and before:
        settings[QUESTION_FACTS] = _question_facts(config, settings[QUESTION_FACTS], cfg)
        before = {**before, QUESTION_FACTS: settings[QUESTION_FACTS]}  # the same, or with corpora added
    if before and before != settings:
        if _only_fewrel_data_differs(before, settings):
            from eval.fewrel import DATA_FILE

            raise ConfigError(f"{cfg.out} holds FewRel results of other data: {plan.data_dir / DATA_FILE} differs "
                              "from the file they were made from (edited since, or another --data-dir); use another "
                              "--out for this data")
        edited = [what for key, what in (("instance_of", "instance-of"), ("multi_rel", "multi-relation"),
                                          ("aliases", "alias"))
                  if before.get(key) not in (None, settings.get(key))]
        whys = [f"the content of the {' and '.join(edited)} file changed since"] if edited else []
        if before.get("prompts") == settings.get("prompts") == PATH_FREE \
                and before.get("prompts_digest") != settings.get("prompts_digest"):
            whys.insert(0, prompt_file_change(questions_given["prompts"], plan.data_dir, before["prompts_digest"],
                                              config["runs"]))
        if "multi_rel" in settings and "multi_rel" not in before:
            whys.append("an earlier kbc version could make a false statement or a distractor of an object X-FACTR's "
                        "TREx_multi_rel.txt holds true for the subject: its statement and reasoning questions are "
                        "not those asked now")
        if settings.get(CHOICE_RULE) and before.get(CHOICE_RULE) != settings[CHOICE_RULE]:
            whys.append("an earlier kbc version read an answer naming an entity called Yes or No, such as P463's band "
                        "Yes, as that choice of a yes/no question: its answers there are not kept")
        if settings.get(PROVENANCE_RULE) and before.get(PROVENANCE_RULE) != settings[PROVENANCE_RULE]:
            whys.append("an earlier kbc version could credit an axiom with a fact it derives only from facts resting "
                        "on that fact: its reasoning questions and their Q-sets are not those asked now")
        if settings.get(CONTEXT_RULE) and before.get(CONTEXT_RULE) != settings[CONTEXT_RULE] \
                and before.get("context") == settings.get("context"):
            whys.append("an earlier kbc version gave a fact fewer than K retrieved paragraphs where its own paragraphs "
                        "filled the first hits: its contexts are not those asked now")
        if settings.get(END_MARKER_RULE) and before.get(END_MARKER_RULE) != settings[END_MARKER_RULE]:
            whys.append("an earlier kbc version scored the end marker closing these prompts (' </s') as text with "
                        "causal LMs: its sentences are not those scored now")
        why = f" ({'; '.join(whys)})" if whys else ""
        if before.get("context") != settings.get("context"):  # the rule of retrieved contexts goes with them
            before, settings = ({k: v for k, v in d.items() if k != CONTEXT_RULE} for d in (before, settings))
        raise ConfigError(f"{cfg.out} holds results made with other settings: {changes(before, settings)}{why}; "
                          "use another --out or the same settings")
    config["settings"] = settings
    for p in plan.predictors:
        ident = p.identity(cfg, plan.data_dir)
        seen, filled = recorded_identity(config["predictor_specs"].get(p.name))
        before = (seen or {}).get("files", {})
        changed = [k for k, v in ident.get("files", {}).items() if before.get(k) not in (None, v)]
        if changed and {**seen, "files": {}} == {**ident, "files": {}}:
            where = ", ".join(p.spec if k == "spec" else f"{k}={p.options[k]}" for k in changed)
            from lm.loading import FILES_PREFIX

            why = ("they were replaced or edited since" if all(before[k].startswith(FILES_PREFIX) for k in changed)
                   else "recorded by an earlier kbc version, which did not hash every byte: whether they changed "
                   "cannot be known")
            raise ConfigError(f"{cfg.out}: predictor {p.name!r} was run with other files at {where} ({why}); give it "
                              "another name (NAME=SPEC) or use another --out")
        if seen is None and has_records(cfg.out, p.name):
            raise ConfigError(f"{cfg.out}: predictor {p.name!r} has results there but config.json records no "
                              "identity for it; give it another name (NAME=SPEC) or use another --out")
        if seen and seen != ident and ident.get("unasked") and "unasked" not in seen:
            corpora, why = p.factory.unasked  # the corpora it now drops, and what it did with them before
            stale = [c for c in corpora if has_records(cfg.out, p.name, c)]
            if stale:
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has {stale[0]} answers there from an earlier kbc "
                                  f"version, which {why}")
            seen = {**seen, "unasked": ident["unasked"]}  # its records of other corpora are those it writes now
        if seen and seen != ident and ident.get("answer_ids") and "answer_ids" not in seen:
            scored, why = p.factory.ids_scored  # the experiments that score its ids, and what its ids were before
            if experiment in scored and has_records(cfg.out, p.name):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has answers there from an earlier kbc version, "
                                  f"which {why}; use another --out to score it with every entity its answer names")
            seen = {**seen, "answer_ids": ident["answer_ids"]}  # ranks and sets compare what it answers now
        if seen and seen != ident and same_content(seen, ident):
            ident = seen  # the same files spelled another way (relative, absolute, a copy): kept as first recorded
        if seen and seen != ident and _without_defaults(seen, p.declared) == _without_defaults(ident, p.declared):
            ident = seen  # an option given at its default (`--set bert.candidates=common`) is the option left out
        if seen and seen != ident and has_records(cfg.out, p.name):
            if "answer_rule" in ident and _differs_only_in(seen, ident, "answer_rule"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has answers there read from its generations by "
                                  f"another rule (answer_rule {seen.get('answer_rule', 1)}, now "
                                  f"{ident['answer_rule']}: where an answer line ends, where it is split into answers, "
                                  "how a label is compared, how a number is read; docs/generation.md); their scores "
                                  "stay as they were: use another --out to score it by this rule")
            if ident.get("sets") == ALL_ANSWERS and _differs_only_in(seen, ident, "sets"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has sets there from an earlier kbc version, which "
                                  f"cut a set without a rule at the top {seen.get('depth')} answers; every answer it "
                                  "has now counts, whatever --depth: use another --out to score it so")
            if ident.get("labels") == "relation" and _differs_only_in(seen, ident, "labels"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has answers there from an earlier kbc version, "
                                  "which named an entity by the smaller of its labels in every relation's graph, so "
                                  "an entity another relation names otherwise could miss its gold; use another --out "
                                  "to score it by the labels of each relation's own facts")
            if ident.get("answers") == "every held object" and _differs_only_in(seen, ident, "answers"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has answers there from an earlier kbc version, "
                                  f"which cut the objects held for a query at the top {seen.get('depth')} by label, "
                                  "so a gold past them was a miss although all are tied; use another --out to score "
                                  "it with every held object")
            if ident.get("answers") == "one per entity" and _differs_only_in(seen, ident, "answers"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has answers there from an earlier kbc version, "
                                  "which kept one answer per label with the id of a namesake where several entities "
                                  "of the label tied (Lisbon, New Hampshire for Lisbon, Portugal), so coherency and "
                                  "the records judged the wrong entity; use another --out to score it with one "
                                  "answer per entity")
            if "prompt" in ident and _differs_only_in(seen, ident, "prompt"):  # E-BERT: `EBERT_PROMPT`
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has records there from an earlier kbc version, "
                                  "whose `prompt` is the template asked, not the E-BERT input it scored (the subject "
                                  "replaced by its entity, or the entity put before it); its scores stand, but its "
                                  "records would mix both: use another --out to record the inputs scored")
            if "link_rule" in ident and _differs_only_in(seen, ident, "link_rule"):  # E-BERT: `LINK_RULE`
                also = ("an entity also by FewRel's own lower-cased name of it" if "fewrel" in cfg.corpora else
                        "a subject also by its aliases (Google-RE's Gilbert John Arrow to the page Arrow)")
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} has records there from an earlier kbc version, "
                                  f"which linked {also} and a mention to a rarer entity where its most common one had "
                                  "no vector: its records would mix two linkings; use another --out")
            tokens = (seen.get("options") or {}).get("max_new_tokens")
            if "max_new_tokens" in filled and _differs_only_in_option(seen, ident, "max_new_tokens"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} wrote its answers there with max_new_tokens="
                                  f"{tokens}, the default of an earlier kbc version (now "
                                  f"{ident['options']['max_new_tokens']}); add --set {p.name}.max_new_tokens={tokens} "
                                  "to resume it, or use another --out")
            if "data" in ident and _differs_only_in(seen, ident, "data"):
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} "
                                  f"{data_change(seen.get('data'), ident['data'])}; use another --out for this data")
            other_input = input_change(seen, ident, p.declared)
            if other_input:
                raise ConfigError(f"{cfg.out}: predictor {p.name!r} was run there {other_input}; give it another "
                                  "name (NAME=SPEC) or use another --out")
            raise ConfigError(f"{cfg.out}: predictor {p.name!r} was run with {changes(seen, ident)}; "
                              f"give it another name (NAME=SPEC) or use another --out")
        config["predictor_specs"][p.name] = ident
    for corpus, versions in plan.versions.items():
        seen = config["data_versions"].setdefault(corpus, {})
        unrecorded = [r for r in versions if r not in seen and relation_has_records(cfg.out, corpus, r)]
        if unrecorded:
            raise ConfigError(f"{cfg.out} holds {corpus} results for {', '.join(unrecorded[:5])} but config.json "
                              "records no data version for them; use another --out")
        changed = [r for r, v in versions.items() if seen.get(r) not in (None, v)]
        chosen = config.setdefault("version_choices", {}).setdefault(corpus, {})
        now = plan.choices.get(corpus, {})
        if changed:
            raise ConfigError(f"{cfg.out} holds {corpus} results "
                              f"{version_change(chosen, now, changed, earlier_reading(config))}; use another --out")
        seen.update(versions)
        chosen.update({r: now[r] for r in versions if r in now})
        types = config["relation_types"].setdefault(corpus, {})
        types.update({r: stored_type(rel) for r, rel in plan.corpora[corpus].relations.items()})
        labels = config.setdefault("relation_labels", {}).setdefault(corpus, {})
        labels.update({r: rel.label for r, rel in plan.corpora[corpus].relations.items()})
    config["corpora"] = list(dict.fromkeys(config["corpora"] + list(plan.corpora)))
    config["predictors"] = list(dict.fromkeys(config["predictors"] + [p.name for p in plan.predictors]))
    config["data_reading"] = READING
    return config


def _question_facts(config: dict, now: dict[str, dict], cfg: RunConfig) -> dict[str, dict]:
    """The facts a directory's questions were drawn from (per corpus its relations and --limit) with those of this
    run's corpora added; refuses a rerun that draws a corpus's questions from others, as the questions of the facts
    answered there would differ (KMIR: a fact's choices and reasoning questions come from every fact asked)."""
    before = config["settings"].get(QUESTION_FACTS)
    if not isinstance(before, dict):  # recorded by an earlier kbc version: the run log says what each run asked
        asked = {(tuple(sorted(r.get("relations") or ())), r.get("limit")) for r in config["runs"]
                 if isinstance(r, dict)}
        now_asked = (tuple(sorted(cfg.relations)), cfg.limit)
        if asked - {now_asked}:
            relations, limit = sorted(asked - {now_asked}, key=str)[0]
            _refuse_question_facts(cfg, {"relations": list(relations), "limit": limit},
                                   {"relations": sorted(cfg.relations), "limit": cfg.limit})
        return now
    for corpus, scope in now.items():
        if before.get(corpus) not in (None, scope):
            _refuse_question_facts(cfg, before[corpus], scope, corpus)
    return {**before, **now}


def _asked(scope: dict) -> str:
    """A question scope as the flags that ask it: `--relations P19 P36 --limit 10`."""
    relations, limit = scope.get("relations") or [], scope.get("limit")
    if not relations:
        named = "every relation"
    elif len(relations) <= RELATIONS_LISTED:
        named = f"--relations {' '.join(relations)}"
    else:
        named = f"{len(relations)} relations ({', '.join(relations[:3])}, ...)"
    return f"{named} {f'--limit {limit}' if limit else 'without --limit'}"


def _refuse_question_facts(cfg: RunConfig, before: dict, now: dict, corpus: str | None = None) -> None:
    where = f" of {corpus}" if corpus else ""
    raise ConfigError(f"{cfg.out} holds questions{where} drawn from {_asked(before)}, not {_asked(now)}: a fact's "
                      "questions (their choices, the reasoning questions around it) depend on the relations and the "
                      f"--limit sample asked, so those answered there would differ; use another --out, or "
                      f"{_asked(before)}")


def same_content(seen: dict, ident: dict) -> bool:
    """Whether two predictor identities differ only in how paths are spelled whose files hash alike (every byte,
    `lm.loading.files_fingerprint`): a model folder given relative then absolute, or copied elsewhere, is the
    same input, as a prompt file's content is. Fingerprints of an earlier kbc version (not of every byte) never
    stand for their path."""
    from lm.loading import FILES_PREFIX

    def path_free(ident: dict) -> dict:
        files = ident.get("files", {})
        hashed = {k for k, v in files.items() if isinstance(v, str) and v.startswith(FILES_PREFIX)}
        options = {k: (None if k in hashed else v) for k, v in ident.get("options", {}).items()}
        return {**ident, "spec": None if "spec" in hashed else ident.get("spec"), "options": options}

    return seen.get("files") == ident.get("files") and path_free(seen) == path_free(ident)


def input_change(seen: dict, ident: dict, declared: dict[str, Option]) -> str | None:
    """In words, how two predictor identities differ where they differ only in inputs named by a path and
    fingerprinted (`files`, e.g. a text index): "on text_index /a (content sha256:..), now its default (...)";
    None where anything else differs too."""
    then_files, now_files = seen.get("files") or {}, ident.get("files") or {}
    then_opts, now_opts = seen.get("options") or {}, ident.get("options") or {}
    keys = sorted(k for k in {*then_files, *now_files} if then_files.get(k) != now_files.get(k))
    if not keys or any(k not in then_opts and k not in now_opts for k in keys):  # e.g. a model spec: not an option
        return None

    def blank(i: dict, opts: dict, files: dict) -> dict:
        return {**i, "options": {k: v for k, v in opts.items() if k not in keys},
                "files": {k: v for k, v in files.items() if k not in keys}}

    if blank(seen, then_opts, then_files) != blank(ident, now_opts, now_files):
        return None

    def named(key: str, opts: dict, files: dict) -> str:
        if key not in opts:
            default = declared[key].default if key in declared else None
            return f"its default ({default})" if default else "its default"
        return f"{opts[key]} (content {files[key]})" if key in files else str(opts[key])

    parts, unknown = [], False
    for key in keys:
        unknown = unknown or key not in then_files or key not in now_files
        parts.append(f"on {key} {named(key, then_opts, then_files)}, now {named(key, now_opts, now_files)}")
    why = ("what the default held then was not recorded, so whether both hold the same cannot be known" if unknown
           else "they hold other content")
    return f"{'; '.join(parts)} ({why})"


def recorded_identity(seen: dict | None) -> tuple[dict | None, list[str]]:
    """A predictor identity as `config.json` recorded it, read as today's records it: a server's URL as its API root
    (`http://host/v1/` and `http://host/v1` ask the same server), a generating predictor's settings that an earlier
    kbc version left out at the defaults it applied (`recorded_before`); with the options so filled."""
    if not isinstance(seen, dict):
        return seen, []
    from bridge.predictors.generation import is_server, recorded_before

    spec = seen.get("spec")
    if isinstance(spec, str) and is_server(spec):
        from lm.served import api_root

        seen = {**seen, "spec": api_root(spec)}
    return recorded_before(seen)


def _differs_only_in_option(seen: dict, ident: dict, key: str) -> bool:
    """Whether two predictor identities are the same but for the option `key`."""
    def without(i: dict) -> dict:
        return {**i, "options": {**(i.get("options") or {}), key: None}}

    return without(seen) == without(ident)


def _differs_only_in(seen: dict, ident: dict, key: str) -> bool:
    """Whether a recorded predictor identity and today's are the same but for `key`: a change that has its own,
    more helpful refusal than "was run as ..., now ..."."""
    return {**seen, key: None} == {**ident, key: None}


def _only_fewrel_data_differs(before: dict, now: dict) -> bool:
    """Whether two run settings differ in the FewRel file's content alone (`FewrelExperiment.check`)."""
    then, later = before.get("fewrel"), now.get("fewrel")
    return (isinstance(then, dict) and isinstance(later, dict) and then.get("data") != later.get("data")
            and {**before, "fewrel": {**then, "data": None}} == {**now, "fewrel": {**later, "data": None}})


DATA_NAMES = {"trex": "T-REx"}


def data_change(before: dict | None, now: dict) -> str:
    """Why a predictor's recorded `data` (corpus -> relation -> version) differs from what it would read now, for
    "predictor X <this>"."""
    if not isinstance(before, dict):
        return (f"has answers there from an earlier kbc version, which did not record the "
                f"{' and '.join(DATA_NAMES.get(c, c) for c in now)} data it answered from: whether that data "
                "changed cannot be known")
    whys = []
    for corpus in sorted({*before, *now}):
        then, later = (v if isinstance(v := side.get(corpus), dict) else {} for side in (before, now))
        changed = sorted(r for r in {*then, *later} if then.get(r) != later.get(r))
        if changed:
            listed = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            whys.append(f"{DATA_NAMES.get(corpus, corpus)} {listed}")
    return (f"answered there from other data ({'; '.join(whys)} changed since: an edited file or another "
            "--data-dir)")


CHOICE_NAMES = {"template": "template", "filter": "LAMA-UHN filter"}


def _choice(key: str, value: str) -> str:
    return f"--template {value}" if key == "template" and value != "none" else value


def _recorded(choices) -> dict[str, dict]:
    """Relation -> its choices, of a config's `version_choices` entry (one of another form: none recorded)."""
    return {r: c for r, c in choices.items() if isinstance(c, dict)} if isinstance(choices, dict) else {}


def changed_choices(before: dict[str, dict], now: dict[str, dict], changed: list[str], then: str = "then",
                    later: str = "now", verb: str = "changed") -> str | None:
    """What choice of a run (`eval.lama.version_choices`) differs for the `changed` relations (their data versions
    differ), e.g. "the template changed: --template 0 then, --template 1 now"; None where none was recorded
    differently."""
    before, now = _recorded(before), _recorded(now)
    differ = {key: (b, n) for r in changed if r in before for key in {*before[r], *now.get(r, {})}
              if (b := before[r].get(key, "none")) != (n := now.get(r, {}).get(key, "none"))}
    return "; ".join(f"the {CHOICE_NAMES.get(key, key)} {verb}: {_choice(key, b)} {then}, {_choice(key, n)} {later}"
                     for key, (b, n) in sorted(differ.items())) or None


def earlier_reading(config: dict) -> bool:
    """Whether a run config was written by a kbc that read data files otherwise (`eval.lama.READING`), or by one
    from before that was recorded: the same files may then have given it other facts."""
    return config.get("data_reading") != READING


def version_change(before: dict[str, dict], now: dict[str, dict], changed: list[str],
                   earlier: bool = False) -> str:
    """Why `changed` relations are other questions, for "... holds results <this>": a choice of the run where
    one differs, else the data files; where the earlier choices were not recorded, either. `earlier`: the run was
    written by a kbc that read the data otherwise (`earlier_reading`), which may be the cause instead."""
    rels = ", ".join(changed[:5])
    choices = changed_choices(before, now, changed)
    before = _recorded(before)
    if choices:
        return f"of other questions for {rels} ({choices})"
    unknown = sorted({key for r in changed if r not in before for key in now.get(r, {})})
    if unknown:
        return (f"of other data for {rels} (the data files or the "
                f"{' or '.join(CHOICE_NAMES.get(k, k) for k in unknown)} changed)")
    if earlier:
        return (f"of other data for {rels} (the data files changed, or this kbc reads them otherwise than the "
                "earlier version that wrote it: labels lose surrounding spaces and directional marks, a uuid given "
                "twice is numbered)")
    return f"of other data for {rels} (the data files changed)"


def _without_defaults(ident: dict, declared: dict[str, Option]) -> dict:
    """A predictor identity without the options given at their declared default: the same answers either way."""
    options = {k: v for k, v in (ident.get("options") or {}).items()
               if not (k in declared and declared[k].default is not None and str(declared[k].default) == str(v))}
    return {**ident, "options": options}


def changes(before: dict, now: dict, most: int = 6) -> str:
    """What differs between two recorded settings, key by key (`dtype float32, now bfloat16`; nested keys dotted:
    `options.reduction sum, now mean`), so that a refusal names the difference instead of printing both whole."""
    old, new = _flat(before), _flat(now)
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k, _UNSET) != new.get(k, _UNSET))
    # a key the earlier record lacks was not recorded (a default, or an earlier version); one this run lacks is
    # at its default, which the settings leave out
    parts = [f"{k} {_shown(old.get(k, _UNSET), 'not recorded')}, now {_shown(new.get(k, _UNSET), 'the default')}"
             for k in keys[:most]]
    more = f"; and {len(keys) - most} more (config.json's records)" if len(keys) > most else ""
    if not parts:  # they differ only in empty groups: shown whole
        return f"{json.dumps(before, sort_keys=True)}, now {json.dumps(now, sort_keys=True)}"
    return "; ".join(parts) + more


_UNSET = object()


def _flat(obj: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in obj.items():
        if isinstance(value, dict):  # an empty one holds no setting
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _shown(value: object, missing: str) -> str:
    if value is _UNSET:
        return missing
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
