"""The LAMA probe as an experiment: each fact asked once for its object, ranked raw and filtered."""

from __future__ import annotations

import dataclasses

from bridge.experiments.base import Records, StageInput, StageRecords, single_stage
from bridge.results import TOP_SAVED, to_ranked
from eval.metrics import filtered_exact_rank, gold_rank, pk_curve, summarize
from eval.queries import make_queries
from eval.types import Fact, Prediction, Query


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
        out[rel] = [(dataclasses.replace(q, targets=targets(f, rel_valid)), f) for q, f in pairs if id(f) in asked]
    return out


def ranked_record(query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
    """Gold ranks raw and filtered (list and exact), top answers: all a LAMA-style score needs."""
    gold = fact.object.label
    others = rel_valid.get(fact.subject.key, set())
    record = {
        "uid": query.uid,
        "relation": query.relation,
        "subject": fact.subject.label,
        "subject_id": fact.subject.id,
        "gold": gold,
        "gold_id": fact.object.id,
        "prompt": query.text("[MASK]"),
        "other_valid": sorted(others - {gold}),
        "rank_raw": gold_rank(pred.answers, gold, (), pred.lowercased),
        "rank_filtered": gold_rank(pred.answers, gold, others, pred.lowercased),
        "answers": [[a.label, round(a.score, 6), a.id] for a in pred.answers[:TOP_SAVED]],
    }
    if pred.target_ranks is not None:
        record["rank_exact_raw"] = pred.target_ranks.get(gold)
        record["rank_exact_filtered"] = filtered_exact_rank(pred.target_ranks, gold, others, pred.lowercased)
    if pred.extra:
        record["extra"] = pred.extra
    return record


class LamaExperiment:
    name = "lama"
    stages = ("",)

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        return object_queries(given)

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        return ranked_record(query, fact, pred, rel_valid)

    def instances(self, records: StageRecords) -> Records:
        return single_stage(records)

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        ranked = [to_ranked(r) for r in instances]
        kwargs = {"mrr_cutoff": mrr_cutoff} if mrr_cutoff else {}
        return summarize(ranked, relation_types, **kwargs), pk_curve(ranked)
