"""Readable tables from tidy summary rows: predictors as rows, groups as columns, one setting at a time.

Groups are relations for small corpora or runs (Google-RE, `--relations P19`), relation types for large ones
(T-REx, as LAMA Table 2) and knowledge domains for BEAR. Each table is one corpus, one metric, one setting and
one scope.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from eval.cells import fixed, md_row
from eval.kmir import KINDS
from eval.relations import DOMAIN_PREFIX, relation_id
from eval.set_metrics import FRACTIONS, LAMA_SET_METRICS, LAMA_SET_TYPES
from eval.types import RELATION_TYPES

TYPE_ORDER = (*RELATION_TYPES, "all")
NOT_RELATIONS = (*TYPE_ORDER, *KINDS)  # groups that are no relation: types, `all`, KMIR's question kinds
METRIC_NAMES = {"p@1": "P@1 (%)", "p@10": "P@10 (%)", "mrr": "MRR", "coherency": "Coherency (%)",
                "coherency_round1": "Coherency round 1 (%)", "coherency_round2": "Coherency round 2 (%)",
                "c1": "c1: first step of round 1 right (%)", "c2": "c2: first step of round 2 right (%)",
                "all_correct": "All four steps right (%)",
                "f1": "Token F1 (%)", "em": "Exact match (%)",
                "f1-macro": "F1 (%), Total: macro over relations", "precision-macro": "Precision (%), Total: macro "
                "over relations", "recall-macro": "Recall (%), Total: macro over relations",
                "set-p": "Set precision, N-M relations (%)", "set-r": "Set recall, N-M relations (%)",
                "set-f1": "Set F1, N-M relations (%)", "overlap": "Negated query, same top answer (%)",
                "spearman": "Spearman, positive vs negated scores", "became-prime": "Misprimed, prime answered (%)",
                "p@1-drop": "Misprimed, P@1 drop (% of facts right unprimed)",
                "abstain": "Abstentions (%), generated answers",
                "unlinked": "Answers linked to no entity (%), generated answers",
                "label-macro-p": "kbc's label matching: macro precision (not evaluate.py's)",
                "label-macro-r": "kbc's label matching: macro recall (not evaluate.py's)",
                "label-macro-f1": "kbc's label matching: macro F1 (not evaluate.py's)",
                "label-hits": "kbc's label matching: answers matched by a gold label only (no id)"}


# metrics taken over only some of the units a predictor answered: what such a unit is, and why that matters; a
# predictor that answered a relation but has none of those units there has no value of it (`-`), said in a note
SUBSET_METRICS = {"p@1-drop": ("was right without the prime", "the drop is taken over those facts"),
                  "overlap": ("has an answered negated sentence",
                              "the overlap is taken over those facts; a relation whose data has no negated sentence, "
                              "as T-REx P159 whose negations equal the positive sentence, has none"),
                  "became-prime": ("has an answered misprimed sentence", "the share is taken over those facts"),
                  "spearman": ("shares two answers, scored apart, between its positive and negated top answers",
                               "the rank correlation is taken over those facts")}


# metrics scored on relations of some cardinality types only (LAMA's set metrics: N-M, whose subjects hold several
# objects): a column of another type is `-` for every predictor by definition, which its note says
TYPED_METRICS = {metric: LAMA_SET_TYPES for metric in LAMA_SET_METRICS.values()}


def _outside_types(groups: list[str], metric: str, info: dict) -> list[str]:
    """The columns (types, typed relations) of a cardinality type `metric` is not taken over."""
    types = TYPED_METRICS.get(metric)
    if types is None:
        return []
    return [g for g in groups if g != "all" and (g if g in TYPE_ORDER else info.get(g, (None, None))[1]) not in
            (*types, None)]


def _outside_note(names: list[str], metric: str) -> str:
    kinds = " and ".join(TYPED_METRICS[metric])
    return (f"`-` under {', '.join(names)} for every predictor: set metrics are taken over {kinds} relations only, "
            f"so {'it has' if len(names) == 1 else 'they have'} none.")

def subset_what(metric: str, scope: str) -> str:
    """What a unit of a `SUBSET_METRICS` metric is, in `scope`: a shared unit is one for every predictor at once (a
    fact right without the prime for one and not for another is no unit of the shared P@1 drop)."""
    what = SUBSET_METRICS[metric][0]
    return f"{what} for all predictors" if scope == "shared" else what


def metric_id(name: str) -> str:
    """A metric as the summaries name it (`p@1`), however it was cased where it was chosen (`P@1`, as tables
    print it): every metric id is lower case."""
    return name.strip().lower()


# one macro average, two spellings: LM-KBC's summaries write `macro-f1` (as the challenge's evaluate.py), FewRel's
# `f1-macro`; saved runs keep theirs, and either spelling asks for it
METRIC_ALIASES = {"macro-f1": "f1-macro", "macro-p": "precision-macro", "macro-r": "recall-macro"}
METRIC_ALIASES |= {v: k for k, v in METRIC_ALIASES.items()}


def held_metric(name: str, held: Iterable[str]) -> str:
    """`metric_id(name)`, or its other spelling (`METRIC_ALIASES`) where the rows hold only that one."""
    metric = metric_id(name)
    held = set(held)
    other = METRIC_ALIASES.get(metric)
    return other if metric not in held and other in held else metric


NONE_ANSWERED = "units_answered"  # the metric of the row of a predictor that answered nothing: value 0, no score


def _index(rows: list[dict]) -> dict:
    return {(r["corpus"], r["predictor"], r["setting"], r.get("scope", "own"), r["group"], r["metric"]): r
            for r in rows if not r.get("prompt")}


RelationInfo = dict[str, dict[str, tuple[str | None, str | None]]]  # corpus -> relation -> (label, type)


def prompt_order(prompt: str) -> tuple:
    """`pararel:2` before `pararel:10`: prompt ids by their text, then the number they end with."""
    head, _, tail = prompt.rpartition(":")
    return (head, int(tail), "") if tail.isdigit() else (prompt, -1, prompt)


def relation_order(rels: list[str], info: dict[str, tuple[str | None, str | None]] | None = None) -> list[str]:
    """Relations by cardinality type (1-1, N-1, N-M, untyped), then by id with numbers compared as numbers."""
    info = info or {}

    def key(rel: str) -> tuple:
        rtype = info.get(rel, (None, None))[1]
        match = re.fullmatch(r"(\D*)(\d+)", rel)
        ident = (match.group(1), int(match.group(2)), "") if match else (rel, -1, rel)
        return (TYPE_ORDER.index(rtype) if rtype in TYPE_ORDER else len(TYPE_ORDER), ident)

    return sorted(rels, key=key)


def relation_name(rel: str, info: dict[str, tuple[str | None, str | None]] | None = None) -> str:
    """`P19 place of birth`: the id and, where there is one, the label."""
    label = (info or {}).get(rel, (None, None))[0]
    return f"{relation_id(rel)} {label}" if label and label != rel else relation_id(rel)


def table_groups(rows: list[dict], corpus: str, info: dict | None = None) -> list[str]:
    """The columns: KMIR's question kinds where the rows have them, else every relation (and other group, e.g.
    `symmetric`) where there are one to five, else the relation types (T-REx, as LAMA Table 2), else BEAR's
    knowledge domains; then `all`."""
    groups = list(dict.fromkeys(r["group"] for r in rows if r["corpus"] == corpus))
    types = [g for g in TYPE_ORDER if g in groups and g != "all"]
    domains = sorted(g for g in groups if g.startswith(DOMAIN_PREFIX))
    kinds = relation_order([g for g in groups if g in KINDS])
    relations = relation_order([g for g in groups if g not in NOT_RELATIONS and g not in domains], info)
    shown = kinds or (relations if 1 <= len(relations) <= 5 else types or domains)
    return [g for g in shown if g != "all"] + ["all"]


def _fmt(value: float, metric: str) -> str:
    if metric == "answer_space":  # a mean over relations of different spaces is shown as one, not rounded away
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    return fixed(value, 3 if metric == "mrr" or metric in FRACTIONS else 2)


def _cell(row: dict, metric: str) -> str:
    """`22.03 ± 0.23`: the value and its standard error (the value alone where it has none)."""
    value = _fmt(row["value"], metric)
    return value if row.get("stderr") is None else f"{value} ± {_fmt(row['stderr'], metric)}"


def _ci(row: dict | None, metric: str) -> str:
    if row is None or row.get("ci_low") is None:
        return "-"
    return f"[{_fmt(row['ci_low'], metric)}, {_fmt(row['ci_high'], metric)}]"


def _n(counts: set[int]) -> str:
    return f"n={min(counts)}" if len(counts) == 1 else f"n={min(counts)}–{max(counts)}"


def table(rows: list[dict], metric: str = "p@1", setting: str = "raw", scope: str = "shared",
          corpus: str | None = None, relations: RelationInfo | None = None,
          open_spaces: set[tuple[str, str]] | None = None, unit: str = "facts") -> str:
    """One row per (corpus, predictor): answer-space size, units scored, each group, the total and its interval.

    `open_spaces`: the (corpus, predictor) pairs that answer from an open set (a KB's own triples); a
    predictor with no recorded answer space and not listed shows `-`. `unit`: what the rows' `n_facts`
    count (facts; KMIR's questions), the name of that column.
    """
    idx = _index(rows)
    corpora = [corpus] if corpus else list(dict.fromkeys(r["corpus"] for r in rows))
    lines = []
    for c in corpora:
        info = (relations or {}).get(c, {})
        groups = table_groups(rows, c, info)
        every = list(dict.fromkeys(r["predictor"] for r in rows if r["corpus"] == c))
        silent = [p for p in every if (c, p, setting, "own", "all", NONE_ANSWERED) in idx]
        if silent:  # no score, no unit shared: beside those with an own score, every table shows them at 0 facts
            # a metric taken over some answered units (`SUBSET_METRICS`) keeps who answered, `-` and a note
            scored = [p for p in every if (c, p, setting, "own", "all", metric) in idx
                      or (metric in SUBSET_METRICS and _answered(idx, c, p, setting, "own", "all"))]
            # a corpus no predictor applies to (Freq, gold and kb on SQuAD) shows `-` beside the others' corpora,
            # as LAMA Table 2 does; a run where nothing scored anywhere prints no table
            shown = scored or any(r["metric"] == metric for r in rows)
            predictors = [p for p in every if p in scored or p in silent] if shown else []
        else:
            predictors = [p for p in every if (c, p, setting, scope, "all", metric) in idx
                          or (metric in SUBSET_METRICS and _answered(idx, c, p, setting, scope, "all"))]
        if not predictors:
            continue
        head = ["corpus", "predictor", space_header(idx, c, predictors, setting, scope), f"#{unit}"]
        for g in groups:
            counts = {idx[(c, p, setting, scope, g, metric)]["n_facts"] for p in predictors
                      if (c, p, setting, scope, g, metric) in idx}
            # a listed predictor with units of the metric elsewhere but none of the group's is a 0 of the range; one
            # with none anywhere (it answered nothing, or none was right unprimed) is `-` throughout and its note says
            # why, not a 0 beside the others' counts
            if counts and metric in SUBSET_METRICS and any((c, p, setting, scope, g, metric) not in idx
                                                           and (c, p, setting, scope, "all", metric) in idx
                                                           for p in predictors):
                counts.add(0)
            name = "Total" if g == "all" else relation_name(g, info)
            counted = counts and (g in info or g in TYPE_ORDER or g.startswith(DOMAIN_PREFIX)) and g != "all"
            head.append(f"{name} ({_n(counts)})" if counted else name)
        head.append("Total 95% CI")
        if lines:
            lines.append("")
        lines += [md_row(head), "|" + "---|" * len(head)]
        for p in predictors:
            total = idx.get((c, p, setting, scope, "all", metric))
            space = idx.get((c, p, setting, scope, "all", "answer_space"))
            cells = []
            for g in groups:
                row = idx.get((c, p, setting, scope, g, metric))
                cells.append(_cell(row, metric) if row else "-")
            answers = _fmt(space["value"], "answer_space") if space else \
                "open" if (c, p) in (open_spaces or set()) else "-"
            lines.append(md_row([c, p, answers, str(total["n_facts"] if total else 0), *cells, _ci(total, metric)]))
        outside = _outside_types(groups, metric, info)
        inside = [g for g in groups if g not in outside]
        notes = [f"- {_outside_note([relation_name(g, info) for g in outside], metric)}"] if outside else []
        if metric in SUBSET_METRICS:
            notes += _subset_notes(idx, c, predictors, inside, setting, scope, metric, info)[1:]
        elif scope == "shared":
            notes += _scope_notes(idx, c, predictors, inside, setting, metric, info, unit, every)[1:]
        lines += ["", *notes] if notes else []
    return "\n".join(lines)


SPACE = "answer space"
SPACE_MEAN = "answer space (mean)"


def space_header(idx: dict, corpus: str, predictors: list[str], setting: str, scope: str) -> str:
    """The answer-space column's name: `answer space (mean)` where a predictor's relations were ranked over spaces
    of different sizes, so that its `all` value (summary.json's `answer_space` row of group `all`) is their mean
    and no relation's own size; `answer space` where each relation's is the one shown."""
    for p in predictors:
        sizes = {row["value"] for key, row in idx.items() if key[:4] == (corpus, p, setting, scope)
                 and key[5] == "answer_space" and key[4] != "all" and key[4] not in NOT_RELATIONS
                 and not key[4].startswith(DOMAIN_PREFIX)}
        if len(sizes) > 1:
            return SPACE_MEAN
    return SPACE


def _answered(idx: dict, corpus: str, predictor: str, setting: str, scope: str, group: str) -> bool:
    """Whether `predictor` has a score of any metric for `group` in `scope`: it answered units of it."""
    return any(key[:5] == (corpus, predictor, setting, scope, group) and key[5] not in (NONE_ANSWERED, "answer_space")
               for key in idx)


def _subset_notes(idx: dict, corpus: str, predictors: list[str], groups: list[str], setting: str, scope: str,
                  metric: str, info: dict) -> list[str]:
    """Why a cell of a metric taken over some of the answered units (`SUBSET_METRICS`) is `-`: the predictor
    answered none of the group (in the shared scope: no unit of it was answered by every predictor), or none of
    what it answered is a unit the metric is taken over. A table never leaves a `-` unexplained."""
    what, why = SUBSET_METRICS[metric]
    names = {g: "Total" if g == "all" else relation_name(g, info) for g in groups}
    notes: list[str] = []
    empty = [g for g in groups if not any((corpus, p, setting, scope, g, metric) in idx for p in predictors)]
    answered = [names[g] for g in empty if any(_answered(idx, corpus, p, setting, scope, g) for p in predictors)]
    if answered:  # whole columns first, in one note
        notes.append(f"`-` under {', '.join(answered)} for every predictor: no fact of "
                     f"{'it' if len(answered) == 1 else 'them'} {subset_what(metric, scope)} ({why}).")
    for g in (g for g in empty if names[g] not in answered):
        if scope == "shared":
            none = [p for p in predictors if not _answered(idx, corpus, p, setting, "own", g)]
            notes.append(unshared_note(names[g], none, [p for p in predictors if p not in none]))
        else:
            notes.append(f"`-` under {names[g]} for every predictor: none answered any fact of it.")
    explained = {(p, g) for p in predictors for g in empty}
    for p in predictors:
        if all((p, g) in explained for g in groups):  # the column notes said it
            continue
        if (corpus, p, setting, "own", "all", NONE_ANSWERED) in idx:  # not "none of what it answered qualifies"
            notes.append(f"`-` throughout for {p} (#facts 0): it answered no fact of {corpus}.")
            explained |= {(p, g) for g in groups}
            continue
        if (corpus, p, setting, scope, "all", metric) not in idx:  # then no group of it has a value either
            notes.append(f"`-` throughout for {p} (#facts 0): no fact it answered {what} ({why}).")
            explained |= {(p, g) for g in groups}
            continue
        left = [g for g in groups if (p, g) not in explained and (corpus, p, setting, scope, g, metric) not in idx]
        right = [names[g] for g in left if _answered(idx, corpus, p, setting, scope, g)]
        if right:
            notes.append(f"`-` under {', '.join(right)} for {p}: no fact of it {what} ({why}).")
        unanswered = [names[g] for g in left if not _answered(idx, corpus, p, setting, scope, g)]
        if unanswered:
            notes.append(f"`-` under {', '.join(unanswered)} for {p}: it answered no fact of it.")
    return ["", *(f"- {n}" for n in notes)] if notes else []


def all_of(names: list[str]) -> str:
    """Who answered a shared scope's units: `bert`, or `all of bert, freq`."""
    return names[0] if len(names) == 1 else f"all of {', '.join(names)}"


def unshared_note(column: str, none: list[str], some: list[str]) -> str:
    """Why a shared-scope column is `-` for every predictor: `none` answered nothing of it, `some` answered units
    of it that not every predictor did."""
    if not none:
        why = "each predictor answered other units of it: see the own-facts table"
    else:
        why = f"{', '.join(none)} answered none" + (f"; {', '.join(some)} did: see the own-facts table" if some else "")
    return f"`-` under {column} for every predictor: no unit of it was answered by every predictor ({why})."


def _scope_notes(idx: dict, corpus: str, predictors: list[str], groups: list[str], setting: str, metric: str,
                 info: dict, unit: str = "facts", every: list[str] | None = None) -> list[str]:
    """Below a shared-facts table, which facts it is over where some predictor of the corpus (`every`) is not
    scored on `metric` (those every predictor scored on it answered), why a column is `-` for every predictor, and
    the own-facts totals beside where the shared facts are less than half of what was asked: a table never hides
    most of a result."""
    notes = []
    counted = {idx[key]["n_facts"] for p in predictors if (key := (corpus, p, setting, "shared", "all", metric)) in idx}
    scored = [p for p in predictors if (corpus, p, setting, "own", "all", metric) in idx]
    if len(counted) == 1 and scored and set(scored) != set(every or scored):
        notes.append(f"Shared {unit}: the {counted.pop()} answered by {all_of(scored)}.")
    for g in groups:
        if any((corpus, p, setting, "shared", g, metric) in idx for p in predictors):
            continue
        none = [p for p in predictors if (corpus, p, setting, "own", g, metric) not in idx]
        some = [p for p in predictors if p not in none]
        notes.append(unshared_note("Total" if g == "all" else relation_name(g, info), none, some))
    shared = max((idx[key]["n_facts"] for p in predictors
                  if (key := (corpus, p, setting, "shared", "all", metric)) in idx), default=0)
    own = {p: idx[key]["n_facts"] for p in predictors if (key := (corpus, p, setting, "own", "all", metric)) in idx}
    asked = max(own.values(), default=0)
    if 2 * shared < asked:
        totals = ", ".join(f"{p} {_cell(idx[(corpus, p, setting, 'own', 'all', metric)], metric)} ({n})"
                           for p, n in own.items())
        notes.append(f"The shared {unit} keep {shared} of the {asked} asked (less than half); own-{unit} "
                     f"Totals (#{unit}): {totals}.")
    return ["", *(f"- {n}" for n in notes)] if notes else []


def per_relation(rows: list[dict], metric: str = "p@1", setting: str = "raw", scope: str = "shared",
                 relations: RelationInfo | None = None, unit: str = "facts") -> str:
    """One row per (corpus, relation), relations by type then id, one column per predictor."""
    picked = [r for r in scored_rows(rows, metric, setting, scope) if r["group"] not in NOT_RELATIONS]
    predictors = list(dict.fromkeys(r["predictor"] for r in picked))
    by: dict[str, dict[str, dict[str, dict]]] = {}
    for r in picked:
        by.setdefault(r["corpus"], {}).setdefault(r["group"], {})[r["predictor"]] = r
    lines = [md_row(["corpus", "relation", "type", f"#{unit}", *predictors]), "|" + "---|" * (4 + len(predictors))]
    ranged = False
    for corpus, per_rel in by.items():
        info = (relations or {}).get(corpus, {})
        for rel in relation_order(list(per_rel), info):
            cells = per_rel[rel]
            counts = sorted({r["n_facts"] for r in cells.values()})
            n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
            ranged |= len(counts) > 1
            vals = [("-" if p not in cells else _cell(cells[p], metric) if len(counts) == 1
                     else f"{_cell(cells[p], metric)} ({cells[p]['n_facts']})") for p in predictors]
            rtype = info.get(rel, (None, None))[1] or "-"
            lines.append(md_row([corpus, relation_name(rel, info), rtype, n, *vals]))
    if ranged:  # each predictor's own facts of a relation: the count beside each score says whose is whose
        lines += ["", f"- #{unit}: fewest–most where the predictors answered different numbers of a relation's "
                      f"{unit}; each score's own count in parentheses."]
    return "\n".join(lines)


def scored_rows(rows: list[dict], metric: str, setting: str, scope: str) -> list[dict]:
    """The summary rows of one metric, setting and scope, less a prompt set's per-prompt rows."""
    return [r for r in rows if r["metric"] == metric and r["setting"] == setting and not r.get("prompt")
            and r.get("scope", "own") == scope]


def own_relations_widen(rows: list[dict], metric: str, setting: str = "raw") -> bool:
    """Whether the predictors' own facts hold relations of `metric` that the shared facts lack: a predictor that
    answered none of a relation (KMIR: of a question kind) takes it out of the shared scope for everyone."""
    def held(scope: str) -> set[tuple[str, str]]:
        return {(r["corpus"], r["group"]) for r in scored_rows(rows, metric, setting, scope)
                if r["group"] not in NOT_RELATIONS}

    return bool(held("own") - held("shared"))


def scope_kinds(rows: list[dict], metric: str, setting: str = "raw", scope: str = "shared") -> list[str]:
    """The KMIR question kinds that `scope`'s questions scored on `metric` hold: what each relation's mean runs
    over (the shared questions lose every kind one predictor does not answer)."""
    held = {r["group"] for r in scored_rows(rows, metric, setting, scope) if r.get("n_facts")}
    return [k for k in KINDS if k in held]


def relation_mean(rows: list[dict], metric: str, setting: str = "raw", scope: str = "shared") -> str:
    """`mean over its questions, of kinds: ...`: what a KMIR relation's cell averages, in `scope`."""
    kinds = scope_kinds(rows, metric, setting, scope)
    return f"mean over its questions, of kind{'s' if len(kinds) > 1 else ''}: {', '.join(kinds) or 'none'}"


PROMPT_METRICS = ("consistency", "group_accuracy", "p@1_random_prompt_min", "p@1_random_prompt_avg",
                  "p@1_random_prompt_max")
PROMPT_NAMES = ("consistency", "group accuracy", "P@1 random prompt min", "avg", "max")  # summary.md's columns


# coherency's draws of one prompt per relation (the coherency paper's Table 3): min, mean and max over the draws, and
# each relation's worst and best drawn prompt, macro (summary.json holds the same of each round)
COHERENCY_PROMPT_METRICS = ("coherency_random_prompt_min", "coherency_random_prompt_avg", "coherency_random_prompt_max",
                            "coherency_drawn_prompt_worst", "coherency_drawn_prompt_best")
COHERENCY_PROMPT_NAMES = ("coherency random prompt min", "avg", "max", "worst drawn prompt", "best drawn prompt")


def prompt_table(rows: list[dict]) -> str:
    """Consistency, group accuracy and the random-prompt draws (of P@1, or of coherency), one row per (corpus,
    predictor)."""
    if any(r["metric"] in PROMPT_METRICS for r in rows):
        metrics, names = PROMPT_METRICS, PROMPT_NAMES
    else:
        metrics, names = COHERENCY_PROMPT_METRICS, COHERENCY_PROMPT_NAMES
    picked = {(r["corpus"], r["predictor"], r["metric"]): r for r in rows
              if r["metric"] in metrics and r["group"] == "all" and r.get("scope") == "shared"}
    if not picked:
        return ""
    lines = ["| corpus | predictor | " + " | ".join(names) + " |", "|" + "---|" * (2 + len(names))]
    for corpus, predictor in dict.fromkeys((c, p) for c, p, _ in picked):
        # group accuracy with its stderr (value alone in older runs; consistency and the draws have none)
        cells = [_cell(picked[(corpus, predictor, m)], m) if (corpus, predictor, m) in picked else "-"
                 for m in metrics]
        lines.append(md_row([corpus, predictor, *cells]))
    bare = unrated_group_accuracy(rows)
    if bare:
        lines.append(f"- {unrated_group_accuracy_note(bare)}")
    return "\n".join(lines)


def unrated_group_accuracy(rows: list[dict], scope: str = "shared") -> list[str]:
    """The predictors whose group accuracy over all relations has no stderr though a relation of theirs has two
    facts or more: this version gives such a relation a stderr, so an earlier one scored the run, and beside runs
    this version scored the missing ± would read as none there (`kbc report` and the explorer say so alike)."""
    held = [r for r in rows if r.get("metric") == "group_accuracy" and r.get("scope", "own") == scope
            and not r.get("prompt")]
    sized = {(r.get("corpus"), r.get("predictor")) for r in held
             if r.get("group") != "all" and (r.get("n_facts") or 0) >= 2}
    return list(dict.fromkeys(r.get("predictor") for r in held if r.get("group") == "all" and r.get("stderr") is None
                              and (r.get("corpus"), r.get("predictor")) in sized))


def unrated_group_accuracy_note(predictors: list[str]) -> str:
    """The note under an across-prompts table naming `unrated_group_accuracy`'s predictors and how to rescore."""
    return (f"group accuracy with no standard error ({', '.join(predictors)}): scored by an earlier kbc version, "
            "which gave it none; rerun the run's `kbc run` command into it to rescore it")


def counted_unit(dropped: list[dict]) -> str | None:
    """What dropped tallies count (`dropped.json`'s `unit`: facts, queries, questions, pairs; facts where
    it names none); None where tallies of several runs count different things."""
    units = {d.get("unit") or "facts" for d in dropped}
    return units.pop() if len(units) == 1 else None


def markdown(rows: list[dict], setting: str = "raw", dropped: list[dict] | None = None,
             notes: list[str] | None = None, title: str = "LAMA probe",
             metrics: tuple[str, ...] = ("p@1", "p@10", "mrr"), relations: RelationInfo | None = None,
             open_spaces: set[tuple[str, str]] | None = None, counts: dict[str, str] | None = None,
             spread: str | None = None) -> str:
    """summary.md: the tables of every metric, shared then own scope, per relation, across prompts, what was
    dropped. `counts`: per metric, what its `n_facts` count where not facts (KMIR: questions, Q-sets). `spread`:
    what the ± and the interval are, where not standard errors of means over facts and relations."""
    other = "filtered" if setting == "raw" else "raw"
    intro = f"Setting `{setting}`"
    if any(r["setting"] == other for r in rows):
        intro += f" (summary.json also holds `{other}`)"
    intro += (". `answer space`: how many answers each predictor ranked for each relation (`answer space (mean)`: "
              "the mean over relations ranked over spaces of different sizes; `open` where it answers from an open "
              "set, e.g. a KB's own triples; `-`: not recorded). ")
    if any(r.get("stderr") is not None for r in rows if r["setting"] == setting):
        intro += spread or ("Cells: value ± standard error (per relation: of its mean over facts; types and Total: of "
                            "the mean over relations, or over every question where the Total says so); `Total 95% "
                            "CI`: a seeded percentile bootstrap interval, facts resampled within each relation "
                            "(summary.json holds every cell's `stderr`, `ci_low`, `ci_high`).")
    else:  # never describe uncertainty the rows do not carry
        intro += "Cells: value alone; these rows carry no standard error or interval (`Total 95% CI`: -)."
    parts = [f"# {title}", "", intro, ""]
    parts += [f"- {n}" for n in notes or []]
    for scope in ("shared", "own"):
        for metric in metrics:
            body = table(rows, metric, setting, scope, relations=relations, open_spaces=open_spaces,
                         unit=(counts or {}).get(metric, "facts"))
            if body:
                parts += ["", f"## {METRIC_NAMES.get(metric, metric)}, {scope} facts", "", body]
    held = {r["metric"] for r in rows if r["setting"] == setting}
    head = next((m for m in metrics if m in held), metrics[0])  # exact match where every predictor generates
    unit = (counts or {}).get(head, "facts")
    scopes = ("shared", "own") if own_relations_widen(rows, head, setting) else ("shared",)
    for scope in scopes:  # the own facts follow where the shared ones lack relations
        parts += ["", f"## {METRIC_NAMES.get(head, head)} per relation, {scope} facts", ""]
        if scope_kinds(rows, head, setting, "own"):  # KMIR: a relation's questions are of several kinds
            parts += [f"Per relation: the {relation_mean(rows, head, setting, scope)}.", ""]
        parts += [per_relation(rows, head, setting, scope, relations, unit), ""]
    agreement = prompt_table(rows)
    if agreement:
        parts += ["## Across prompts (raw, shared facts)", "", agreement, ""]
    if dropped:
        unit = counted_unit(dropped) or "facts"  # one run's tallies share their unit
        parts += [f"## {unit.capitalize()} a predictor could not answer (not scored)", "",
                  f"| corpus | predictor | relation | reason | {unit} |", "|---|---|---|---|---|"]
        parts += [md_row([d["corpus"], d["predictor"], relation_id(d["relation"]), d["reason"], d["n"]])
                  for d in dropped]
        parts.append("")
    return "\n".join(parts)
