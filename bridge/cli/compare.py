"""`kbc compare` (two predictors fact by fact) and `kbc show` (one fact across every predictor).

Both read a run directory written by `kbc run`; neither writes to it. `compare` judges each unit the
way its experiment scores it: a LAMA fact is right when the gold is ranked 1st (raw or filtered), a
KMIR question when its answer matches the gold exactly (its `em`), grouped by question kind, and an LM-KBC
subject-relation pair has the challenge's F1, A ahead where its F1 is higher. Other experiments (coherency
asks each instance in two rounds and four steps) are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import click

from bridge.cli.fact_lines import (
    SHOW_TOP,
    answer_dicts,
    fact_head,
    gold_ranks_text,
    indented,
    not_answered,
    prompt_text,
    ranked_entry,
    ranked_lines,
    read_lines,
    with_id,
)
from bridge.cli.value_types import Int, PathType
from bridge.experiments.base import dropped_unit
from bridge.experiments.lama import LamaExperiment
from bridge.run.attempts import rerun_hint
from bridge.run.directory import RunDir, did_you_mean, incomplete, open_run, read_records
from bridge.run.freshness import check_readable, fresh_instances, read_steadily, unscored_change
from bridge.run.results import right
from bridge.run.summaries import generating, relation_info, sample_note
from eval.answer_text import GENERATED, generation_fields
from eval.cells import fixed, tsv_cell
from eval.compare import MAX_BOOTSTRAP, Comparison, Counts, Pair, ScoredPair, compare_scores
from eval.compare import compare as compare_pairs
from eval.errors import ConfigError, DataError
from eval.graphemes import columns, ljust, rjust
from eval.labels import clean_label, printable, search_key
from eval.report import relation_order
from eval.set_metrics import pair_from_record
from eval.user_values import strict_float

LISTS = {"only-a": "only_a", "only-b": "only_b", "both": "both", "neither": "neither"}


def _top1(record: dict) -> str:
    answers = record.get("answers") or []
    return str(answers[0][0]) if answers else ""


@dataclass(frozen=True)
class Scoring:
    """How one experiment's records are judged: right or wrong, the group a unit counts in, what it answered."""

    unit: str  # "facts", "questions"
    group: str  # "relation", "question kind"
    metric: str  # the column name of the share right
    rule: str  # said above the table
    right: Callable[[dict, str], bool]
    group_of: Callable[[dict], str]
    top: Callable[[dict], str]
    settings: tuple[str, ...] = ("raw", "filtered")
    pooled: bool = False  # the total over every unit (as the experiment's summaries), not macro over groups
    generated: str = ""  # said after the rule when a compared predictor answered by generation
    generated_metric: str = ""  # the column name of a generating predictor's share right, where it differs
    answered: str = "top1"  # what `top` gives: `--list`'s column heads are "A top1", "B top1"
    score: Callable[[dict], float] | None = None  # a unit's score in [0, 1] where it is more than right or wrong
    fraction: bool = False  # its shares print as fractions (0-1), as the experiment's summaries, not percent

    def rule_for(self, generates: bool) -> str:
        return f"{self.rule} {self.generated}" if generates and self.generated else self.rule

    def metric_for(self, generates: bool) -> str:
        return self.generated_metric if generates and self.generated_metric else self.metric


SCORINGS = {
    "lama": Scoring("facts", "relation", "P@1", "a fact is right when the gold is ranked 1st", right,
                    lambda r: str(r["relation"]), _top1,
                    generated="(answered by generation: when its answer is the gold)", generated_metric="EM"),
    "kmir": Scoring("questions", "question kind", "EM", "a question is right when its answer matches the gold "
                    "exactly (EM, SQuAD normalisation)", lambda r, setting: float(r.get("em") or 0.0) == 1.0,
                    lambda r: str(r.get("kind") or r["relation"]), lambda r: str(r.get("answer") or ""), ("raw",),
                    pooled=True),
    "lmkbc": Scoring("pairs", "relation", "F1", "a subject-relation pair scores its F1 as the challenge's evaluate.py "
                     "(ids against ids), as a fraction (0-1, as summary.md and kbc leaderboard print it); A is "
                     "ahead on a pair where its F1 is higher",
                     lambda r, setting: False, lambda r: str(r["relation"]),
                     lambda r: ", ".join(str(x) for x in r.get("predicted") or []), ("raw",), pooled=True,
                     score=lambda r: pair_from_record(r).f1, answered="answers", fraction=True),
}


def scoring_for(run: RunDir, setting: str) -> Scoring:
    """The run's experiment's own correctness, or a clear refusal."""
    experiment = str(run.config.get("experiment", "lama"))
    scoring = SCORINGS.get(experiment)
    if scoring is None:
        raise ConfigError(f"{run.path} is a `kbc run {experiment}` run: kbc compare judges LAMA facts, KMIR "
                          f"questions and LM-KBC pairs one by one, not {experiment} instances; compare its "
                          f"summaries with `kbc report {run.path}` (`--delta A B`: B minus A per relation)")
    if setting not in scoring.settings:
        raise ConfigError(f"{run.path} is a `kbc run {experiment}` run, scored only in the raw setting; drop "
                          f"--setting {setting}")
    return scoring


def _correct(record: dict, setting: str) -> bool:
    return SCORINGS["lama"].right(record, setting)


class Resamples(click.ParamType):
    """A number of bootstrap resamples: 0 (no interval) up to `MAX_BOOTSTRAP`; `1e4` and `10,000` are 10000."""

    name = "N"

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            number = float(value)
        else:
            text = str(value)
            if re.fullmatch(r"[0-9]{1,3}([,_])[0-9]{3}(\1[0-9]{3})*", text):  # thousands, grouped by 3
                text = re.sub(r"[,_]", "", text)
            try:
                number = strict_float(text)
            except ValueError:
                self.fail(f"{value!r} is not a whole number of resamples", param, ctx)
        if not number.is_integer() or not 0 <= number <= MAX_BOOTSTRAP:
            self.fail(f"{value}: give a whole number from 0 (no interval) to {MAX_BOOTSTRAP:,}", param, ctx)
        return int(number)


def show_refusal(path: Path, experiment: str) -> str:
    """Why `kbc show` prints no fact of a run of `experiment` (one it does not know), and where its records lie."""
    from bridge.run.results import record_layout

    return (f"{path} is a `kbc run {experiment}` run: kbc show prints LAMA facts (prompt, gold, gold rank), "
            "FewRel sentences, LM-KBC pairs, KMIR questions, and the queries of negated, coherency and evidence "
            f"runs; each {experiment} record is one line of {record_layout(('',))} and of instances.parquet")


def _corpora(run: RunDir, wanted: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(v for value in wanted for v in value.split()))
    return [run.corpus(c) for c in wanted] if wanted else run.corpora


