"""The run browser: a finished `kbc run` as summary, per-relation scores and a paginated, filterable fact table.

The fact table is the run's `instances.parquet` (built from the prediction files when missing),
pivoted once per run to one row per fact with each predictor's top answer and whether it was
right; a page is then a slice of that frame, so 34,039 facts cost one load, not one per request.
"""

from __future__ import annotations

import json
import os
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bridge.predictors.registry import side_of, upper_bound_text
from bridge.run.attempts import attempt_sample
from bridge.run.directory import RunDir, did_you_mean, open_run, unfinished_refusal
from bridge.run.freshness import check_scored, files_state, read_steadily, scored_bytes
from bridge.run.instances import FILENAME, instances_frame
from bridge.run.parquet_files import read_frame
from bridge.run.reading import reading_note
from bridge.run.run_lock import BeingWritten, writing_now
from bridge.serve.across_prompts import across_prompts, coherency_prompts
from eval.cells import count_of
from eval.errors import ConfigError, DataError
from eval.report import DOMAIN_PREFIX
from eval.types import RELATION_TYPES

TYPE_GROUPS = (*RELATION_TYPES, "all")

OUTCOMES = ("all", "a-right-b-wrong", "b-right-a-wrong", "both-right", "both-wrong")
# per experiment: the metrics shown over all facts beside its headline (`headline_metric`, shown per group)
EXTRA_METRICS = {"lama": ("p@10", "mrr"), "coherency": ("coherency_round1", "coherency_round2"), "kmir": ("em",),
                 "lmkbc": ("macro-p", "macro-r", "micro-f1"), "fewrel": ("precision-macro", "recall-macro", "accuracy"),
                 "negated": ("p@1", "spearman", "became-prime", "p@1-drop")}
# per experiment: what it scores instead of single facts (the run page says so where it has no fact table)
UNITS = {"coherency": "round trips", "kmir": "questions", "lmkbc": "(subject, relation) pairs by their answer sets",
         "negated": "negated and misprimed probes", "evidence": "evidence sentences as prompts",
         "fewrel": "sentences classified by relation"}
PER_PAGE_MAX = 500


class UnknownRelation(ConfigError):
    """A relation filter that names no relation of the run: bad input to the API (400), a page not found (404)."""


# the run page's names of the metrics its summary table shows
COLUMN_NAMES = {"p@1": "P@1", "p@10": "P@10", "mrr": "MRR", "coherency": "coherency", "coherency_round1": "round 1",
                "coherency_round2": "round 2", "f1": "F1", "em": "EM", "macro-f1": "macro F1", "macro-p": "macro P",
                "macro-r": "macro R", "micro-f1": "micro F1", "abstain": "abstained %", "unlinked": "unlinked %",
                "overlap": "top-1 overlap %", "spearman": "Spearman", "became-prime": "became prime %",
                "p@1-drop": "P@1 drop"}
RANKED = ("p@1", "p@10", "mrr")  # what an answer written by generation has no value of


@dataclass
class LoadedRun:
    name: str
    run: RunDir
    _facts: pd.DataFrame | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _checked: tuple | None = None  # `files_state` when the run was last found to be what it scored

    def check(self) -> bool:
        """Refuse the run when its files changed since it was loaded and are no longer what its summaries were
        scored from (`check_scored`): its pages read its records and table while it is served. True when they
        changed and are again what was scored (a rerun scored it since): what was read from them is read again.
        While a `kbc run` holds its lock it is refused (`BeingWritten`), even before that run changed a file."""
        busy = writing_now(self.run.path)
        if busy:
            raise BeingWritten(busy)
        state = files_state(self.run.path)
        if state == self._checked:
            return False
        run = open_run(self.run.path)
        check_scored(run.path, run.config)
        changed, self._checked = self._checked is not None, state
        if changed:
            with self._lock:
                self.run, self._facts = run, None
        return changed

    @property
    def specs(self) -> dict[str, str]:
        return {name: (ident or {}).get("spec", name)
                for name, ident in (self.run.config.get("predictor_specs") or {}).items()}

    def sides(self) -> dict[str, str]:
        """Predictor -> "kb", "lm" or "baseline", as reports and leaderboards say."""
        return {p: side_of(self.run.config, p) for p in self.run.predictors}

    @property
    def experiment(self) -> str:
        return str(self.run.config.get("experiment", "lama"))

    def upper_bounds(self) -> dict[str, str]:
        """Predictor -> why it is an upper bound (it reads the gold evidence)."""
        specs = self.specs
        bounds = {p: upper_bound_text(self.run.config, p, specs.get(p, p)) for p in self.run.predictors}
        return {p: why for p, why in bounds.items() if why}

    def default_pair(self) -> tuple[str, str]:
        """A KB predictor and an LM predictor of the run where it has both, else its first two."""
        sides = self.sides()
        kb = [p for p, s in sides.items() if s == "kb"]
        lm = [p for p, s in sides.items() if s == "lm"]
        preds = self.run.predictors
        a = kb[0] if kb else preds[0]
        b = lm[0] if lm else next((p for p in preds if p != a), a)
        return a, b

    def summary(self) -> list[dict]:
        """The rows of `summary.json`, refused unless they are the bytes its scoring wrote (`scored_bytes`)."""
        path = self.run.path / "summary.json"
        if not path.exists():
            return []
        try:
            rows = json.loads(scored_bytes(self.run.path, path.name, self.run.config).decode("utf-8"))
        except ValueError as exc:
            raise DataError(f"{path}: not valid JSON ({exc})") from None
        from eval.generated_scores import rates_in_percent

        return rates_in_percent(rows if isinstance(rows, list) else rows.get("rows", []), self.experiment)

    def facts(self) -> pd.DataFrame:
        with self._lock:
            if self._facts is None:  # kept only when read whole: a run written meanwhile is refused, not kept
                self._facts = read_steadily([self.run.path], lambda: _pivot(self._instances()))
            return self._facts

    def _instances(self) -> pd.DataFrame:
        experiment = self.run.config.get("experiment", "lama")
        if experiment != "lama":
            raise DataError(f"run {self.name} is a `kbc run {experiment}` run: its scored units are not facts; "
                            "the fact table reads `kbc run lama` runs (see its summary, or `kbc report`)")
        path = self.run.path / FILENAME
        frame = read_frame(path) if path.exists() else instances_frame(self.run.path)
        missing = {"corpus", "uid", "predictor", "relation", "top1", "correct_raw"} - set(frame.columns)
        if missing:
            raise DataError(f"{path}: not a per-fact table of `kbc run lama` (no {', '.join(sorted(missing))})")
        return frame


