"""A run over a prompt set, across its prompts: what `summary.md` says under "Across prompts" (LAMA's consistency,
group accuracy and P@1 draws; coherency's draws of one prompt per relation) and the per-prompt score (P@1, or
coherency) that only `summary.json` holds, so the run page shows how much each prompt moves a predictor, not only
the average over prompts.

Read from the run's summary rows, never recomputed: the values are those of `summary.md` and `kbc report`.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from bridge.run.directory import RunDir, read_records
from eval.report import (
    COHERENCY_PROMPT_METRICS,
    COHERENCY_PROMPT_NAMES,
    PROMPT_METRICS,
    PROMPT_NAMES,
    prompt_order,
    unrated_group_accuracy,
    unrated_group_accuracy_note,
)

PER_RELATION = ("consistency", "group_accuracy")  # the draws are over every relation at once
SETTING = "raw"  # the runner scores prompts in the raw setting only, as summary.md says
# per kind of run: the score each prompt has, the run-wide metrics of summary.md's table and their column names
KINDS = (("p@1", PROMPT_METRICS, PROMPT_NAMES), ("coherency", COHERENCY_PROMPT_METRICS, COHERENCY_PROMPT_NAMES))


def _scope(rows: list[dict]) -> str:
    """The shared facts where the run has them (as summary.md's table), else each predictor's own."""
    return "shared" if any(r.get("scope") == "shared" for r in rows) else "own"


def _examples(facts: pd.DataFrame | None) -> dict[tuple[str, str, str], str]:
    """(corpus, relation, prompt id) -> the prompt as a template: its first query's sentence with the subject as
    [X] (the sentence itself where the subject is not in it)."""
    if facts is None or facts.empty or "prompt" not in facts.columns:
        return {}
    out: dict[tuple[str, str, str], str] = {}
    for corpus, relation, uid, subject, prompt in facts[["corpus", "relation", "uid", "subject", "prompt"]].itertuples(
            index=False):
        pid = str(uid).split("@", 1)[1] if "@" in str(uid) else None
        if pid is None or (corpus, relation, pid) in out or not isinstance(prompt, str):
            continue
        out[(corpus, relation, pid)] = prompt.replace(str(subject), "[X]") if subject else prompt
    return out


def coherency_prompts(run: RunDir) -> pd.DataFrame:
    """A coherency run's first steps of round 1 (the object asked of the subject), as `_examples` reads LAMA's fact
    table: one per (corpus, relation, prompt), from the first predictor whose records hold its prompt as text (a
    generating predictor's chat is no template)."""
    rows, seen = [], set()
    for corpus in run.corpora:
        for predictor in run.predictors:
            for path in run.relation_files(corpus, predictor, "first"):
                for r in read_records(path):
                    key = (corpus, r.get("relation"), r.get("prompt_id"))
                    if (r.get("round") != 1 or r.get("slot") != "object" or key[2] is None or key in seen
                            or not isinstance(r.get("prompt"), str)):
                        continue
                    seen.add(key)
                    rows.append({"corpus": corpus, "relation": key[1], "uid": str(r["uid"]),
                                 "subject": r.get("subject"), "prompt": r["prompt"]})
    return pd.DataFrame(rows, columns=["corpus", "relation", "uid", "subject", "prompt"])


def across_prompts(summary: list[dict], predictors: list[str], labels: dict | None = None,
                   facts: Callable[[], pd.DataFrame] | None = None) -> dict | None:
    """The run's agreement across prompts and its score per prompt, or None for a run asked one prompt per relation.

    `metric`: what each prompt scores (`p@1` in a LAMA run, `coherency` in a coherency run); `agreement`: per
    (corpus, predictor) over all relations, the `metrics` of summary.md's table (column names `names`), each with
    its standard error under `<metric>_stderr` as summary.json holds it (null where it has none: every metric but
    group accuracy, and older runs; `notes` names a group accuracy an earlier version scored without one, as
    `kbc report` does); `relations`: per relation, consistency and group accuracy, with their
    `_stderr` likewise (a LAMA run; none in a coherency run, whose draws are over every relation at once);
    `prompts`: per (corpus, relation, prompt id) each predictor's score (under the key `metric`) and the facts it
    is over (`facts` where every predictor's number is the same), with the prompt as a template where the run's
    fact table, or a coherency run's first steps, (`facts`, read only for a run over a prompt set) holds its
    sentences."""
    raw = [r for r in summary if r.get("setting", SETTING) == SETTING]
    metric, metrics, names = next(((m, ms, ns) for m, ms, ns in KINDS
                                   if any(r.get("prompt") and r.get("metric") == m for r in raw)), (None, (), ()))
    if metric is None:
        return None
    per_prompt = [r for r in raw if r.get("prompt") and r.get("metric") == metric]
    scope = _scope(per_prompt)
    per_prompt = [r for r in per_prompt if r.get("scope", "own") == scope]
    agreeing = [r for r in raw if r.get("metric") in metrics and not r.get("prompt")]
    held = _scope(agreeing)
    agreeing = [r for r in agreeing if r.get("scope", "own") == held]
    cells = {(r.get("corpus"), r.get("group"), r.get("predictor"), r.get("metric")): r for r in agreeing}

    def cell(corpus: str, group: str, predictor: str, m: str, key: str = "value"):
        """A summary row's value (or its `stderr`), None where the run has no such row."""
        return (cells.get((corpus, group, predictor, m)) or {}).get(key)

    corpora = list(dict.fromkeys(r.get("corpus") for r in per_prompt))
    agreement = [{"corpus": c, "predictor": p, **{m: cell(c, "all", p, m) for m in metrics},
                  **{f"{m}_stderr": cell(c, "all", p, m, "stderr") for m in metrics}}
                 for c in corpora for p in predictors if any((c, "all", p, m) in cells for m in metrics)]
    relations = sorted({(r.get("corpus"), r.get("group")) for r in per_prompt})
    labels = labels or {}

    def label(corpus: str, rel: str) -> str:
        text = (labels.get(corpus) or {}).get(rel, "")
        return "" if text == rel else text

    by_relation = [] if metric != "p@1" else [
        {"corpus": c, "relation": rel, "label": label(c, rel),
         **{m: {p: cell(c, rel, p, m) for p in predictors} for m in PER_RELATION},
         **{f"{m}_stderr": {p: cell(c, rel, p, m, "stderr") for p in predictors} for m in PER_RELATION}}
        for c, rel in relations]
    grouped: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in per_prompt:
        grouped.setdefault((r.get("corpus"), r.get("group"), r["prompt"]), {})[r.get("predictor")] = r
    examples = _examples(facts() if facts else None)
    prompts = []
    for (corpus, rel, pid), by in sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[0][1], prompt_order(kv[0][2]))):
        counts = {p: by[p].get("n_facts") for p in predictors if p in by}
        prompts.append({"corpus": corpus, "relation": rel, "label": label(corpus, rel), "prompt": pid,
                        "template": examples.get((corpus, rel, pid)),
                        metric: {p: by[p].get("value") for p in predictors if p in by}, "n": counts,
                        "facts": next(iter(counts.values())) if len(set(counts.values())) == 1 else None})
    unrated = unrated_group_accuracy(agreeing, held)
    return {"setting": SETTING, "scope": scope, "metric": metric, "metrics": list(metrics), "names": list(names),
            "agreement": agreement, "notes": [unrated_group_accuracy_note(unrated)] if unrated else [],
            "relations": by_relation, "prompts": prompts}
