"""Summaries of a whole run directory, rebuilt from every prediction file it holds.

Two scopes: `own` scores each predictor on the facts it answered; `shared`, per metric, on the facts every
predictor of the directory scored on that metric answered in that corpus, so KB and LM numbers are over the same
queries (`shared_scopes`, the leaderboard's scope over one run). A predictor that answered none of what it was
asked has no score: one `NONE_ANSWERED` row says so, with its reasons, and it restricts no one's shared facts.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from bridge.experiments.base import counted, dropped_unit
from bridge.run.asked_contexts import asked_with_note, context_counts, context_notes
from bridge.run.attempts import samples
from bridge.run.depth import cut_note, list_depth, within_depth
from bridge.run.freshness import STAMP, files_digest, fresh_rows, inputs_digest, stated_samples, write_stamp
from bridge.run.intervals import Found, interval_table, unit_sets, with_intervals
from bridge.run.older_names import recorded_path
from bridge.run.results import read_done
from eval.bear import BEAR_CORPORA
from eval.cells import parameters_text
from eval.errors import DataError
from eval.jsonl import write_json
from eval.lama import GOOGLE_RE_RELATIONS
from eval.metrics import LAMA_MRR_CUTOFF
from eval.relations import relation_id, summary_groups
from eval.report import NONE_ANSWERED, all_of, markdown, relation_order
from eval.uncertainty import DEFAULT_BOOTSTRAP, UNDEFINED

log = logging.getLogger("kbc")


def run_config(out: Path) -> dict:
    """A run directory's config.json; a directory without one is no run."""
    from bridge.run.config import read_config

    config = read_config(out / "config.json")
    if config is None:
        raise DataError(f"{out}: no config.json; not a kbc run directory")
    return config


def in_scoring_order(units: Iterable[dict]) -> list[dict]:
    """Units by relation in id order, then by uid: what is scored never depends on the order the runs into a
    directory asked its relations in (one by one, or `--relations` in another order), so the summaries, and the
    leaderboard's values read beside them, are the same bytes as those of one run of them all."""
    units = list(units)
    rank = {rel: i for i, rel in enumerate(relation_order(list({str(u.get("relation", "")) for u in units})))}
    return sorted(units, key=lambda u: (rank[str(u.get("relation", ""))], str(u.get("uid", ""))))


def scorable(experiment, units: dict[str, dict]) -> dict[str, dict]:
    """The units an experiment can score: not those of a split without gold (LM-KBC's test file), which are
    answered and submitted but never scored."""
    check = getattr(experiment, "scores", None)
    return units if check is None else {uid: u for uid, u in units.items() if check(u)}


def answered_units(out: Path, config: dict, experiment, corpus: str, unscored: bool = False
                   ) -> tuple[dict[str, dict[str, dict]], list[dict], list[dict]]:
    """Per predictor of `corpus`: its scored units by uid (`unscored`: with those no gold scores); the dropped
    tallies (each names its `unit`: facts, queries, questions, pairs); every unit (dropped ones too)."""
    types: dict[str, str | None] = config["relation_types"].get(corpus, {})
    counted = dropped_unit(experiment, config.get("settings", {}))
    answered: dict[str, dict[str, dict]] = {}
    dropped: list[dict] = []
    all_units: list[dict] = []
    for name in config["predictors"]:
        records = {stage: {uid: r for rel in types
                           for uid, r in read_done(recorded_path(out, corpus, name, rel, stage)).items()}
                   for stage in experiment.stages}
        units = experiment.instances(records)
        all_units += [{"corpus": corpus, "predictor": name, **u} for u in units.values()]
        reasons: Counter = Counter()
        for unit in units.values():  # a unit scored with a part dropped (`part_dropped`) is tallied too
            why = unit.get("dropped", unit.get("part_dropped"))
            if why is not None:
                reasons[(relation_id(unit["relation"]), why)] += 1  # records written with full IRIs too
        dropped += [{"corpus": corpus, "predictor": name, "relation": rel, "reason": why, "n": n, "unit": counted}
                    for (rel, why), n in sorted(reasons.items())]
        mine = {uid: u for uid, u in units.items() if "dropped" not in u}
        mine = mine if unscored else scorable(experiment, mine)
        if mine:
            answered[name] = mine
    return answered, dropped, all_units


