"""Agreement across prompts (ParaRel, Elazar et al. 2021; coherency paper §3.5): pure functions.

Input: per relation, per fact uid, per prompt id, an `Outcome` (top-1 answer, correct or not).
A fact not answered under some prompt (dropped, not run) simply has no outcome for it.

- `consistency`: per relation, the share of prompt pairs (over all facts: each fact contributes
  its pairs of answered prompts) whose top-1 answers are equal; macro = mean over relations
  with at least one pair.
- `group_accuracy`: per relation, the share of facts answered correctly under every prompt of
  the relation (facts answered under only some prompts are left out and counted).
- `prompt_accuracy`: per relation and prompt, P@1 over the facts answered with that prompt.
- `random_prompt_draws`: N seeded draws of one random prompt per relation, each scored as the
  macro mean over relations of that prompt's per-relation score; min / mean / max over draws
  (coherency paper Table 3). Any per-prompt score can be drawn from: P@1, coherency, ...
- `prompt_extremes`: the macro mean of each relation's worst, mean and best prompt.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from statistics import fmean


@dataclass(frozen=True, slots=True)
class Outcome:
    top1: str | None  # None: the predictor gave no answer
    correct: bool


Outcomes = Mapping[str, Mapping[str, Mapping[str, Outcome]]]  # relation -> fact uid -> prompt id -> outcome


@dataclass
class Scores:
    """Per-relation values (with how many items each counts) and their macro mean."""

    per_relation: dict[str, float]
    counts: dict[str, int]
    macro: float | None
    excluded: dict[str, int] = field(default_factory=dict)  # per relation, facts or relations left out


def _macro(values: Mapping[str, float]) -> float | None:
    return fmean(values.values()) if values else None


def consistency(outcomes: Outcomes) -> Scores:
    """ParaRel consistency; `counts` holds the pairs per relation."""
    per, counts = {}, {}
    for rel, facts in outcomes.items():
        agree = pairs = 0
        for by_prompt in facts.values():
            answers = [o.top1 for _, o in sorted(by_prompt.items()) if o.top1 is not None]
            for a, b in combinations(answers, 2):
                pairs += 1
                agree += a == b
        if pairs:
            per[rel], counts[rel] = agree / pairs, pairs
    return Scores(per, counts, _macro(per))


def relation_prompts(facts: Mapping[str, Mapping[str, Outcome]]) -> set[str]:
    """The prompt ids used anywhere in one relation."""
    return {p for by_prompt in facts.values() for p in by_prompt}


def group_hits(outcomes: Outcomes) -> dict[str, list[bool]]:
    """Per relation, for each fact with an outcome under every prompt of its relation, whether it is right under
    all of them: the units `group_accuracy` averages (and its interval resamples)."""
    out = {}
    for rel, facts in outcomes.items():
        prompts = relation_prompts(facts)
        out[rel] = [all(o.correct for o in f.values()) for f in facts.values() if set(f) == prompts]
    return out


def group_accuracy(outcomes: Outcomes) -> Scores:
    """Facts right under every prompt of their relation; `counts` holds the facts counted,
    `excluded` the facts left out for lacking an outcome under some prompt."""
    per, counts, excluded = {}, {}, {}
    for rel, complete in group_hits(outcomes).items():
        if len(complete) < len(outcomes[rel]):
            excluded[rel] = len(outcomes[rel]) - len(complete)
        if complete:
            per[rel] = sum(complete) / len(complete)
            counts[rel] = len(complete)
    return Scores(per, counts, _macro(per), excluded)


def prompt_accuracy(outcomes: Outcomes) -> dict[str, dict[str, float]]:
    """relation -> prompt id -> P@1 (share of correct top-1 answers), prompts in sorted order."""
    out: dict[str, dict[str, float]] = {}
    for rel, facts in outcomes.items():
        hits: dict[str, list[bool]] = {}
        for by_prompt in facts.values():
            for pid, o in by_prompt.items():
                hits.setdefault(pid, []).append(o.correct)
        out[rel] = {pid: sum(v) / len(v) for pid, v in sorted(hits.items())}
    return out


@dataclass
class Draws:
    """Macro scores of N draws of one prompt per relation, and which prompts each draw took."""

    scores: list[float]
    choices: list[dict[str, str]]

    @property
    def min(self) -> float:
        return min(self.scores)

    @property
    def mean(self) -> float:
        return fmean(self.scores)

    @property
    def max(self) -> float:
        return max(self.scores)

    def to_dict(self) -> dict:
        return {"min": self.min, "avg": self.mean, "max": self.max, "n_draws": len(self.scores),
                "scores": self.scores, "choices": self.choices}


def random_prompt_draws(per_prompt: Mapping[str, Mapping[str, float]], n_draws: int = 10, seed: int = 0) -> Draws:
    """For each of `n_draws` draws, pick one prompt per relation uniformly at random and take the
    macro mean of the picked prompts' scores. One `random.Random(seed)` serves all draws; relations
    are visited in sorted order and prompts chosen among their sorted ids, so a seed fixes the result."""
    if n_draws < 1:
        raise ValueError("n_draws must be at least 1")
    rels = sorted(rel for rel, scores in per_prompt.items() if scores)
    if not rels:
        raise ValueError("no relation has a scored prompt")
    rng = random.Random(seed)
    scores, choices = [], []
    for _ in range(n_draws):
        pick = {rel: rng.choice(sorted(per_prompt[rel])) for rel in rels}
        scores.append(fmean(per_prompt[rel][pid] for rel, pid in pick.items()))
        choices.append(pick)
    return Draws(scores, choices)


def draw_rows(metric: str, drawn: Draws, n_facts: int) -> list[dict]:
    """The tidy `all` rows (setting raw) of the draws' min, mean and max of `metric`: `<metric>_random_prompt_min`,
    `_avg`, `_max`."""
    return [{"setting": "raw", "group": "all", "metric": f"{metric}_random_prompt_{stat}", "value": value,
             "n_facts": n_facts} for stat, value in (("min", drawn.min), ("avg", drawn.mean), ("max", drawn.max))]


def drawn_extremes(per_prompt: Mapping[str, Mapping[str, float]], drawn: Draws) -> dict[str, float]:
    """Macro over relations of each relation's worst and best score among the prompts the draws took for it (the
    coherency paper's Table 3: "the worst/average/best performing prompts per relation" over its runs); the
    average is the draws' mean."""
    rels = sorted({rel for pick in drawn.choices for rel in pick})
    taken = {rel: [per_prompt[rel][pick[rel]] for pick in drawn.choices] for rel in rels}
    return {"worst": fmean(min(v) for v in taken.values()), "best": fmean(max(v) for v in taken.values())}


