"""LM-KBC's own table in summary.md: per predictor, one row per relation and one over all pairs, the columns
of the challenge's `evaluate.py` (macro and micro P/R/F1, `avg. #preds`, `#empty preds`), so a reader compares
a run with published figures at a glance."""

from __future__ import annotations

from eval.cells import fixed, md_row
from eval.report import relation_order
from eval.set_metrics import ALL, LABEL_HITS, LABEL_METRICS, METRICS

HEADS = {"avg-preds": "avg. #preds", "empty-preds": "#empty preds"}


HEADS |= {LABEL_HITS: "answers matched by label only"} | {m: f"kbc {m.removeprefix('label-')}"
                                                               for m in LABEL_METRICS.values()}


def _fmt(metric: str, value: float) -> str:
    return f"{value:.0f}" if metric in ("empty-preds", LABEL_HITS) else fixed(value, 3)


def lmkbc_table(rows: list[dict], setting: str = "raw", scope: str = "shared",
                metrics: tuple[str, ...] = METRICS) -> str:
    """The challenge's table (`metrics`: its columns) for every (corpus, predictor) of `rows` (LM-KBC tidy rows)
    that holds them; '' when there are none."""
    lead = "macro-f1" if "macro-f1" in metrics else metrics[0]  # a cell every scored row holds
    idx = {(r["corpus"], r["predictor"], r["group"], r["metric"]): r for r in rows
           if r["setting"] == setting and r.get("scope", "own") == scope and r["metric"] in metrics}
    keys = list(dict.fromkeys((c, p) for c, p, g, m in idx if g == ALL and m == lead))
    if not keys:
        return ""
    lines = ["| corpus | predictor | relation | #pairs | " + " | ".join(HEADS.get(m, m) for m in metrics) + " |",
             "|" + "---|" * (4 + len(metrics))]
    for corpus, predictor in keys:
        groups = relation_order([g for c, p, g, m in idx if (c, p) == (corpus, predictor) and m == lead
                                 and g != ALL])
        for group in [*groups, ALL]:
            cells = [_fmt(m, idx[(corpus, predictor, group, m)]["value"]) if (corpus, predictor, group, m) in idx
                     else "-" for m in metrics]
            n = idx[(corpus, predictor, group, lead)]["n_facts"]
            name = "all (over pairs)" if group == ALL else group
            lines.append(md_row([corpus, predictor, name, n, *cells]))
    notes = empty_notes(rows, setting, scope) if metrics == METRICS else []
    return "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "")


def empty_notes(rows: list[dict], setting: str = "raw", scope: str = "shared") -> list[str]:
    """One line per predictor that predicted an empty set for every pair of some relation: its scores there come
    only from the challenge's conventions (an empty gold scores 1/1/1, any other pair precision 1, recall 0), which
    a table alone would show as if it had answered."""
    empty = {(r["corpus"], r["predictor"], r["group"]): r for r in rows if r["metric"] == "empty-preds"
             and r["setting"] == setting and r.get("scope", "own") == scope}
    notes = []
    for corpus, predictor in dict.fromkeys((c, p) for c, p, _ in empty):
        silent = [g for (c, p, g), r in empty.items() if (c, p) == (corpus, predictor) and g != ALL
                  and r["n_facts"] and r["value"] == r["n_facts"]]
        every = empty.get((corpus, predictor, ALL))
        if every is not None and every["n_facts"] and every["value"] == every["n_facts"]:
            notes.append(f"`{predictor}` ({corpus}) predicted an empty set for every pair: its scores come only from "
                         "the pairs whose gold set is empty.")
        elif silent:
            notes.append(f"`{predictor}` ({corpus}) predicted an empty set for every pair of "
                         f"{', '.join(relation_order(silent))}.")
    return notes


def with_lmkbc_table(md: str, rows: list[dict], setting: str = "raw") -> str:
    """`md` (a summary.md) with the challenge's table as its first section, over the pairs every predictor
    answered."""
    body = lmkbc_table(rows, setting, "shared")
    if not body:
        return md
    section = ("## LM-KBC evaluation table, shared pairs\n\n"
               "The challenge's `evaluate.py` columns, its arithmetic on the submission files kbc writes "
               "(`submission/`): ids compared with ids, so an answer linked to no id, submitted as its label, "
               "matches nothing. Macro P/R/F1 are means over a relation's (subject, relation) pairs, micro ones over "
               "their pooled objects; `all (over pairs)` averages over every pair, not over relations. The tables "
               "below give each metric per relation and scope.\n\n" + body + "\n")
    labels = lmkbc_table(rows, setting, "shared", (*LABEL_METRICS.values(), LABEL_HITS))
    if labels:
        section += ("\n## kbc's label matching, shared pairs (not evaluate.py's)\n\n"
                    "kbc's own figures, for the predictors where some answer linked to no id equals a gold object's "
                    "label: here that answer matches the gold object (`evaluate.py` never does this). Macro "
                    "P/R/F1 as above, and the count of answers matched by label only.\n\n" + labels + "\n")
    head, sep, rest = md.partition("\n## ")
    return f"{head}\n{section}{sep}{rest}" if sep else f"{md}\n{section}"
