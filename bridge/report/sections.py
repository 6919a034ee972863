"""The report's sections: which tables and figures each paper's analysis needs, from what a run holds.

A section whose data the run lacks stays in the report as a note naming the command that
produces the data, so a reader knows the difference between "not measured" and "no effect".
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from bridge.predictors.registry import REFERENCE, apart_briefs, shown_spec, spec_of
from bridge.report import figures
from bridge.report.data import View, best_kb, is_relation
from bridge.report.deltas import Units, delta_rows, few_shared_warnings
from bridge.report.page import Figure, Section, Table, tables_from_markdown
from bridge.report.usage import usage_table
from bridge.run.summaries import (
    generating,
    headline_metric,
    lead_metric,
    open_spaces,
    shown_extra,
    unranked_note,
)
from eval.cells import count_of, csv_cell, fixed
from eval.file_names import ascii_stem
from eval.kmir import KINDS
from eval.report import (
    METRIC_NAMES,
    all_of,
    counted_unit,
    per_relation,
    prompt_table,
    relation_mean,
    relation_name,
    table,
)
from eval.types import RELATION_TYPES

SCORES_SOURCE = {"lama": "LAMA Table 2", "coherency": "coherency paper Table 1", "kmir": "KMIR Table 4"}
PROMPTS_CAPTION = ("Across prompts (raw, shared facts), as summary.md: the tables above pool every prompt of the set; "
                   "the random and drawn prompt columns are over seeded draws of one prompt per relation (coherency's: "
                   "the coherency paper's Table 3)")
SIGNIFICANT = 0.01  # the correlation matrix marks coefficients with p below this
MIN_BIN = 20  # co-occurrence bins with fewer facts are merged with their neighbours
STAT_ORDER = ("sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs", "lpfp")
STAT_NAMES = {"sm": "subject mentions", "om": "object mentions", "cooc_paragraphs": "paragraphs with both",
              "cooc_sentences": "sentences with both", "st": "subject tokens", "swp": "subject word pieces",
              "socs": "subject-object cosine", "lpfp": "log prob of first prediction"}
NEGATED_METRICS = ("p@1", "overlap", "spearman", "became-prime", "p@1-drop")
FEWREL_METRICS = ("f1-macro", "precision-macro", "recall-macro", "accuracy", "coverage")
COHERENCY_METRICS = ("coherency_round1", "coherency_round2", "coherency", "c1", "c2", "all_correct")
KMIR_ROBUSTNESS = ("robust_all", "robust_partial", "robust_none", "answered")
LMKBC_METRICS = ("macro-p", "macro-r", "macro-f1", "micro-p", "micro-r", "micro-f1", "avg-preds", "empty-preds")


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fixed(value, digits)


def _fmt_p(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value >= 1e-4 else f"{value:.1e}"


def _slug(text: str) -> str:
    """A figure's name for a metric or shown predictor name; one in another script (a run folder named `実験`) with
    a hash of it besides, so that two such names do not draw into one file (`ascii_stem`)."""
    return ascii_stem(text, re.sub(r"[^A-Za-z0-9]+", "_", text.replace("@", "_at_")).strip("_").lower()) or "x"


class _Grid:
    """Summary rows keyed by (corpus, predictor, group, metric), for the experiment tables."""

    def __init__(self, rows: list[dict]) -> None:
        self.idx = {(r["corpus"], r["predictor"], r["group"], r["metric"]): r for r in rows}
        self.keys = list(dict.fromkeys((r["corpus"], r["predictor"]) for r in rows))
        self.groups = list(dict.fromkeys(r["group"] for r in rows))

    def cell(self, corpus: str, predictor: str, group: str, metric: str, digits: int = 2) -> str:
        row = self.idx.get((corpus, predictor, group, metric))
        return _fmt(row["value"], digits) if row else "-"

    def count_cell(self, corpus: str, predictor: str, group: str, metric: str) -> str:
        """A value that counts (pairs predicted empty): a whole number."""
        row = self.idx.get((corpus, predictor, group, metric))
        return f"{row['value']:.0f}" if row and row["value"] is not None else "-"

    def count(self, corpus: str, predictor: str, group: str, metric: str) -> str:
        row = self.idx.get((corpus, predictor, group, metric))
        return str(row.get("n_facts", "-")) if row else "-"


class Builder:
    """Draws the figures into `out/figures` and assembles the sections of one view."""

    def __init__(self, view: View, out: Path, deltas: list[tuple[str, str]], asked: bool = False) -> None:
        self.view, self.out, self.pairs = view, out, deltas
        self.asked = asked  # the deltas are the pair `--delta A B` named, not the default choice
        self.fig_dir = out / "figures"
        self.colour = figures.colours(view.predictors)
        self.labels = view.relation_labels()
        self.metric = (lead_metric("lama", view.summary, view.setting) if view.experiment == "lama" else
                       headline_metric(view.experiment))
        self.scope = "shared" if any(r.get("scope") == "shared" for r in view.summary) else "own"
        # two runs are scored as each scored itself: the shared facts of each run, not those both runs answered
        self.facts = f"{self.scope} facts" + (" within each run" if self.scope == "shared" and len(view.runs) > 1
                                              else "")
        self.rows = self._scope_rows(self.scope)
        # summary.md's order: the shared scope first, then each predictor's own facts (what it alone answered)
        self.scopes = (self.scope, "own") if self.scope == "shared" else (self.scope,)
        self.path = view.main.path
        # what `n_facts` counts, as summary.md says
        self.unit = {"kmir": "questions", "lmkbc": "pairs"}.get(view.experiment, "facts")
        self.upper = view.upper
        reference = {p for p, (run, name) in view.origin.items() if spec_of(run.config, name) == REFERENCE}
        # the gold KB scores 100 by construction: kept in the tables, left out of the figures
        self.hidden = reference if view.experiment != "kmir" and len(reference) < len(view.predictors) else set()
        self.warnings: list[str] = []  # said above every section, and on stderr (`bridge.run.overlap`)
        self.missing_glyphs: dict[str, set[str]] = {}  # font -> characters of labels it could not draw

    # helpers -----------------------------------------------------------------------------------
    def _scope_rows(self, scope: str) -> list[dict]:
        return [r for r in self.view.summary if r["setting"] == self.view.setting and r.get("scope", "own") == scope
                and not r.get("prompt")]

    def _scope_facts(self, scope: str) -> str:
        """`shared facts`, `own facts`: the scope a table is over, as summary.md's headings name it."""
        return self.facts if scope == self.scope else f"{scope} facts"

    def _figure(self, key: str, caption: str, draw: Callable[[Path, str], list[Path]]) -> Figure:
        with figures.noting_glyphs(self.missing_glyphs):
            png, svg = draw(self.fig_dir, key)
        return Figure(key, caption, png, svg)

    def _values(self, metric: str, scope: str | None = None) -> dict[str, dict[str, dict[str, float]]]:
        """corpus -> group -> predictor -> value of `metric` (in `scope`, the report's own by default)."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for r in self._scope_rows(scope or self.scope):
            if r["metric"] == metric:
                out.setdefault(r["corpus"], {}).setdefault(r["group"], {})[r["predictor"]] = float(r["value"])
        return out

    def _drawn(self, metric: str, scope: str | None = None) -> dict[str, dict[str, dict[str, float]]]:
        """`_values` without the predictors the figures leave out (the gold reference)."""
        return {c: {g: {p: v for p, v in per.items() if p not in self.hidden} for g, per in groups.items()}
                for c, groups in self._values(metric, scope).items()}

    def _widens(self, metric: str, keep: Callable[[str], bool]) -> bool:
        """Whether the predictors' own facts hold groups (`keep`: relations, types) of `metric` that the shared
        facts lack: a predictor that answered no fact of a relation takes it out of the shared scope for everyone,
        so the report shows the own-facts rows too, as summary.md does."""
        def held(scope: str) -> set[tuple[str, str]]:
            return {(r["corpus"], r["group"]) for r in self._scope_rows(scope)
                    if r["metric"] == metric and keep(str(r["group"]))}

        return self.scope == "shared" and bool(held("own") - held("shared"))

    def _own_note(self, unit: str) -> str:
        return (f"The shared facts (those every predictor answered) lack some {unit} that the predictors' own facts "
                f"hold: the {unit} over each predictor's own facts follow, as in summary.md's own-facts tables.")

    def _hidden_note(self) -> str:
        return f" {', '.join(sorted(self.hidden))} (100 by construction) is left out." if self.hidden else ""

    def _n_facts(self, metric: str, scope: str | None = None) -> dict[tuple[str, str, str], int]:
        return {(r["corpus"], r["group"], r["predictor"]): int(r.get("n_facts") or 0)
                for r in self._scope_rows(scope or self.scope) if r["metric"] == metric}

    def _intervals(self, metric: str, scope: str | None = None) -> dict[tuple[str, str, str], tuple[float, float]]:
        """(corpus, group, predictor) -> (ci_low, ci_high) where the summary rows carry an interval."""
        out = {}
        for r in self._scope_rows(scope or self.scope):
            low, high = r.get("ci_low"), r.get("ci_high")
            if r["metric"] == metric and isinstance(low, (int, float)) and isinstance(high, (int, float)):
                out[(r["corpus"], r["group"], r["predictor"])] = (float(low), float(high))
        return out

    def _mark(self, name: str) -> str:
        """A predictor's name in a table, with † when it is an upper bound."""
        return f"{name} †" if name in self.upper else name

    def _mark_tables(self, tables: list[Table]) -> list[Table]:
        for t in tables:
            if "predictor" in t.head:
                at = t.head.index("predictor")
                for row in t.rows:
                    row[at] = self._mark(row[at])
        return tables

    def _totals_notes(self) -> list[str]:
        """Under each table with Totals of two runs over different relations: which relations each run's Total is
        over, as `kbc leaderboard` notes what it scores over (the runs' Totals are no comparison then)."""
        notes = []
        for corpus, held in self.view.relations_held().items():
            each = "; ".join(f"{label} over {', '.join(rels)}" for label, rels in held.items())
            first, *rest = held.values()
            shared = [r for r in first if all(r in h for h in rest)]
            both = (f"`kbc leaderboard` scores both runs over {', '.join(shared)}, the relation"
                    f"{'' if len(shared) == 1 else 's'} they share" if shared else "they share no relation")
            notes.append(f"{corpus}: the runs hold different relations, so each run's Total is over its own: {each} "
                         f"({both}).")
        return notes

    def _footnote(self, section: Section, names) -> None:
        marked = [n for n in dict.fromkeys(names) if n in self.upper]
        if marked:
            section.footnotes.append("† upper bound, not a baseline: " + "; ".join(
                f"`{n}` {self.upper[n]}" for n in marked) + ".")

    def _written(self) -> dict[str, list[str]]:
        """Per corpus, the shown predictors that wrote their answers by generation (no ranking: no P@k, MRR)."""
        out: dict[str, list[str]] = {}
        for shown, (run, name) in self.view.origin.items():
            for corpus in run.corpora:
                if name in generating(run.config, corpus):
                    out.setdefault(corpus, []).append(shown)
        return out

    def _held(self, predictor: str, metric: str) -> bool:
        return any(r["predictor"] == predictor and r["metric"] == metric for r in self.rows)

    def _other_scores(self, s: Section, metric: str, unit: str) -> None:
        """Below a table of the ranked headline (P@1): the exact match per relation or type of the predictors that
        wrote their answers by generation, which have no P@1, and a line saying so."""
        written = [p for p in self.view.predictors if not self._held(p, metric) and self._held(p, "em")]
        if metric == "em" or not written:
            return
        s.text.append(f"{', '.join(written)} wrote {'its' if len(written) == 1 else 'their'} answers by generation "
                      f"(no ranking, so no {self._short(metric)}): {'its' if len(written) == 1 else 'their'} "
                      f"exact match per {unit} is in the table below, and in the Scores section.")
        rows = [r for r in self.view.summary if r["predictor"] in written]
        if unit == "relation":
            s.tables += tables_from_markdown(per_relation(rows, "em", self.view.setting, self.scope,
                                                          self.view.relation_info()),
                                             f"{self._metric_name('em')} per relation, {self.facts}")
        else:
            ci = self._intervals("em")
            n = self._n_facts("em")
            for corpus, groups in self._drawn("em").items():
                shown = [g for g in (*RELATION_TYPES, "all") if g in groups]
                body = [[self._mark(p), *[self._cell(groups[g].get(p), ci.get((corpus, g, p))) for g in shown],
                         str(n.get((corpus, "all", p), "-"))] for p in written if p in groups.get("all", {})]
                if body:
                    s.tables.append(Table(["predictor", *shown, f"#{self.unit}"], body,
                                          f"{corpus}: {self._metric_name('em')} [95% interval]"))

    def _short(self, metric: str) -> str:
        return self._metric_name(metric).replace(" (%)", "")

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
        # predictors of one model apart by how they were asked (runs side by side): those settings after the spec
        aparts = apart_briefs([(run.config, name, shown_spec(run.config, name)) for run, name in origin.values()])
        for (shown, (run, name)), apart in zip(origin.items(), aparts):
            spec = spec_of(run.config, name)
            role = (" (upper bound)" if shown in self.upper else
                    " (reference: 100 by construction)" if spec == REFERENCE and view.experiment != "kmir" else "")
            named = shown_spec(run.config, name) + (f" ({apart})" if apart else "")
            row = [self._mark(shown), view.sides[shown].upper() + role, named]
            rows.append([*row, str(run.path)] if len(view.runs) > 1 else row)
        s.tables.append(Table(head, rows,
                              "Predictors (KB: symbolic side; LM: language model side; BASELINE: chance floor)"))
        self._footnote(s, view.predictors)
        from bridge.run.asked_contexts import asked_with_note
        from bridge.run.summaries import sample_note, scoring_notes

        for run in view.runs:  # a --limit sample, a prompt set or context, statement scoring: as summary.md says
            sample = sample_note(run.config)
            for note in ([sample] if sample else []) + asked_with_note(run.config) + scoring_notes(run.config):
                s.text.append(f"{run.path}: {note}" if len(view.runs) > 1 else note)
        if view.experiment == "fewrel":
            self._fewrel_training(s)
        seconds = view.seconds()
        if seconds:
            corpora = list(seconds)
            cost = [[p, *[_fmt(seconds[c].get(p), 1) if p in seconds[c] else "-" for c in corpora],
                     _fmt(sum(seconds[c].get(p, 0.0) for c in corpora), 1)] for p in view.predictors]
            s.tables.append(Table(["predictor", *[f"{c} (s)" for c in corpora], "total (s)"], cost,
                                  "Seconds each predictor took, as the runner recorded them (set-up included)"))
        else:
            s.text.append("The run's config.json records no seconds per predictor.")
        usage = view.usage()
        if usage:
            s.tables.append(usage_table(usage, view.unrecorded_usage()))
        unit = counted_unit(view.dropped)  # runs side by side may count different things: each cell says
        dropped: dict[tuple[str, str, str, str], int] = {}
        for d in view.dropped:
            key = (d.get("corpus", ""), d.get("predictor", ""), d.get("reason", ""), d.get("unit") or "facts")
            dropped[key] = dropped.get(key, 0) + int(d.get("n") or 0)
        if dropped:
            s.tables.append(Table(["corpus", "predictor", "reason", unit or "dropped"],
                                  [[c, p, why, str(n) if unit else count_of(n, u)]
                                   for (c, p, why, u), n in dropped.items()],
                                  f"{(unit or 'what').capitalize()} a predictor could not answer (not scored)"))
        return s

    def _fewrel_training(self, s: Section) -> None:
        """summary.md's training choices of each fine-tuned predictor, a run column where runs are compared."""
        from bridge.experiments.fewrel_training import TRAINING_HEAD, training_rows

        several = len(self.view.runs) > 1
        rows = [[*row, run.label] if several else row for run in self.view.runs for row in training_rows(run.config)]
        if rows:
            s.tables.append(Table([*TRAINING_HEAD, "run"] if several else TRAINING_HEAD, rows,
                                  "Training of the fine-tuned predictors: lr kept on dev (of those tried), epoch kept "
                                  "(best dev macro F1) of those trained, its dev macro F1, batch size, dtype"))

    def _open_spaces(self) -> set[tuple[str, str]]:
        """(corpus, shown name) of the predictors that rank no fixed list, in every run drawn (`open_spaces`)."""
        return {(c, shown) for shown, (run, name) in self.view.origin.items()
                for c, p in open_spaces(run.config) if p == name}

    def scores(self) -> Section:
        from bridge.experiments import get
        from bridge.experiments.base import counted

        title = {"coherency": "Coherency scores", "kmir": "KMIR scores"}.get(self.view.experiment, "Scores")
        facts = ", then ".join(self._scope_facts(scope) for scope in self.scopes)
        s = Section("scores", f"{title} ({facts})", SCORES_SOURCE.get(self.view.experiment, ""))
        metrics = {"lama": ("p@1", "p@10", "mrr"), "kmir": ("f1", "em"), "negated": NEGATED_METRICS,
                   "fewrel": FEWREL_METRICS}.get(self.view.experiment, (self.metric,))
        if self.view.experiment == "lama":  # as summary.md: exact match and the rates of generated answers, set scores
            metrics = (*metrics, *shown_extra(get("lama"), self.rows))
        info = self.view.relation_info()
        for scope in self.scopes:  # as summary.md: the own-facts tables that the shared tables' notes point to
            for metric in metrics:
                text = table(self.view.summary, metric, self.view.setting, scope, relations=info,
                             open_spaces=self._open_spaces(), unit=counted(get(self.view.experiment), metric))
                # each table with its notes under it: why a column is `-` for everyone, the own totals where the
                # shared facts are under half
                drawn = self._mark_tables(tables_from_markdown(
                    text, f"{self._metric_name(metric)}, setting {self.view.setting}"
                    + ("" if scope == self.scope else f", {scope} facts")))
                for t in drawn:
                    t.notes += self._totals_notes()
                s.tables += drawn
        # a run over a prompt set: summary.md's "Across prompts" (the scores above pool every prompt)
        s.tables += tables_from_markdown(prompt_table(self.view.summary), PROMPTS_CAPTION)
        self._footnote(s, self.view.predictors)
        from bridge.run.summaries import silent_in, silent_note

        s.text += [line for corpus, names in silent_in(self.view.summary).items()
                   for line in silent_note(corpus, names, "it has no score (`-`, #facts 0)")]
        if self.view.experiment == "lama":
            s.text += [unranked_note(corpus, names) for corpus, names in self._written().items()]
        if self.scope == "shared":
            s.text.append("`shared`: per metric, the facts every predictor of a run scored on it answered (under each "
                          "table: which), so KB and LM numbers are over the same queries.")
            if len(self.view.runs) > 1:
                s.text.append("Each run's rows are over its own shared facts, as its summary scored them; "
                              "`kbc leaderboard` ranks the predictors of both runs on the facts they all answered.")
        if self.view.experiment == "fewrel":
            self._fewrel_precision(s)
        if not s.tables:
            asked = ", ".join(self._metric_name(m) for m in metrics)
            s.skipped = (f"summary.json has no {asked} rows ({self.view.setting}, {self.facts})."
                         if any(r["setting"] == self.view.setting for r in self.view.summary) else
                         f"summary.json has no `{self.view.setting}` rows.")
        return s

    def _fewrel_precision(self, s: Section) -> None:
        """summary.md's rule for macro precision, with each predictor's coverage and precision of its answers, and
        which relations the macro scores are over (a warning where the runs compared asked different ones)."""
        from bridge.experiments.fewrel import (
            PRECISION_HEAD,
            PRECISION_NOTE,
            asked_differ,
            asked_note,
            asked_relations,
            precision_rows,
        )

        asked = [(run.label, asked_relations(run.summary)) for run in self.view.runs]
        differ = asked_differ(asked)
        s.text.append(differ or asked_note(asked[0][1]))
        found = precision_rows(self.rows, self.scope)
        if found:
            s.text.append(PRECISION_NOTE)
            s.tables.append(Table(PRECISION_HEAD, found, f"Macro precision beside coverage ({self.facts})"))

    def confusion(self) -> Section:
        """The confusion matrices `kbc run fewrel` wrote (figures/confusion-<predictor>.json and .png)."""
        s = Section("confusion", "Confusion matrices")
        for shown, (run, name) in self.view.origin.items():
            path = run.path / "figures" / f"confusion-{name}.json"
            if not path.is_file():
                continue
            found = json.loads(path.read_text(encoding="utf-8"))
            cols = found["predicted"]
            rows = [[gold, *[str(n) for n in counts]] for gold, counts in zip(found["gold"], found["counts"])
                    if any(counts)]
            s.tables.append(Table(["gold relation", *cols], rows,
                                  f"{self._mark(shown)}: sentences per gold (row) and predicted relation (column); "
                                  "`none`: no answer"))
            png, svg = path.with_suffix(".png"), path.with_suffix(".svg")
            if png.is_file():  # copied beside the page, as every file it links
                self.fig_dir.mkdir(parents=True, exist_ok=True)
                copies = [self.fig_dir / f"confusion_{_slug(shown)}{f.suffix}" for f in (png, svg)]
                shutil.copyfile(png, copies[0])
                if svg.is_file():  # a run scored before the heat maps had an SVG holds the PNG alone
                    shutil.copyfile(svg, copies[1])
                    s.figures.append(Figure(f"confusion_{_slug(shown)}", f"{self._mark(shown)}'s confusion matrix "
                                            "as a heat map", *copies))
                else:
                    s.links.append((f"{shown}'s confusion matrix as a heat map", copies[0]))
        if not s.tables:
            s.skipped = "the run holds no figures/confusion-<predictor>.json; rerun `kbc run fewrel` to write them."
        return s

    def p_at_k(self) -> Section:
        s = Section("p_at_k", "Mean P@k curves", "LAMA Fig. 2")
        if self.view.experiment != "lama":
            return self._not_experiment(s, "lama")
        picked = [c for c in self.view.curves if c["setting"] == self.view.setting and c.get("group") == "all"
                  and c.get("scope", "own") == self.scope]
        written = list(dict.fromkeys(p for names in self._written().values() for p in names))
        if not picked and written and len(written) == len(self.view.predictors):
            runs = "this run" if len(self.view.runs) == 1 else "these runs"
            s.skipped = (f"every predictor of {runs} wrote its answers by generation (no ranking), so there is no "
                         "P@k curve; their exact match is in the Scores section.")
            return s
        if not picked:
            s.skipped = (f"curves.json has no `{self.view.setting}` P@k curves; it is written by `kbc run lama` "
                         "(rerun the run's command to rebuild its summaries).")
            return s
        if written:
            s.text.append(f"No curve for {', '.join(written)}: answers written by generation, no ranking (see "
                          "exact match in the Scores section).")
        curves: dict[str, dict[str, list[tuple[int, float]]]] = {}
        for c in picked:
            curves.setdefault(c["corpus"], {}).setdefault(c["predictor"], []).append((int(c["k"]), float(c["value"])))
        drawn = {corpus: {p: points for p, points in per.items() if p not in self.hidden}
                 for corpus, per in curves.items()}
        s.figures.append(self._figure("p_at_k", f"Mean P@k (macro over relations) for k = 1..100, setting "
                                      f"{self.view.setting}, {self.facts}; log-scale k.{self._hidden_note()}",
                                      lambda out, key: figures.p_at_k(drawn, self.colour, out, key, self.upper)))
        at = {(c["corpus"], c["predictor"], int(c["k"])): float(c["value"]) for c in picked}
        ks = [k for k in (1, 10, 100) if any(key[2] == k for key in at)]
        rows = [[corpus, self._mark(p), *[_fmt(at.get((corpus, p, k))) for k in ks]]
                for corpus in curves for p in curves[corpus]]
        s.tables.append(Table(["corpus", "predictor", *[f"P@{k}" for k in ks]], rows,
                              notes=[n for n in self._totals_notes() if n.split(": ", 1)[0] in curves]))
        return s

    def by_relation(self) -> Section:
        metric = self.metric
        name = "P@1" if metric == "p@1" else self._metric_name(metric).replace(" (%)", "")
        s = Section("by_relation", f"{name} by relation", "LAMA per-relation results" if metric == "p@1" else "")
        if self.view.experiment == "kmir":
            s.skipped = "KMIR questions are scored per question kind (see the next section and the KMIR table)."
            return s
        values = self._drawn(metric)
        own = self._widens(metric, is_relation)
        for scope in (self.scope, "own") if own else (self.scope,):
            held = [c for c, groups in self._values(metric, scope).items()
                    if len([g for g in groups if is_relation(g)]) > 1]  # one relation: its row is the total
            if not held:
                continue
            drawn = self._drawn(metric, scope)  # a relation only the gold reference answered has no bar
            panels = {c: {g: v for g, v in groups.items() if is_relation(g) and v} for c, groups in drawn.items()}
            panels = {c: dict(sorted(g.items(), key=lambda kv: (-sum(kv[1].values()) / len(kv[1]), kv[0])))
                      for c, g in panels.items() if len(g) > 1}
            facts = self._scope_facts(scope)
            if scope != self.scope:
                s.text.append(self._own_note("relations"))
            key = f"{_slug(metric)}_relation" + ("" if scope == self.scope else f"_{scope}")
            if panels:
                s.figures.append(self._figure(key, f"{self._metric_name(metric)} per relation, predictors side by "
                                              f"side, relations sorted by their mean over predictors, left to right "
                                              f"as the table's rows ({self.view.setting}, {facts})."
                                              f"{self._hidden_note()}",
                                              lambda out, k, p=panels, sc=scope: figures.grouped_bars(
                                                  p, self.colour, f"{name} (%)", out, k, self.labels,
                                                  upper=self.upper, intervals=self._intervals(metric, sc))))
            tables = tables_from_markdown(per_relation(self.view.summary, metric, self.view.setting, scope,
                                                       self.view.relation_info()),
                                          "" if scope == self.scope else
                                          f"{self._metric_name(metric)} per relation, {facts}")
            s.tables += [figure_order(t, panels, self.view.relation_info()) for t in tables]
        if not s.tables:
            several = any(len({g for g in groups if is_relation(g)}) > 1 for groups in values.values())
            s.skipped = (f"each corpus of this run has one relation scored on {self._metric_name(metric)}: its "
                         "total is in the Scores section." if values and not several else
                         f"summary.json has no {self._metric_name(metric)} rows per relation "
                         f"({self.view.setting}, {self.facts}).")
            return s
        self._other_scores(s, metric, "relation")
        return s

    def by_type(self) -> Section:
        metric = self.metric
        kmir = self.view.experiment == "kmir"
        name = "P@1" if metric == "p@1" else self._metric_name(metric).replace(" (%)", "")
        s = Section("by_type", f"{name} by {'question kind' if kmir else 'relation type'}",
                    {"kmir": "KMIR Table 4", "coherency": "coherency paper Table 5"}.get(self.view.experiment,
                                                                                       "LAMA Table 2"))
        own = not kmir and self._widens(metric, lambda g: g in RELATION_TYPES)
        for scope in (self.scope, "own") if own else (self.scope,):
            panels = self._type_panels(metric, scope, kmir)
            if not panels:
                continue
            every_row = self._type_panels(metric, scope, kmir, drawn=False)  # the tables keep the gold reference
            facts = self._scope_facts(scope)
            if scope != self.scope:
                s.text.append(self._own_note("relation types"))
            ci = self._intervals(metric, scope)
            key = f"{_slug(metric)}_{'kind' if kmir else 'type'}" + ("" if scope == self.scope else f"_{scope}")
            apart = {c: held for c, held in self.view.relations_held().items() if c in panels}
            every = "over every relation" if not apart else "each run over its own relations, which differ: " + \
                "; ".join(f"{c}: " + "; ".join(f"{label} {', '.join(rels)}" for label, rels in held.items())
                          for c, held in apart.items())
            averaged = ("mean over the questions of each kind; `all`: over every question" if kmir else
                        f"macro over relations; `all`: {every}")
            subtitles = {c: "all: each run over its own relations: " + "; ".join(
                f"{label} {', '.join(rels)}" for label, rels in held.items()) for c, held in apart.items()}
            s.figures.append(self._figure(key, f"{self._metric_name(metric)} per {'kind' if kmir else 'type'} "
                                          f"({averaged}), {self.view.setting}"
                                          + ("" if scope == self.scope else f", {facts}")
                                          + f".{self._hidden_note()}",
                                          lambda out, k, p=panels, c=ci, t=subtitles: figures.grouped_bars(
                                              p, self.colour, f"{name} (%)", out, k, upper=self.upper, intervals=c,
                                              subtitles=t)))
            n = self._n_facts(metric, scope)
            for corpus, groups in every_row.items():
                head = ["predictor", *groups, f"#{self.unit}"]
                predictors = list(dict.fromkeys(p for v in groups.values() for p in v))
                rows = [[self._mark(p), *[self._cell(groups[g].get(p), ci.get((corpus, g, p))) for g in groups],
                         str(n.get((corpus, "all", p), "-"))] for p in predictors]
                s.tables.append(Table(head, rows, f"{corpus}: {self._metric_name(metric)}, {facts}"
                                      + (" [95% interval]" if ci else ""),
                                      [n for n in self._totals_notes() if n.startswith(f"{corpus}: ")]))
        if not s.figures:
            s.skipped = "summary.json has no rows per relation type."
            return s
        if not kmir:
            self._other_scores(s, metric, "relation type")
        self._footnote(s, self.view.predictors)
        return s

    def _type_panels(self, metric: str, scope: str, kmir: bool,
                     drawn: bool = True) -> dict[str, dict[str, dict[str, float]]]:
        """corpus -> group -> predictor -> value: the relation types and `all` (KMIR: the question kinds); those the
        figures draw, or (`drawn=False`) every predictor's, the gold reference too, as the tables show them."""
        order = [*RELATION_TYPES, "all"]
        panels = {}
        for corpus, groups in (self._drawn if drawn else self._values)(metric, scope).items():
            wanted = [g for g in groups if g in KINDS] + ["all"] if kmir else [g for g in order if g in groups]
            if wanted:
                panels[corpus] = {g: groups[g] for g in wanted if g in groups}
        return panels

    @staticmethod
    def _cell(value: float | None, interval: tuple[float, float] | None) -> str:
        if interval is None or value is None:
            return _fmt(value)
        return f"{_fmt(value)} [{_fmt(interval[0])}, {_fmt(interval[1])}]"

    def _pair_metric(self, base: str, other: str) -> str | None:
        """The metric a delta of `other` against `base` is taken on: the headline where both have it, else exact
        match where both wrote their answers; None where one ranks and the other writes (P@1 against exact match
        would be a difference of two measures)."""
        return next((m for m in dict.fromkeys((self.metric, "em")) if self._held(base, m) and self._held(other, m)),
                    None)

    def deltas(self) -> Section:
        s = Section("deltas", f"Per-relation deltas {self._baselines()}", "E-BERT Fig. 2")
        if not self.pairs:
            chance = " (Freq is chance level on BEAR: its ranking there is the data file's order)" if \
                self.view.main.command == "bear" else ""
            s.skipped = (f"a default delta needs a KB predictor other than gold{chance} and an LM predictor; name two "
                         "with `kbc report RUN --delta A B`.")
            return s
        by_base: dict[tuple[str, str], list[str]] = {}
        units = Units(self.view)  # each run's scored units, read once
        for base, other in self.pairs:
            metric = self._pair_metric(base, other)
            if metric is None:
                s.text.append(self._no_common_metric(base, other))
                continue
            by_base.setdefault((base, metric), []).append(other)
        for (base, metric), others in by_base.items():
            name = "P@1" if metric == "p@1" else self._metric_name(metric).replace(" (%)", "")
            warned = few_shared_warnings(self.view, units, base, others, self.unit)
            self.warnings += warned
            s.text += [f"Warning: {w}" for w in warned]
            found = delta_rows(self.view, units, base, others, metric)
            # the figure's order: per corpus, relations by their mean delta (ties by id)
            order = {c: i for i, c in enumerate(dict.fromkeys(row.corpus for row in found))}
            found.sort(key=lambda row: (order[row.corpus], sum(row.diffs.values()) / len(row.diffs), row.relation))
            shares = any(row.share is not None for row in found)  # only LAMA's P@k answers are object names
            info = self.view.relation_info()
            panels: dict[str, list[tuple[str, dict[str, float], float | None]]] = {}
            rows = []
            for row in found:
                panels.setdefault(row.corpus, []).append((row.relation, row.diffs, row.share))
                rows.append([row.corpus, relation_name(row.relation, info.get(row.corpus, {})), str(row.n),
                             _fmt(row.base), *[fixed(row.diffs[o], 2, True) if o in row.diffs else "-" for o in others],
                             *([_fmt(row.share, 1)] if shares else [])])
            if not panels:
                s.text.append(f"{base} and {', '.join(others)} share no corpus with two or more relations scored on "
                              f"{self._metric_name(metric)}.")
                continue
            key = f"delta_{_slug(others[0])}_vs_{_slug(base)}" if len(others) == 1 else f"delta_vs_{_slug(base)}"
            key += "" if metric == self.metric else f"_{_slug(metric)}"
            crosses = "crosses: % of facts whose object name is a substring of the subject name. " if shares else ""
            caption = (f"{self._metric_name(metric)} of {', '.join(others)} minus {self._mark(base)} per relation "
                       f"(points; relations sorted by the mean delta); {crosses}Setting {self.view.setting}.")
            s.figures.append(self._figure(key, caption, lambda out, k, p=panels, b=base, label=name:
                                          figures.deltas(p, b, self.colour, out, k, self.labels, label, self.upper)))
            share = " and the object-in-subject share" if shares else ""
            s.text.append(f"{name} deltas against {base}: each row's #{self.unit}, {base}'s value, the differences"
                          f"{share} are over the same {self.unit}, those answered by {all_of([base, *others])}; "
                          "relations in the figure's order top to bottom, by the mean delta.")
            s.tables.append(Table(["corpus", "relation", f"#{self.unit}", self._mark(base),
                                   *[f"{self._mark(o)} − {base}" for o in others],
                                   *(["object in subject (%)"] if shares else [])], rows,
                                  f"{name} deltas against {self._mark(base)}"))
        self._footnote(s, [b for b, _ in self.pairs] + [o for _, o in self.pairs])
        if not s.figures:
            s.skipped = s.skipped or ("no metric scores both sides of a delta." if not by_base else
                                      "no corpus has two or more relations scored by both sides of a delta.")
        return s

    def _baselines(self) -> str:
        """What the deltas are taken against, in words: the pair `--delta A B` named (B against A), else the best
        KB predictor (named) where that is the one baseline, else the baselines by name."""
        bases = list(dict.fromkeys(base for base, _ in self.pairs))
        if not bases:
            return "against the best KB predictor"
        if self.asked:
            return "of " + ", ".join(dict.fromkeys(o for _, o in self.pairs)) + " against " + ", ".join(bases)
        if len(self.view.runs) == 1 and bases == [best_kb(self.view, self.metric)]:
            return f"against the best KB predictor ({bases[0]})"
        return "against " + ", ".join(bases)

    def _no_common_metric(self, base: str, other: str) -> str:
        """Why no delta of `other` against `base` is drawn: one ranks its answers, the other writes them."""
        def what(p: str) -> str:
            held = [m for m in (self.metric, "em") if self._held(p, m)]
            kind = "writes its answers by generation" if self._held(p, "em") else "ranks its answers"
            return f"{p} {kind} ({', '.join(self._short(m) for m in held) or 'no score'})"

        return (f"No delta of {other} against {base}: {what(other)}, {what(base)}; no metric scores both, and a "
                "difference of two measures is no delta. The Scores section shows each beside the other; "
                "`kbc report RUN --delta A B` with two predictors of one kind draws theirs.")

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
        defined = {r["predictor"] for r in rows if r["target"] == "p@1" and r["coefficient"] is not None}
        for r in rows:
            if r["target"] == "p@1" and r["predictor"] in defined:
                panel = panels.setdefault((r["corpus"], r["method"]), {st: {} for st in stats})
                panel[r["statistic"]][r["predictor"]] = r["coefficient"]
        if panels:
            s.figures.append(self._figure("correlation", "Pearson and Spearman correlation between a fact's P@1 (0/1) "
                                          "and each statistic, per predictor; gaps: undefined (constant values or "
                                          "under 3 facts); predictors whose P@1 is constant are left out.",
                                          lambda out, k: figures.correlation_bars(panels, self.colour, out, k,
                                                                                  self.upper)))
        s.tables += self._correlation_matrix(rows, stats)
        csv_path = self._correlation_csv(rows, stats)
        s.links.append(("every coefficient (Pearson and Spearman, targets p@1 and rr, p-values, n) as CSV", csv_path))
        s.text.append("Statistics: " + "; ".join(f"`{st}` {STAT_NAMES[st]}" for st in stats if st in STAT_NAMES) + ".")
        stats_frame = self.view.analysis.fact_stats
        if stats_frame is not None:
            s.tables.append(self._fact_stats_table(stats_frame))
        return s

    def _correlation_matrix(self, rows: list[dict], stats: list[str]) -> list[Table]:
        """Per corpus, predictor × statistic: Spearman ρ of per-fact P@1, * where p < 0.01; predictors whose
        P@1 is constant (every coefficient undefined) are left out and named below the table."""
        at = {(r["corpus"], r["predictor"], r["statistic"]): r for r in rows
              if r["target"] == "p@1" and r["method"] == "spearman"}
        tables = []
        for corpus in dict.fromkeys(c for c, _, _ in at):
            shown = [st for st in stats if any((corpus, p, st) in at for p in self.view.predictors)]
            body, undefined = [], []
            for p in dict.fromkeys([*self.view.predictors, *(q for c, q, _ in at if c == corpus)]):
                cells = [at.get((corpus, p, st)) for st in shown]
                if not any(cells):
                    continue
                if all(c is None or c.get("coefficient") is None for c in cells):
                    undefined.append(p)
                    continue
                n = max((int(c.get("n") or 0) for c in cells if c), default=0)
                body.append([self._mark(p), *[self._rho(c) for c in cells], str(n)])
            if not body:
                continue
            caption = (f"{corpus}: Spearman ρ between a fact's P@1 (0/1) and each statistic; * p < {SIGNIFICANT}; "
                       "-: undefined (constant values or under 3 facts)")
            if undefined:
                caption += f"; left out (P@1 constant, ρ undefined): {', '.join(undefined)}"
            tables.append(Table(["predictor", *shown, "n"], body, caption))
        return tables

    @staticmethod
    def _rho(row: dict | None) -> str:
        if row is None or row.get("coefficient") is None:
            return "-"
        p = row.get("p_value")
        return f"{row['coefficient']:+.3f}" + ("*" if p is not None and p < SIGNIFICANT else "")

    def _correlation_csv(self, rows: list[dict], stats: list[str]) -> Path:
        """The full correlation table (every method, target, p-value and n) beside the page."""
        path = self.out / "correlation.csv"
        fields = ["corpus", "predictor", "setting", "statistic", "target", "method", "coefficient", "p_value", "n"]
        order = {st: i for i, st in enumerate(stats)}
        ordered = sorted(rows, key=lambda r: (str(r["corpus"]), str(r["predictor"]), order.get(r["statistic"], 99),
                                              str(r["target"]), str(r["method"])))
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(fields)
            for r in ordered:
                writer.writerow(["" if r.get(f) is None else csv_cell(r[f]) for f in fields])
        return path

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
        # as every other table: the facts every predictor answered, where bins.json holds them (older files hold
        # each predictor's own facts alone: each cell then says how many facts it is over)
        shared = any(r.get("scope") == "shared" for r in rows)
        rows = [r for r in rows if r.get("scope", "own") == ("shared" if shared else "own")]
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
        panels = {key: merge_bins(lines) for key, lines in panels.items()}
        over = "the facts every predictor answered" if shared else "each predictor's own answered facts"
        if not shared:
            s.text.append("analysis/bins.json predates bins over the facts every predictor answered; "
                          f"{self._cmd('correlation')} writes them.")
        s.figures.append(self._figure("cooccurrence_bins", "P@1 per bin of each count statistic (log-spaced bins; "
                                      f"`0`: never seen; neighbouring bins with under {MIN_BIN} facts merged), a line "
                                      f"per predictor, over {over}; above each panel: facts per bin.",
                                      lambda out, k: figures.binned(panels, self.colour, out, k, self.upper)))
        for (corpus, st), lines in panels.items():
            bins = list(dict.fromkeys(b for pts in lines.values() for b, _, _ in pts))
            at = {(p, b): (n, v) for p, pts in lines.items() for b, n, v in pts}
            predictors = list(lines)
            counts = {b: {at.get((p, b), (0, None))[0] for p in predictors} for b in bins}
            differ = any(len(n) > 1 for n in counts.values())
            table_rows = [[b, str(max(counts[b])) if not differ else "-",
                           *[self._bin_cell(at.get((p, b), (0, None)), differ) for p in predictors]] for b in bins]
            s.tables.append(Table(["bin", "facts", *map(self._mark, predictors)], table_rows,
                                  f"{corpus}, `{st}`: P@1 (%) per bin, over {over}"
                                  + ("; each cell's facts in parentheses (the predictors answered different facts)"
                                     if differ else "")))
        return s

    @staticmethod
    def _bin_cell(point: tuple[int, float | None], counted: bool) -> str:
        n, value = point
        return f"{_fmt(value)} ({n})" if counted else _fmt(value)

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
                                      lambda out, k: figures.rank_boxes(panels, self.colour, out, k, self.labels,
                                                                        self.upper)))
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
        if len(self.scopes) > 1:
            s.text.append("Shared facts: the questions every predictor answered; own facts: each predictor's own "
                          "answered questions, as summary.md gives both. A predictor that drops a kind of question "
                          "narrows the shared facts for everyone: read the own-facts tables beside them.")
        for scope in self.scopes:
            grid = _Grid(self._scope_rows(scope))
            facts = self._scope_facts(scope)
            scored = {key[2] for key in grid.idx if key[3] in ("f1", "em")}  # not a kind only `answered` names (0)
            kinds = [g for g in grid.groups if g in KINDS and g in scored] + ["all"]
            for metric in ("f1", "em"):
                s.tables.append(Table(["corpus", "predictor", *kinds],
                                      [[c, p, *[grid.cell(c, p, k, metric) for k in kinds]] for c, p in grid.keys],
                                      f"{self._metric_name(metric)} per question kind, {facts}"))
            s.tables.append(Table(["corpus", "predictor", "all questions right", "some right", "none right",
                                   "answered"],
                                  [[c, p, *[grid.cell(c, p, "all", m) for m in KMIR_ROBUSTNESS]]
                                   for c, p in grid.keys],
                                  f"Q-set robustness (% of Q-sets, Table 5) and % of questions answered, {facts}"))
        for metric in ("f1", "em"):  # as summary.md: per relation (a question's relation), the shared facts, then
            # the own facts where the shared ones lack relations (a predictor that drops a kind drops its relations)
            scopes = (self.scope, "own") if self._widens(metric, is_relation) else (self.scope,)
            for scope in scopes:
                s.tables += [t for t in tables_from_markdown(
                    per_relation(self.view.summary, metric, self.view.setting, scope, self.view.relation_info(),
                                 "questions"),
                    f"{self._metric_name(metric)} per relation "
                    f"({relation_mean(self.view.summary, metric, self.view.setting, scope)}), "
                    f"{self._scope_facts(scope)}") if t.rows]  # a run scored before relations had rows has none
        return s

    def lmkbc(self) -> Section:
        """LM-KBC's set metrics per relation and over all (subject, relation) pairs: no ranks, so no P@k."""
        s = Section("lmkbc", f"LM-KBC set answers ({self.scope} pairs)", "LM-KBC 2024 evaluation script")
        grid = _Grid(self.rows)
        relations = sorted(g for g in grid.groups if g != "all")
        rows = [[c, p, g, *[grid.count_cell(c, p, g, m) if m == "empty-preds" else grid.cell(c, p, g, m, 3)
                            for m in LMKBC_METRICS]]
                for c, p in grid.keys for g in [*relations, "all"] if (c, p, g, "macro-f1") in grid.idx]
        if not rows:
            s.skipped = f"summary.json has no `{self.view.setting}` LM-KBC rows."
            return s
        values = self._values("macro-f1")
        panels = {c: {g: {p: 100.0 * v for p, v in per.items()} for g, per in groups.items() if g != "all"}
                  for c, groups in values.items()}
        panels = {c: dict(sorted(g.items())) for c, g in panels.items() if g}
        if panels:
            s.figures.append(self._figure("macro_f1_relation", f"Macro F1 per relation (as %, {self.scope} pairs), "
                                          "predictors side by side.",
                                          lambda out, k: figures.grouped_bars(panels, self.colour, "macro F1 (%)", out,
                                                                              k, upper=self.upper)))
        s.text += self._set_rules()
        s.tables.append(Table(["corpus", "predictor", "relation", *LMKBC_METRICS], rows,
                              "Precision, recall and F1 (0-1; macro: mean over a group's (subject, relation) pairs, "
                              "micro: over their pooled objects), mean predicted objects and pairs predicted empty",
                              self._totals_notes()))
        rates = [[c, p, g, *[grid.cell(c, p, g, m) for m in ("abstain", "unlinked")]]
                 for c, p in grid.keys for g in [*relations, "all"] if (c, p, g, "unlinked") in grid.idx]
        if rates:  # answers written by generation
            s.tables.append(Table(["corpus", "predictor", "relation", "abstentions (%)", "linked to no entity (%)"],
                                  rates, "Answers written by generation: abstentions and answers linked to no entity "
                                  "(%; per relation the mean over its pairs, `all` over every pair)"))
        return s

    def _set_rules(self) -> list[str]:
        """Per predictor shown (of every run side by side), the rule that cut its ranked answers to a set, and the
        thresholds `threshold-tuned` chose on train per relation (read from its records)."""
        lines = []
        for shown, (data, name) in self.view.origin.items():
            for corpus in data.run.corpora:
                rules, chosen = set(), {}
                for record in data.run.records(corpus, name):
                    rules.add(str(record.get("set_rule", "all answers")))
                    if record.get("threshold") is not None:
                        chosen[record["relation"]] = record["threshold"]
                if not rules:
                    continue
                text = f"`{shown}`: set rule `{', '.join(sorted(rules))}`"
                if chosen:
                    text += "; thresholds tuned on train (best macro F1 per relation): " + ", ".join(
                        f"{rel} {value:g}" for rel, value in sorted(chosen.items()))
                lines.append(text + ".")
        return lines

    def sections(self) -> list[Section]:
        """The sections that fit the run's experiment, and a warning where the figures lacked glyphs for labels."""
        parts = self._sections()
        if self.missing_glyphs:
            self.warnings.append(figures.missing_glyphs_note(self.missing_glyphs))
        return parts

    def _sections(self) -> list[Section]:
        """The sections that fit the run's experiment: a coherency or KMIR run has no P@k curves or fact
        statistics, and deltas there are drawn only when asked for."""
        if self.view.experiment == "coherency":
            parts = [self.overview(), self.scores(), self.coherency(), self.by_relation(), self.by_type()]
            return [*parts, self.deltas()] if self.pairs else parts
        if self.view.experiment == "kmir":
            parts = [self.overview(), self.scores(), self.by_type(), self.kmir()]
            return [*parts, self.deltas()] if self.pairs else parts
        if self.view.experiment == "lmkbc":
            parts = [self.overview(), self.lmkbc()]
            return [*parts, self.deltas()] if self.pairs else parts
        if self.view.experiment == "fewrel":  # sentences classified: no P@k, relation types or fact statistics
            parts = [self.overview(), self.scores(), self.by_relation(), self.confusion()]
            return [*parts, self.deltas()] if self.pairs else parts
        if self.view.experiment == "negated":  # its rows are per relation already; LAMA's fact analyses do not apply
            return [self.overview(), self.scores()]
        return [self.overview(), self.scores(), self.p_at_k(), self.by_relation(), self.by_type(), self.deltas(),
                self.correlation(), self.bins(), self.rank_variation()]


