"""What an experiment says; the runner does the rest (validation, batching, resuming, scopes, files).

An experiment asks its questions in one or more stages. A stage's queries may depend on the same
predictor's answers in earlier stages (coherency asks back with the first answer). Each stage is
written to its own prediction files, so every stage resumes on its own. At summary time the
records of all stages become one instance record per unit (a fact, a fact and prompt, a
coherency instance), and `summarize` turns instance records into tidy rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from eval.lama import Corpus
from eval.types import Fact, Prediction, Query

if TYPE_CHECKING:  # the store's libraries load where a run opens one, not where summaries are read
    from kb.store import GraphStore

QUESTION_FACTS = "question_facts"  # settings: the facts a run's questions are drawn from (`KmirExperiment.check`)
# settings: how a KMIR answer is read as a choice (2: an entity never reads as yes or no, P463's band "Yes")
CHOICE_RULE, CHOICE_RULE_NOW = "choice_rule", 2
# settings: how the derivations reasoning questions are drawn by were recorded (`kb.reasoning.PROVENANCE_RULE`; 2: only
# from facts derivable before the fact, where 1 could credit an axiom with a fact through facts resting on it)
PROVENANCE_RULE = "provenance_rule"
# retrieved contexts: K paragraphs besides the fact's own (rule 2), where rule 1 kept fewer when its own filled the hits
CONTEXT_RULE, CONTEXT_RULE_NOW = "context_rule", 2
# prompt sets whose templates close with an end marker written as text (`[Y]. </s`): a causal LM scores the sentence
# without it (rule 1), where an earlier version scored the marker as text
END_MARKER_RULE, END_MARKER_RULE_NOW = "end_marker_rule", 1

Records = dict[str, dict]  # uid -> record
StageRecords = dict[str, Records]  # stage -> uid -> record


@dataclass
class StageInput:
    """What a stage may use to build its queries for one corpus and one predictor."""

    corpus: Corpus
    facts: list[Fact]  # the facts asked (all, or the --limit sample), in data order
    valid: dict[str, dict[str, set[str]]]  # relation -> subject key -> valid object labels
    earlier: StageRecords  # this predictor's records of the earlier stages
    data_dir: Path | None = None  # the LAMA data folder (prompt sets live beside it)
    cache_dir: Path | None = None  # for indexes an experiment builds (retrieved contexts)
    store: GraphStore | None = None  # the run's graph store (gold graphs loaded, facts an experiment derives)
    options: dict[str, str] = field(default_factory=dict)  # the predictor's own options (`--set NAME.KEY=VALUE`)
    depth: int = 100  # `--depth`: how many answers a record keeps to show


class Experiment(Protocol):
    name: str
    stages: tuple[str, ...]  # "" for a single-stage experiment (files directly under the predictor folder)

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        """Per relation, (query, fact) pairs; query uids unique within the corpus and stage."""

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        """The JSON record of one answered query (it must hold `uid` and `relation`)."""

    def instances(self, records: StageRecords) -> Records:
        """One record per scored unit, from the records of all stages (dropped units carry `dropped`)."""

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        """Tidy rows `{setting, group, metric, value, n_facts}` and curve rows for these instances."""


def depth_for(experiment, stage: str, pairs: list[tuple[Query, Fact]], base: int) -> int:
    """How many answers to ask for: `base`, or more where the experiment skips some (optional
    `depth(stage, query, fact, base)`; coherency's second step skips every excluded answer)."""
    depth = getattr(experiment, "depth", None)
    return base if depth is None else max((depth(stage, q, f, base) for q, f in pairs), default=base)


def asks_all(experiment, stage: str) -> bool:
    """Whether a stage wants every answer a predictor has (its whole answer space), whatever `--depth` (optional
    `asks_all(stage)`; LM-KBC's sets without a rule: every answer counts)."""
    wants = getattr(experiment, "asks_all", None)
    return bool(wants and wants(stage))


def single_stage(records: StageRecords) -> Records:
    """The instances of a one-stage experiment are its records."""
    return next(iter(records.values()), {})


def dropped_unit(experiment, settings: dict) -> str:
    """What an experiment's dropped tallies count, as the runner's log line and summary.md's table name them
    (optional `dropped_unit(settings) -> str`: queries, questions, pairs); facts by default."""
    unit = getattr(experiment, "dropped_unit", None)
    return unit(settings) if unit is not None else "facts"


def check_setting(experiment, setting: str) -> None:
    """Refuse a `--setting` an experiment does not score (optional `scored_settings`, e.g. FewRel's raw only): its
    tables would be empty, or its board would ask a total no run holds."""
    scored = getattr(experiment, "scored_settings", ("raw", "filtered"))
    if setting not in scored:
        from eval.errors import ConfigError

        raise ConfigError(f"--setting {setting}: `kbc run {experiment.name}` scores the {' and '.join(scored)} "
                          f"setting only; use --setting {scored[0]}")


def counted(experiment, metric: str) -> str:
    """What the `n_facts` of an experiment's `metric` rows counts, as tables name it (optional
    `counted(metric) -> str`: questions, Q-sets); facts by default."""
    unit = getattr(experiment, "counted", None)
    return unit(metric) if unit is not None else "facts"
