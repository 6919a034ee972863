"""Per-relation deltas of predictors against a baseline, each row over one set of facts.

A row's `#facts`, the baseline's value, every difference and the share of facts whose object name is in the
subject name are all taken over the same units: those the baseline and every predictor compared with it answered,
matched by uid (across the two runs of `--compare` too). Each side is scored over them from its prediction files
as the run's summaries score it, so a delta is a difference over the same queries whatever else a run held.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge.report.data import RunData, View, is_relation
from bridge.run.summaries import answered_units, mrr_cutoff, scorable

SHARED_OBJECTS = ("p@1", "em")  # metrics whose rows show the share of facts with the object name in the subject's


@dataclass
class DeltaRow:
    """One relation of a delta table: `n` units (as the metric counts them), the baseline's value over them, each
    other's difference over them and the % of those facts whose object name is a substring of the subject name
    (None where it is not shown or no fact names both)."""

    corpus: str
    relation: str
    n: int
    base: float
    diffs: dict[str, float]
    share: float | None


class Units:
    """The scored units of each shown predictor, read once per run and corpus from its prediction files."""

    def __init__(self, view: View) -> None:
        self.view = view
        self._read: dict[tuple[int, str], dict[str, dict[str, dict]]] = {}

    def of(self, shown: str, corpus: str) -> dict[str, dict]:
        run, name = self.view.origin[shown]
        key = (id(run), corpus)
        if key not in self._read:
            self._read[key] = _answered(run, corpus)
        return self._read[key].get(name, {})


def _answered(run: RunData, corpus: str) -> dict[str, dict[str, dict]]:
    from bridge.experiments import scoring

    experiment = scoring(run.config)
    answered, _, _ = answered_units(run.path, run.config, experiment, corpus)
    return {name: scorable(experiment, mine) for name, mine in answered.items()}


def _share(units: list[dict]) -> float | None:
    known = [(u.get("subject"), u.get("gold")) for u in units if u.get("subject") and u.get("gold")]
    if not known:
        return None
    return 100.0 * sum(str(g).lower() in str(s).lower() for s, g in known) / len(known)


def _values(run: RunData, corpus: str, items: list[dict], metric: str, setting: str) -> dict[str, dict]:
    """The per-relation rows of `metric` in `setting` that the run's experiment scores `items` to."""
    from bridge.experiments import scoring

    types = run.config.get("relation_types", {}).get(corpus, {})
    scored, _ = scoring(run.config).summarize(items, types, mrr_cutoff(run.config))
    return {r["group"]: r for r in scored if r["metric"] == metric and r["setting"] == setting
            and not r.get("prompt") and is_relation(str(r["group"]))}


def delta_rows(view: View, units: Units, base: str, others: list[str], metric: str) -> list[DeltaRow]:
    """The rows of `others` against `base` on `metric`, over the units all of them answered, of the corpora with two
    or more such relations (one relation's delta is the corpus total, which the scores show)."""
    out = []
    for corpus in view.corpora:
        mine = {shown: units.of(shown, corpus) for shown in (base, *others)}
        common = sorted(set.intersection(*(set(m) for m in mine.values())))
        if not common:
            continue
        values = {shown: _values(view.origin[shown][0], corpus, [m[u] for u in common], metric, view.setting)
                  for shown, m in mine.items()}
        rows = []
        for relation, row in values[base].items():
            diffs = {o: float(values[o][relation]["value"]) - float(row["value"]) for o in others
                     if relation in values[o]}
            if not diffs:
                continue
            facts = [mine[base][u] for u in common if mine[base][u].get("relation") == relation]
            rows.append(DeltaRow(corpus, relation, int(row["n_facts"]), float(row["value"]), diffs,
                                 _share(facts) if metric in SHARED_OBJECTS else None))
        if len(rows) >= 2:
            out += rows
    return out


def few_shared_warnings(view: View, units: Units, base: str, others: list[str], unit: str = "facts") -> list[str]:
    """Per corpus, the warning (`bridge.run.overlap.few_shared`) where the deltas of two runs side by side are over
    under half of the units the smaller run's compared predictors answered (runs of other `--limit` samples); a
    corpus where they share none says so. One run: none."""
    from bridge.run.overlap import few_shared
    from bridge.run.summaries import sample_flags

    if len(view.runs) < 2:
        return []
    out = []
    for corpus in view.corpora:
        mine = {shown: units.of(shown, corpus) for shown in (base, *others)}
        per_run: dict[str, set] = {}
        for shown, got in mine.items():
            per_run.setdefault(view.origin[shown][0].label, set()).update(got)
        if len(per_run) < 2:
            continue
        common = set.intersection(*(set(m) for m in mine.values()))
        # a relation every compared predictor answered in but that shares no unit counts as 0 per relation
        per_relation: dict[str, int] = dict.fromkeys(sorted(set.intersection(
            *({str(u.get("relation")) for u in m.values()} for m in mine.values()))), 0)
        for uid in common:
            rel = str(mine[base][uid].get("relation"))
            per_relation[rel] = per_relation.get(rel, 0) + 1
        samples = {run.label: sample_flags(run.config) for run in view.runs}
        found = few_shared(len(common), {run: len(u) for run, u in per_run.items()}, samples, unit, per_relation,
                           fix="the Scores tables (each run over its own facts) or `kbc leaderboard --scope own`")
        if found:
            out.append(f"{corpus}, deltas {', '.join(others)} − {base}: {found}")
    return out