def prompt_extremes(per_prompt: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Macro over relations of each relation's worst, average and best prompt score."""
    rels = [scores for scores in per_prompt.values() if scores]
    if not rels:
        raise ValueError("no relation has a scored prompt")
    return {"min": fmean(min(s.values()) for s in rels), "avg": fmean(fmean(s.values()) for s in rels),
            "max": fmean(max(s.values()) for s in rels)}


def prompt_outcomes(instances: Sequence[dict]) -> dict[str, dict[str, dict[str, Outcome]]]:
    """The `Outcomes` of LAMA records asked under a prompt set: per relation, fact and prompt, the top answer and
    whether it is right (setting raw: the gold ranked first; exact match for an answer written by generation)."""
    from eval.answer_text import GENERATED

    return outcomes_from_records(
        {"relation": r["relation"], "uid": r.get("fact_uid", r["uid"]), "prompt": r.get("prompt_id", "lama"),
         "top1": r["answers"][0][0] if r["answers"] else None,
         "correct": r["em_raw"] if GENERATED in r else r["rank_raw"] == 1} for r in instances)


def outcomes_from_records(records) -> dict[str, dict[str, dict[str, Outcome]]]:
    """Nest flat records (objects or dicts with relation, uid, prompt, top1, correct) as `Outcomes`."""
    out: dict[str, dict[str, dict[str, Outcome]]] = {}
    for r in records:
        get = r.get if isinstance(r, Mapping) else lambda k, r=r: getattr(r, k)
        out.setdefault(get("relation"), {}).setdefault(get("uid"), {})[get("prompt")] = \
            Outcome(get("top1"), bool(get("correct")))
    return out
