"""The report's sections: which tables and figures each paper's analysis needs, from what a run holds.

A section whose data the run lacks stays in the report as a note naming the command that
produces the data, so a reader knows the difference between "not measured" and "no effect".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from bridge.report import figures
from bridge.report.data import GROUPS_NOT_RELATIONS, View, relation_labels
from bridge.report.page import Figure, Section, Table, tables_from_markdown
from eval.report import METRIC_NAMES, per_relation, table
from eval.types import RELATION_TYPES

HEADLINE = {"lama": "p@1", "coherency": "coherency", "kmir": "f1"}
STAT_ORDER = ("sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs", "lpfp")
STAT_NAMES = {"sm": "subject mentions", "om": "object mentions", "cooc_paragraphs": "paragraphs with both",
              "cooc_sentences": "sentences with both", "st": "subject tokens", "swp": "subject word pieces",
              "socs": "subject-object cosine", "lpfp": "log prob of first prediction"}
COHERENCY_METRICS = ("coherency_round1", "coherency_round2", "coherency", "c1", "c2", "all_correct")
KMIR_ROBUSTNESS = ("robust_all", "robust_partial", "robust_none", "answered")


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _fmt_p(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.1e}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text.replace("@", "_at_")).strip("_").lower() or "x"


class _Grid:
    """Summary rows keyed by (corpus, predictor, group, metric), for the experiment tables."""

    def __init__(self, rows: list[dict]) -> None:
        self.idx = {(r["corpus"], r["predictor"], r["group"], r["metric"]): r for r in rows}
        self.keys = list(dict.fromkeys((r["corpus"], r["predictor"]) for r in rows))
        self.groups = list(dict.fromkeys(r["group"] for r in rows))

    def cell(self, corpus: str, predictor: str, group: str, metric: str) -> str:
        row = self.idx.get((corpus, predictor, group, metric))
        return _fmt(row["value"]) if row else "-"

    def count(self, corpus: str, predictor: str, group: str, metric: str) -> str:
        row = self.idx.get((corpus, predictor, group, metric))
        return str(row.get("n_facts", "-")) if row else "-"


class Builder:
    """Draws the figures into `out/figures` and assembles the sections of one view."""

    def __init__(self, view: View, out: Path, deltas: list[tuple[str, str]]) -> None:
        self.view, self.out, self.pairs = view, out, deltas
        self.fig_dir = out / "figures"
        self.colour = figures.colours(view.predictors)
        self.labels = relation_labels(view.main.config)
        self.metric = HEADLINE.get(view.experiment, "p@1")
        self.scope = "shared" if any(r.get("scope") == "shared" for r in view.summary) else "own"
        self.rows = [r for r in view.summary if r["setting"] == view.setting and r.get("scope", "own") == self.scope
                     and not r.get("prompt")]
        self.path = view.main.path

    # helpers -----------------------------------------------------------------------------------
    def _figure(self, key: str, caption: str, draw: Callable[[Path, str], list[Path]]) -> Figure:
        png, svg = draw(self.fig_dir, key)
        return Figure(key, caption, png, svg)

    def _values(self, metric: str) -> dict[str, dict[str, dict[str, float]]]:
        """corpus -> group -> predictor -> value of `metric`."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for r in self.rows:
            if r["metric"] == metric:
                out.setdefault(r["corpus"], {}).setdefault(r["group"], {})[r["predictor"]] = float(r["value"])
        return out

    def _n_facts(self, metric: str) -> dict[tuple[str, str, str], int]:
        return {(r["corpus"], r["group"], r["predictor"]): int(r.get("n_facts") or 0)
                for r in self.rows if r["metric"] == metric}

    def _metric_name(self, metric: str) -> str:
        return METRIC_NAMES.get(metric, metric)

    def _cmd(self, sub: str) -> str:
        return f"`kbc analyze {sub} {self.path}`"

    def _not_experiment(self, section: Section, wanted: str) -> Section:
        section.skipped = (f"this run is a `{self.view.experiment}` run; these numbers come from "
                           f"`kbc run {wanted} ... --out DIR`, then `kbc report DIR`.")
        return section

    # sections ----------------------------------------------------------------------------------
    def overview(self) -> Section:
        view = self.view
        s = Section("overview", "Run, predictors and costs")
        origin = view.origin
        head = ["predictor", "side", "spec", "run"] if len(view.runs) > 1 else ["predictor", "side", "spec"]
        rows = []
        for shown, (run, name) in origin.items():
            spec = (run.config.get("predictor_specs", {}).get(name) or {}).get("spec", name)
            row = [shown, view.sides[shown].upper(), str(spec)]
            rows.append([*row, str(run.path)] if len(view.runs) > 1 else row)
        s.tables.append(Table(head, rows, "Predictors (KB: symbolic side; LM: language model side)"))
        seconds = view.seconds()
        if seconds:
            corpora = list(seconds)
            cost = [[p, *[_fmt(seconds[c].get(p), 1) if p in seconds[c] else "-" for c in corpora],
                     _fmt(sum(seconds[c].get(p, 0.0) for c in corpora), 1)] for p in view.predictors]
            s.tables.append(Table(["predictor", *[f"{c} (s)" for c in corpora], "total (s)"], cost,
                                  "Seconds each predictor took, as the runner recorded them (set-up included)"))
        else:
            s.text.append("The run's config.json records no seconds per predictor.")
        dropped: dict[tuple[str, str, str], int] = {}
        for d in view.dropped:
            key = (d.get("corpus", ""), d.get("predictor", ""), d.get("reason", ""))
            dropped[key] = dropped.get(key, 0) + int(d.get("n") or 0)
        if dropped:
            s.tables.append(Table(["corpus", "predictor", "reason", "facts"],
                                  [[c, p, why, str(n)] for (c, p, why), n in dropped.items()],
                                  "Facts a predictor could not answer (not scored)"))
        return s

    def scores(self) -> Section:
        s = Section("scores", f"Scores ({self.scope} facts)", "LAMA Table 2")
        metrics = {"lama": ("p@1", "p@10", "mrr"), "kmir": ("f1", "em")}.get(self.view.experiment, (self.metric,))
        for metric in metrics:
            s.tables += tables_from_markdown(table(self.view.summary, metric, self.view.setting, self.scope),
                                             f"{self._metric_name(metric)}, setting {self.view.setting}")
        if self.scope == "shared":
            s.text.append("`shared`: the facts every predictor of a run answered, so KB and LM numbers are over the "
                          "same queries.")
        if not s.tables:
            s.skipped = f"summary.json has no `{self.view.setting}` rows."
        return s

    def p_at_k(self) -> Section:
        s = Section("p_at_k", "Mean P@k curves", "LAMA Fig. 2")
        if self.view.experiment != "lama":
            return self._not_experiment(s, "lama")
        picked = [c for c in self.view.curves if c["setting"] == self.view.setting and c.get("group") == "all"
                  and c.get("scope", "own") == self.scope]
        if not picked:
            s.skipped = (f"curves.json has no `{self.view.setting}` P@k curves; it is written by `kbc run lama` "
                         "(rerun the run's command to rebuild its summaries).")
            return s
        curves: dict[str, dict[str, list[tuple[int, float]]]] = {}
        for c in picked:
            curves.setdefault(c["corpus"], {}).setdefault(c["predictor"], []).append((int(c["k"]), float(c["value"])))
        s.figures.append(self._figure("p_at_k", f"Mean P@k (macro over relations) for k = 1..100, setting "
                                      f"{self.view.setting}, {self.scope} facts; log-scale k.",
                                      lambda out, key: figures.p_at_k(curves, self.colour, out, key)))
        at = {(c["corpus"], c["predictor"], int(c["k"])): float(c["value"]) for c in picked}
        ks = [k for k in (1, 10, 100) if any(key[2] == k for key in at)]
        rows = [[corpus, p, *[_fmt(at.get((corpus, p, k))) for k in ks]] for corpus in curves for p in curves[corpus]]
        s.tables.append(Table(["corpus", "predictor", *[f"P@{k}" for k in ks]], rows))
        return s

    def by_relation(self) -> Section:
        metric = self.metric
        name = "P@1" if metric == "p@1" else self._metric_name(metric).replace(" (%)", "")
        s = Section("by_relation", f"{name} by relation", "LAMA per-relation results" if metric == "p@1" else "")
        values = self._values(metric)
        panels = {c: {g: v for g, v in groups.items() if g not in GROUPS_NOT_RELATIONS}
                  for c, groups in values.items()}
        panels = {c: dict(sorted(g.items(), key=lambda kv: (-sum(kv[1].values()) / len(kv[1]), kv[0])))
                  for c, g in panels.items() if g}
        if not panels or self.view.experiment == "kmir":
            s.skipped = ("this run has no per-relation scores" if self.view.experiment != "kmir" else
                         "KMIR questions are scored per question kind (see the next section and the KMIR table).")
            return s
        key = f"{_slug(metric)}_relation"
        s.figures.append(self._figure(key, f"{self._metric_name(metric)} per relation, predictors side by side, "
                                      f"relations sorted by their mean over predictors ({self.view.setting}, "
                                      f"{self.scope} facts).",
                                      lambda out, k: figures.grouped_bars(panels, self.colour, f"{name} (%)", out, k,
                                                                          self.labels)))
        s.tables += tables_from_markdown(per_relation(self.view.summary, metric, self.view.setting, self.scope))
        return s

    def by_type(self) -> Section:
        metric = self.metric
        kmir = self.view.experiment == "kmir"
        name = "P@1" if metric == "p@1" else self._metric_name(metric).replace(" (%)", "")
        s = Section("by_type", f"{name} by {'question kind' if kmir else 'relation type'}",
                    "KMIR Table 4" if kmir else "LAMA Table 2; coherency Table 5")
        values = self._values(metric)
        order = [*RELATION_TYPES, "all"]
        panels = {}
        for corpus, groups in values.items():
            wanted = [g for g in groups if g not in order] + ["all"] if kmir else [g for g in order if g in groups]
            if wanted:
                panels[corpus] = {g: groups[g] for g in wanted if g in groups}
        if not panels:
            s.skipped = "summary.json has no rows per relation type."
            return s
        key = f"{_slug(metric)}_{'kind' if kmir else 'type'}"
        averaged = ("mean over the questions of each kind; `all`: over every question" if kmir else
                    "macro over relations; `all`: over every relation")
        s.figures.append(self._figure(key, f"{self._metric_name(metric)} per {'kind' if kmir else 'type'} "
                                      f"({averaged}), {self.view.setting}.",
                                      lambda out, k: figures.grouped_bars(panels, self.colour, f"{name} (%)", out, k)))
        n = self._n_facts(metric)
        for corpus, groups in panels.items():
            head = ["predictor", *groups, "#facts"]
            predictors = list(dict.fromkeys(p for v in groups.values() for p in v))
            rows = [[p, *[_fmt(groups[g].get(p)) for g in groups], str(n.get((corpus, "all", p), "-"))]
                    for p in predictors]
            s.tables.append(Table(head, rows, f"{corpus}: {self._metric_name(metric)}"))
        return s

    def _object_in_subject(self) -> dict[tuple[str, str], float]:
        """Per (corpus, relation), % of facts whose object label is a substring of the subject label."""
        frame = self.view.main.instances
        if frame is None or not {"subject", "gold", "relation", "uid"} <= set(frame.columns):
            return {}
        facts = frame.drop_duplicates(["corpus", "uid"])
        facts = facts[facts["subject"].notna() & facts["gold"].notna()]
        if facts.empty:
            return {}
        hit = [str(g).lower() in str(s).lower() for s, g in zip(facts["subject"], facts["gold"])]
        share = facts.assign(hit=hit).groupby(["corpus", "relation"])["hit"].mean() * 100.0
        return {(str(c), str(r)): float(v) for (c, r), v in share.items()}

    def deltas(self) -> Section:
        metric = self.metric
        s = Section("deltas", "Per-relation deltas between two predictors", "E-BERT Fig. 2")
        if self.view.experiment == "kmir":
            s.skipped = "KMIR questions are scored per question kind, not per relation."
            return s
        if not self.pairs:
            s.skipped = "the run has one predictor; a delta needs two (`kbc report RUN --delta A B`)."
            return s
        values = self._values(metric)
        n = self._n_facts(metric)
        shares = self._object_in_subject() if metric == "p@1" else {}
        for base, other in self.pairs:
            panels: dict[str, list[tuple[str, float, float | None]]] = {}
            rows = []
            for corpus, groups in values.items():
                for rel, v in groups.items():
                    if rel in GROUPS_NOT_RELATIONS or base not in v or other not in v:
                        continue
                    delta = v[other] - v[base]
                    share = shares.get((corpus, rel))
                    panels.setdefault(corpus, []).append((rel, delta, share))
                    rows.append([corpus, rel, str(n.get((corpus, rel, base), "-")), _fmt(v[base]), _fmt(v[other]),
                                 f"{delta:+.2f}", _fmt(share, 1)])
            if not panels:
                s.text.append(f"{base} and {other} share no relation with scores.")
                continue
            key = f"delta_{_slug(other)}_vs_{_slug(base)}"
            crosses = "crosses: % of facts whose object name is a substring of the subject name. " if shares else ""
            caption = (f"{self._metric_name(metric)} of {other} minus {base} per relation (points, sorted); "
                       f"{crosses}Setting {self.view.setting}.")
            s.figures.append(self._figure(key, caption, lambda out, k, p=panels, b=base, o=other:
                                          figures.deltas(p, b, o, out, k, self.labels)))
            rows.sort(key=lambda r: (r[0], -float(r[5])))
            s.tables.append(Table(["corpus", "relation", f"#facts ({base})", base, other, "delta",
                                   "object in subject (%)"], rows, f"{other} − {base}"))
        if not s.figures:
            s.skipped = s.skipped or "no relation has scores of both predictors."
        return s

    def correlation(self) -> Section:
        s = Section("correlation", "Correlation of per-fact P@1 with fact statistics", "LAMA Fig. 3")
        rows = [r for r in self.view.analysis.correlation or [] if r["setting"] == self.view.setting]
        if self.view.analysis.correlation is None:
            s.skipped = (f"no analysis/correlation.json; run {self._cmd('stats')} (per-fact statistics) and then "
                         f"{self._cmd('correlation')}.")
            return s
        if not rows:
            s.skipped = f"analysis/correlation.json has no `{self.view.setting}` rows."
            return s
        stats = [st for st in STAT_ORDER if any(r["statistic"] == st for r in rows)]
        stats += sorted({r["statistic"] for r in rows} - set(stats))
        panels: dict[tuple[str, str], dict[str, dict[str, float | None]]] = {}
        for r in rows:
            if r["target"] == "p@1":
                panel = panels.setdefault((r["corpus"], r["method"]), {st: {} for st in stats})
                panel[r["statistic"]][r["predictor"]] = r["coefficient"]
        if panels:
            s.figures.append(self._figure("correlation", "Pearson and Spearman correlation between a fact's P@1 (0/1) "
                                          "and each statistic, per predictor; gaps: undefined (constant values or "
                                          "under 3 facts).",
                                          lambda out, k: figures.correlation_bars(panels, self.colour, out, k)))
        by: dict[tuple, dict[str, dict]] = {}
        for r in rows:
            by.setdefault((r["corpus"], r["predictor"], r["statistic"], r["target"]), {})[r["method"]] = r
        table_rows = []
        corpora, predictors = self.view.corpora, self.view.predictors

        def order(key: tuple) -> tuple:
            corpus, predictor, stat, target = key
            return (corpora.index(corpus) if corpus in corpora else len(corpora), corpus,
                    predictors.index(predictor) if predictor in predictors else len(predictors), predictor,
                    stats.index(stat), target)

        for (corpus, predictor, stat, target), methods in sorted(by.items(), key=lambda kv: order(kv[0])):
            pear, spear = methods.get("pearson", {}), methods.get("spearman", {})
            n = pear.get("n", spear.get("n"))
            table_rows.append([corpus, predictor, stat, target, _fmt(pear.get("coefficient"), 3),
                               _fmt_p(pear.get("p_value")), _fmt(spear.get("coefficient"), 3),
                               _fmt_p(spear.get("p_value")), str(n)])
        s.tables.append(Table(["corpus", "predictor", "statistic", "target", "Pearson r", "p", "Spearman ρ", "p", "n"],
                              table_rows, "Targets: `p@1` (gold ranked first, 0/1) and `rr` (reciprocal rank)"))
        s.text.append("Statistics: " + "; ".join(f"`{st}` {STAT_NAMES[st]}" for st in stats if st in STAT_NAMES) + ".")
        stats_frame = self.view.analysis.fact_stats
        if stats_frame is not None:
            s.tables.append(self._fact_stats_table(stats_frame))
        return s

    def _fact_stats_table(self, frame) -> Table:
        rows = []
        for corpus, group in frame.groupby("corpus", sort=False):
            for st in STAT_ORDER:
                if st in group.columns:
                    col = group[st].dropna().astype(float)
                    rows.append([str(corpus), st, str(len(col)), _fmt(col.median() if len(col) else None),
                                 _fmt(col.mean() if len(col) else None)])
        return Table(["corpus", "statistic", "facts with a value", "median", "mean"], rows,
                     "Per-fact statistics (analysis/fact_stats.parquet)")

    def bins(self) -> Section:
        s = Section("bins", "Accuracy by co-occurrence bins", "KMIR Fig. 2")
        if self.view.analysis.bins is None:
            s.skipped = (f"no analysis/bins.json; run {self._cmd('stats')} and then {self._cmd('correlation')} "
                         "(it writes the bins beside the correlations).")
            return s
        rows = [r for r in self.view.analysis.bins if r["setting"] == self.view.setting]
        if not rows:
            s.skipped = f"analysis/bins.json has no `{self.view.setting}` rows."
            return s
        stats = [st for st in STAT_ORDER if any(r["statistic"] == st for r in rows)]
        stats += sorted({r["statistic"] for r in rows} - set(stats))
        panels: dict[tuple[str, str], dict[str, list[tuple[str, int, float | None]]]] = {}
        for corpus in dict.fromkeys(r["corpus"] for r in rows):
            for st in stats:
                for r in rows:
                    if r["corpus"] == corpus and r["statistic"] == st:
                        value = None if r["p@1"] is None else float(r["p@1"])
                        panels.setdefault((corpus, st), {}).setdefault(r["predictor"], []).append(
                            (str(r["bin"]), int(r["n"] or 0), value))
        s.figures.append(self._figure("cooccurrence_bins", "P@1 per bin of each count statistic (log-spaced bins; "
                                      "`0`: never seen), a line per predictor; above each panel: facts per bin.",
                                      lambda out, k: figures.binned(panels, self.colour, out, k)))
        for (corpus, st), lines in panels.items():
            bins = list(dict.fromkeys(b for pts in lines.values() for b, _, _ in pts))
            at = {(p, b): (n, v) for p, pts in lines.items() for b, n, v in pts}
            predictors = list(lines)
            table_rows = [[b, str(max(at.get((p, b), (0, None))[0] for p in predictors)),
                           *[_fmt(at.get((p, b), (0, None))[1]) for p in predictors]] for b in bins]
            s.tables.append(Table(["bin", "facts", *predictors], table_rows, f"{corpus}, `{st}`: P@1 (%) per bin"))
        return s

    def rank_variation(self) -> Section:
        s = Section("rank_variation", "Rank variation over evidence sentences", "LAMA Fig. 4")
        evidence = self.view.analysis.evidence
        if evidence is None:
            s.skipped = f"no analysis/evidence.parquet; run {self._cmd('evidence')}."
            return s
        ranked = evidence[evidence["rank"].notna()]
        panels: dict[str, dict[str, dict[str, list[float]]]] = {c: {} for c in self.view.corpora}
        for (corpus, relation, predictor), group in ranked.groupby(["corpus", "relation", "predictor"], sort=True):
            panels.setdefault(str(corpus), {}).setdefault(str(relation), {})[str(predictor)] = [
                float(x) for x in group["rank"]]
        panels = {c: rels for c, rels in panels.items() if rels}
        if not panels:
            s.skipped = "analysis/evidence.parquet has no ranked evidences."
            return s
        s.figures.append(self._figure("rank_variation", "Gold rank when the fact is asked through each of its evidence "
                                      "sentences, pooled per relation (boxes: quartiles; whiskers: 1.5 IQR; log "
                                      "scale). Evidences where the gold was not ranked are left out.",
                                      lambda out, k: figures.rank_boxes(panels, self.colour, out, k, self.labels)))
        summary = self.view.analysis.evidence_summary
        if summary:
            s.tables.append(Table(["corpus", "predictor", "relation", "facts", "median rank", "mean rank std"],
                                  [[str(r["corpus"]), str(r["predictor"]), str(r["relation"]), str(r["n_facts"]),
                                    _fmt(r["median_rank"], 1), _fmt(r["mean_rank_std"], 1)] for r in summary],
                                  "Per relation: median gold rank over all evidences, and the mean over facts of the "
                                  "standard deviation of a fact's ranks"))
        return s

    def coherency(self) -> Section:
        s = Section("coherency", "Coherency", "coherency paper Tables 1, 4 and 5")
        if self.view.experiment != "coherency":
            return self._not_experiment(s, "coherency")
        grid = _Grid(self.rows)
        overall = [[c, p, *[grid.cell(c, p, "all", m) for m in COHERENCY_METRICS],
                    grid.count(c, p, "all", "coherency")] for c, p in grid.keys]
        s.tables.append(Table(["corpus", "predictor", "round 1", "round 2", "coherency", "c1", "c2", "all correct",
                               "instances"], overall,
                              "Coherency per round and their mean (Table 1); c1/c2: first step of round 1/2 right, "
                              "all correct: all four steps right (Table 4); %, macro over relations"))
        types = [t for t in (*RELATION_TYPES, "all") if t in grid.groups]
        per_type = [[c, p, self._metric_name(m), *[grid.cell(c, p, t, m) for t in types]]
                    for c, p in grid.keys for m in COHERENCY_METRICS]
        s.tables.append(Table(["corpus", "predictor", "metric", *types], per_type, "Per relation type (Table 5)"))
        return s

    def kmir(self) -> Section:
        s = Section("kmir", "KMIR-style questions", "KMIR Tables 4 and 5")
        if self.view.experiment != "kmir":
            return self._not_experiment(s, "kmir")
        grid = _Grid(self.rows)
        kinds = [g for g in grid.groups if g != "all"] + ["all"]
        for metric in ("f1", "em"):
            s.tables.append(Table(["corpus", "predictor", *kinds],
                                  [[c, p, *[grid.cell(c, p, k, metric) for k in kinds]] for c, p in grid.keys],
                                  f"{self._metric_name(metric)} per question kind"))
        s.tables.append(Table(["corpus", "predictor", "all questions right", "some right", "none right", "answered"],
                              [[c, p, *[grid.cell(c, p, "all", m) for m in KMIR_ROBUSTNESS]] for c, p in grid.keys],
                              "Q-set robustness (% of Q-sets, Table 5) and % of questions answered"))
        return s

    def sections(self) -> list[Section]:
        return [self.overview(), self.scores(), self.p_at_k(), self.by_relation(), self.by_type(), self.deltas(),
                self.correlation(), self.bins(), self.rank_variation(), self.coherency(), self.kmir()]
