"""LM-KBC 2024 as an experiment: each subject and relation asked once, answered with a set, scored as the
challenge scores it (`eval.set_metrics`).

A predictor's ranked answers become objects (ids through the label index, numbers for numeric relations)
and its `set=` rule cuts them (`eval.set_rules`; without one, as for the gold KB, the set is every object
it answers: its whole answer space, whatever `--depth`, which bounds only the `ranked` list a record keeps).
`set=threshold-tuned` first asks the train split (stage `train`) and tunes one threshold per relation there;
every other rule asks nothing of train. Scores are probabilities (an LM's log-probabilities exponentiated,
or its log scores normalised over the answers it ranked, `eval.set_answers`). Each predictor's answers
to the split asked (`--split`: val, train, or a split file such as the challenge's test file, which has no
objects and is not scored) are also written in the challenge's submission format,
`submission/<predictor>.jsonl`, once every pair of the split is answered; a part (`--limit`, `--relations`)
goes to `submission/<predictor>.partial.jsonl`, never under the submission name. Unresolved answers stay
strings there, as the challenge's baseline leaves them; the challenge's scores (`METRICS`) are `evaluate.py`'s on
that file, where such a string matches nothing, and kbc's label-matching figures are rows of their own.
"""

from __future__ import annotations

from pathlib import Path

from bridge.experiments.base import Records, StageInput, StageRecords
from eval.answer_text import GENERATED
from eval.disambiguate import LabelIndex
from eval.generated_scores import is_generated, pooled_rate_rows
from eval.jsonl import write_jsonl_line
from eval.lmkbc import (
    CORPUS,
    NUMERIC,
    SPLITS,
    label_index,
    load_lmkbc,
    resolve_lmkbc_dir,
    split_path,
)
from eval.set_answers import as_probabilities, normaliser, ranked_objects
from eval.set_metrics import LABEL_HITS, LABEL_METRICS, METRICS, as_gold, label_rows, pair_from_record, tidy_rows
from eval.set_report import with_lmkbc_table
from eval.set_rules import SetRule, TuningPair, apply_rule, parse_set_rule, tune_threshold
from eval.types import Prediction, Query, SetFact, asked_prompt


def set_queries(facts: list[SetFact], relations: dict, prefix: str = "") -> dict[str, list[tuple[Query, SetFact]]]:
    """One object query per pair, with the relation's template; uids `<prefix><relation>:<subject id>`."""
    out: dict[str, list[tuple[Query, SetFact]]] = {rel: [] for rel in relations}
    for fact in facts:
        if fact.relation in out:
            query = Query(prefix + fact.uid, fact.uid, fact.corpus, fact.relation, fact.subject, "object",
                          relations[fact.relation].template)
            out[fact.relation].append((query, fact))
    return out


