"""FewRel relation classification as an experiment (E-BERT §4, Table 2): each test sentence of the seeded split
classified by fine-tuned BERT, E-BERT, their AVG and CONCAT ensembles, and by the KB (the relations the graph
store holds between the head and tail ids), scored by macro precision, recall and F1 over relations, accuracy
and coverage (the share of sentences with an answer).

Each record holds the sentence's `uid`, its gold `relation`, the `predicted` one (null: no answer) and the class
distribution, so the tables can be recomputed from the prediction files alone. Intervals: a seeded bootstrap of
sentences within each gold relation (`eval.classification`).
"""

from __future__ import annotations

from pathlib import Path

from bridge.experiments.base import Records, StageInput, StageRecords, single_stage
from eval.cells import count_of, fixed
from eval.classification import MACRO, bootstrap_intervals, confusion, macro_scores, per_class
from eval.types import Fact, Prediction, Query
from eval.uncertainty import rng_for

TEMPLATE = "[X] [Y]"  # no prompt: the sentence is the input (`Fact.cloze`)
# summary metric ids: a relation's own score in its column, the macro mean over relations in Total
METRICS = {"f1": "f1-macro", "precision": "precision-macro", "recall": "recall-macro", "accuracy": "accuracy",
           "coverage": "coverage"}