SETTINGS = ("raw", "filtered")
_CORRECT = {"raw": "correct:", "filtered": "correct_filtered:"}  # column prefix of each setting's right or wrong


def _pivot(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (corpus, uid): subject, relation, gold, and per predictor `top1:<p>`, `correct:<p>` (raw) and
    `correct_filtered:<p>`."""
    keys = ["corpus", "uid"]
    if long.empty:
        return pd.DataFrame(columns=[*keys, "relation", "subject", "gold"])
    base = long.drop_duplicates(keys)[[*keys, "relation", "subject", "subject_id", "gold", "prompt"]]
    top = long.pivot_table(index=keys, columns="predictor", values="top1", aggfunc="first", dropna=False)
    top.columns = [f"top1:{c}" for c in top.columns]
    # each predictor's own prompt: a generating one was sent a question, not the cloze a masked LM fills
    asked = long.pivot_table(index=keys, columns="predictor", values="prompt", aggfunc="first", dropna=False)
    asked.columns = [f"prompt:{c}" for c in asked.columns]
    out = base.set_index(keys).join(top).join(asked)
    for setting in SETTINGS:  # right or wrong in each setting, as the summaries of that setting count it
        column = f"correct_{setting}" if f"correct_{setting}" in long.columns else "correct_raw"
        right = long.assign(correct=long[column].astype("object")).pivot_table(
            index=keys, columns="predictor", values="correct", aggfunc="first", dropna=False)
        right.columns = [f"{_CORRECT[setting]}{c}" for c in right.columns]
        out = out.join(right)
    out = out.reset_index()
    return out.sort_values(["corpus", "relation", "uid"], kind="stable").reset_index(drop=True)


class Runs:
    def __init__(self, paths: list[Path]) -> None:
        self.runs: dict[str, LoadedRun] = {}
        self.boards: dict[tuple, dict] = {}  # leaderboards already computed
        self.lock = threading.Lock()
        for path in paths:
            run = open_run(path)
            refused = unfinished_refusal(run, Path(path))
            if refused:
                raise DataError(refused)
            # named by its folder as given (a symbolic link names a run as the link does)
            loaded = LoadedRun(Path(os.path.abspath(path)).name, run)
            loaded.check()  # the summaries shown are what scoring its files gave
            name = loaded.name
            if any(r.run.path.resolve() == Path(path).resolve() for r in self.runs.values()):
                continue  # the same run under another spelling
            if name in self.runs:
                raise ConfigError(f"two --run directories are named {name!r} ({self.runs[name].run.path} and "
                                  f"{path}), and the explorer names a run by its folder; give one another name, e.g. "
                                  f"a link to it: `ln -s {shlex.quote(os.path.abspath(path))} "
                                  f"{shlex.quote(name + '-2')}`, then --run {shlex.quote(name + '-2')}")
            self.runs[name] = loaded

    def get(self, name: str) -> LoadedRun:
        if name not in self.runs:
            raise LookupError(f"no run {name!r}{did_you_mean(name, list(self.runs))}")
        if self.runs[name].check():
            with self.lock:
                self.boards.clear()
        return self.runs[name]

    def listing(self) -> list[dict]:
        return [{"name": n, "path": str(r.run.path), "corpora": r.run.corpora, "predictors": r.run.predictors,
                 "experiment": r.run.config.get("experiment", "lama")} for n, r in self.runs.items()]


def other_data(loaded: LoadedRun, explorer) -> dict | None:
    """Where the run was made from other data (or other questions) than the live view reads for relations the live
    view asks: the run's recorded `data_versions` against `explorer.data_versions` under the run's `--compat`, the
    check a rerun of `kbc run` makes. None where every such relation is the same, or the live view asks none."""
    from bridge.run.config import earlier_reading, version_change
    from eval.lama import version_choices

    config = loaded.run.config
    corpus = explorer.corpus.name
    recorded = (config.get("data_versions") or {}).get(corpus) or {}
    asked = [r for r in recorded if r in explorer.relations]
    if corpus not in loaded.run.corpora or not asked:
        return None
    settings = config.get("settings") or {}
    live = explorer.data_versions(settings.get("compat"), settings.get("misprimes"))
    changed = sorted(r for r in asked if recorded[r] != live.get(r))
    if not changed:
        return None
    chosen = (config.get("version_choices") or {}).get(corpus) or {}
    why = version_change(chosen, version_choices(explorer.corpus), changed, earlier_reading(config))
    return {"corpus": corpus, "relations": changed,
            "message": f"run {loaded.name} was made from other {corpus} data than the live view reads "
                       f"({explorer.data_dir}): it holds results {why}; there the live gold and answers are not "
                       "what the run recorded"}


def _interval(row: dict) -> list[float] | None:
    low, high = row.get("ci_low"), row.get("ci_high")
    return [low, high] if isinstance(low, (int, float)) and isinstance(high, (int, float)) else None


def overview(loaded: LoadedRun, setting: str = "raw") -> dict:
    """The summary table (all facts and relation-type groups or question kinds) and per-relation scores of one
    setting, in the metrics of the run's experiment (P@1, coherency or token F1).

    Rows of scope `own` (each predictor on the facts it answered), as `summary.md` leads with; beside them the
    headline over `shared` facts (those every predictor scored on it answered), each with its number of facts."""
    from bridge.run.summaries import generating, headline_metric, silent_in, silent_note

    metric, extra = headline_metric(loaded.experiment), EXTRA_METRICS.get(loaded.experiment, EXTRA_METRICS["lama"])
    every = [r for r in loaded.summary() if r.get("setting", setting) == setting and not r.get("prompt")]
    relations = _relations(loaded, every)
    metric, extra = _shown_metrics(loaded.experiment, every, setting, metric, extra)
    rows = [r for r in every if r.get("scope", "own") == "own"]
    shared = {(r.get("corpus"), r.get("predictor")): r for r in every
              if r.get("scope") == "shared" and r.get("group") == "all" and r.get("metric") == metric}
    overall = [r for r in rows if r.get("group") not in relations]  # "all", relation types or question kinds
    per_relation = [r for r in rows if r.get("group") in relations]
    a, b = loaded.default_pair()
    found = list(dict.fromkeys(r.get("group") for r in overall if r.get("metric") == metric))
    # as summary.md's columns: types in their order, other groups as found, knowledge domains by name
    others = [g for g in found if g not in TYPE_GROUPS]
    groups = ([g for g in ("all", "1-1", "N-1", "N-M") if g in found]
              + [g for g in others if not str(g).startswith(DOMAIN_PREFIX)]
              + sorted(g for g in others if str(g).startswith(DOMAIN_PREFIX)))
    upper = loaded.upper_bounds()
    silent = silent_in(every)  # predictors that answered nothing: a row of 0 facts, no score, their reasons
    table = []  # one row per (corpus, predictor): the metric per group, then the others over all facts
    for corpus in loaded.run.corpora:
        for pred in loaded.run.predictors:
            mine = {(r.get("metric"), r.get("group")): r for r in overall
                    if r.get("corpus") == corpus and r.get("predictor") == pred}
            if not mine:
                continue
            both = shared.get((corpus, pred), {})
            dropped = silent.get(corpus, {}).get(pred)
            table.append({"corpus": corpus, "predictor": pred, "side": loaded.sides().get(pred),
                          "facts": 0 if dropped else (mine.get((metric, "all")) or mine.get(("em", "all"))
                                                      or {}).get("n_facts"),
                          "answered_none": dropped,
                          metric: {g: mine.get((metric, g), {}).get("value") for g in groups},
                          "ci": {g: _interval(mine.get((metric, g), {})) for g in groups},
                          **{m: mine.get((m, "all"), {}).get("value") for m in extra},
                          "shared": {"value": both.get("value"), "facts": both.get("n_facts"),
                                     "ci": _interval(both)} if both else None,
                          "upper_bound": upper.get(pred)})
    notes = [line for corpus, names in silent.items() for line in
             silent_note(corpus, names, "it has no score (`-`, facts 0)")]
    # a shared scope under half of what was asked is said, never left to the numbers
    for corpus in loaded.run.corpora:
        mine = [r for r in table if r["corpus"] == corpus]
        asked = max((r["facts"] or 0 for r in mine), default=0)
        kept = max((r["shared"]["facts"] or 0 for r in mine if r["shared"]), default=0)
        if 2 * kept < asked:
            notes.append(f"{corpus}: the shared facts are {kept} of the {asked} a predictor answered (less than "
                         "half): read the own columns beside them")
    notes += _dash_notes(loaded, table, metric, groups, extra)
    # per relation, the scope summary.md, `kbc report` and the leaderboard lead with (shared where the run has it),
    # then each predictor's own facts: one cell, one value in every view
    labels = loaded.run.config.get("relation_labels") or {}
    relation_scopes = [scope for scope in ("shared", "own") if any(
        r.get("scope", "own") == scope and r.get("metric") == metric and r.get("group") in relations for r in every)]
    order = _relation_order(loaded.run.config, loaded.run.corpora)
    relation_tables = [{"scope": scope, "rows": _relation_rows(every, relations, metric, scope, labels, order)}
                       for scope in relation_scopes]
    relation_table = relation_tables[0]["rows"] if relation_tables else []
    # the exact match per relation of predictors that wrote their answers, where the run leads with a ranked metric
    # (P@1) they have no value of; elsewhere (KMIR's F1) every predictor has both, and its tables show them
    writers = {p for c in loaded.run.corpora for p in generating(loaded.run.config, c)}
    written = [] if metric not in RANKED else list(dict.fromkeys(
        r.get("predictor") for r in per_relation if r.get("metric") == "em" and r.get("predictor") in writers))
    per_relation_em = [r for r in per_relation if r.get("predictor") in written]
    written_table = [] if not written else [
        {"corpus": c, "relation": rel, "em": {r.get("predictor"): r.get("value") for r in per_relation_em
                                              if (r.get("corpus"), r.get("group"), r.get("metric")) == (c, rel, "em")}}
        for c, rel in order(list({(r.get("corpus"), r.get("group")) for r in per_relation_em
                                   if r.get("metric") == "em"}))]
    return {"name": loaded.name, "path": str(loaded.run.path), "corpora": loaded.run.corpora,
            "experiment": loaded.experiment, "metric": metric, "extra_metrics": list(extra),
            "upper_bounds": upper, "has_facts": loaded.experiment == "lama",
            "unit": UNITS.get(loaded.experiment, "units"),
            "digits": 3 if loaded.experiment == "lmkbc" else 2,  # LM-KBC's scores are fractions, as its evaluate.py
            "predictors": loaded.run.predictors, "sides": loaded.sides(), "setting": setting,
            "default_pair": [a, b], "summary": overall, "per_relation": per_relation, "groups": groups,
            "table": table, "relation_table": relation_table, "relation_tables": relation_tables, "notes": notes,
            "reading": reading_note(loaded.run.path, loaded.run.config),
            "written": written, "written_table": written_table,
            "relations": relations, "names": COLUMN_NAMES,
            "outcomes": list(OUTCOMES),
            "across_prompts": across_prompts(loaded.summary(), loaded.run.predictors, labels,
                                             _asked_sentences(loaded))}


def _asked_sentences(loaded: LoadedRun) -> Callable[[], pd.DataFrame] | None:
    """What the per-prompt table reads each prompt's template from: LAMA's fact table, a coherency run's records."""
    if loaded.experiment == "lama":
        return loaded.facts
    if loaded.experiment == "coherency":
        return lambda: read_steadily([loaded.run.path], lambda: coherency_prompts(loaded.run))
    return None


def _relations(loaded: LoadedRun, rows: list[dict]) -> list[str]:
    """The run's relations (`relation_types` of its config) and every other group of its summaries that is no
    relation type, `all`, question kind or domain: the derived relations only KMIR's reasoning questions ask
    (`schema:birthPlace`), which summary.md and `kbc report` list per relation too (`eval.report.NOT_RELATIONS`)."""
    from eval.report import DOMAIN_PREFIX, NOT_RELATIONS

    held = {rel for types in (loaded.run.config.get("relation_types") or {}).values() for rel in types}
    held |= {g for r in rows if isinstance(g := r.get("group"), str) and g not in NOT_RELATIONS
             and not g.startswith(DOMAIN_PREFIX)}
    return sorted(held)


def _relation_order(config: dict, corpora: list[str]) -> Callable[[list[tuple[str, str]]], list[tuple[str, str]]]:
    """(corpus, relation) pairs as summary.md and `kbc compare` list them: corpora in run order, relations by type,
    then by id with numbers as numbers (P36, P19, P1303), so every view reads in one order."""
    from bridge.run.summaries import relation_info
    from eval.report import relation_order

    info = relation_info(config)

    def order(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
        held = list(dict.fromkeys([c for c in corpora if any(k[0] == c for k in keys)] + sorted(k[0] for k in keys)))
        return [(corpus, rel) for corpus in held
                for rel in relation_order([r for c, r in keys if c == corpus], info.get(corpus))]
    return order


def _relation_rows(rows: list[dict], relations: list[str], metric: str, scope: str, labels: dict,
                   order: Callable[[list[tuple[str, str]]], list[tuple[str, str]]]) -> list[dict]:
    """Per (corpus, relation) of one scope, in `order`: its label, `metric` per predictor and the facts it is over
    (`n`, one number where every predictor's is the same, as the shared scope's are)."""
    cells: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r.get("metric") == metric and r.get("group") in relations and r.get("scope", "own") == scope:
            cells.setdefault((r.get("corpus"), r.get("group")), {})[r.get("predictor")] = r
    out = []
    for corpus, rel in order(list(cells)):
        by = cells[(corpus, rel)]
        counts = {p: r.get("n_facts") for p, r in by.items()}
        label = (labels.get(corpus) or {}).get(rel, "")
        out.append({"corpus": corpus, "relation": rel, "label": "" if label == rel else label,  # ids as labels: none
                    metric: {p: r.get("value") for p, r in by.items()}, "n": counts,
                    "facts": next(iter(counts.values())) if len(set(counts.values())) == 1 else None})
    return out


def _shown_metrics(experiment: str, rows: list[dict], setting: str, metric: str, extra: tuple[str, ...]
                   ) -> tuple[str, tuple[str, ...]]:
    """The metric shown per group and those over all facts: a LAMA run leads with exact match where every
    predictor wrote its answers by generation (and shows no P@10 or MRR then), and shows the exact match,
    abstention and unlinked rates of generated answers where it has them (as summary.md); an LM-KBC run its
    abstention and unlinked rates."""
    from bridge.run.summaries import lead_metric
    from eval.generated_scores import GENERATED_METRICS

    held = {r.get("metric") for r in rows}
    if experiment != "lama":
        return metric, (*extra, *(m for m in ("abstain", "unlinked") if m in held and experiment == "lmkbc"))
    metric = lead_metric(experiment, rows, setting)
    ranked = () if metric == "em" else extra
    return metric, (*ranked, *(m for m in GENERATED_METRICS if m in held and m != metric))


def _dash_notes(loaded: LoadedRun, table: list[dict], metric: str, groups: list[str], extra: tuple[str, ...]
                ) -> list[str]:
    """Why a column of the summary table is `-` for every predictor of a corpus, in the words summary.md uses:
    answers written by generation have no ranking; no unit was answered by every predictor."""
    from bridge.run.summaries import generating, unranked_note
    from eval.report import SUBSET_METRICS, unshared_note

    name = COLUMN_NAMES.get(metric, metric)
    notes = []
    for corpus in loaded.run.corpora:
        mine = [r for r in table if r["corpus"] == corpus]
        columns = [(metric, f"{name} {g} own", [r[metric][g] for r in mine]) for g in groups]
        columns += [(e, f"{COLUMN_NAMES.get(e, e)} own", [r[e] for r in mine]) for e in extra]
        shared = (metric, f"{name} all shared", [r["shared"]["value"] if r["shared"] else None for r in mine])
        empty = [(m, label) for m, label, values in [*columns, shared] if mine and all(v is None for v in values)]
        written = generating(loaded.run.config, corpus)
        unranked = [label for m, label in empty if m in RANKED and all(r["predictor"] in written for r in mine)]
        if unranked:
            notes.append(f"`-` under {', '.join(unranked)} for every predictor: {unranked_note(corpus, written)}")
        elif loaded.experiment == "lama" and written and [r for r in mine if r["predictor"] in written]:
            ranked = [f"{COLUMN_NAMES.get(m, m)}" for m in (metric, *extra) if m in RANKED]
            notes.append((f"`-` under {', '.join(ranked)} for {', '.join(written)}: " if ranked else "")
                         + unranked_note(corpus, written))
        rest = [label for _, label in empty if label not in unranked]
        if shared[1] in rest:
            none = [r["predictor"] for r in mine if not r["facts"]]
            some = [r["predictor"] for r in mine if r["predictor"] not in none]
            notes.append(f"{corpus}: {unshared_note(shared[1], none, some)}")
            rest.remove(shared[1])
        for m, label, values in columns[len(groups):]:  # taken over some of the answered facts: why none is
            what, why = SUBSET_METRICS.get(m, ("", ""))
            lacking = [r["predictor"] for r, v in zip(mine, values) if v is None and r["facts"]]
            if what and lacking:
                who = "every predictor" if len(lacking) == len(mine) else ", ".join(lacking)
                notes.append(f"{corpus}: `-` under {label} for {who}: no fact it answered {what} ({why})")
                if label in rest:
                    rest.remove(label)
        grouped = [label for label in rest if label in [c[1] for c in columns[:len(groups)]]]
        if grouped:  # a relation type (or question kind) that another corpus of the run has
            notes.append(f"{corpus}: `-` under {', '.join(grouped)} for every predictor: no relation of {corpus} "
                         "is in that group")
        if len(grouped) < len(rest):
            notes.append(f"{corpus}: `-` under {', '.join(x for x in rest if x not in grouped)} for every "
                         "predictor: summary.json holds no score of it")
    return notes


def board_choices(runs: Runs, experiment: str | None = None) -> dict:
    """What the leaderboard page can pick: the experiment (runs of different ones measure different things, so
    each has its own board), its runs, and the corpora they hold."""
    if not runs.runs:
        raise ConfigError("no run is browsed: start with --run RUN_DIR")
    groups: dict[str, list[LoadedRun]] = {}
    for loaded in runs.runs.values():
        groups.setdefault(loaded.experiment, []).append(loaded)
    experiment = experiment or next(iter(groups))
    if experiment not in groups:
        raise ConfigError(f"experiment={experiment!r}: no browsed run is of it{did_you_mean(experiment, list(groups))}")
    mine = groups[experiment]
    corpora = list(dict.fromkeys(c for r in mine for c in r.run.corpora))
    return {"experiment": experiment, "experiments": {e: [r.name for r in g] for e, g in groups.items()},
            "runs": [r.name for r in mine], "corpora": corpora,
            "corpus_runs": {c: [r.name for r in mine if c in r.run.corpora] for c in corpora}}


def _holding(mine: list[LoadedRun], corpus: str | None) -> tuple[list[LoadedRun], str | None, list[str]]:
    """The runs a board of `corpus` ranks: those that hold it (none named: every corpus all runs hold, else the
    first corpus of the first run), the corpus, and a note naming the runs left out."""
    if corpus is None:
        if any(all(c in r.run.corpora for r in mine) for c in mine[0].run.corpora):
            return mine, None, []
        corpus = mine[0].run.corpora[0]
    held = [r for r in mine if corpus in r.run.corpora]
    if not held:
        raise ConfigError(f"corpus={corpus!r}: no chosen run holds it; pick one of "
                          f"{', '.join(dict.fromkeys(c for r in mine for c in r.run.corpora))}")
    left = [r.name for r in mine if r not in held]
    return held, corpus, [f"{corpus}: left out {', '.join(left)} (no {corpus} results; the corpus picker shows "
                          "what each run holds)"] if left else []


def _sharing(mine: list[LoadedRun], corpus: str | None) -> tuple[list[LoadedRun], list[str]]:
    """The runs ranked together by default: each in turn, from the first, where it shares a relation of every corpus
    ranked (`corpus`, else every corpus they all hold) with those already kept; and the names of the others."""
    def relations(run: LoadedRun, name: str) -> set[str]:
        return set((run.run.config.get("relation_types") or {}).get(name) or {})

    def together(group: list[LoadedRun]) -> bool:
        corpora = [corpus] if corpus else [c for c in group[0].run.corpora if all(c in r.run.corpora for r in group)]
        return all(set.intersection(*(relations(r, c) for r in group)) for c in corpora)

    kept = [mine[0]]
    for run in mine[1:]:
        if together([*kept, run]):
            kept.append(run)
    return kept, [r.name for r in mine if r not in kept]


def leaderboard(runs: Runs, corpus: str | None = None, metric: str | None = None, setting: str = "raw",
                scope: str = "shared", experiment: str | None = None, chosen: list[str] | None = None) -> dict:
    """Every predictor of the browsed runs of one experiment (`experiment`, else the first run's; `chosen`: only
    these runs) in one table, best first, each total with its stderr and interval (`kbc leaderboard`): runs over
    different relations are scored over those they share, and `notes` says what was left out. Computed once per
    choice."""
    from bridge.run.leaderboard import board, intervals_line, is_fraction
    from bridge.run.summaries import lead_metric

    choices = board_choices(runs, experiment)
    experiment = choices["experiment"]
    names = list(dict.fromkeys(chosen or choices["runs"]))
    unknown = [n for n in names if n not in choices["runs"]]
    if unknown:
        raise ConfigError(f"run={unknown[0]!r}: no browsed {experiment} run of that name"
                          f"{did_you_mean(unknown[0], choices['runs'])}")
    mine, corpus, left = _holding([runs.get(n) for n in names], corpus)
    if not chosen:  # the default board ranks what can be ranked together, and says how to pick the rest
        mine, apart = _sharing(mine, corpus)
        names = [n for n in names if n not in apart]
        if apart:
            one = len(apart) == 1
            left.append(f"left out {', '.join(apart)}: {'it shares' if one else 'they share'} no relation with "
                        f"{', '.join(r.name for r in mine)} (runs are ranked over the relations they share); tick "
                        f"{'it' if one else 'them'} in the run picker to rank {'it' if one else 'them'} apart")
    # none asked: what `kbc leaderboard` ranks (exact match where every predictor generates)
    metric = metric or read_steadily([r.run.path for r in mine], lambda: lead_metric(
        experiment, [row for r in mine for row in r.summary()], setting))
    key = (experiment, tuple(names), corpus, metric, setting, scope)
    with runs.lock:
        if key not in runs.boards:
            found = board([r.run.path for r in mine], corpus, metric, setting, scope, flag="metric=")
            shown = {str(r.run.path): r.name for r in mine}
            notes, warned = left + found.notes, list(found.warnings)
            for path, name in shown.items():
                notes, warned = [n.replace(path, name) for n in notes], [w.replace(path, name) for w in warned]
            rows = [{**row, "run": shown.get(row["run"], row["run"])} for row in found.rows]
            # why each upper bound is one (the badge's title), beside rows that stay `kbc leaderboard`'s
            why = {f"{r.name}/{p}": text for r in mine for p, text in r.upper_bounds().items()}
            # fractions (MRR, LM-KBC's F1) to three decimals and so named, as summary.md and `kbc leaderboard`
            runs.boards[key] = {"rows": rows, "notes": notes, "warnings": warned, "unit": found.unit,
                                "upper_bounds": why,
                                "places": 3 if is_fraction(metric) else 2,
                                "scale": "a fraction, 0-1" if is_fraction(metric) else "",
                                "intervals": intervals_line(rows)}
    # runs an earlier version scored under another reading of the data: each row of theirs is marked, and why said
    readings = {r.name: note for r in mine if (note := reading_note(r.run.path, r.run.config))}
    found = runs.boards[key]
    return {**choices, "chosen": names, "corpus": corpus, "metric": metric, "setting": setting, "scope": scope,
            **found, "notes": [*found["notes"], *readings.values()], "readings": readings}


def fact_page(loaded: LoadedRun, relation: str | None = None, outcome: str = "all", a: str | None = None,
              b: str | None = None, page: int = 1, per_page: int = 50, setting: str = "raw") -> dict:
    """One page of the fact table, filtered by relation and by who was right (A vs B) in `setting`, the setting
    of the summary shown above it."""
    if outcome not in OUTCOMES:
        raise ConfigError(f"outcome={outcome!r}: use one of {', '.join(OUTCOMES)}")
    if page < 1:
        raise ConfigError(f"page={page}: must be at least 1")
    if not 1 <= per_page <= PER_PAGE_MAX:
        raise ConfigError(f"per_page={per_page}: must be between 1 and {PER_PAGE_MAX}")
    default_a, default_b = loaded.default_pair()
    a = loaded.run.predictor(a) if a else default_a
    b = loaded.run.predictor(b) if b else default_b
    frame = loaded.facts()
    if relation:
        known = set(frame["relation"].dropna())
        if relation not in known:
            raise UnknownRelation(f"the run has no relation {relation!r}{did_you_mean(relation, sorted(known))}")
        frame = frame[frame["relation"] == relation]
    if outcome != "all":
        ra = frame.get(f"{_CORRECT[setting]}{a}", pd.Series(None, index=frame.index)).astype("object")
        rb = frame.get(f"{_CORRECT[setting]}{b}", pd.Series(None, index=frame.index)).astype("object")
        wa, wb = ra.eq(True), rb.eq(True)
        la, lb = ra.eq(False), rb.eq(False)
        mask = {"a-right-b-wrong": wa & lb, "b-right-a-wrong": la & wb, "both-right": wa & wb,
                "both-wrong": la & lb}[outcome]
        frame = frame[mask]
    total = len(frame)  # rows: queries, one per fact and prompt where the run asked a prompt set
    pages = max(1, -(-total // per_page))
    if page > pages:  # an empty page "999 of 8" reads as a table with nothing in it
        raise ConfigError(f"page={page}: past the last page; these {count_of(total, 'rows')} fill "
                          f"{count_of(pages, 'pages')} of {per_page}")
    chunk = frame.iloc[(page - 1) * per_page: page * per_page]
    from bridge.run.fact_columns import fact_uid, prompt_of

    facts = frame[["corpus"]].assign(uid=frame["uid"].astype(str).map(fact_uid)).drop_duplicates()

    preds = loaded.run.predictors
    rows = []
    for rec in chunk.to_dict("records"):
        row = {k: _plain(rec.get(k)) for k in ("corpus", "uid", "relation", "subject", "subject_id", "gold")}
        # a prompt set asks each fact once per prompt: the row says which (its id and the sentence asked)
        row["prompt_id"], row["prompt"] = prompt_of(str(row["uid"])), _plain(rec.get("prompt"))
        row["predictors"] = {p: {"top1": _plain(rec.get(f"top1:{p}")),
                                 "correct": _plain(rec.get(f"{_CORRECT[setting]}{p}")),
                                 "prompt": _plain(rec.get(f"prompt:{p}"))} for p in preds}
        rows.append(row)
    return {"run": loaded.name, "relation": relation, "outcome": outcome, "a": a, "b": b, "setting": setting,
            "page": page,
            "per_page": per_page, "total": total, "queries": total, "n_facts": len(facts),
            "pages": pages, "predictors": preds,
            "prompted": any(prompt_of(str(u)) for u in frame["uid"]), "facts": rows}


def prompts_note(loaded: LoadedRun, result: dict) -> str | None:
    """Where the run asked each fact once per prompt of a set, that the live view asks one sentence, not the
    prompt of the row it was reached from; None for a run of one prompt per relation."""
    if not any(r.get("prompt") for r in loaded.summary()):
        return None
    settings = loaded.run.config.get("settings") or {}
    named = settings.get("prompts") if settings.get("prompts") not in (None, "lama") else None
    asked = (result.get("query") or {}).get("prompt") or ""
    return (f"run {loaded.name} asked each fact once per prompt{f' of {named}' if named else ''} (its fact table "
            f"names each query's prompt); this view asks one sentence: {asked}")


def asked_line(loaded: LoadedRun) -> str:
    """What a run asked, for its pages' header (where the live view's corpus is shown elsewhere): the experiment,
    each corpus with its relations, and the sample, from the attempts its config.json records."""
    config = loaded.run.config
    attempts = [a for a in config.get("runs") or [] if isinstance(a, dict)]
    relations: dict[str, list[str]] = {c: [] for c in loaded.run.corpora}
    for attempt in attempts:
        for corpus, rels in (attempt.get("asked") or {}).items():
            relations.setdefault(corpus, []).extend(r for r in rels if r not in relations[corpus])
    corpora = ", ".join(f"{c}: {count_of(len(r), 'relations')}" if r else c
                        for c, r in relations.items())
    samples = dict.fromkeys(attempt_sample(a) for a in attempts)
    sample = "; ".join(f"a sample (--limit {limit}, seed {seed})" for limit, seed in samples if limit)
    return f"kbc run {config.get('experiment', 'lama')}, {corpora}" + (f", {sample}" if sample else "")


def fact_detail(loaded: LoadedRun, uid: str) -> dict:
    """One fact (or a FewRel run's sentence) across every predictor of the run (what `kbc show --json` prints)."""
    from bridge.cli.compare import _fact_json, find_facts

    if loaded.experiment == "fewrel":  # no fact table: the sentence is looked up in its records, as `kbc show` does
        found = find_facts(loaded.run, loaded.run.corpora, uid, None, None)
    else:
        relation = _relation_of(loaded, uid)
        found = find_facts(loaded.run, loaded.run.corpora, uid, None, relation) if relation else []
    if not found:
        raise LookupError(f"run {loaded.name} has no fact with uid {uid!r}{_prompt_uids(loaded, uid)}")
    return _fact_json(loaded.run, found[0])


def _prompt_uids(loaded: LoadedRun, uid: str) -> str:
    """Where `uid` is a fact a prompt set asked once per prompt, the uids of its queries (`<fact>@<prompt>`), each
    of which has its page; else nothing."""
    if loaded.experiment == "fewrel" or "@" in uid:
        return ""
    uids = [u for u in loaded.facts()["uid"].astype(str) if u.startswith(uid + "@")]
    if not uids:
        return ""
    shown = ", ".join(uids[:3]) + (f" and {len(uids) - 3} more" if len(uids) > 3 else "")
    return f": the run asked that fact once per prompt, each query with its own uid ({shown})"


def _relation_of(loaded: LoadedRun, uid: str) -> str | None:
    frame = loaded.facts()
    hit = frame.loc[frame["uid"] == uid, "relation"]
    return str(hit.iloc[0]) if len(hit) else None


def _plain(value):
    if value is None or value is pd.NA:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value


def recorded_data_dir(runs: Runs, corpus: str) -> str | None:
    """The data folder the browsed runs of `corpus` recorded (config.json `data_dir`), which the live view reads when
    no --data-dir is given: their facts are then shown beside the gold they were scored on, whatever folder the
    command runs in. None where no browsed run asked `corpus`; one `error:` where they name different folders or
    the folder is gone."""
    made: dict[str, str] = {}  # folder -> the first run made from it
    for name, loaded in runs.runs.items():
        where = loaded.run.config.get("data_dir")
        if isinstance(where, str) and where and corpus in loaded.run.corpora:
            made.setdefault(where, name)
    if not made:
        return None
    if len(made) > 1:
        shown = ", ".join(f"run {name} from {where}" for where, name in made.items())
        raise ConfigError(f"the --run directories were made from different data folders ({shown}); pass --data-dir "
                          "with the one the live view should read")
    where, name = next(iter(made.items()))
    if not Path(where).is_dir():
        raise DataError(f"run {name} was made from data in {where}, which is gone; pass --data-dir with the data "
                        "folder it was made from (or another, to browse it beside other data)")
    return where


def refuse_other_data(runs: Runs, explorer, where: str) -> None:
    """One `error:` where the data folder the runs recorded (`where`) now holds other data than they were made from
    (`other_data`): read without --data-dir, its live gold would be taken for the one they were scored on."""
    for loaded in runs.runs.values():
        other = other_data(loaded, explorer) if loaded.run.config.get("data_dir") == where else None
        if other is not None:
            raise DataError(f"{other['message']}; pass --data-dir {shlex.quote(str(explorer.data_dir))} to browse "
                            "it beside that data anyway, or --data-dir with the data it was made from")
