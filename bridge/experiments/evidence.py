"""Each aligned evidence sentence as the prompt (LAMA Fig. 4): how much the gold's rank varies with wording.

A fact with at least `min_evidences` usable sentences (T-REx sentences with the object masked
once) is asked once per sentence, up to `max_evidences`; unit uids are `<fact uid>:e<i>`, `i`
the sentence's position among the fact's usable sentences. Corpora without masked sentences
(Google-RE gives snippets) contribute no units. Records are LAMA records (raw and filtered
ranks) with `evidence` and `n_evidences` added.
"""

from __future__ import annotations

import re

from bridge.experiments.base import Records, StageInput, StageRecords, single_stage
from bridge.experiments.lama import ranked_record, targets
from bridge.run.results import to_ranked
from eval.lama import MASK
from eval.metrics import pk_curve, summarize
from eval.types import OBJECT_SLOT, Fact, Prediction, Query


def evidence_uid(fact_uid: str, i: int) -> str:
    return f"{fact_uid}:e{i}"


def fact_uid(uid: str) -> str:
    """The fact a sentence's query (`X:e2`) is of; a fact's uid is its own."""
    return re.sub(r":e[0-9]+$", "", uid)


def split_uid(uid: str) -> tuple[str, int]:
    fact, _, i = uid.rpartition(":e")
    return fact, int(i)


def evidence_templates(fact: Fact, limit: int) -> list[str]:
    """The fact's distinct masked sentences with the object slot as `[Y]`, at most `limit`."""
    out: list[str] = []
    for ev in fact.evidences:
        if not ev.masked or ev.masked.count(MASK) != 1 or "[X]" in ev.masked or "[Y]" in ev.masked:
            continue
        template = ev.masked.replace(MASK, OBJECT_SLOT)
        if template not in out:
            out.append(template)
        if len(out) == limit:
            break
    return out


class EvidenceExperiment:
    name = "evidence"
    title = "Gold rank with each evidence sentence as the prompt (LAMA Fig. 4)"
    stages = ("",)

    def __init__(self, min_evidences: int = 2, max_evidences: int = 10) -> None:
        self.min_evidences, self.max_evidences = min_evidences, max_evidences
        self.settings = {"min_evidences": min_evidences, "max_evidences": max_evidences}
        self._n: dict[str, int] = {}

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        out: dict[str, list[tuple[Query, Fact]]] = {rel: [] for rel in given.corpus.relations}
        for fact in given.facts:
            if fact.cloze:
                continue
            templates = evidence_templates(fact, self.max_evidences)
            if len(templates) < self.min_evidences:
                continue
            self._n[fact.uid] = len(templates)
            rel_valid = given.valid.get(fact.relation, {})
            for i, template in enumerate(templates):
                query = Query(evidence_uid(fact.uid, i), fact.uid, given.corpus.name, fact.relation, fact.subject,
                              "object", template, targets=targets(fact, rel_valid), prompt=f"e{i}")
                out[fact.relation].append((query, fact))
        return out

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        record = ranked_record(query, fact, pred, rel_valid)
        record["evidence"] = split_uid(query.uid)[1]
        record["n_evidences"] = self._n.get(fact.uid)
        return record

    @staticmethod
    def dropped_unit(settings: dict) -> str:
        """One record per (fact, evidence sentence) query."""
        return "queries"

    def instances(self, records: StageRecords) -> Records:
        return single_stage(records)

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        ranked = [to_ranked(r) for r in instances]
        return summarize(ranked, relation_types), pk_curve(ranked)
