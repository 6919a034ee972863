"""The LAMA probe as an experiment: each fact asked for its object, ranked raw and filtered.

Variants: a prompt set asks each fact with each of its relation's prompts (uids `<fact>@<prompt>`),
scored per prompt and for agreement across prompts; a context (the fact's own evidence with the
gold object hidden, or BM25-retrieved paragraphs) is given to the model with each prompt.
With `answers="set"` each N-M relation is also scored set against set (`set_rows`): a fact's gold set is
every valid object of its subject, the answer what the predictor's `set=` rule keeps of its ranking, else a
KB's equally true top answers, else the top answer.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Sequence

from bridge.experiments.base import (
    CONTEXT_RULE,
    CONTEXT_RULE_NOW,
    END_MARKER_RULE,
    END_MARKER_RULE_NOW,
    Records,
    StageInput,
    StageRecords,
    single_stage,
)
from bridge.run.results import saved_answers
from eval.answer_text import GENERATED
from eval.errors import ConfigError
from eval.generated_scores import GENERATED_METRICS, answer_hits, generated_rows, is_generated
from eval.metrics import filtered_exact_rank, gold_ranks
from eval.queries import make_queries
from eval.rank_table import RankTable, curve_table, summarize_table
from eval.relations import summary_groups
from eval.set_answers import label_set
from eval.set_metrics import LAMA_SET_METRICS, LAMA_SET_TYPES, distinct, lama_set_pairs, macro_rows
from eval.set_rules import SetRule, parse_set_rule
from eval.types import Answer, Entity, Fact, Prediction, Query, answer_rows, asked_prompt, entity_ids, with_targets
from eval.user_values import strict_int

CONTEXTS = ("none", "gold", "retrieved")
ANSWERS = ("ranked", "set")
SET_METRICS = LAMA_SET_METRICS
SET_TYPES = LAMA_SET_TYPES


log = logging.getLogger("kbc")
CONTEXT_PARTS = "context_parts"  # a record's count of the texts its context joins


def parse_context(spec: str) -> tuple[str, int]:
    """`none`, `gold` or `retrieved[:K]` as (kind, K)."""
    kind, colon, k = spec.partition(":")
    if kind not in CONTEXTS or (colon and kind != "retrieved"):
        raise ConfigError(f"--context {spec}: use none, gold or retrieved[:K]")
    try:
        n = strict_int(k) if colon else 1
    except ValueError:
        raise ConfigError(f"--context {spec}: K must be a whole number in ASCII digits, e.g. retrieved:3") from None
    if n < 1 or n > 100:
        raise ConfigError(f"--context {spec}: K must be between 1 and 100")
    return kind, n


def canonical_context(spec: str) -> str:
    """One spelling per context setting, so that a rerun is not refused for another: `retrieved:1` is `retrieved`."""
    kind, k = parse_context(spec)
    return f"retrieved:{k}" if kind == "retrieved" and k != 1 else kind


def targets(fact: Fact, rel_valid: dict[str, set[str]]) -> tuple[str, ...]:
    """Labels whose exact rank a predictor reports: the gold first, then the other valid objects."""
    gold = fact.object.label
    return (gold, *sorted(rel_valid.get(fact.subject.key, set()) - {gold}))


def object_queries(given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
    """Queries of the asked facts with uids as in the full corpus (a sample never renumbers them)."""
    asked = {id(f) for f in given.facts}
    out = {}
    for rel, pairs in make_queries(given.corpus).items():
        rel_valid = given.valid.get(rel, {})
        out[rel] = [(with_targets(q, targets(f, rel_valid)), f) for q, f in pairs if id(f) in asked]
    return out


def gold_position(answers: Sequence[Answer], gold: Entity, lowercased: bool = False) -> int | None:
    """Where the gold stands among the answers (by label, as ranks are counted): the answer of its own entity where
    several carry its label, else the first of them; None when absent."""
    label = gold.label.lower() if lowercased else gold.label
    named = [i for i, a in enumerate(answers) if (a.label.lower() if lowercased else a.label) == label]
    return next((i for i in named if gold.id in entity_ids(answers[i].id)), named[0] if named else None)


def ranked_record(query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
    """Gold ranks raw and filtered (list and exact), top answers: all a LAMA-style score needs."""
    gold = fact.object.label
    others = rel_valid.get(fact.subject.key, set())
    raw, filtered = gold_ranks(pred.answers, gold, others, pred.lowercased, pred.shared_ties)
    # a gold counted at the first place of its tie group is saved there (its rank may count fewer labels than places)
    used = (gold_position(pred.answers, fact.object, pred.lowercased),) if pred.shared_ties else ()
    record = {
        "uid": query.uid,
        "relation": query.relation,
        "subject": fact.subject.label,
        "subject_id": fact.subject.id,
        "gold": gold,
        "gold_id": fact.object.id,
        "prompt": asked_prompt(query, pred),
        "other_valid": sorted(others - {gold}),
        "rank_raw": raw,
        "rank_filtered": filtered,
        # a closed answer space (BEAR) is kept whole: `kbc show` lists every option's score
        "answers": (answer_rows(pred.answers, len(pred.answers)) if fact.answer_idx is not None
                    else saved_answers(pred.answers, used, pred.shared_ties)),
    }
    if pred.target_ranks is not None:
        record["rank_exact_raw"] = pred.target_ranks.get(gold)
        record["rank_exact_filtered"] = filtered_exact_rank(pred.target_ranks, gold, others, pred.lowercased)
    if query.prompt != "lama":
        record["fact_uid"], record["prompt_id"] = query.fact_uid, query.prompt
    if query.context is not None:
        record["context"] = query.context
    if pred.extra:
        record["extra"] = pred.extra
    return record


def generated_record(query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
    """An answer written by generation: the exact prompt and raw generation, the parsed and linked answer, exact
    match raw and filtered (`eval.generated_scores`); no gold rank, for there is no ranking."""
    gold = fact.object.label
    others = rel_valid.get(fact.subject.key, set()) - {gold}
    answers = [[a.label, a.score, a.id] for a in pred.answers]
    raw, filtered = answer_hits(answers[0], gold, fact.object.id, others) if answers else (False, False)
    extra = pred.extra
    record = {"uid": query.uid, "relation": query.relation, "subject": fact.subject.label,
              "subject_id": fact.subject.id, "gold": gold, "gold_id": fact.object.id, "other_valid": sorted(others),
              "prompt": extra["prompt"], GENERATED: extra[GENERATED], "parsed": extra["parsed"],
              "answers": answers, "unlinked": extra["unlinked"], "abstained": extra["abstained"],
              "em_raw": raw, "em_filtered": filtered, "rank_raw": None, "rank_filtered": None}
    for key in ("prompt_text", "shots"):
        if key in extra:
            record[key] = extra[key]
    if query.prompt != "lama":
        record["fact_uid"], record["prompt_id"] = query.fact_uid, query.prompt
    if query.context is not None:
        record["context"] = query.context
    return record


def with_prompts(queries: dict[str, list[tuple[Query, Fact]]], spec: str, given: StageInput
                 ) -> dict[str, list[tuple[Query, Fact]]]:
    """Each query once per prompt of its relation (cloze corpora keep their sentence); `TEMPLATES_SET`: the
    relation's own templates (BEAR's three, prompt ids `t0`, `t1`, `t2`)."""
    from eval.prompts import Prompt, load_prompts

    templated = {rel: r for rel, r in given.corpus.relations.items()
                 if queries.get(rel) and not queries[rel][0][1].cloze}
    if not templated:
        return queries
    if spec == TEMPLATES_SET:
        prompts = {rel: [Prompt(f"t{i}", t, TEMPLATES_SET) for i, t in enumerate(r.templates or (r.template,))]
                   for rel, r in templated.items()}
    else:
        prompts = load_prompts(spec, given.data_dir, templated)
    out = dict(queries)
    for rel, options in prompts.items():
        out[rel] = [(dataclasses.replace(q, uid=f"{q.uid}@{p.id}", template=p.template, prompt=p.id), f)
                    for q, f in queries[rel] for p in options]
    return out


TEMPLATES_SET = "templates"  # `--template all`: each relation's own templates as a prompt set


def with_context(queries: dict[str, list[tuple[Query, Fact]]], spec: str, given: StageInput,
                 parts: dict[str, int] | None = None) -> dict[str, list[tuple[Query, Fact]]]:
    """The same queries with the evidence context of `spec` (see `parse_context`); `parts` gets, per query uid,
    how many texts its context joins (0: none; fewer than K: the index held no more)."""
    from eval.contexts import gold_texts, retrieved_paragraphs

    kind, k = parse_context(spec)
    if kind == "none":
        return queries
    index = None
    if kind == "retrieved":
        index = evidence_index(given)
    out = {}
    for rel, pairs in queries.items():
        out[rel] = []
        for q, f in pairs:
            texts = gold_texts(f) if kind == "gold" else retrieved_paragraphs(index, q, k, exclude_gold=True)
            if parts is not None:
                parts[q.uid] = len(texts)
            out[rel].append((dataclasses.replace(q, context=" ".join(texts) or None), f))
    return out


def evidence_index(given: StageInput):
    """The LAMA evidence index in the cache (built once, as the retrieval baseline does)."""
    from kb.text.evidence import evidence_index as build

    if given.cache_dir is None or given.data_dir is None:
        raise ConfigError("retrieved contexts need a text index; build one with `kbc index build`")
    return build(given.cache_dir / "index" / "lama-evidence", given.data_dir, "tantivy", None, progress=False)


class LamaExperiment:
    name = "lama"
    stages = ("",)
    # summary.md and the printed table show them where rows hold them
    optional_metrics = (*GENERATED_METRICS, *SET_METRICS.values())

    def __init__(self, prompts: str = "lama", context: str = "none", draws: int = 10, seed: int = 0,
                 answers: str = "ranked") -> None:
        context = canonical_context(context)
        if answers not in ANSWERS:
            raise ConfigError(f"--answers {answers}: use one of {', '.join(ANSWERS)}")
        self.prompts, self.context, self.draws, self.seed, self.answers = prompts, context, draws, seed, answers
        # what changes the questions or the records: one value per output directory
        self.settings = {"prompts": prompts, "context": context} | ({"answers": answers} if answers == "set" else {}) \
            | ({CONTEXT_RULE: CONTEXT_RULE_NOW} if context.startswith("retrieved") else {})
        # what changes only the summaries, recorded in config.json (`scoring`) for them to be drawn the same way
        self.scoring = {"prompt_draws": draws, "prompt_seed": seed}
        self._rule: SetRule | None = None
        self._parts: dict[str, int] = {}  # per query uid, the texts its context joins (`context_parts`)

    @classmethod
    def from_scoring(cls, scoring: dict) -> LamaExperiment:
        """The experiment as a run's summaries score it: with its recorded random-prompt draws and their seed."""
        return cls(draws=int(scoring.get("prompt_draws", 10)), seed=int(scoring.get("prompt_seed", 0)))

    def check(self, corpora: dict, data_dir) -> None:
        """Prompt sets are read (and their errors reported) before anything runs."""
        if self.prompts in ("lama", TEMPLATES_SET):
            return
        from eval.prompts import fallback_relations, load_prompts, spoken_template

        for name, corpus in corpora.items():
            templated = {rel: r for rel, r in corpus.relations.items()
                         if not any(f.cloze for f in corpus.facts if f.relation == rel)}
            if templated:
                prompts = load_prompts(self.prompts, data_dir, templated)
                if any(spoken_template(p.template) != p.template for ps in prompts.values() for p in ps):
                    self.settings[END_MARKER_RULE] = END_MARKER_RULE_NOW  # such folders of older versions differ
                fell_back = fallback_relations(prompts)
                if fell_back:  # asked once, with the LAMA template: no consistency, one prompt in the draws
                    log.warning("%s: prompt set %s has no prompt for %s; asked with the template of relations.jsonl",
                                name, self.prompts, ", ".join(fell_back))

    @property
    def set_rules(self) -> bool:
        """Whether predictors may take a `set=` rule (the runner refuses one otherwise)."""
        return self.answers == "set"

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        spec = given.options.get("set") if self.answers == "set" else None
        self._rule = parse_set_rule(spec) if spec else None
        if self._rule is not None and self._rule.kind == "threshold-tuned":
            raise ConfigError("set=threshold-tuned needs a train split (`kbc run lmkbc`); LAMA takes top:K or "
                              "threshold:X")
        queries = object_queries(given)
        if self.prompts != "lama":
            queries = with_prompts(queries, self.prompts, given)
        self._parts = {}
        return with_context(queries, self.context, given, self._parts)

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        record = (generated_record if GENERATED in pred.extra else ranked_record)(query, fact, pred, rel_valid)
        if query.uid in self._parts:  # summaries count the queries asked without a context, or with fewer than K
            record[CONTEXT_PARTS] = self._parts[query.uid]
        if self.answers == "set":
            gold = [record["gold"], *record["other_valid"]]
            record["set"] = label_set(pred, self._rule)
            record["set_gold"] = distinct(g.lower() for g in gold) if pred.lowercased else gold
        return record

    @staticmethod
    def dropped_unit(settings: dict) -> str:
        """A prompt set asks each fact several ways, one record per query: its dropped tallies count queries."""
        return "facts" if settings.get("prompts", "lama") == "lama" else "queries"

    def instances(self, records: StageRecords) -> Records:
        return single_stage(records)

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        if is_generated(instances):  # no ranking: exact match and its rates instead of P@k and MRR
            rows = generated_rows(instances, relation_types)
            if any("set" in r for r in instances):
                rows += set_rows(instances, relation_types)
            return counted_by_fact(rows, instances, relation_types), []
        table = RankTable.from_records(instances)  # the numbers of eval.metrics.summarize / pk_curve, columnar
        rows = summarize_table(table, relation_types, mrr_cutoff=mrr_cutoff or None)
        if any("set" in r for r in instances):  # a directory run with --answers set (its records hold the sets)
            rows += set_rows(instances, relation_types)
        rows = counted_by_fact(rows, instances, relation_types)
        if any("prompt_id" in r for r in instances):
            rows += prompt_rows(instances, self.draws, self.seed)
        return rows, curve_table(table)