def paired(run: RunDir, corpus: str, a: str, b: str, setting: str, scoring: Scoring | None = None,
           run_b: RunDir | None = None, relations: Iterable[str] | None = None
           ) -> tuple[list[Pair] | list[ScoredPair], dict, dict, dict[str, int]]:
    """Pairs for the units both predictors answered (matched by uid), the records, and what was left out; scored
    pairs where the experiment scores a unit between 0 and 1 (`Scoring.score`).

    `run_b`: B is a predictor of that run; `relations`: only units of these relations (those both runs hold)."""
    scoring = scoring or SCORINGS["lama"]
    keep = None if relations is None else set(relations)

    def answered(source: RunDir, name: str) -> dict:
        return {u: r for u, r in source.by_uid(corpus, name).items()
                if "dropped" not in r and (keep is None or r["relation"] in keep)}

    rec_a, rec_b = answered(run, a), answered(run_b or run, b)
    left_out = {"answered_by_a_only": len(rec_a.keys() - rec_b.keys()),
                "answered_by_b_only": len(rec_b.keys() - rec_a.keys())}
    if scoring.score is not None:
        for source, records in ((run, rec_a), (run_b or run, rec_b)):
            if any(r.get("gold") is None for r in records.values()):
                raise ConfigError(f"{source.path} answers a split without gold objects (LM-KBC's test split): "
                                  "there is no F1 to compare; compare runs of the val split")
        return ([ScoredPair(str(r["relation"]), uid, scoring.score(r), scoring.score(rec_b[uid]))
                 for uid, r in rec_a.items() if uid in rec_b], rec_a, rec_b, left_out)
    # a prompt set's queries of one fact share its `fact_uid`: one draw, as in the summaries' intervals
    pairs = [Pair(scoring.group_of(r), uid, scoring.right(r, setting), scoring.right(rec_b[uid], setting),
                  str(r.get("fact_uid") or uid)) for uid, r in rec_a.items() if uid in rec_b]
    return pairs, rec_a, rec_b, left_out


def table_pairs(path: Path, corpus: str, a: str, b: str, setting: str) -> tuple[list[Pair], dict[str, int]]:
    """`paired` for a LAMA run that asks each fact once, read from its per-fact table, where that was written from
    the prediction files there now (`bridge.run.freshness.fresh_instances`): the same pairs in the same order,
    without the records. (The table names no query's fact: a prompt set's run is read from its records.)"""
    from bridge.run.parquet_files import read_table

    columns = ("corpus", "predictor", "relation", "uid", "dropped", f"correct_{setting}")
    table = read_table(path, columns=list(columns))
    rows = zip(*(table.column(c).to_pylist() for c in columns))
    answered: dict[str, dict[str, tuple[str, bool]]] = {a: {}, b: {}}
    for c, name, relation, uid, dropped, correct in rows:
        if c == corpus and name in answered and dropped is None:
            answered[name][uid] = (relation, bool(correct))
    rec_a, rec_b = answered[a], answered[b]
    pairs = [Pair(rel, uid, right, rec_b[uid][1]) for uid, (rel, right) in rec_a.items() if uid in rec_b]
    left_out = {"answered_by_a_only": len(rec_a.keys() - rec_b.keys()),
                "answered_by_b_only": len(rec_b.keys() - rec_a.keys())}
    return pairs, left_out


def _fmt_p(p: float) -> str:
    return f"{p:.3g}" if p >= 1e-4 else f"{p:.1e}"


def _table(corpus: str, a: str, b: str, res: Comparison, left_out: dict[str, int],
           scoring: Scoring | None = None, info: dict | None = None,
           metrics: tuple[str, str] | None = None) -> list[str]:
    """The text table: one row per group, relations in report order (P19 before P101) with their labels.
    `metrics`: what A's and B's share right is called (P@1 for a ranking, EM for a generating predictor).
    Where a prompt set asks a fact several ways, the cells count queries, the facts and queries columns say
    how many of each, and the test is the sign-flip test over facts."""
    from eval.report import relation_name, relation_order

    sc = scoring or SCORINGS["lama"]
    ma, mb = metrics or (sc.metric, sc.metric)
    o = res.overall
    many = res.clustered
    name_a, name_b = (f"A ({a})", f"B ({b})") if a == b else (a, b)  # one name in two runs: say which is which
    asked = f", asked with {o.queries} queries" if many else ""
    left = "queries " if many else ""
    lines = [f"{corpus}: {o.n} {sc.unit} answered by both{asked} (left out: {left_out['answered_by_a_only']} "
             f"{left}answered only by {name_a}, {left_out['answered_by_b_only']} only by {name_b})"]
    test = {"sign-flip": "p sign-flip", "sign": "p sign"}.get(res.test, "p McNemar")
    head = [sc.group.replace(" ", "_"), sc.unit, *(["queries"] if many else []), "both", "only A", "only B",
            "neither", f"{ma} A", f"{mb} B", test]

    places = 3 if res.scale == 1.0 else 2  # fractions to three decimals, as the summaries print them

    def row(name: str, c: Counts, p1_a: float, p1_b: float) -> list:
        return [name, c.n, *([c.queries] if many else []), c.both, c.only_a, c.only_b, c.neither, fixed(p1_a, places),
                fixed(p1_b, places), _fmt_p(c.p_value)]

    body = [row(relation_name(rel, info), c, c.p1_a, c.p1_b) for rel in relation_order(list(res.by_relation), info)
            for c in [res.by_relation[rel]]]
    body.append(row("all", o, res.macro_p1_a, res.macro_p1_b))
    cells = [[str(x) for x in row] for row in [head, *body]]
    widths = [max(columns(row[i]) for row in cells) for i in range(len(head))]  # a CJK label's characters take two
    for cell_row in cells:
        padded = [ljust(cell, w) if i == 0 else rjust(cell, w) for i, (cell, w) in enumerate(zip(cell_row, widths))]
        lines.append("  ".join(padded))
    groups = f"{sc.group}s"
    over = f"over all {sc.unit}" if sc.pooled else f"macro over {groups}"
    within = sc.unit if sc.pooled else f"{sc.unit} within {groups}"
    if many:
        within += ", a fact's queries drawn together"
    few = f"fewer than two {sc.unit}" if sc.pooled else f"no {sc.group} of two {sc.unit} or more"
    ci = (f"{res.level:.0%} CI [{fixed(res.ci[0], places, True)}, {fixed(res.ci[1], places, True)}] "
          f"(bootstrap over {within}, {res.n_boot} resamples, seed {res.seed})" if res.ci
          else "no bootstrap interval" if res.n_boot <= 0 else f"no bootstrap interval ({few} to resample)")
    points = "points" if res.scale == 100.0 else f"({ma} as a fraction, 0-1)"
    lines.append(f"{ma} {a} - {b}, {over}: {fixed(res.difference, places, True)} {points}, {ci}")
    if many:
        lines.append(f"(`all` row: {ma} macro over {groups}, as the summaries' Total, each query of a fact counting; "
                     "both, only A, only B and neither count queries; p: exact sign-flip test of each fact's right "
                     "queries of A minus B, pooled over the facts, which is McNemar's where a fact is one query)")
    elif res.test == "sign":
        lines.append(f"(`all` row: {ma} {over}, as the summaries' all-relations row; only A, only B: the {sc.unit} "
                     f"where it scores higher, both: equal above 0, neither: both 0; p: exact sign test of those "
                     "leads)")
    else:
        counts = "" if sc.pooled else f"; its {sc.unit}, both, only A, only B and neither pool the {sc.unit}"
        lines.append(f"(`all` row: {ma} {over}, as the summaries' Total{counts}; McNemar on "
                     f"the pooled {sc.unit})")
    return lines