class FewrelExperiment:
    name = "fewrel"
    stages = ("",)
    title = "FewRel relation classification (Total: macro over relations, as E-BERT Table 2; accuracy over sentences)"
    metrics = tuple(METRICS[m] for m in MACRO)
    unit = "sentences"
    spread = ("Cells: value ± bootstrap standard error: the standard deviation of seeded resamples, sentences drawn "
              "with replacement within each gold relation, for a relation's cell and the Total alike (not the "
              "standard error of the mean over relations: macro scores are no mean of independent sentence scores); "
              "`Total 95% CI`: the percentile interval of the same resamples (summary.json holds every cell's "
              "`stderr`, `ci_low`, `ci_high`). A value without ± and `-` as interval: resampling cannot move it "
              "(every relation asked has one test sentence, so each resample is the sample itself; a relation's "
              "recall, accuracy and coverage where it has one), and a zero-width interval would claim an exactness "
              "the sample does not have.")
    own_outputs = ("figures/confusion-*.json", "figures/confusion-*.png", "figures/confusion-*.svg")  # digested too
    scored_settings = ("raw",)  # a sentence has one gold relation: nothing to filter
    classifies = True  # asks the FewRel corpus only, and it is asked by no other experiment

    def __init__(self, out: str | Path | None = None) -> None:
        self.out = Path(out) if out is not None else None
        self.settings: dict = {}

    def check(self, corpora: dict, data_dir: Path | None) -> None:
        """The whole file (train and dev parts too) shapes every fine-tuned model: part of the run's identity."""
        from eval.datadir import fingerprint
        from eval.fewrel import DATA_FILE, SPLIT, SPLIT_SEED, resolve_fewrel_dir

        self.settings["fewrel"] = {"data": fingerprint([resolve_fewrel_dir(data_dir) / DATA_FILE]),
                                   "split": dict(SPLIT), "split_seed": SPLIT_SEED}

    def scope_note(self, counts: str) -> str:
        """summary.md's scope line: every sentence asked is scored, those left without an answer as misses."""
        return (f"Scope `shared`: per metric, the sentences recorded for every predictor scored on that metric "
                f"({counts}); a sentence a predictor left without an answer (kb: no relation held between the two "
                "entities) is among them and counts as a miss, coverage saying how many it answered; `own`: the "
                "sentences recorded for each predictor.")

    def resolve(self, name: str, spec: str):
        from bridge.predictors.relations import resolve_factory

        return resolve_factory(name, spec, self.out)

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        out: dict[str, list[tuple[Query, Fact]]] = {rel: [] for rel in given.corpus.relations}
        for f in given.facts:
            out[f.relation].append((Query(f.uid, f.uid, f.corpus, f.relation, f.subject, "object", TEMPLATE), f))
        return {rel: pairs for rel, pairs in out.items() if pairs}

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict) -> dict:
        labels = [a.label for a in pred.answers]
        rank = labels.index(fact.relation) + 1 if fact.relation in labels else None
        record = {"uid": query.uid, "relation": fact.relation, "subject": fact.subject.label,
                  "subject_id": fact.subject.id, "object": fact.object.label, "object_id": fact.object.id,
                  "gold": fact.relation, "gold_id": None, "sentence": fact.cloze,
                  "prompt": pred.extra.get("input", fact.cloze), "predicted": labels[0] if labels else None,
                  "distribution": {a.label: a.score for a in pred.answers},
                  "answers": [[a.label, a.score] for a in pred.answers], "rank_raw": rank, "rank_filtered": rank}
        for key in ("fallback", "kb_relations"):
            if key in pred.extra:
                record[key] = pred.extra[key]
        return record

    def instances(self, records: StageRecords) -> Records:
        return single_stage(records)

    def summarize(self, instances: list[dict], relation_types: dict, mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        labels = sorted(relation_types)  # the same sums in the same order, whatever order the relations come in
        gold = [r["relation"] for r in instances]
        pred = [r["predicted"] for r in instances]
        rows = [{"setting": "raw", "group": "all", "metric": METRICS[m], "value": v, "n_facts": len(gold)}
                for m, v in macro_scores(gold, pred, labels).items()]
        for rel, c in per_class(gold, pred, labels).items():
            if not c.support:
                continue
            answered = sum(1 for g, p in zip(gold, pred) if g == rel and p is not None)
            values = {"f1": c.f1, "precision": c.precision, "recall": c.recall, "accuracy": c.recall,
                      "coverage": 100.0 * answered / c.support}
            rows += [{"setting": "raw", "group": rel, "metric": METRICS[m], "value": values[m], "n_facts": c.support}
                     for m in MACRO]
        return rows, []

    def intervals(self, items: list[dict], types: dict, bootstrap: int, seed: int, key: str) -> dict:
        """The bootstrap intervals of `summarize`'s rows, in the runner's (setting, metric) -> group layout."""
        # the draws depend on the sentences and relations, not the order either comes in (a leaderboard's or the run's)
        ordered = sorted(items, key=lambda r: str(r["uid"]))
        found = bootstrap_intervals([r["relation"] for r in ordered], [r["predicted"] for r in ordered], sorted(types),
                                    bootstrap, rng_for(seed, f"{key}/fewrel"))
        out: dict = {}
        for group, per_metric in found.items():
            for metric, interval in per_metric.items():
                out.setdefault(("raw", METRICS[metric]), {})[group] = interval
        return out

    def write_outputs(self, out: Path, corpus: str, predictor: str, units: Records) -> None:
        """Each predictor's confusion matrix (a row per relation with gold sentences, a column per relation gold or
        predicted and a last one for no answer), as JSON and figure."""
        from bridge.experiments.fewrel_figures import write_confusion

        gold = [u["relation"] for u in units.values()]
        rows = sorted(set(gold))  # a relation only predicted has no gold sentence: a column, not a row of zeros
        labels = sorted(set(gold) | {u["predicted"] for u in units.values() if u.get("predicted")})
        matrix = confusion(gold, [u.get("predicted") for u in units.values()], labels)
        write_confusion(out / "figures" / f"confusion-{predictor}", predictor, rows, labels,
                        matrix[[labels.index(r) for r in rows]])

    def summary_section(self, md: str, rows: list[dict], setting: str) -> str:
        """A per-relation F1 table (predictors as columns) and links to the confusion matrices."""
        shared = [r for r in rows if r["scope"] == "shared" and r["metric"] == "f1-macro" and r["setting"] == "raw"]
        names = list(dict.fromkeys(r["predictor"] for r in shared))
        rels = sorted({r["group"] for r in shared if r["group"] != "all"})
        if not names:
            return md
        cell = {(r["predictor"], r["group"]): r for r in shared}
        lines = ["", "## F1 per relation (shared sentences)", "",
                 "| relation | n | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for rel in [*rels, "all"]:
            n = next((cell[(p, rel)]["n_facts"] for p in names if (p, rel) in cell), 0)
            values = [fixed(cell[(p, rel)]["value"], 2) if (p, rel) in cell else "-" for p in names]
            lines.append(f"| {'macro' if rel == 'all' else rel} | {n} | " + " | ".join(values) + " |")
        lines += ["", "Confusion matrices (gold rows, predicted columns, a last column for no answer): "
                  + ", ".join(f"[{p}](figures/confusion-{p}.png)" for p in names), ""]
        lines += [asked_note(rels), ""]
        lines += precision_note(rows)
        return md.rstrip("\n") + "\n" + "\n".join(lines)

    def config_section(self, md: str, config: dict) -> str:
        """The training choices of each fine-tuned predictor (lr, kept epoch and its dev F1, epochs, batch)."""
        from bridge.experiments.fewrel_training import training_section

        lines = training_section(config)
        return md.rstrip("\n") + "\n\n" + "\n".join(lines) if lines else md


PRECISION_NOTE = (
    "Macro precision follows E-BERT and scikit-learn (`precision_score(average='macro', zero_division=0)`): a "
    "relation a predictor never predicted counts with precision 0. A predictor that abstains (kb: no answer where the "
    "KB holds no relation between the two entities) therefore has a macro P no higher than the share of relations "
    "it predicted at all, and its bootstrap interval can end at the point: a resample that misses a relation's few "
    "answers loses that relation's precision, and none can gain one it never predicted. Read it beside coverage "
    "and the precision of its answers (accuracy / coverage: the share of answered sentences answered right):")


PRECISION_HEAD = ["predictor", "macro P", "coverage", "precision of its answers"]


def precision_rows(rows: list[dict], scope: str = "shared") -> list[list[str]]:
    """Each predictor's macro P, coverage and precision of its answers (accuracy / coverage), from summary rows."""
    total = {(r["predictor"], r["metric"]): r["value"] for r in rows
             if r.get("scope", "own") == scope and r["setting"] == "raw" and r["group"] == "all"}
    out = []
    for p in dict.fromkeys(p for p, m in total if m == "precision-macro"):
        cov, acc = total.get((p, "coverage")), total.get((p, "accuracy"))
        out.append([p, fixed(total[(p, "precision-macro")], 2), fixed(cov, 2) if cov is not None else "-",
                    fixed(100.0 * acc / cov, 2) if cov and acc is not None else "-"])
    return out


def precision_note(rows: list[dict]) -> list[str]:
    """The macro-P convention, and each predictor's macro P beside its coverage and the precision of its answers."""
    found = precision_rows(rows)
    if not found:
        return []
    return ["## Macro precision and abstaining predictors", "", PRECISION_NOTE, "",
            "| " + " | ".join(PRECISION_HEAD) + " |", "|---|---|---|---|",
            *("| " + " | ".join(r) + " |" for r in found), ""]


def asked_relations(rows: list[dict]) -> list[str]:
    """The relations a run scored (those with gold test sentences among the ones asked), from its summary rows."""
    return sorted({r["group"] for r in rows if r["group"] != "all" and r["setting"] == "raw"
                   and r["metric"] == "f1-macro" and r.get("n_facts")})


def asked_note(relations: list[str]) -> str:
    """Why macro scores and a relation's own precision and F1 hold only for the relations asked."""
    return (f"Macro P/R/F1 are means over the {count_of(len(relations), 'relations')} asked "
            f"({', '.join(relations)}), and a relation's precision counts only the sentences asked: a prediction of "
            "a relation on a sentence of one not asked is never scored. With other `--relations` both change for the "
            "same predictions, so compare these scores only between runs that asked the same relations.")


def asked_differ(runs: list[tuple[str, list[str]]]) -> str | None:
    """A warning where runs shown side by side asked different relations (None where they asked the same)."""
    if len({tuple(rels) for _, rels in runs}) < 2:
        return None
    return ("These runs asked different relations (" + "; ".join(f"{label}: {', '.join(rels)}" for label, rels in runs)
            + "): their macro scores, and a relation's precision and F1, are over different sentences and do not "
            "compare, even for the same predictions.")
