"""Readable tables from tidy summary rows: predictors as rows, groups as columns, one setting at a time.

Groups are relation types for large corpora (T-REx, as LAMA Table 2) and relations for small ones
(Google-RE). Each table is one corpus, one metric, one setting and one scope.
"""

from __future__ import annotations

from eval.types import RELATION_TYPES

TYPE_ORDER = (*RELATION_TYPES, "all")
METRIC_NAMES = {"p@1": "P@1 (%)", "p@10": "P@10 (%)", "mrr": "MRR"}


def _index(rows: list[dict]) -> dict:
    return {(r["corpus"], r["predictor"], r["setting"], r.get("scope", "own"), r["group"], r["metric"]): r
            for r in rows}


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
    picked = [r for r in rows if r["metric"] == metric and r["setting"] == setting
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


def markdown(rows: list[dict], setting: str = "raw", dropped: list[dict] | None = None,
             notes: list[str] | None = None, title: str = "LAMA probe") -> str:
    other = "filtered" if setting == "raw" else "raw"
    parts = [f"# {title}", "",
             f"Setting `{setting}` (summary.json also holds `{other}`). `answers`: the size of the answer space "
             "each predictor ranked (mean over relations; `open` for KBs that answer from their own triples).", ""]
    parts += [f"- {n}" for n in notes or []]
    for scope in ("shared", "own"):
        for metric in ("p@1", "p@10", "mrr"):
            body = table(rows, metric, setting, scope)
            if body:
                parts += ["", f"## {METRIC_NAMES[metric]}, {scope} facts", "", body]
    parts += ["", "## P@1 per relation, shared facts", "", per_relation(rows, "p@1", setting, "shared"), ""]
    if dropped:
        parts += ["## Facts a predictor could not answer (not scored)", "",
                  "| corpus | predictor | relation | reason | facts |", "|---|---|---|---|---|"]
        parts += [f"| {d['corpus']} | {d['predictor']} | {d['relation']} | {d['reason']} | {d['n']} |"
                  for d in dropped]
        parts.append("")
    return "\n".join(parts)