def _across(run: RunDir, run_b: RunDir, corpora: list[str], setting: str) -> tuple[dict[str, list[str]], list[str]]:
    """Two runs compare over the relations both hold, of the same data, asked the same questions: per corpus
    those relations, and the notes on what was left out."""
    from bridge.run.leaderboard import same_settings, shared_relations

    if run.config.get("experiment", "lama") != run_b.config.get("experiment", "lama"):
        raise ConfigError(f"{run.path} and {run_b.path} are runs of different experiments; compare runs of one")
    scoring_for(run_b, setting)
    configs = {run.path: run.config, run_b.path: run_b.config}
    same_settings(configs, "`kbc compare --b-run`")
    from bridge.run.depth import same_depth

    # P@1 is the same number at every depth: refused only where a depth changes the compared metric
    same_depth(configs, (scoring_for(run, setting).metric.lower(),), "`kbc compare --b-run`", corpora)
    relations, notes = {}, []
    for corpus in corpora:
        if corpus not in run_b.corpora:
            raise ConfigError(f"{run_b.path} holds no {corpus} results (it has {', '.join(run_b.corpora)}); "
                              "pick a corpus both runs hold with --corpus")
        relations[corpus], left = shared_relations(configs, corpus, "`kbc compare --b-run`")
        notes += left
    return relations, notes


def _how_they_differ(run: RunDir, other: RunDir, corpora: list[str], a: str, b: str) -> list[str]:
    """How A and B of two runs differ in what they are (model, dtype, device) and, generating, in how they were
    asked (prompt, shots, chat, max_new_tokens, sampling), so that a difference between the two is read with that
    in mind: the same name in both runs need not be the same predictor; and where the runs were scored under
    different readings of the data files (`bridge.run.reading`), that too."""
    from bridge.predictors.registry import generation_settings, setting_text, settings_apart
    from bridge.run.leaderboard import describe_predictor

    notes = []
    for corpus in corpora:
        da, db = describe_predictor(run.config, corpus, a), describe_predictor(other.config, corpus, b)
        for key in ("spec", "dtype", "device"):
            if da.get(key) != db.get(key) and (da.get(key), db.get(key)) != (None, None):
                notes.append(f"A and B differ in {key}: {da.get(key) or '-'} against {db.get(key) or '-'}")
        if notes:
            break  # one corpus says it: the predictors are the same in every corpus of a run
    from bridge.run.reading import readings_apart

    if apart := readings_apart((run.path, run.config), (other.path, other.config)):
        notes.append(apart)
    sa, sb = generation_settings(run.config, a), generation_settings(other.config, b)
    if sa and sb:
        notes += [f"A and B differ in {key}: {setting_text(sa.get(key))} against {setting_text(sb.get(key))}"
                  for key in settings_apart([sa, sb])]
    return notes


def _silent(run: RunDir, other: RunDir | None, corpus: str, a: str, b: str) -> list[str]:
    """Of A and B, those whose run's summaries say they answered nothing of `corpus`, with the reasons."""
    from bridge.run.summaries import read_silent, silent_note

    found = {name: why for source, name in ((run, a), (other or run, b))
             if (why := read_silent(source.path).get(corpus, {}).get(name))}
    return silent_note(corpus, found)


def _one_measure(scoring: Scoring, corpus: str, *sides: tuple[RunDir, str]) -> None:
    """Refuse A against B where one ranks its answers (P@1) and the other writes them (EM), as `kbc report`
    draws no delta of theirs: the difference of two measures is no difference of either."""
    kinds = [(name, name in generating(source.config, corpus)) for source, name in sides]
    if len({scoring.metric_for(generates) for _, generates in kinds}) < 2:
        return
    what = ", ".join(f"{name} {'writes its answers by generation' if generates else 'ranks its answers'} "
                     f"({scoring.metric_for(generates)})" for name, generates in kinds)
    raise ConfigError(f"no comparison of {kinds[0][0]} and {kinds[1][0]} in {corpus}: {what}; no metric scores both, "
                      "and a difference of two measures is no delta; compare two predictors of one kind")


def comparison(run_dir, a: str, b: str, setting: str = "raw", corpora: Iterable[str] = (), list_: str | None = None,
               n_boot: int = 1000, seed: int = 0, b_run=None, keyword: bool = False
               ) -> tuple[dict, list[str], list[dict]]:
    """What `kbc compare` reports: its `--json` object, the lines of its table and the facts of the cell `list_`.

    `b_run`: B is a predictor of that run directory, compared over the relations both runs hold; `keyword`: a
    warning's fix in Python's words (`kbcompare.compare`), not the command line's. A scored run that a `kbc run`
    starts writing while it is read is refused (`read_steadily`), not compared half old, half new."""
    outs = [Path(run_dir), *([Path(b_run)] if b_run is not None else [])]
    return read_steadily(outs, lambda: _comparison(run_dir, a, b, setting, corpora, list_, n_boot, seed, b_run,
                                                   keyword))