class LmkbcExperiment:
    name = "lmkbc"
    stages = ("train", "")
    title = "LM-KBC 2024 (set-valued answers; Total: over every (subject, relation) pair, not a mean over relations)"
    pooled_total = True  # the Total averages over every unit, not over relations: no relation outweighs
    metrics = METRICS
    # kbc's own label-matching figures, only where some answer matched a gold by label alone (`eval.set_metrics`)
    optional_metrics = ("abstain", "unlinked", *LABEL_METRICS.values(), LABEL_HITS)
    set_valued = True

    def __init__(self, split: str = "val") -> None:
        self.split = split
        self.settings: dict = {}
        self._split_pairs = 0
        self._rule: SetRule | None = None
        self._shown = 100  # ranked objects kept per record (`--depth`): what threshold tuning and `kbc show` read
        self._tuned: dict[str, float] = {}
        self._index: LabelIndex | None = None

    def check(self, corpora: dict, data_dir: Path | None) -> None:
        """The alias list shapes every record's ids, so its content is part of the run's identity."""
        from eval.datadir import fingerprint
        from eval.lmkbc import alias_file

        root = resolve_lmkbc_dir(data_dir)
        aliases = alias_file(root)
        self.settings["aliases"] = fingerprint([aliases]) if aliases is not None else None
        if self.split != "val":  # the split asked is part of what the directory holds (val: as before)
            self.settings["split"] = self.split if self.split in SPLITS else \
                f"file {fingerprint([split_path(root, self.split)])}"

    def _labels(self, data_dir: Path | None) -> LabelIndex:
        if self._index is None:
            self._index = label_index(data_dir)
        return self._index

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, SetFact]]]:
        spec = given.options.get("set")
        self._rule = parse_set_rule(spec) if spec else None
        self._shown = given.depth
        self._labels(given.data_dir)
        tuned = self._rule is not None and self._rule.kind == "threshold-tuned"
        if stage == "train":
            if not tuned:
                return {}
            train = load_lmkbc(given.data_dir, "train", list(given.corpus.relations))
            return set_queries(train.facts, given.corpus.relations, "train:")
        # per predictor: one without a tuned rule keeps no threshold of the one asked before it
        self._tuned = tune_per_relation(given.earlier.get("train", {})) if tuned else {}
        self._split_pairs = sum(r.read for r in given.corpus.reports)
        asked = {id(f) for f in given.facts}
        return {rel: [(q, f) for q, f in pairs if id(f) in asked]
                for rel, pairs in set_queries(given.corpus.facts, given.corpus.relations).items()}

    def asks_all(self, stage: str) -> bool:
        """Without a rule every answer counts: the predictor is asked for all it has, whatever `--depth`."""
        return stage == "" and self._rule is None

    def record(self, stage: str, query: Query, fact: SetFact, pred: Prediction, rel_valid: dict) -> dict:
        ranked = as_probabilities(ranked_objects(pred, self._labels(None), fact.relation in NUMERIC),
                                  normaliser(pred))
        threshold = self._tuned.get(fact.relation) if stage == "" else None
        record = {
            "uid": query.uid, "relation": fact.relation, "subject": fact.subject.label, "subject_id": fact.subject.id,
            "prompt": asked_prompt(query, pred),
            # a split without objects (the test file) has no gold: None, never an empty set scored as one
            "gold": [o.id for o in fact.objects] if fact.scored else None,
            "gold_labels": list(fact.labels) if fact.scored else None,
            # full precision: a threshold tuned on these scores must cut the val scores exactly as it cut these
            "ranked": [[item, score] for item, score in ranked[:self._shown]],
            "set_rule": str(self._rule) if self._rule else "all answers",
        }
        if GENERATED in pred.extra:  # written by generation: the exact prompt, the raw text, what was not linked
            extra = pred.extra
            record.update({"prompt": extra["prompt"], GENERATED: extra[GENERATED], "parsed": extra["parsed"],
                           "unlinked": extra["unlinked"], "abstained": extra["abstained"]})
            record.update({k: extra[k] for k in ("prompt_text", "shots") if k in extra})
        if stage == "train":  # read only to tune the threshold
            return record
        record["split_pairs"] = self._split_pairs  # a submission is complete when it holds this many pairs
        if threshold is not None:
            record["threshold"] = threshold
        predicted = apply_rule(self._rule, ranked, threshold) if self._rule else [item for item, _ in ranked]
        # an item naming several entities is submitted as the gold one it names: evaluate.py compares single ids
        record["predicted"] = as_gold(predicted, record["gold"]) if fact.scored else predicted
        return record

    @staticmethod
    def dropped_unit(settings: dict) -> str:
        """One record per (subject, relation) pair and its gold set."""
        return "pairs"

    @staticmethod
    def counted(metric: str) -> str:
        """What a row's `n_facts` counts: (subject, relation) pairs, the challenge's unit."""
        return "pairs"

    def instances(self, records: StageRecords) -> Records:
        return records.get("", {})

    @staticmethod
    def scores(unit: dict) -> bool:
        """A pair of a split without objects (the test file) is answered and submitted, never scored."""
        return unit.get("gold") is not None

    def unit_columns(self, unit: dict) -> dict:
        """`instances.parquet`'s columns of a pair: the challenge's P, R and F1 of its predicted set (null where the
        pair is dropped or has no gold), whose means per relation are the summary's macro-p, macro-r and macro-f1."""
        if "dropped" in unit or "predicted" not in unit or not self.scores(unit):
            return {"p": None, "r": None, "f1": None}
        score = pair_from_record(unit)
        return {"p": score.p, "r": score.r, "f1": score.f1}

    def summarize(self, instances: list[dict], relation_types: dict, mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        scored = [r for r in instances if self.scores(r)]
        rows = tidy_rows([pair_from_record(r) for r in scored]) + label_rows(scored)
        if is_generated(scored):  # answers written by generation: how often it abstained or named no entity
            rows += pooled_rate_rows(scored)
        return rows, []

    def summary_section(self, md: str, rows: list[dict], setting: str) -> str:
        """summary.md opens with the challenge's own table (`eval.set_report`)."""
        return with_lmkbc_table(md, rows, setting)

    def write_outputs(self, out: Path, corpus: str, predictor: str, units: Records) -> None:
        """The challenge's submission file of one predictor: one line per pair asked."""
        if corpus != CORPUS:
            return
        complete = out / "submission" / f"{predictor}.jsonl"
        partial = complete.with_suffix(".partial.jsonl")
        whole = bool(units) and all(len(units) == u.get("split_pairs") for u in units.values())
        path, stale = (complete, partial) if whole else (partial, complete)
        path.parent.mkdir(parents=True, exist_ok=True)
        stale.unlink(missing_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for unit in units.values():
                if "dropped" not in unit:
                    write_jsonl_line(handle, {"SubjectEntityID": unit["subject_id"], "SubjectEntity": unit["subject"],
                                              "Relation": unit["relation"], "ObjectEntitiesID": unit["predicted"]})


def tune_per_relation(train: Records) -> dict[str, float]:
    """Per relation, the threshold of highest macro F1 on the train records."""
    by_rel: dict[str, list[TuningPair]] = {}
    for record in train.values():
        if "dropped" not in record:
            by_rel.setdefault(record["relation"], []).append(TuningPair(
                [tuple(x) for x in record["ranked"]], tuple(record["gold"]), tuple(record["gold_labels"])))
    return {rel: tune_threshold(pairs) for rel, pairs in by_rel.items()}
