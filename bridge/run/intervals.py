"""The stderr and 95% bootstrap interval of each summary row, from the per-unit scores behind its value.

Rows average unit scores: LAMA a fact's P@k hit (100 or 0) or reciprocal rank per relation, types and
`all` macro over relations (`--answers set`: a fact's set P/R/F1 per N-M relation, likewise); coherency a
(fact, round) unit's verdict per relation (`all_correct`: a fact's), macro likewise; KMIR a question's F1 /
exact match per kind, `all` pooled over every question. Rows without such a mean (answer_space, n_instances,
robustness shares, consistency, the random-prompt draws, per-prompt rows) get null fields; group accuracy
is a fact's 100 or 0 per relation, macro likewise.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from eval.generated_scores import groups_of, is_generated, rate_cells
from eval.generated_scores import unit_scores as generated_units
from eval.kmir import PER_RELATION
from eval.rank_table import RankTable
from eval.relations import relation_id, summary_groups
from eval.set_metrics import (
    ALL,
    LABEL_METRICS,
    LAMA_SET_METRICS,
    LAMA_SET_TYPES,
    lama_set_pairs,
    pair_from_record,
    unit_scores,
)
from eval.uncertainty import UNDEFINED, Interval, intervals, rng_for

# (setting, metric) -> (cells, macro groups, pooled groups, per cell the fact of each unit where prompts repeat it)
UnitSets = dict[tuple[str, str], tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, list[str]],
                                       dict[str, np.ndarray]]]
FIELDS = ("stderr", "ci_low", "ci_high")


def unit_sets(experiment: str, items: list[dict], types: dict[str, str | None], cutoff: int | None,
              metrics: tuple[str, ...] = ("p@1", "p@10", "mrr")) -> UnitSets:
    """The unit scores behind each (setting, metric) of an experiment's rows (empty for unknown experiments)."""
    if not items:
        return {}
    if experiment == "lama":
        return _lama(items, types, cutoff, metrics)
    if experiment == "coherency":
        return _coherency(items, types)
    if experiment == "kmir":
        return _kmir(items)
    if experiment == "lmkbc":
        return _lmkbc(items)
    return {}


def _type_groups(rels: list[str], types: dict[str, str | None], extra: dict[str, set[str]] | None = None
                 ) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {"all": list(rels)}
    for rel in rels:
        for group in summary_groups(types.get(rel)):
            groups.setdefault(group, []).append(rel)
    for name, members in (extra or {}).items():
        chosen = [r for r in rels if r in members]
        if chosen:
            groups[name] = chosen
    return groups


def _lama(items: list[dict], types: dict[str, str | None], cutoff: int | None, metrics: tuple[str, ...]) -> UnitSets:
    if is_generated(items):  # answers written by generation: exact match and its rates, no ranks
        rels = list(dict.fromkeys(r["relation"] for r in items))
        facts = np.array([str(r.get("fact_uid") or r["uid"]) for r in items], dtype=object)
        codes = np.array([r["relation"] for r in items], dtype=object)
        clusters = {rel: facts[codes == rel] for rel in rels} if any(r.get("fact_uid") for r in items) else {}
        groups = groups_of(rels, types)
        return {key: (cells, groups, {}, clusters) for key, cells in generated_units(items).items()} | _lama_sets(
            items, types)
    table = RankTable.from_records(items)
    groups = _type_groups(table.relations, types)
    facts = np.array([str(r.get("fact_uid") or r["uid"]) for r in items], dtype=object)  # a fact's prompts: one draw
    clusters = table.by_relation(facts) if any(r.get("fact_uid") for r in items) else {}
    out: UnitSets = {}
    for setting in table.list_ranks:
        for metric in metrics:
            cells = table.by_relation(table.unit_scores(setting, metric, cutoff))
            out[(setting, metric)] = (cells, groups, {}, clusters)
    return out | _lama_sets(items, types) | _group_accuracy(items)


def _group_accuracy(items: list[dict]) -> UnitSets:
    """Under a prompt set, `group_accuracy`: per relation a fact's 100 or 0 (right under every prompt, or not),
    `all` macro over relations, as its rows; setting raw, the only one it has."""
    if not any("prompt_id" in r for r in items):
        return {}
    from eval.consistency import group_hits, prompt_outcomes

    cells = {rel: 100.0 * np.array(hits, dtype=float) for rel, hits in group_hits(prompt_outcomes(items)).items()
             if hits}
    return {("raw", "group_accuracy"): (cells, {"all": list(cells)}, {}, {})} if cells else {}


def _lama_sets(items: list[dict], types: dict[str, str | None]) -> UnitSets:
    """`--answers set` rows: a unit's set P/R/F1 per N-M relation, macro over relations; one value for both
    settings, so both share one entry (and one interval)."""
    pairs = lama_set_pairs(items, types)
    if not pairs:
        return {}
    fact_of = {str(r["uid"]): str(r.get("fact_uid") or r["uid"]) for r in items}
    labels: dict[str, list[str]] = defaultdict(list)
    for s in pairs:
        labels[s.relation].append(fact_of[str(s.subject)])
    rels = list(labels)
    groups = {t: [r for r in rels if types.get(r) == t] for t in LAMA_SET_TYPES} | {"all": rels}
    clusters = {rel: np.array(u, dtype=object) for rel, u in labels.items()} if any(
        r.get("fact_uid") for r in items) else {}
    out: UnitSets = {}
    for metric, cells in unit_scores(pairs, LAMA_SET_METRICS).items():
        entry = ({rel: np.array(v) for rel, v in cells.items()}, groups, {}, clusters)
        out[("raw", metric)] = out[("filtered", metric)] = entry
    return out