def answered_none(dropped: list[dict], answered: dict[str, dict]) -> dict[str, dict[str, int]]:
    """Per predictor that was asked units and answered none of them (all dropped), its dropped units by reason:
    it has no score, and no unit is answered by every predictor."""
    reasons: dict[str, Counter] = {}
    for d in dropped:
        if d["predictor"] not in answered:
            reasons.setdefault(d["predictor"], Counter())[d["reason"]] += d["n"]
    return {name: dict(sorted(counts.items())) for name, counts in reasons.items()}


def none_rows(corpus: str, silent: dict[str, dict[str, int]], settings: list[str]) -> list[dict]:
    """The `own` rows of the predictors of `corpus` that answered nothing: 0 units answered, the dropped reasons."""
    return [{"corpus": corpus, "predictor": name, "scope": "own", "setting": setting, "group": "all",
             "metric": NONE_ANSWERED, "value": 0, "n_facts": 0, **UNDEFINED.fields(), "dropped": reasons}
            for name, reasons in silent.items() for setting in settings]


def silent_in(rows: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """Per corpus, the predictors whose summary rows say they answered nothing (`none_rows`), with the reasons."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    for r in rows:
        if r.get("metric") == NONE_ANSWERED and isinstance(r.get("dropped"), dict):
            found.setdefault(str(r.get("corpus")), {})[str(r.get("predictor"))] = r["dropped"]
    return found


def read_silent(out: Path) -> dict[str, dict[str, dict[str, int]]]:
    """`silent_in` of a run directory's summary.json (empty where it has none that reads)."""
    try:
        rows = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return silent_in([r for r in rows if isinstance(r, dict)]) if isinstance(rows, list) else {}


def answered_nothing(name: str, why: dict[str, int]) -> str:
    """That predictor `name` answered nothing, with the reasons its units were dropped: `5 dropped: <reason>`, or
    with several reasons each one's count in parentheses after it (a count run on after the reason reads as its
    last word)."""
    reasons = next(iter(why)) if len(why) == 1 else "; ".join(f"{r} ({n})" for r, n in why.items())
    return f"{name} answered nothing ({sum(why.values())} dropped: {reasons})"


def silent_note(corpus: str, silent: dict[str, dict[str, int]], tail: str = "it has no score") -> list[str]:
    """A line per predictor that answered nothing, with the reasons its units were dropped."""
    return [f"{corpus}: {answered_nothing(name, why)}; {tail}" for name, why in silent.items()]


def mrr_cutoff(config: dict) -> int | None:
    return LAMA_MRR_CUTOFF if config.get("settings", {}).get("compat") == "lama" else None


def scored_rows(experiment, head: dict, items: list[dict], types: dict[str, str | None], cutoff: int | None,
                bootstrap: int, seed: int, found: Found | None = None) -> tuple[list[dict], list[dict], Found]:
    """An experiment's rows for `items` with their stderr and bootstrap interval, its curve rows, the intervals.

    Resamples are seeded by `seed` and corpus (`interval_table`); `found` reuses the intervals of the same facts."""
    scored, curve = experiment.summarize(items, types, cutoff)
    own = getattr(experiment, "intervals", None)  # scores that are no means of unit scores (macro F1)
    if found is None and own is not None:
        found = own(items, types, bootstrap, seed, head["corpus"])
    if found is None:
        metrics = tuple(getattr(experiment, "metrics", ("p@1", "p@10", "mrr")))
        ordered = sorted(items, key=lambda u: str(u.get("uid", "")))  # the draws depend on the facts, not their order
        sets = unit_sets(experiment.name, ordered, types, cutoff, metrics)
        found = interval_table(sets, bootstrap, seed, head["corpus"])
    return with_intervals(scored, found), curve, found


def scored_on(experiment, mine: dict[str, dict], metric: str) -> frozenset:
    """The uids of `mine` a predictor's `metric` is taken over: all its answered units, or those the experiment
    says the metric needs (optional `scored_on(unit, metric) -> bool`: negated LAMA's overlap needs a negated
    answer)."""
    check = getattr(experiment, "scored_on", None)
    return frozenset(mine) if check is None else frozenset(uid for uid, u in mine.items() if check(u, metric))


def held_metrics(experiment, scored: list[dict]) -> set[str]:
    """The metrics a predictor is scored on: those of its rows, and those the experiment says come with one of them
    (optional `held_with`, metric -> the metric it comes with) though taken over none of its units: negated LAMA's
    P@1 drop comes with became-prime, over the facts right without the prime, and a predictor that got none right
    leaves that metric's shared scope empty instead of out of it."""
    held = {r["metric"] for r in scored}
    return held | {m for m, given in getattr(experiment, "held_with", {}).items() if given in held}


def shared_scopes(units: dict, held: dict, experiment=None) -> dict[str, frozenset]:
    """Per metric, its `shared` scope: the units every predictor scored on that metric answered (`units`: each
    predictor's answered units by uid; `held`: the metrics each has; `experiment`: which units a metric is taken
    over, `scored_on`). A predictor without the metric (one that writes its answers has no P@1, one that ranks
    them no exact match) or with no unit answered restricts no one's units, so a summary's shared scope of a
    metric is the leaderboard's over the same predictors."""
    metrics = dict.fromkeys(m for name in units for m in held.get(name, ()))
    return {m: frozenset.intersection(*(scored_on(experiment, units[name], m) for name in units
                                        if m in held.get(name, ())))
            for m in metrics}


def scope_counts(scopes: dict[str, frozenset], held: dict, fact_of: dict[str, str] | None = None
                 ) -> list[tuple[list[str], int, int]]:
    """Each distinct shared scope of a corpus: the predictors it is of (those scored on its metrics), its number
    of facts and of units (`fact_of`: a unit's fact, where a prompt set asks a fact several ways). Where metrics of
    the same predictors are taken over fewer facts (negated LAMA's became-prime, P@1 drop), the largest scope
    counts: the facts they answered, whatever order the metrics come in."""
    out: dict[frozenset, tuple[list[str], int, int]] = {}
    for metric, uids in scopes.items():
        names = [name for name, mine in held.items() if metric in mine]
        scope = (names, len({(fact_of or {}).get(uid, uid) for uid in uids}), len(uids))
        if scope[1:] > out.get(frozenset(names), ([], -1, -1))[1:]:
            out[frozenset(names)] = scope
    order = list(held)
    return sorted(out.values(), key=lambda scope: [order.index(name) for name in scope[0]])


def _by_scope(scopes: dict[str, frozenset], metrics: set[str]) -> dict[frozenset, set[str]]:
    """A predictor's metrics grouped by the units of their shared scope (empty scopes left out: no row)."""
    out: dict[frozenset, set[str]] = {}
    for metric in metrics:
        if scopes.get(metric):
            out.setdefault(scopes[metric], set()).add(metric)
    return out


def collect(out: Path, setting: str = "raw", bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> list[dict]:
    """Score every prediction file of `out`; write summary.json/md, curves.json, dropped.json, instances.

    Every mean gets its stderr and a seeded 95% bootstrap interval of `bootstrap` resamples (0: none).
    When nothing they come from changed since they were written (`bridge.run.freshness`), they are read back.
    """
    from bridge.experiments import scoring

    config = run_config(out)
    experiment = scoring(config)
    args = (setting, bootstrap, seed)
    files = files_digest(out)
    if getattr(experiment, "write_outputs", None) is None:  # files of an experiment's own are always rewritten
        rows = fresh_rows(out, inputs_digest(config, args, files), stated_samples(config))
        if rows is not None:
            return rows
    (out / STAMP).unlink(missing_ok=True)  # the summaries are being rewritten: none is known fresh until done
    cutoff = mrr_cutoff(config)
    rows: list[dict] = []
    curves: list[dict] = []
    dropped: list[dict] = []
    all_units: list[dict] = []
    shared_n: dict[str, list[tuple[list[str], int, int]]] = {}
    silent: dict[str, dict[str, dict[str, int]]] = {}
    plain: dict[str, dict[str, tuple[int, int]]] = {}
    for corpus in config["corpora"]:
        types: dict[str, str | None] = config["relation_types"].get(corpus, {})
        answered, lost, units = answered_units(out, config, experiment, corpus, unscored=True)
        silent[corpus] = answered_none(lost, answered)
        dropped += lost
        all_units += units
        write_outputs = getattr(experiment, "write_outputs", None)  # files of an experiment's own (submissions)
        if write_outputs is not None:
            for name, mine in answered.items():
                write_outputs(out, corpus, name, mine)
        answered = {name: kept for name, mine in answered.items() if (kept := scorable(experiment, mine))}
        plain[corpus] = plain_bert_counts(answered)
        spaces = config.get("answer_space", {}).get(corpus, {})
        own = {name: scored_rows(experiment, {"corpus": corpus, "predictor": name}, in_scoring_order(mine.values()),
                                 types, cutoff, bootstrap, seed) for name, mine in answered.items()}
        depths = {name: list_depth(config, corpus, name) for name in answered}  # no P@k past the list returned
        for name, (scored, curve, found) in own.items():
            own[name] = within_depth(scored, depths[name]), within_depth(curve, depths[name]), found
        held = {name: held_metrics(experiment, scored) for name, (scored, _, _) in own.items()}
        scopes = shared_scopes(answered, held, experiment)
        # a fact asked several ways (a prompt set) counts once where the experiment counts facts; an experiment
        # with units of its own (coherency's (fact, round) pairs, questions) counts those
        fact_of = ({uid: str(u["fact_uid"]) for mine in answered.values() for uid, u in mine.items()
                    if u.get("fact_uid")} if getattr(experiment, "unit", "facts") == "facts" else None)
        shared_n[corpus] = scope_counts(scopes, held, fact_of)
        lead = getattr(experiment, "metrics", ("p@1",))[0]  # shared curves (LAMA's P@k) are over its scope
        # the rows the answer-space column sits beside: P@1's, else the experiment's (LM-KBC ranks sets, no P@1)
        space_lead = getattr(experiment, "space_metric", lead if getattr(experiment, "set_valued", False) else "p@1")
        for name, mine in answered.items():
            head = {"corpus": corpus, "predictor": name}
            scored, curve, found = own[name]
            depth = depths[name]
            rows += [{**head, "scope": "own", **row} for row in scored]
            rows += _space_rows(head, "own", scored, spaces.get(name, {}), types, space_lead)
            curves += [{**head, "scope": "own", **row} for row in curve]
            shared: list[dict] = []
            parts = _by_scope(scopes, held[name])
            drawn = next((uids for uids, metrics in parts.items() if lead in metrics), next(iter(parts), None))
            for uids, metrics in sorted(parts.items(), key=lambda part: part[0] != drawn):
                same = found if len(uids) == len(mine) else None  # the same facts: the same intervals
                part, curve, _ = scored_rows(experiment, head, in_scoring_order(mine[u] for u in uids), types,
                                             cutoff, bootstrap, seed, same)
                shared += [row for row in within_depth(part, depth) if row["metric"] in metrics]
                if uids == drawn:
                    curves += [{**head, "scope": "shared", **row} for row in within_depth(curve, depth)]
            rows += [{**head, "scope": "shared", **row} for row in shared]
            rows += _space_rows(head, "shared", shared, spaces.get(name, {}), types, space_lead)
    settings = list(dict.fromkeys([*(r["setting"] for r in rows), setting]))
    for corpus, names in silent.items():
        rows += none_rows(corpus, names, settings)
    write_json(out / "summary.json", rows)
    write_json(out / "curves.json", curves)
    write_json(out / "dropped.json", dropped)
    config["summary"] = {"bootstrap": bootstrap, "seed": seed}
    contexts = context_counts(config, all_units, dropped_unit(experiment, config.get("settings", {})))
    if contexts:
        config["contexts"] = contexts
    else:
        config.pop("contexts", None)
    _record_dropped(out, config, dropped)
    tail = "it has no score (`-`, #facts 0) and restricts no one's shared facts."
    notes = _notes(config, shared_n, experiment) + left_out_notes(experiment, all_units)
    notes += weighted_notes(rows, config, setting)
    notes += [line for corpus, names in silent.items() for line in silent_note(corpus, names, tail)]
    notes += plain_bert_notes(plain)
    for line in context_notes(contexts):
        log.warning(line)
        notes.append(line)
    metrics = (*getattr(experiment, "metrics", ("p@1", "p@10", "mrr")), *shown_extra(experiment, rows))
    title = getattr(experiment, "title", "LAMA probe")
    if experiment.name == "lama" and config.get("corpora") and set(config["corpora"]) <= set(BEAR_CORPORA):
        title = "BEAR probe"  # BEAR is asked through the LAMA experiment
    md = markdown(rows, setting, dropped, notes, title, metrics, relation_info(config), open_spaces(config),
                  {m: counted(experiment, m) for m in metrics}, getattr(experiment, "spread", None))
    first = getattr(experiment, "summary_section", None)  # an experiment's own table (LM-KBC's evaluate.py)
    if first is not None:
        md = first(md, rows, setting)
    from_config = getattr(experiment, "config_section", None)  # what the run's config says (FewRel's training)
    if from_config is not None:
        md = from_config(md, config)
    from bridge.report.out_dir import write_text
    from bridge.run.instances import write_instances

    write_text(out / "summary.md", md)  # aside, then switched in: a full disk leaves no half a summary

    write_instances(out, None if experiment.name == "lama" else all_units, getattr(experiment, "unit_columns", None))
    scored = run_config(out)
    write_stamp(out, inputs_digest(scored, args, files), files, stated_samples(scored))
    return rows


def plain_bert_counts(answered: dict[str, dict[str, dict]]) -> dict[str, tuple[int, int]]:
    """Per E-BERT predictor (its records say how each query was linked, `extra.link`): how many of its scored
    queries it asked as plain BERT (no entity vector for the subject, or no subject in the prompt), of how many."""
    out = {}
    for name, units in answered.items():
        links = [(u.get("extra") or {}).get("link") for u in units.values()]
        if any(link not in (None, "bert input") for link in links):
            out[name] = (sum(link == "fallback" for link in links), len(links))
    return out


def plain_bert_notes(plain: dict[str, dict[str, tuple[int, int]]]) -> list[str]:
    """summary.md's line per corpus on the share of E-BERT's scored queries it answered as plain BERT."""
    notes = []
    for corpus, names in plain.items():
        parts = [f"{name} {k} of {n} ({100.0 * k / n:.2f}%)" for name, (k, n) in names.items() if n]
        if parts:
            notes.append(f"{corpus}: scored queries E-BERT answered as plain BERT (no entity vector for the subject, "
                         f"or no subject in the prompt): {', '.join(parts)}.")
    return notes


def weighted_notes(rows: list[dict], config: dict, setting: str) -> list[str]:
    """Per BEAR corpus, each predictor's shared-scope P@1 with every relation weighted by its facts: lm-pub-quiz's
    overall accuracy, which differs from the Total (a plain mean over relations) where relations differ in size."""
    notes = []
    for corpus in (config.get("corpora") or []):
        relations = set((config.get("relation_types") or {}).get(corpus) or {})
        if corpus not in BEAR_CORPORA or len(relations) < 2:
            continue
        held: dict[str, list[tuple[float, int]]] = {}
        for r in rows:
            if (r.get("corpus") == corpus and r.get("metric") == "p@1" and r.get("scope") == "shared"
                    and r.get("setting") == setting and r.get("group") in relations and not r.get("prompt")
                    and r.get("value") is not None and r.get("n_facts")):
                held.setdefault(r["predictor"], []).append((r["value"], r["n_facts"]))
        parts = [f"{name} {sum(v * n for v, n in pairs) / sum(n for _, n in pairs):.2f}"
                 for name, pairs in held.items()]
        if parts:
            notes.append(f"{corpus}: P@1 (%) with each relation weighted by its facts, as lm-pub-quiz's overall "
                         f"accuracy ({setting}, shared facts; the Total is the plain mean over relations): "
                         f"{', '.join(parts)}.")
    return notes


def left_out_notes(experiment, units: list[dict]) -> list[str]:
    """Per corpus, the facts the experiment leaves out for every predictor (`left_out_record`: coherency's instance
    rule) among every unit of the directory: each fact once, whichever runs and predictors asked it, so the note
    holds for the scores of the whole directory; a drop the rule does not make (an uncased model's) is not counted."""
    rule = getattr(experiment, "left_out_record", None)
    if rule is None:
        return []
    per: dict[str, dict[str, str]] = {}
    for unit in units:
        why = unit.get("dropped")
        if why is not None and why == rule(unit):
            per.setdefault(unit["corpus"], {})[unit.get("fact_uid") or unit["uid"]] = why
    notes = []
    for corpus, facts in per.items():
        tally = Counter(facts.values())
        why = "; ".join(f"{reason}: {n}" for reason, n in tally.most_common())
        one = len(facts) == 1
        notes.append(f"{corpus}: {len(facts)} {'fact is no' if one else 'facts are no'} {experiment.name} "
                     f"instance{'' if one else 's'} ({why}): every predictor drops {'it' if one else 'them'}, not "
                     "scored (see the dropped facts below).")
    return notes


def shown_extra(experiment, rows: list[dict]) -> tuple[str, ...]:
    """The experiment's optional metrics (LAMA's `--answers set` rows) that `rows` hold, in its order."""
    held = {r["metric"] for r in rows}
    return tuple(m for m in getattr(experiment, "optional_metrics", ()) if m in held)


def relation_info(config: dict) -> dict[str, dict[str, tuple[str | None, str | None]]]:
    """Per corpus, each relation's label (as the run recorded it; Google-RE's from the loader) and type."""
    labels = config.get("relation_labels", {})
    out = {}
    for corpus, types in config.get("relation_types", {}).items():
        known = labels.get(corpus) or ({r: rel.label for r, rel in GOOGLE_RE_RELATIONS.items()}
                                       if corpus == "google_re" else {})
        out[corpus] = {rel: (known.get(rel), rtype) for rel, rtype in types.items()}
        out[corpus].update({rel: (label, None) for rel, label in known.items() if rel not in types})  # derived ones
    return out


def open_spaces(config: dict) -> set[tuple[str, str]]:
    """(corpus, predictor) pairs that rank no fixed list: every relation's answer space recorded as null."""
    return {(corpus, name) for corpus, per in config.get("answer_space", {}).items() for name, sizes in per.items()
            if sizes and all(v is None for v in sizes.values())}


def _record_dropped(out: Path, config: dict, dropped: list[dict]) -> None:
    """Each predictor's dropped units per relation and reason, also in config.json beside its configuration,
    under a key that names what they count (`dropped_facts`, `dropped_queries`, ...)."""
    tally: dict[tuple[str, str, str], dict[str, dict[str, int]]] = {}
    for d in dropped:
        per_rel = tally.setdefault((d["corpus"], d["predictor"], d["unit"]), {})
        per_rel.setdefault(d["relation"], {})[d["reason"]] = d["n"]
    configs = config.setdefault("predictor_configs", {})
    for (corpus, name, unit), per_rel in tally.items():
        described = configs.setdefault(corpus, {}).setdefault(name, {})
        if isinstance(described, dict):
            for key in [k for k in described if k.startswith("dropped_")]:  # an earlier scoring's, in another unit
                del described[key]
            described[f"dropped_{unit}"] = per_rel
    write_json(out / "config.json", config)


def _space_rows(head: dict, scope: str, scored: list[dict], sizes: dict[str, int | None],
                types: dict[str, str | None], lead: str = "p@1") -> list[dict]:
    """`answer_space` rows: how many answers each relation was ranked over (groups: the mean), beside the scores
    (those of P@1, else of the experiment's `lead` metric: LM-KBC's macro F1)."""
    anchor = "p@1" if any(row["metric"] == "p@1" for row in scored) else lead
    rels = sorted({r["group"] for r in scored if r["group"] in types})
    members: dict[str, list[str]] = {rel: [rel] for rel in rels}
    members["all"] = rels
    for rel in rels:
        for group in summary_groups(types[rel]):
            members.setdefault(group, []).append(rel)
    out = []
    for row in scored:
        if row["metric"] != anchor:
            continue
        values = [sizes[r] for r in members.get(row["group"], []) if sizes.get(r) is not None]
        if values:
            out.append({**head, "scope": scope, "setting": row["setting"], "group": row["group"],
                        "metric": "answer_space", "value": sum(values) / len(values), "n_facts": row["n_facts"],
                        **UNDEFINED.fields()})
    return out


def generating(config: dict, corpus: str) -> list[str]:
    """The predictors of `corpus` that answered by generation (their recorded configuration ranks nothing)."""
    configs = config.get("predictor_configs", {}).get(corpus) or {}
    return sorted(n for n, d in configs.items() if isinstance(d, dict) and d.get("ranks") == "none")


HEADLINE = {"lama": "p@1", "coherency": "coherency", "kmir": "f1", "lmkbc": "macro-f1", "fewrel": "f1-macro",
            "negated": "overlap"}


def headline_metric(experiment: str) -> str:
    """The metric an experiment's tables and leaderboards lead with when none is asked for."""
    return HEADLINE.get(experiment, "p@1")


def lead_metric(experiment: str, rows: list[dict], setting: str = "raw") -> str:
    """The metric a run's tables lead with: the experiment's headline, or exact match in a LAMA run whose
    predictors all wrote their answers by generation (no ranking, so no P@1: `kbc run`'s summary.md leads
    with exact match there)."""
    metric = headline_metric(experiment)
    held = {r.get("metric") for r in rows if r.get("setting") == setting and not r.get("prompt")}
    return "em" if experiment == "lama" and metric not in held and "em" in held else metric


def unranked_note(corpus: str, written: list[str]) -> str:
    """Why P@k and MRR are `-` for predictors that answered by generation."""
    return (f"{corpus}: P@k and MRR are not applicable to {', '.join(written)} (answers written by generation, no "
            "ranking); see exact match, abstention and unlinked rates.")


def predictors_note(config: dict) -> list[str]:
    """What each predictor of the run is (spec, side, size, dtype, device), so that a summary read or shared alone
    says which model and precision made its numbers (two runs in other dtypes have tables alike)."""
    from bridge.predictors.registry import shown_spec, side_of

    described: dict[str, dict] = {}
    for configs in (config.get("predictor_configs") or {}).values():
        for name, d in (configs or {}).items():
            if isinstance(d, dict):
                described.setdefault(name, d)
    parts = []
    for name in config.get("predictor_specs") or {}:
        d = described.get(name, {})
        what = [side_of(config, name)]
        if d.get("parameters"):
            what.append(f"{parameters_text(d['parameters'])} parameters")
        if d.get("dtype"):
            what.append(d["dtype"] + (f" on {d['device']}" if d.get("device") else ""))
        spec = shown_spec(config, name)
        parts.append(f"`{name}`{'' if spec == name else f' = {spec}'} ({', '.join(what)})")
    return [f"Predictors: {'; '.join(parts)}."] if parts else []


def scoring_notes(config: dict, defaults: bool = True) -> list[str]:
    """One line per statement-scoring predictor naming its options that are not the defaults (`defaults`: also
    for one with none), and the template a BEAR-like corpus was asked with where it is not the first: two runs apart
    only in these have tables alike."""
    from bridge.predictors.registry import statement_brief

    notes = []
    for name in config.get("predictor_specs") or {}:
        brief = statement_brief(config, name)
        if brief and (defaults or brief != "defaults"):
            what = "the default options" if brief == "defaults" else brief
            notes.append(f"`{name}`: statement scoring with {what}.")
    for corpus, chosen in (config.get("version_choices") or {}).items():
        templates = sorted({str(c.get("template")) for c in (chosen or {}).values()
                            if isinstance(c, dict) and c.get("template") is not None})
        if templates and templates != ["0"]:
            notes.append(f"{corpus}: asked with `--template {', '.join(templates)}`.")
    return notes + fact_filter_notes(config)


def fact_filter_notes(config: dict) -> list[str]:
    """Per LAMA-UHN corpus, the filters that chose its facts and the model the person-name filter asked; from a run
    that recorded no `fact_filters`, what its `version_choices` say (the model's fingerprint, not its path)."""
    from eval.uhn import filter_note

    recorded = config.get("fact_filters") or {}
    notes = [filter_note(corpus, d) for corpus, d in recorded.items() if isinstance(d, dict)]
    for corpus, chosen in (config.get("version_choices") or {}).items():
        filters = sorted({str(c["filter"]) for c in (chosen or {}).values() if isinstance(c, dict) and c.get("filter")})
        if filters and corpus not in recorded:
            notes.append(f"{corpus}: LAMA-UHN facts, filtered by {'; '.join(filters)} (the run recorded the "
                         "person-name filter's model by its fingerprint only).")
    return notes


def sample_flags(config: dict) -> str | None:
    """`--limit 60 --seed 1` (attempts of several samples: each, joined by `and`); None where every attempt asked
    every fact."""
    asked = samples(config)
    if not any(limit for limit, _ in asked):
        return None
    return " and ".join(f"--limit {limit} --seed {seed}" if limit else "no --limit" for limit, seed in asked)


def sample_note(config: dict) -> str | None:
    """What sample of each relation's facts the scores are over, where an attempt asked a `--limit` sample (the runs
    log's limits and seeds); None where every attempt asked every fact."""
    asked = samples(config)
    if not any(limit for limit, _ in asked):
        return None
    if len(asked) == 1:
        limit, seed = asked[0]
        return (f"Sample: at most {limit:,} facts per relation, drawn with seed {seed} (`--limit {limit} --seed "
                f"{seed}`), not every fact of the data.")
    shown = ", ".join(f"`--limit {limit} --seed {seed}`" if limit else "no `--limit` (every fact)"
                      for limit, seed in asked)
    return f"Samples: the facts asked by the run's attempts with {shown}, together (each relation's union of them)."


def _notes(config: dict, shared_n: dict[str, list[tuple[list[str], int, int]]], experiment) -> list[str]:
    own_note = getattr(experiment, "scope_note", None)  # where a unit without an answer is scored too (FewRel)
    verb = "recorded for" if own_note else "answered by"
    counts = "; ".join(f"{c}: " + (" and ".join(f"{n}{f' ({q} queries)' if q != n else ''} {verb} "
                                                f"{all_of(names)}" for names, n, q in scopes)
                                   or "none") for c, scopes in shared_n.items())
    unit = getattr(experiment, "unit", "facts")
    notes = predictors_note(config) + asked_with_note(config) + scoring_notes(config)
    sample = sample_note(config)
    if sample:
        notes.append(sample)
    notes += getattr(experiment, "config_notes", lambda _: [])(config)  # what the run's inputs lacked (KMIR's types)
    notes += [own_note(counts) if own_note else
              f"Scope `shared`: per metric, the {unit} every predictor scored on that metric answered ({counts}); "
              f"a predictor without the metric, or that answered nothing, restricts no one's {unit.rstrip(',')}; "
              f"`own`: the {unit} each predictor answered."]
    ranked = getattr(experiment, "metrics", ("mrr",))
    for corpus, configs in (config.get("predictor_configs", {}) if "mrr" in ranked else {}).items():
        listed = sorted(n for n, d in configs.items() if isinstance(d, dict) and d.get("ranks") == "list")
        if listed:
            notes.append(f"{corpus}: MRR of {', '.join(listed)} counts ranks within the answer list they return "
                         f"(depth {config.get('predictor_specs', {}).get(listed[0], {}).get('depth')}); other "
                         "predictors rank every candidate exactly.")
    for corpus in config.get("predictor_configs", {}):
        written = generating(config, corpus)
        if written and "mrr" in ranked:
            notes.append(unranked_note(corpus, written))
    notes += cut_note(config) if "mrr" in ranked else []
    if config.get("settings", {}).get("compat") == "lama":
        notes.append("`--compat lama`: facts deduplicated by labels, LAMA's tokenization, MRR counts ranks "
                     f"within the top {LAMA_MRR_CUTOFF:,}.")
    from bridge.predictors.registry import upper_bound_note

    upper = upper_bound_note(config)
    return [*notes, upper] if upper else notes