def counted_by_fact(rows: list[dict], instances: list[dict], relation_types: dict[str, str | None]) -> list[dict]:
    """Under a prompt set a fact asked k ways is one fact, as `kbc compare` counts it: a row that counted every
    query of its group counts its facts in `n_facts` and its queries in `n_queries` (scores stay per query)."""
    if not any(r.get("fact_uid") for r in instances):
        return rows
    queries: Counter = Counter()
    facts: dict[str, set[str]] = {}
    for r in instances:
        queries[r["relation"]] += 1
        facts.setdefault(r["relation"], set()).add(str(r.get("fact_uid") or r["uid"]))
    groups: dict[str, list[str]] = {"all": list(queries)}
    for rel in queries:
        groups[rel] = [rel]
        for group in summary_groups(relation_types.get(rel)):
            groups.setdefault(group, []).append(rel)
    out = []
    for row in rows:
        rels = groups.get(row["group"], [])
        if rels and row["n_facts"] == sum(queries[r] for r in rels):
            row = {**row, "n_facts": sum(len(facts[r]) for r in rels), "n_queries": row["n_facts"]}
        out.append(row)
    return out


def set_rows(instances: list[dict], relation_types: dict[str, str | None]) -> list[dict]:
    """`set-p`, `set-r`, `set-f1` (percent) of the N-M relations: per relation the mean over its facts (LM-KBC's
    per-pair conventions), per type and `all` the mean over relations; one value for both settings, since the
    gold set already holds every valid object."""
    pairs = lama_set_pairs(instances, relation_types)
    if not pairs:
        return []
    rels = list(dict.fromkeys(s.relation for s in pairs))
    groups = {t: [r for r in rels if relation_types.get(r) == t] for t in SET_TYPES} | {"all": rels}
    rows = macro_rows(pairs, groups, SET_METRICS)
    return [{"setting": setting, **row} for setting in ("raw", "filtered") for row in rows]