def _comparison(run_dir, a: str, b: str, setting: str, corpora: Iterable[str], list_: str | None, n_boot: int,
                seed: int, b_run, keyword: bool) -> tuple[dict, list[str], list[dict]]:
    """`comparison`, read once."""
    run = open_run(run_dir)
    scoring = scoring_for(run, setting)
    other = open_run(b_run) if b_run is not None else None
    if other is not None and other.path.resolve() == run.path.resolve():
        other = None
    stands = []  # a run not finished (its last attempt interrupted, say) is compared as it stands, and said so
    for source in (run, other) if other is not None else (run,):
        check_readable(source.path, source.config)  # the records read are those its summaries scored
        scored = (source.path / "summary.json").exists() and unscored_change(source.path, source.config) is None
        why = incomplete(source, scored)
        if why:
            stands.append(f"{source.path}: {why}: compared as it stands; {rerun_hint(source.config, source.path)} "
                          "to finish it")
    a, b = run.predictor(a), (other or run).predictor(b)
    if a == b and other is None:
        raise ConfigError("compare needs two different predictors")
    wanted = _corpora(run, corpora)
    relations, notes = _across(run, other, wanted, setting) if other is not None else ({}, [])
    if other is not None:
        notes += _how_they_differ(run, other, wanted, a, b)
    result: dict = {"run": str(run.path), "a": a, "b": b, "setting": setting, "corpora": {}}
    if stands:
        result["incomplete"] = stands
    listed: list[dict] = []
    generates = any(name in generating(source.config, corpus) for source, name in ((run, a), (other or run, b))
                    for corpus in wanted)
    rule = scoring.rule_for(generates)
    # what the shares right (`p1_a`, `p1_b`, `macro_p1_*`) measure: P@1, or exact match (KMIR, written answers)
    result["metric"] = scoring.generated_metric if generates and scoring.generated_metric else scoring.metric
    if other is not None:
        result.update({"b_run": str(other.path), "notes": notes})
        text = [f"A = {a} of {run.path}, B = {b} of {other.path}, setting {setting}; {rule}",
                *(f"note: {n}" for n in notes)]
    else:
        text = [f"{run.path}: A = {a}, B = {b}, setting {setting}; {rule}"]
    samples = {str(source.path): note for source in (run, other or run) if (note := sample_note(source.config))}
    if samples:  # a sample's counts are never to be read as every fact's
        result["samples"] = samples
        text += [note if other is None else f"{path}: {note}" for path, note in samples.items()]
    for corpus in wanted:
        _one_measure(scoring, corpus, (run, a), (other or run, b))
    named, top = str, scoring.top
    if list_ and scoring is SCORINGS["lmkbc"]:  # records keep ids: listed as `label (id)` where the data has one
        labels = lmkbc_labels(run)[0]

        def named(item) -> str:
            return _labelled(item, labels)

        def top(record: dict) -> str:
            return ", ".join(map(named, record.get("predicted") or []))
    once = dropped_unit(LamaExperiment, run.config.get("settings") or {}) == "facts"  # no prompt set
    table = fresh_instances(run.path) if scoring is SCORINGS["lama"] and once and not list_ and other is None else None
    for corpus in wanted:
        if table is not None:
            pairs, left_out = table_pairs(table, corpus, a, b, setting)
        else:
            pairs, rec_a, rec_b, left_out = paired(run, corpus, a, b, setting, scoring, other,
                                                   relations.get(corpus))
        if not pairs:
            text.append(f"{corpus}: no facts answered by both {a} and {b}")
            text += _silent(run, other, corpus, a, b)
            result["corpora"][corpus] = {"overall": {"n": 0}, "left_out": left_out}
            continue
        res = compare_scores(pairs, n_boot, seed, scale=1.0 if scoring.fraction else 100.0) \
            if scoring.score is not None else \
            compare_pairs(pairs, n_boot=n_boot, seed=seed, pooled=scoring.pooled)
        found = res.to_dict()
        # in the text table's order (`eval.report.relation_order`: by relation type, then id, P19 before P101), so
        # `--json` and `kbcompare.compare` list the relations as the table does
        order = relation_order(list(found["relations"]), relation_info(run.config).get(corpus))
        found["relations"] = {rel: found["relations"][rel] for rel in order}
        result["corpora"][corpus] = {**found, "left_out": left_out}
        metrics = tuple(scoring.metric_for(name in generating(source.config, corpus))
                        for source, name in ((run, a), (other or run, b)))
        text += _table(corpus, a, b, res, left_out, scoring, relation_info(run.config).get(corpus), metrics) + [""]
        if list_:
            for uid in res.lists[LISTS[list_]]:
                ra = rec_a[uid]
                gold = ra.get("gold")
                listed.append({"corpus": corpus, "relation": ra["relation"], "uid": uid,
                               "subject": ra.get("subject") or ra.get("question"),
                               "gold": ", ".join(map(named, gold)) if isinstance(gold, list) else gold,
                               "top_a": top(ra), "top_b": top(rec_b[uid])})
    if other is not None:
        warned = _few_shared(run, other, result["corpora"], scoring.unit, relations, keyword)
        if warned:
            result["warnings"] = warned
            text[1:1] = [f"warning: {w}" for w in warned]
    if not any(c["overall"]["n"] for c in result["corpora"].values()):
        where = f"{run.path}" if other is None else f"{run.path} and {other.path}"
        why = "; ".join(line for corpus in wanted for line in _silent(run, other, corpus, a, b))
        raise DataError(f"{a} and {b} have no answered {scoring.unit[:-1]} in common in {where}"
                        + (f" ({why})" if why else ""))
    if list_:
        result["list"] = {"cell": list_, "facts": listed, "answered": scoring.answered}
    return result, text, listed


def _few_shared(run: RunDir, other: RunDir, corpora: dict, unit: str, relations: dict[str, list[str]],
                keyword: bool = False) -> list[str]:
    """A comparison across two runs over a small part of what A and B answered (runs of other `--limit` samples):
    one warning per corpus (`bridge.run.overlap`), naming each run's sample; `relations`: per corpus those both
    runs hold, a relation with no unit in common counted as 0 per relation."""
    from bridge.run.overlap import few_shared
    from bridge.run.summaries import sample_flags

    samples = {str(run.path): sample_flags(run.config), str(other.path): sample_flags(other.config)}
    warned = []
    for corpus, found in corpora.items():
        n, left = found["overall"]["n"], found["left_out"]
        line = few_shared(n, {str(run.path): n + left["answered_by_a_only"],
                              str(other.path): n + left["answered_by_b_only"]}, samples, unit,
                          {**dict.fromkeys(relations.get(corpus, ()), 0),
                           **{rel: counts["n"] for rel, counts in found.get("relations", {}).items()}},
                          fix="`kbcompare.compare` within each run" if keyword else "`kbc compare` within each run",
                          keyword=keyword)
        if line and n:
            warned.append(f"{corpus}: {line}")
    return warned


@click.command("compare")
@click.argument("run_dir")
@click.argument("a")
@click.argument("b")
@click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True,
              help="Which gold rank counts: raw, or with the other valid objects removed.")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (default: all of the run).")
@click.option("--list", "list_", type=click.Choice(list(LISTS)), default=None,
              help="Print the facts of one cell of the 2x2 table instead of the table (tab-separated).")
@click.option("--bootstrap", "n_boot", type=Resamples(), default=1000, show_default=True,
              help=f"Bootstrap resamples for the interval of the P@1 difference (0: none; at most {MAX_BOOTSTRAP:,}).")
