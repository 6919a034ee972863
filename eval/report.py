"""Tables in the layout of LAMA Table 2, as Markdown, from tidy summary rows."""

from __future__ import annotations

from collections import defaultdict

from eval.types import RELATION_TYPES

TYPE_ORDER = (*RELATION_TYPES, "all")


def _index(rows: list[dict]) -> dict:
    idx = {}
    for r in rows:
        idx[(r["corpus"], r["predictor"], r["setting"], r["group"], r["metric"])] = r
    return idx


def _groups(rows: list[dict], corpus: str) -> list[str]:
    """Relations for small corpora (Google-RE), relation types for large ones (T-REx)."""
    groups = list(dict.fromkeys(r["group"] for r in rows if r["corpus"] == corpus))
    types = [g for g in TYPE_ORDER if g in groups and g != "all"]
    relations = [g for g in groups if g not in TYPE_ORDER]
    shown = relations if 1 < len(relations) <= 5 else types
    return [g for g in shown if g != "all"] + ["all"]


def _fmt(value: float, metric: str) -> str:
    return f"{value:.3f}" if metric == "mrr" else f"{value:.2f}"


def table(rows: list[dict], metric: str = "p@1", settings: tuple[str, ...] = ("raw", "filtered")) -> str:
    """Corpus/group rows, one column per (predictor, setting)."""
    idx = _index(rows)
    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    predictors = list(dict.fromkeys(r["predictor"] for r in rows))
    cols = [(p, s) for p in predictors for s in settings]
    head = ["corpus", "group", "#facts", *[f"{p} {s}" for p, s in cols]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for corpus in corpora:
        for group in _groups(rows, corpus):
            cells = []
            n_facts = 0  # predictors that drop facts (LMs: multi-token objects) score fewer
            for p, s in cols:
                row = idx.get((corpus, p, s, group, metric))
                cells.append(_fmt(row["value"], metric) if row else "-")
                n_facts = max(n_facts, row["n_facts"] if row else 0)
            n = str(n_facts) if n_facts else ""
            lines.append("| " + " | ".join([corpus, "Total" if group == "all" else group, n, *cells]) + " |")
    return "\n".join(lines)


def per_relation(rows: list[dict], metric: str = "p@1") -> str:
    by = defaultdict(dict)
    cols = []
    for r in rows:
        if r["metric"] != metric or r["group"] in TYPE_ORDER:
            continue
        col = f"{r['predictor']} {r['setting']}"
        if col not in cols:
            cols.append(col)
        by[(r["corpus"], r["group"], r["n_facts"])][col] = r["value"]
    lines = ["| corpus | relation | #facts | " + " | ".join(cols) + " |", "|" + "---|" * (3 + len(cols))]
    for (corpus, rel, n), vals in by.items():
        cells = [_fmt(vals[c], metric) if c in vals else "-" for c in cols]
        lines.append(f"| {corpus} | {rel} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(rows: list[dict], title: str = "LAMA probe") -> str:
    parts = [f"# {title}", ""]
    for metric, name in (("p@1", "P@1 (%)"), ("p@10", "P@10 (%)"), ("mrr", "MRR")):
        parts += [f"## {name}", "", table(rows, metric), ""]
    parts += ["## P@1 per relation", "", per_relation(rows, "p@1"), ""]
    return "\n".join(parts)
