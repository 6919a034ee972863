"""Scores of answers written by generation: exact match on linked answers, abstention and unlinked rates.

A generated answer is no ranking, so P@k and MRR do not apply to it; these take their place. Per fact:
`em` 100 when its answer is the gold object (the same entity id where both have one, else the same label
ignoring case and runs of white space, `same_label`: "philadelphia", an ambiguous label left unlinked, is
"Philadelphia", as "berlin", which links, is Berlin;
`filtered`: the gold or another valid object of the subject, as the filtered setting forgives other valid
answers), `abstain` 100 when the model said it does not know, `unlinked` the share of its written answers that
name no entity of the corpus (times 100). Per relation the mean over its facts; types and `all` the mean over
relations, as P@k.
"""

from __future__ import annotations

import math

import numpy as np

from eval.answer_text import GENERATED
from eval.relations import summary_groups
from eval.types import entity_ids

GENERATED_METRICS = ("em", "abstain", "unlinked")
PERCENT = "%"  # the `unit` of LM-KBC's rate rows (its other scores are fractions)


def is_generated(records: list[dict]) -> bool:
    """Whether these records were answered by generation (they hold the raw generation)."""
    return bool(records) and all(GENERATED in r for r in records)


def same_label(a: str, b: str) -> bool:
    """Two labels alike ignoring case and runs of white space: how a written answer meets a label."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def answer_hits(answer: list, gold_label: str, gold_id: str | None, others: set[str] | frozenset = frozenset()
                ) -> tuple[bool, bool]:
    """(raw, filtered) exact match of one answer `[label, score, id]` against the gold (and other valid labels)."""
    label, _score, ident = answer
    raw = gold_id in entity_ids(ident) if ident and gold_id else same_label(label, gold_label)
    return raw, raw or any(same_label(label, other) for other in others)


def unlinked_share(record: dict) -> float:
    """The share of a fact's written answers that name no entity (0 when it wrote none)."""
    return len(record["unlinked"]) / len(record["parsed"]) if record["parsed"] else 0.0


def rate_cells(records: list[dict], scale: float = 100.0) -> dict[str, dict[str, list[float]]]:
    """metric -> relation -> each fact's abstention (scale or 0) and unlinked share (times scale)."""
    cells: dict[str, dict[str, list[float]]] = {"abstain": {}, "unlinked": {}}
    for r in records:
        cells["abstain"].setdefault(r["relation"], []).append(scale if r["abstained"] else 0.0)
        cells["unlinked"].setdefault(r["relation"], []).append(scale * unlinked_share(r))
    return cells


def unit_scores(records: list[dict]) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """(setting, metric) -> relation -> each fact's score, relations in order of first appearance."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in records:
        for setting in ("raw", "filtered"):
            cells.setdefault((setting, "em"), {}).setdefault(r["relation"], []).append(
                100.0 if r[f"em_{setting}"] else 0.0)
    for metric, per in rate_cells(records).items():
        cells[("raw", metric)] = cells[("filtered", metric)] = per
    return {key: {rel: np.array(v) for rel, v in per.items()} for key, per in cells.items()}


def pooled_rate_rows(records: list[dict], setting: str = "raw") -> list[dict]:
    """LM-KBC's way: abstention and unlinked rates per relation and over every pair (`all`), in percent as
    LAMA's (LM-KBC's own scores stay fractions, as its evaluate.py)."""
    out = []
    for metric, per in rate_cells(records).items():
        for rel, values in per.items():
            out.append({"setting": setting, "group": rel, "metric": metric, "value": math.fsum(values) / len(values),
                        "n_facts": len(values), "unit": PERCENT})
        pooled = [v for values in per.values() for v in values]
        out.append({"setting": setting, "group": "all", "metric": metric, "value": math.fsum(pooled) / len(pooled),
                    "n_facts": len(pooled), "unit": PERCENT})
    return out


def rates_in_percent(rows: list[dict], experiment: str) -> list[dict]:
    """A run's summary rows as every reader shows them: an LM-KBC run's abstention and unlinked rates in percent.
    Its rows without `unit` were scored when those were fractions, and are scaled here, so every reader shows one
    unit whatever code scored the run; the other experiments' rows are returned as they are."""
    if experiment != "lmkbc":
        return rows
    scaled = ("value", "stderr", "ci_low", "ci_high")
    return [{**r, **{k: 100.0 * r[k] for k in scaled if isinstance(r.get(k), int | float)
                     and not isinstance(r.get(k), bool)}, "unit": PERCENT}
            if r.get("metric") in ("abstain", "unlinked") and r.get("unit") != PERCENT else r for r in rows]


def groups_of(relations: list[str], relation_types: dict[str, str | None]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {"all": list(relations)}
    for rel in relations:
        for group in summary_groups(relation_types.get(rel)):
            groups.setdefault(group, []).append(rel)
    return groups


def generated_rows(records: list[dict], relation_types: dict[str, str | None]) -> list[dict]:
    """Tidy rows `{setting, group, metric, value, n_facts}`: per relation, then per type and `all`."""
    out = []
    for (setting, metric), cells in unit_scores(records).items():
        values = {rel: float(v.mean()) for rel, v in cells.items()}
        sizes = {rel: len(v) for rel, v in cells.items()}
        for rel, value in values.items():
            out.append({"setting": setting, "group": rel, "metric": metric, "value": value, "n_facts": sizes[rel]})
        for group, rels in groups_of(list(values), relation_types).items():
            mean = math.fsum(values[r] for r in rels) / len(rels)
            out.append({"setting": setting, "group": group, "metric": metric,
                        "value": mean, "n_facts": sum(sizes[r] for r in rels)})
    return out