@click.option("--seed", type=Int(), default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--b-run", "b_run", type=PathType(exists=True, file_okay=False), default=None,
              help="B is a predictor of this other run directory (one run per model): the two are compared on the "
              "relations both runs hold, and what was left out is said.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(run_dir, a, b, setting, corpora, list_, n_boot, seed, b_run, as_json) -> None:
    """Predictors A and B on the facts both answered: right for both, only A, only B, neither.

    Per relation and overall, per corpus; McNemar's exact test on the facts where they disagree,
    and a bootstrap interval of the macro P@1 difference A - B. Under a prompt set a fact's queries
    are one draw: the interval resamples facts, and the test is a sign-flip test over facts. Facts
    one of them dropped (or did not run) are left out, and counted. LM-KBC pairs compare their F1:
    A is ahead where its F1 is higher, and the test is the exact sign test of those leads.

    \b
    Examples:
      kbc compare runs/lama freq re-oracle
      kbc compare runs/lama freq re-oracle --list only-a --corpus trex
      kbc compare runs/bert bert gpt2 --b-run runs/gpt2
    """
    result, text, listed = comparison(run_dir, a, b, setting, corpora, list_, n_boot, seed, b_run)
    a, b = result["a"], result["b"]
    for line in result.get("incomplete", []):
        click.echo(f"note: {line}", err=True)
    if as_json:
        click.echo(json.dumps(result, indent=1, ensure_ascii=False))
    elif list_:
        answered = result["list"]["answered"]
        click.echo("\t".join(tsv_cell(c) for c in ["corpus", "relation", "uid", "subject", "gold", f"{a} {answered}",
                                                      f"{b} {answered}"]))
        for row in listed:
            click.echo("\t".join(tsv_cell(row[k] or "") for k in ("corpus", "relation", "uid", "subject", "gold",
                                                                   "top_a", "top_b")))
    else:
        click.echo(printable("\n".join(text).rstrip(), lines=True))


def _matches_subject(record: dict, subject: str) -> bool:
    """Case and surrounding spaces ignored: data labels may carry stray spaces (BEAR P175's " Crazy")."""
    wanted = subject.strip().casefold()
    return any(str(record.get(k) or "").strip().casefold() == wanted for k in ("subject", "subject_id"))


def _close_subject(run: RunDir, corpora: list[str], relation: str, subject: str, stages: Iterable[str]) -> str:
    """' (did you mean ...?)' naming the relation's subject closest to `subject`, or ''."""
    import difflib

    labels = {str(r.get("subject") or "").strip() for c in corpora for name in run.predictors for stage in stages
              for r in read_records(run.relation_file(c, name, relation, stage))}
    key = search_key(subject)  # Greek or Turkish capitals (ΚΥΠΡΟΥ, IĞDIR) are too far for difflib
    close = sorted(label for label in labels if label and search_key(label) == key)[:1] or difflib.get_close_matches(
        subject.strip(), sorted(labels - {""}), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _wanted(record: dict, uid: str | None, subject: str | None, relation: str | None,
            fact_of: Callable[[str], str] = str) -> bool:
    """Whether a record is of the fact asked for: by uid (`fact_of`: any uid of the fact's queries), or by its
    subject and relation."""
    return ((uid is None or fact_of(record["uid"]) == fact_of(uid))
            and (subject is None or _matches_subject(record, subject))
            and (relation is None or record["relation"] == relation))


def find_facts(run: RunDir, corpora: list[str], uid: str | None, subject: str | None,
               relation: str | None) -> list[dict]:
    """Every fact matching the uid (or subject + relation), with each predictor's record or None. Under a prompt set
    a fact's uid finds each of its queries (`<fact>@<prompt>`, whose records name it as `fact_uid`)."""
    found: dict[tuple[str, str], dict] = {}

    def wanted(record: dict) -> bool:
        return _wanted(record, None if record.get("fact_uid") == uid else uid, subject, relation)

    for corpus in corpora:
        file = None
        for name in run.predictors:
            for path in ([run.folder(corpus, name) / file] if file else [run.relation_file(corpus, name, relation)]
                         if relation is not None else run.relation_files(corpus, name)):
                matching = [r for r in read_records(path) if wanted(r)]
                for record in matching:
                    fact = found.setdefault((corpus, record["uid"]), {"corpus": corpus, "uid": record["uid"],
                                                                      "records": {}})
                    fact["records"][name] = record
                if uid is not None and matching:
                    # a uid is one unit of its corpus: the other predictors need only this file (that of the asked
                    # fact's relation, which a KMIR question about a derived relation, P1376 of P36, is not)
                    file = path.name
                    break
    return list(found.values())


def find_asked(run: RunDir, corpora: list[str], uid: str | None, subject: str | None, relation: str | None,
               fact_of: Callable[[str], str], stages: tuple[str, ...]) -> list[dict]:
    """`find_facts` for a run that asks each fact several queries (`fact_of`: the fact uid of a query's or a unit's
    uid), in `stages`: `uid` is the fact's or any of its queries', and each predictor's records of the fact are
    kept by stage and uid, as an experiment's `instances` takes them. A query that names no subject (a second step)
    is found by its fact."""
    found: dict[tuple[str, str], dict] = {}
    for corpus in corpora:
        files = {(name, stage): [run.relation_file(corpus, name, relation, stage)] if relation is not None
                 else run.relation_files(corpus, name, stage) for name in run.predictors for stage in stages}
        facts, hit = set(), set()
        for paths in files.values():
            for path in paths:
                keys = {fact_of(r["uid"]) for r in read_records(path) if _wanted(r, uid, subject, relation, fact_of)}
                facts |= keys
                hit |= {path.name} if keys else set()
        for (name, stage), paths in files.items():
            for path in (p for p in paths if p.name in hit):  # a fact's queries lie in its relation's files
                for record in read_records(path):
                    key = fact_of(record["uid"])
                    if key in facts:
                        fact = found.setdefault((corpus, key), {"corpus": corpus, "uid": key, "records": {}})
                        fact["records"].setdefault(name, {}).setdefault(stage, {})[record["uid"]] = record
    return list(found.values())


def _fact_json(run: RunDir, fact: dict) -> dict:
    records = fact["records"]
    # the fact's prompt is a template's (a ranking predictor's); a generated record's own prompt is shown with it
    full = next((r for r in records.values() if "dropped" not in r and GENERATED not in r),
                next((r for r in records.values() if "dropped" not in r), next(iter(records.values()))))
    out = {"corpus": fact["corpus"], "relation": full["relation"], "uid": fact["uid"]}
    for key in ("subject", "subject_id", "gold", "gold_id", "prompt"):
        out[key] = full.get(key)
    out["other_valid"] = full.get("other_valid")
    out["predictors"] = {name: not_answered(records.get(name)) or ranked_entry(run, fact["corpus"], name,
                                                                                records[name])
                         for name in run.predictors}
    return out


def _fact_text(fact: dict) -> list[str]:
    lines = fact_head(fact)
    width = max(len(name) for name in fact["predictors"])
    for name, entry in fact["predictors"].items():
        if entry["status"] == "not run":
            lines.append(f"  {name.ljust(width)}  not run")
            continue
        if entry["status"] == "dropped":
            lines.append(f"  {name.ljust(width)}  dropped: {entry['reason']}")
            continue
        if GENERATED in entry:
            lines += _generated_text(name, entry, width, fact["gold"])
            continue
        lines.append(f"  {name.ljust(width)}  {gold_ranks_text(entry)}")
        if "predicted" in entry:  # a classifier's answer (FewRel): its top class, or none
            lines.append(f"  {' ' * width}    predicted: {entry['predicted'] or '- (no answer)'}")
        lines += ranked_lines(entry["answers"], {entry.get("gold_as_answered", fact["gold"])}, f"  {' ' * width}    ")
        lines += read_lines(entry, f"  {' ' * width}    ")
    return lines


SHOW_OBJECTS = 20  # of a gold or predicted set in the text view (`--json` holds them all)


def lmkbc_labels(run: RunDir) -> tuple[dict[str, str], str | None]:
    """The label the LM-KBC data ties to each id (records keep ids only), read from the run's data folder (else
    `$KBC_DATA`'s); none, and why, where the data is not found."""
    from eval.lmkbc import known_labels

    tried = []
    for where in dict.fromkeys((run.config.get("data_dir"), None)):
        try:
            return known_labels(where), None
        except DataError as exc:
            tried.append(str(exc))
    return {}, "; ".join(tried)


def _pair_json(run: RunDir, fact: dict, labels: dict[str, str] | None = None) -> dict:
    """One LM-KBC subject-relation pair: its gold set, and each predictor's set with the challenge's P, R and F1,
    its set rule (and tuned threshold) and its top ranked answers; `labels`: the label of each id shown (gold,
    predicted, ranked) that the data ties one to."""
    records = fact["records"]
    first = next(iter(records.values()))
    out = {"corpus": fact["corpus"], "relation": first["relation"], "uid": fact["uid"],
           "subject": first.get("subject"), "subject_id": first.get("subject_id"), "prompt": first.get("prompt"),
           "gold": first.get("gold"), "gold_labels": first.get("gold_labels"), "predictors": {}}
    for name in run.predictors:
        record = records.get(name)
        unanswered = not_answered(record)
        if unanswered is not None:
            out["predictors"][name] = unanswered
            continue
        entry = {"status": "answered", "predicted": record.get("predicted"), "set_rule": record.get("set_rule"),
                 "ranked": record.get("ranked") or []}
        if record.get("threshold") is not None:
            entry["threshold"] = record["threshold"]
        if record.get("gold") is not None:
            score = pair_from_record(record)
            entry.update({"p": score.p, "r": score.r, "f1": score.f1})
        entry.update({key: record[key] for key in ("prompt", "prompt_text", GENERATED, "parsed", "unlinked",
                                                   "abstained") if key in record and GENERATED in record})
        out["predictors"][name] = entry
    shown = [*(out["gold"] or ()), *(x for e in out["predictors"].values() for x in
                                     [*(e.get("predicted") or ()), *(item for item, _ in e.get("ranked") or ())])]
    out["labels"] = {x: labels[x] for x in dict.fromkeys(map(str, shown)) if x in (labels or {})}
    return out


def _labelled(item, labels: dict[str, str]) -> str:
    """An LM-KBC object as `label (id)` where the data ties a label to its id, else as recorded (an id the data
    leaves unlabelled, a number, an answer linked to no id)."""
    label = labels.get(str(item))
    return f"{label} ({item})" if label else str(item)


def _listed(items: list, more: str = "--json shows them all") -> str:
    shown = ", ".join(str(x) for x in items[:SHOW_OBJECTS])
    return shown + (f" (and {len(items) - SHOW_OBJECTS} more; {more})" if len(items) > SHOW_OBJECTS else "")


def _pair_text(fact: dict) -> list[str]:
    subject = f"{fact['subject']} ({fact['subject_id']})" if fact["subject_id"] else str(fact["subject"])
    gold = fact["gold"]
    lines = [f"{fact['corpus']} / {fact['relation']} / uid {fact['uid']}"]
    lines += indented(f"  {'subject:':<13}", subject)
    # a ranking predictor's template prompt; a generating one's own prompt is shown with its answer
    lines += indented(f"  {'prompt:':<13}", fact["prompt"] if isinstance(fact["prompt"], str) else "-")
    labels = fact.get("labels") or {}
    lines += indented(f"  {'gold:':<13}", "- (a split without gold objects)" if gold is None else
                       _listed([_labelled(x, labels) for x in gold]) if gold else "the empty set")
    if fact.get("gold_labels"):
        lines += indented(f"  {'gold labels:':<13}", _listed(fact["gold_labels"]))
    width = max(len(name) for name in fact["predictors"])
    for name, entry in fact["predictors"].items():
        if entry["status"] != "answered":
            lines.append(f"  {name.ljust(width)}  {entry['status']}" + (f": {entry['reason']}" if "reason" in entry
                                                                         else ""))
            continue
        scores = f"P {entry['p']:.3f}  R {entry['r']:.3f}  F1 {entry['f1']:.3f}" if "f1" in entry else "not scored"
        rule = entry["set_rule"] or "all answers"
        if "threshold" in entry:
            rule += f" (threshold {entry['threshold']:g})"
        lines.append(f"  {name.ljust(width)}  {scores}; set rule {rule}")
        predicted = entry["predicted"] or []
        right = set(gold or ())
        marked = [f"{_labelled(x, labels)} <- gold" if x in right else _labelled(x, labels) for x in predicted]
        lines += indented(f"  {' ' * width}    predicted: ", _listed(marked) if predicted else "the empty set")
        if GENERATED in entry:
            lines += indented(f"  {' ' * width}    prompt:     ", prompt_text(entry.get("prompt")))
            lines += indented(f"  {' ' * width}    generation: ", str(entry[GENERATED]))
        for i, (item, score) in enumerate(entry["ranked"][:SHOW_TOP], 1):
            lines.append(f"  {' ' * width}    {i}. {_labelled(item, labels)}  {score + 0.0:.4g}")
        if len(entry["ranked"]) > SHOW_TOP:
            lines.append(f"  {' ' * width}    ({len(entry['ranked']) - SHOW_TOP} more ranked; --json shows them)")
    return lines


def _sentence_json(run: RunDir, fact: dict) -> dict:
    """A FewRel sentence: its head and tail entities, and per predictor the input it classified (each its own form:
    `#`/`$` markers, E-BERT's entity tokens; the KB the two ids), its answer or none, and the class distribution."""
    records = fact["records"]
    first = next(iter(records.values()))
    out = {"corpus": fact["corpus"], "relation": first["relation"], "uid": fact["uid"],
           "sentence": first.get("sentence"), "head": first.get("subject"), "head_id": first.get("subject_id"),
           "tail": first.get("object"), "tail_id": first.get("object_id"), "gold": first["relation"],
           "predictors": {}}
    for name in run.predictors:
        record = records.get(name)
        unanswered = not_answered(record)
        if unanswered is not None:
            out["predictors"][name] = unanswered
            continue
        kb = "kb_relations" in record
        entry = {"status": "answered" if record.get("predicted") is not None else "no answer",
                 "input": (f"the relations the KB holds between {first.get('subject_id')} and "
                           f"{first.get('object_id')}") if kb else record.get("prompt"),
                 "predicted": record.get("predicted"), "gold_rank": record.get("rank_raw")}
        for key in ("kb_relations", "fallback"):
            if key in record:
                entry[key] = record[key]
        entry["answers"] = [{"label": ans[0], "score": ans[1]} for ans in record.get("answers") or []]
        out["predictors"][name] = entry
    return out


def _sentence_text(fact: dict) -> list[str]:
    lines = [f"{fact['corpus']} / {fact['relation']} / uid {fact['uid']}"]
    for label, value in (("sentence", fact["sentence"] or "-"), ("head", with_id(fact["head"], fact["head_id"])),
                         ("tail", with_id(fact["tail"], fact["tail_id"])), ("gold", fact["gold"])):
        lines += indented(f"  {label + ':':<10}", value)
    width = max(len(name) for name in fact["predictors"])
    pad = f"  {' ' * width}    "
    for name, entry in fact["predictors"].items():
        if entry["status"] in ("not run", "dropped"):
            lines.append(f"  {name.ljust(width)}  {entry['status']}"
                         + (f": {entry['reason']}" if "reason" in entry else ""))
            continue
        if entry["predicted"] is None:
            verdict = "no answer" + (": the KB holds no relation between head and tail" if "kb_relations" in entry
                                     else "")
        else:
            right = "right" if entry["predicted"] == fact["gold"] else "wrong"
            rank = f"gold rank {entry['gold_rank']}" if entry["gold_rank"] is not None else "gold not among answers"
            verdict = f"predicted {entry['predicted']} ({right}; {rank})"
        lines.append(f"  {name.ljust(width)}  {verdict}")
        lines += indented(f"{pad}input: ", str(entry["input"] or "-"))
        if entry.get("fallback"):
            lines.append(f"{pad}marked entities without an entity vector (word pieces instead): {entry['fallback']}")
        for i, ans in enumerate(entry["answers"][:SHOW_TOP], 1):
            mark = "  <- gold" if ans["label"] == fact["gold"] else ""
            lines.append(f"{pad}{i}. {ans['label']}  {ans['score'] + 0.0:.4g}{mark}")
        if len(entry["answers"]) > SHOW_TOP:
            lines.append(f"{pad}({len(entry['answers']) - SHOW_TOP} more; --json shows every answer)")
    return lines


def _generated_text(name: str, entry: dict, width: int, gold: str) -> list[str]:
    """A generated answer: exact match, the exact prompt sent, the raw generation, the linked answer."""
    yes = {True: "yes", False: "no"}
    verdict = "abstained" if entry.get("abstained") else (
        f"exact match raw {yes[bool(entry.get('em_raw'))]}, filtered {yes[bool(entry.get('em_filtered'))]}")
    return [f"  {name.ljust(width)}  {verdict} (answered by generation)",
            *_generation_lines(entry, " " * (width + 4), {gold})]


def _generation_lines(entry: dict, pad: str, golds: set, parsed: bool = False) -> list[str]:
    """The exact prompt sent, the raw generation, (`parsed`: the answers read from it,) the linked answers with
    a gold one marked, and those linked to no entity."""
    lines = indented(f"{pad}prompt:     ", prompt_text(entry.get("prompt")))
    lines += indented(f"{pad}generation: ", entry[GENERATED] or "")
    if parsed:
        lines += indented(f"{pad}parsed:     ", ", ".join(entry.get("parsed") or ()) or "-")
    for i, ans in enumerate(entry["answers"], 1):
        linked = f" ({ans['id']})" if ans.get("id") else ""
        lines.append(f"{pad}{i}. {ans['label']}{linked}{'  <- gold' if ans['label'] in golds else ''}")
    if entry.get("unlinked"):
        lines.append(f"{pad}unlinked:   {', '.join(entry['unlinked'])}")
    return lines


def _question_json(run: RunDir, fact: dict) -> dict:
    """One KMIR question: its kind, wording, gold (and other right answers, choices, axiom), and each predictor's
    answer with its token F1 and exact match (fractions, as the records hold them), its ranked answers, and for a
    written answer the prompt, raw generation, what was parsed and what was left unlinked."""
    from bridge.experiments.kmir import KNOWLEDGE_TYPES, kind_of

    records = fact["records"]
    first = next((r for r in records.values() if "dropped" not in r), next(iter(records.values())))
    kind = first.get("kind") or kind_of(fact["uid"])
    out = {"corpus": fact["corpus"], "relation": first["relation"], "uid": fact["uid"], "kind": kind,
           "knowledge_type": first.get("knowledge_type") or KNOWLEDGE_TYPES.get(kind, ""),
           "question": first.get("question"), "gold": first.get("gold"),
           "alternatives": first.get("alternatives") or [], "choices": first.get("choices"),
           "axiom": first.get("axiom"), "chance": first.get("chance"), "predictors": {}}
    for name in run.predictors:
        record = records.get(name)
        out["predictors"][name] = not_answered(record) or {
            "status": "answered", "answer": record.get("answer"), "f1": record.get("f1"), "em": record.get("em"),
            **generation_fields(record), "answers": answer_dicts(record),
            **{k: record[k] for k in ("choice_scores", "choice_scoring") if k in record}}
    return out


def _question_text(fact: dict) -> list[str]:
    lines = [f"{fact['corpus']} / {fact['relation']} / uid {fact['uid']}"]
    kind = f"{fact['kind']} ({fact['knowledge_type']})" if fact["knowledge_type"] else fact["kind"]
    for label, value in (("question", fact["question"] or "- (every predictor dropped it)"),
                         ("kind", kind + (f", axiom {fact['axiom']}" if fact["axiom"] else "")),
                         ("gold", ", ".join([str(fact["gold"]), *fact["alternatives"]])),
                         ("choices", ", ".join(fact["choices"]) if fact["choices"] else None)):
        if value is not None:
            lines += indented(f"  {label + ':':<10}", value)
    golds = {fact["gold"], *fact["alternatives"]}
    width = max(len(name) for name in fact["predictors"])
    pad = f"  {' ' * width}    "
    for name, entry in fact["predictors"].items():
        if entry["status"] != "answered":
            lines.append(f"  {name.ljust(width)}  {entry['status']}" + (f": {entry['reason']}" if "reason" in entry
                                                                         else ""))
            continue
        answer = "no answer" if entry["answer"] is None else f"answer {entry['answer']}"
        how = "; answered by generation" if GENERATED in entry else ""
        f1, em = (f"{100 * entry[k]:.1f}%" if isinstance(entry[k], int | float) else "-" for k in ("f1", "em"))
        lines.append(f"  {name.ljust(width)}  {answer} (F1 {f1}, EM {em}{how})")
        if entry.get("choice_scores"):  # what the answer was picked by: the best-scored choice
            lines += indented(pad + "choices: ", ", ".join(
                f"{label} {'-' if score is None else f'{score:.4f}'} (rank {'-' if rank is None else rank})"
                for label, score, rank in entry["choice_scores"]) + f" (score: {entry.get('choice_scoring')})")
        lines += _generation_lines(entry, pad, golds, parsed=True) if GENERATED in entry else \
            ranked_lines(entry["answers"], golds, pad)
    return lines


@click.command("show")
@click.argument("run_dir")
@click.option("--uid", default=None, help="The fact's uid, or one of its queries' (as in the prediction files).")
@click.option("--subject", default=None, help="Subject label or Wikidata id (with --relation).")
@click.option("--relation", default=None, help="Relation id, e.g. P19 (with --subject).")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (default: all of the run).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (all saved answers, not only the top 5).")
def show(run_dir, uid, subject, relation, corpora, as_json) -> None:
    """One fact across every predictor of a `kbc run lama` run (prompt, gold, other valid objects, top answers,
    ranks), one sentence of a `kbc run fewrel` run (head, tail, each predictor's own input, its answer), one
    subject-relation pair of a `kbc run lmkbc` run (gold set; each predictor's set, P, R, F1, rule, top ranked), or
    one question of a `kbc run kmir` run, by --uid (kind, gold; each predictor's answer, F1, EM, top ranked or its
    prompt, generation and parsed answer).

    A fact asked several ways is shown with all its queries, found by its uid or any of theirs: the positive,
    negated and misprimed probes of a `kbc run negated` run (each probe's prompt, ranks, answers; whether the
    negated top-1 is the positive's, Spearman, whether the misprimed top-1 is the prime), both rounds of a `kbc run
    coherency` run (each step's prompt and answers, the answer asked back from, c1/c2, coherent, as recorded), and
    the evidence sentences of `kbc analyze evidence` (RUN/analysis/evidence-run: each sentence, gold ranks, answers).

    \b
    Examples:
      kbc show runs/lama --uid 9b7c0b0e-...
      kbc show runs/lama --subject "Allan Peiper" --relation P19
      kbc show runs/fewrel --uid P177:27
      kbc show runs/lmkbc --subject Ethiopia --relation countryLandBordersCountry
      kbc show runs/kmir --uid tc:9b7c0b0e-...
      kbc show runs/negated --uid google_re/place_of_death:12:negated
      kbc show runs/coherency --subject Iran --relation P47
      kbc show runs/lama/analysis/evidence-run --uid 9b7c0b0e-...:e0
    """
    if uid is not None and (subject is not None or relation is not None):  # a --relation beside it would hide it
        raise ConfigError("--uid names the fact alone: give --uid, or --subject with --relation, not both")
    if uid is None and subject is None:
        raise ConfigError("show needs --uid, or --subject with --relation")
    if subject is not None and relation is None:
        raise ConfigError("--subject needs --relation (e.g. --relation P19)")
    # a scored run that a `kbc run` starts writing while it is read is refused, not shown half old, half new
    path, shown, as_text, note = read_steadily([Path(run_dir)],
                                               lambda: shown_facts(run_dir, uid, subject, relation, corpora))
    if note:
        click.echo(note, err=True)
    if as_json:
        click.echo(json.dumps({"run": path, "facts": shown}, indent=1, ensure_ascii=False))
        return
    # data text (a template, a generated answer) may hold control characters: shown escaped, not sent to the terminal
    click.echo(printable("\n\n".join("\n".join(as_text(fact)) for fact in shown), lines=True))


def shown_facts(run_dir, uid: str | None, subject: str | None, relation: str | None, corpora: Iterable[str]
                ) -> tuple[str, list[dict], Callable[[dict], list[str]], str | None]:
    """What `kbc show` prints, read once: the run's path, its facts as `--json` objects with their text view, and
    a note to print beside them (or None)."""
    if subject is not None:  # as the data's labels are read: "José" typed with a combining accent is the same subject
        subject = clean_label(subject)
    run = open_run(run_dir)
    experiment = str(run.config.get("experiment", "lama"))
    from bridge.cli.show_queries import asked_view
    from bridge.experiments import stages

    asked = asked_view(experiment)  # a run asking each fact several queries: negated, coherency, evidence
    if experiment not in ("lama", "fewrel", "lmkbc", "kmir") and asked is None:
        raise ConfigError(show_refusal(run.path, experiment))
    if experiment == "kmir" and uid is None:  # a question's records name no subject
        raise ConfigError(f"{run.path} is a `kbc run kmir` run: show a question by --uid (the `uid` of its "
                          "records or of instances.parquet, e.g. tc:<fact uid>)")
    check_readable(run.path, run.config)
    corpus_list = _corpora(run, corpora)
    written = stages(experiment) if asked is not None else ("",)
    facts = find_asked(run, corpus_list, uid, subject, relation, asked.fact_of, written) if asked is not None \
        else find_facts(run, corpus_list, uid, subject, relation)
    if not facts:
        where = f"{run.path} (corpora {', '.join(corpus_list) or 'none'})"
        if uid is not None:
            raise DataError(f"no fact with uid {uid!r} in {where}")
        known = sorted({rel for c in corpus_list for rel in run.relations(c, written)})
        if relation not in known:
            raise ConfigError(f"{run.path} has no relation {relation!r}{did_you_mean(relation, known)}")
        raise DataError(f"no fact with subject {subject!r} and relation {relation!r} in {where}"
                        f"{_close_subject(run, corpus_list, relation, subject, written)}")
    as_json_of, as_text = {"fewrel": (_sentence_json, _sentence_text), "lmkbc": (_pair_json, _pair_text),
                           "kmir": (_question_json, _question_text)}.get(
        experiment, (asked.as_json, asked.as_text) if asked is not None else (_fact_json, _fact_text))
    note = None
    if experiment == "lmkbc":  # records keep ids: each is shown with the label the data ties to it
        labels, missing = lmkbc_labels(run)
        note = f"note: LM-KBC objects are shown by id only: {missing}" if missing else None
        shown = [_pair_json(run, fact, labels) for fact in facts]
    else:
        shown = [as_json_of(run, fact) for fact in facts]
    return str(run.path), shown, as_text, note

