"""Readable tables from tidy summary rows: predictors as rows, groups as columns, one setting at a time.

Groups are relation types for large corpora (T-REx, as LAMA Table 2) and relations for small ones
(Google-RE). Each table is one corpus, one metric, one setting and one scope.
"""

from __future__ import annotations

from eval.types import RELATION_TYPES

TYPE_ORDER = (*RELATION_TYPES, "all")
METRIC_NAMES = {"p@1": "P@1 (%)", "p@10": "P@10 (%)", "mrr": "MRR", "coherency": "Coherency (%)",
                "coherency_round1": "Coherency round 1 (%)", "coherency_round2": "Coherency round 2 (%)",
                "c1": "c1: first step of round 1 right (%)", "c2": "c2: first step of round 2 right (%)",
                "all_correct": "All four steps right (%)", "f1": "Token F1 (%)", "em": "Exact match (%)"}


def _index(rows: list[dict]) -> dict:
    return {(r["corpus"], r["predictor"], r["setting"], r.get("scope", "own"), r["group"], r["metric"]): r
            for r in rows if not r.get("prompt")}


def _groups(rows: list[dict], corpus: str) -> list[str]:
    """Relations for small corpora (Google-RE), relation types for large ones (T-REx)."""
    groups = list(dict.fromkeys(r["group"] for r in rows if r["corpus"] == corpus))
    types = [g for g in TYPE_ORDER if g in groups and g != "all"]
    relations = [g for g in groups if g not in TYPE_ORDER]
    shown = relations if 1 < len(relations) <= 5 else types
    return [g for g in shown if g != "all"] + ["all"]


def _fmt(value: float, metric: str) -> str:
    if metric == "answer_space":
        return f"{value:,.0f}"
    return f"{value:.3f}" if metric == "mrr" else f"{value:.2f}"


def table(rows: list[dict], metric: str = "p@1", setting: str = "raw", scope: str = "shared",
          corpus: str | None = None) -> str:
    """One row per (corpus, predictor): answer-space size, facts scored, then each group and the total."""
    idx = _index(rows)
    corpora = [corpus] if corpus else list(dict.fromkeys(r["corpus"] for r in rows))
    lines = []
    for c in corpora:
        groups = _groups(rows, c)
        head = ["corpus", "predictor", "answers", "#facts", *["Total" if g == "all" else g for g in groups]]
        if lines:
            lines.append("")
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        predictors = list(dict.fromkeys(r["predictor"] for r in rows if r["corpus"] == c))
        for p in predictors:
            total = idx.get((c, p, setting, scope, "all", metric))
            if total is None:
                continue
            space = idx.get((c, p, setting, scope, "all", "answer_space"))
            cells = []
            for g in groups:
                row = idx.get((c, p, setting, scope, g, metric))
                cells.append(_fmt(row["value"], metric) if row else "-")
            answers = _fmt(space["value"], "answer_space") if space else "open"
            lines.append("| " + " | ".join([c, p, answers, str(total["n_facts"]), *cells]) + " |")
    return "\n".join(lines)


def per_relation(rows: list[dict], metric: str = "p@1", setting: str = "raw", scope: str = "shared") -> str:
    """One row per (corpus, relation), one column per predictor."""
    picked = [r for r in rows if r["metric"] == metric and r["setting"] == setting and not r.get("prompt")
              and r.get("scope", "own") == scope and r["group"] not in TYPE_ORDER]
    predictors = list(dict.fromkeys(r["predictor"] for r in picked))
    by: dict[tuple[str, str], dict[str, dict]] = {}
    for r in picked:
        by.setdefault((r["corpus"], r["group"]), {})[r["predictor"]] = r
    lines = ["| corpus | relation | #facts | " + " | ".join(predictors) + " |", "|" + "---|" * (3 + len(predictors))]
    for (corpus, rel), cells in by.items():
        counts = sorted({r["n_facts"] for r in cells.values()})
        n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        vals = [_fmt(cells[p]["value"], metric) if p in cells else "-" for p in predictors]
        lines.append(f"| {corpus} | {rel} | {n} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


PROMPT_METRICS = ("consistency", "group_accuracy", "p@1_random_prompt_min", "p@1_random_prompt_avg",
                  "p@1_random_prompt_max")


def prompt_table(rows: list[dict]) -> str:
    """Consistency, group accuracy and the random-prompt draws, one row per (corpus, predictor)."""
    picked = {(r["corpus"], r["predictor"], r["metric"]): r for r in rows
              if r["metric"] in PROMPT_METRICS and r["group"] == "all" and r.get("scope") == "shared"}
    if not picked:
        return ""
    names = ["consistency", "group accuracy", "P@1 random prompt min", "avg", "max"]
    lines = ["| corpus | predictor | " + " | ".join(names) + " |", "|" + "---|" * (2 + len(names))]
    for corpus, predictor in dict.fromkeys((c, p) for c, p, _ in picked):
        cells = [f"{picked[(corpus, predictor, m)]['value']:.2f}" if (corpus, predictor, m) in picked else "-"
                 for m in PROMPT_METRICS]
        lines.append(f"| {corpus} | {predictor} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(rows: list[dict], setting: str = "raw", dropped: list[dict] | None = None,
             notes: list[str] | None = None, title: str = "LAMA probe",
             metrics: tuple[str, ...] = ("p@1", "p@10", "mrr")) -> str:
    other = "filtered" if setting == "raw" else "raw"
    intro = f"Setting `{setting}`"
    if any(r["setting"] == other for r in rows):
        intro += f" (summary.json also holds `{other}`)"
    intro += (". `answers`: the size of the answer space each predictor ranked (mean over relations; `open` "
              "where it is not a fixed list, e.g. KBs answering from their own triples).")
    parts = [f"# {title}", "", intro, ""]
    parts += [f"- {n}" for n in notes or []]
    for scope in ("shared", "own"):
        for metric in metrics:
            body = table(rows, metric, setting, scope)
            if body:
                parts += ["", f"## {METRIC_NAMES.get(metric, metric)}, {scope} facts", "", body]
    head = metrics[0]
    parts += ["", f"## {METRIC_NAMES.get(head, head)} per relation, shared facts", "",
              per_relation(rows, head, setting, "shared"), ""]
    agreement = prompt_table(rows)
    if agreement:
        parts += ["## Across prompts (raw, shared facts)", "", agreement, ""]
    if dropped:
        parts += ["## Facts a predictor could not answer (not scored)", "",
                  "| corpus | predictor | relation | reason | facts |", "|---|---|---|---|---|"]
        parts += [f"| {d['corpus']} | {d['predictor']} | {d['relation']} | {d['reason']} | {d['n']} |"
                  for d in dropped]
        parts.append("")
    return "\n".join(parts)