def _coherency(items: list[dict], types: dict[str, str | None]) -> UnitSets:
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    facts: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    units_of: dict[str, list[str]] = defaultdict(list)  # the fact of each `coherency` unit: its rounds are one draw
    for r in sorted(items, key=lambda r: r["relation"]):
        per["coherency"][r["relation"]].append(100.0 * bool(r["coherent"]))
        units_of[r["relation"]].append(r["fact_uid"])
        per[f"coherency_round{r['round']}"][r["relation"]].append(100.0 * bool(r["coherent"]))
        per[f"c{r['round']}"][r["relation"]].append(100.0 * bool(r["first_correct"]))
        facts[r["relation"]][r["fact_uid"]].append(r)
    rounds = {r["round"] for r in items}
    for rel, by_fact in facts.items():
        for recs in by_fact.values():
            if {r["round"] for r in recs} == rounds and len(rounds) == 2:
                per["all_correct"][rel].append(100.0 * all(r["first_correct"] and r["second_correct"] for r in recs))
    symmetric = {"symmetric": {r["relation"] for r in items if r.get("symmetric")}}
    clusters = {rel: np.array(uids, dtype=object) for rel, uids in units_of.items()}
    out: UnitSets = {}
    for metric, cells in per.items():
        rels = sorted(cells)
        out[("raw", metric)] = ({rel: np.array(cells[rel]) for rel in rels}, _type_groups(rels, types, symmetric), {},
                                clusters if metric == "coherency" else {})
    return out


def _kmir(items: list[dict]) -> UnitSets:
    """A question's F1 / EM per kind (`all` pools the kinds) and per relation (its own cells, pooled nowhere)."""
    out: UnitSets = {}
    for metric in PER_RELATION:
        kinds: dict[str, list[float]] = defaultdict(list)
        relations: dict[str, list[float]] = defaultdict(list)
        for r in items:
            kinds[r["kind"]].append(100.0 * float(r[metric]))
            if r.get("relation"):
                relations[relation_id(str(r["relation"]))].append(100.0 * float(r[metric]))
        cells = {k: np.array(v) for k, v in (kinds | relations).items()}
        out[("raw", metric)] = (cells, {}, {"all": list(kinds)}, {})
    return out


def _lmkbc(items: list[dict]) -> UnitSets:
    """LM-KBC's macro P/R/F1: per relation the mean over its pairs, `all` the mean over every pair (pooled)."""
    kept = [r for r in items if "dropped" not in r]
    out: UnitSets = {}
    cells_of = unit_scores([pair_from_record(r) for r in kept], {m: m for m in ("macro-p", "macro-r", "macro-f1")},
                           1.0)
    cells_of |= unit_scores([pair_from_record(r, by_label=True) for r in kept], LABEL_METRICS, 1.0)
    if is_generated(items):
        cells_of |= rate_cells(items)  # percent, as LAMA's rates
    for metric, cells in cells_of.items():
        out[("raw", metric)] = ({rel: np.array(v) for rel, v in cells.items()}, {}, {ALL: list(cells)}, {})
    return out


Found = dict[tuple[str, str], dict[str, Interval]]  # (setting, metric) -> group -> interval


def interval_table(sets: UnitSets, n_boot: int, seed: int, key: str) -> Found:
    """Every group's interval; each cell and pooled group draws from its own generator, seeded by `seed`, `key`
    (the corpus, never the predictor) and the group alone, so identical unit scores get identical intervals: two
    predictors answering alike, KMIR's F1 and EM, raw and filtered. Every predictor of a corpus thus draws the same
    random numbers for a group, which pairs their resamples."""
    def rng_of(group: str) -> np.random.Generator:
        return rng_for(seed, f"{key}/{group}")

    done: dict[int, dict[str, Interval]] = {}  # one entry under two keys (settings that agree) is drawn once
    out: Found = {}
    for (setting, metric), entry in sets.items():
        if id(entry) not in done:
            cells, macro, pooled, clusters = entry
            done[id(entry)] = intervals(cells, macro, pooled, n_boot, rng_of, clusters)
        out[(setting, metric)] = done[id(entry)]
    return out


def with_intervals(rows: list[dict], found: Found) -> list[dict]:
    """`rows` with `stderr`, `ci_low`, `ci_high` (null where the row is no mean of unit scores)."""
    out = []
    for row in rows:
        cell = UNDEFINED if row.get("prompt") else found.get((row["setting"], row["metric"]), {}).get(row["group"],
                                                                                                    UNDEFINED)
        out.append({**row, **cell.fields()})
    return out