def prompt_rows(instances: list[dict], draws: int, seed: int) -> list[dict]:
    """Per-prompt P@1, consistency, group accuracy and the random-prompt draws, as tidy rows (setting raw)."""
    from eval.consistency import (
        consistency,
        draw_rows,
        group_accuracy,
        prompt_accuracy,
        prompt_outcomes,
        random_prompt_draws,
    )

    outcomes = prompt_outcomes(instances)
    rows = []
    for metric, scores in (("consistency", consistency(outcomes)), ("group_accuracy", group_accuracy(outcomes))):
        for rel, value in scores.per_relation.items():
            rows.append({"setting": "raw", "group": rel, "metric": metric, "value": 100.0 * value,
                         "n_facts": scores.counts.get(rel, 0)})
        if scores.macro is not None:
            rows.append({"setting": "raw", "group": "all", "metric": metric, "value": 100.0 * scores.macro,
                         "n_facts": sum(scores.counts.values())})
    per_prompt = {rel: {pid: 100.0 * v for pid, v in by.items()} for rel, by in prompt_accuracy(outcomes).items()}
    counts = Counter((rel, pid) for rel, facts in outcomes.items() for by_prompt in facts.values() for pid in by_prompt)
    for rel, by_prompt in per_prompt.items():
        for pid, value in by_prompt.items():
            rows.append({"setting": "raw", "group": rel, "metric": "p@1", "prompt": pid, "value": value,
                         "n_facts": counts.get((rel, pid), 0)})
    drawn = random_prompt_draws(per_prompt, draws, seed)
    return rows + draw_rows("p@1", drawn, sum(len(facts) for facts in outcomes.values()))