def figure_order(table: Table, panels: dict[str, dict[str, dict[str, float]]],
                 info: dict[str, dict[str, tuple[str | None, str | None]]]) -> Table:
    """A per-relation table (corpus, relation, ...) with its rows in the order the figure draws the relations, left
    to right (`panels`: corpus -> relation -> ..., in that order); a relation the figure lacks keeps its place after
    those it shows."""
    place = {(c, relation_name(rel, info.get(c, {}))): i for c, groups in panels.items()
             for i, rel in enumerate(groups)}
    corpora = list(dict.fromkeys(row[0] for row in table.rows))
    rows = sorted(table.rows, key=lambda row: (corpora.index(row[0]), place.get((row[0], row[1]), len(place))))
    return Table(table.head, rows, table.caption, table.notes)


def merge_bins(lines: dict[str, list[tuple[str, int, float | None]]]) -> dict[str, list[tuple[str, int, float | None]]]:
    """Neighbouring bins merged until each holds at least `MIN_BIN` facts (a last short bin joins the one before):
    P@1 over a handful of facts swings by tens of points. The same bins for every predictor; a merged bin's
    P@1 is over all its facts."""
    bins = list(dict.fromkeys(b for points in lines.values() for b, _, _ in points))
    at = {(p, b): (n, v) for p, points in lines.items() for b, n, v in points}
    size = {b: max(at.get((p, b), (0, None))[0] for p in lines) for b in bins}
    groups: list[list[str]] = []
    for b in bins:
        if groups and sum(size[x] for x in groups[-1]) < MIN_BIN:
            groups[-1].append(b)
        else:
            groups.append([b])
    if len(groups) > 1 and sum(size[x] for x in groups[-1]) < MIN_BIN:
        last = groups.pop()
        groups[-1] += last
    out: dict[str, list[tuple[str, int, float | None]]] = {}
    for p in lines:
        for group in groups:
            n = sum(at.get((p, b), (0, None))[0] for b in group)
            hits = sum(at[(p, b)][0] * at[(p, b)][1] / 100.0 for b in group
                       if (p, b) in at and at[(p, b)][1] is not None)
            label = group[0] if len(group) == 1 else f"{group[0].split('-')[0]}-{group[-1].split('-')[-1]}"
            out.setdefault(p, []).append((label, n, 100.0 * hits / n if n else None))
    return out
