"""Consistency metrics across prompts, on hand-made outcomes with exact values."""

from __future__ import annotations

import random

import pytest

from eval.consistency import (
    Outcome,
    consistency,
    group_accuracy,
    outcomes_from_records,
    prompt_accuracy,
    prompt_extremes,
    random_prompt_draws,
)

R, W = True, False
# relation -> fact -> prompt -> (top-1, correct)
RAW = {
    "P19": {
        "f1": {"a": ("Rome", R), "b": ("Rome", R), "c": ("Paris", W)},  # pairs ab=, ac, bc: 1 of 3
        "f2": {"a": ("Oslo", R), "b": ("Oslo", R), "c": ("Oslo", R)},  # 3 of 3
        "f3": {"a": ("Lyon", W), "b": ("Nice", W)},  # c not run: 1 pair, 0 agree
    },
    "P36": {
        "g1": {"x": ("Bern", R), "y": ("Bern", R)},  # 1 of 1
        "g2": {"x": ("Lima", W), "y": (None, W)},  # no answer under y: no pair
    },
    "P1": {"h1": {"only": ("A", R)}},  # one prompt: no pair at all
}


def _outcomes(raw=RAW):
    return {rel: {uid: {p: Outcome(*v) for p, v in by.items()} for uid, by in facts.items()}
            for rel, facts in raw.items()}


def test_pairwise_consistency():
    got = consistency(_outcomes())
    assert got.per_relation == {"P19": 4 / 7, "P36": 1.0}
    assert got.counts == {"P19": 7, "P36": 1}
    assert got.macro == pytest.approx((4 / 7 + 1) / 2)
    assert consistency({}).macro is None


def test_group_accuracy_needs_every_prompt():
    got = group_accuracy(_outcomes())
    # P19: f3 lacks prompt c (left out); f1 wrong under c, f2 right everywhere -> 1/2
    assert got.per_relation == {"P19": 0.5, "P36": 0.5, "P1": 1.0}
    assert got.counts == {"P19": 2, "P36": 2, "P1": 1}
    assert got.excluded == {"P19": 1}
    assert got.macro == pytest.approx(2 / 3)


def test_prompt_accuracy():
    assert prompt_accuracy(_outcomes()) == {
        "P19": {"a": 2 / 3, "b": 2 / 3, "c": 1 / 2},
        "P36": {"x": 1 / 2, "y": 1 / 2},
        "P1": {"only": 1.0},
    }


PER_PROMPT = {"P19": {"a": 0.2, "b": 0.6, "c": 0.4}, "P36": {"x": 0.1, "y": 0.9}, "P1": {"only": 0.5}}


def test_random_prompt_draws_are_seeded_and_exact():
    draws = random_prompt_draws(PER_PROMPT, n_draws=4, seed=7)
    # the same draws by hand: one Random(seed), relations sorted, prompt ids sorted
    rng = random.Random(7)
    expected_choices, expected_scores = [], []
    for _ in range(4):
        pick = {rel: rng.choice(sorted(PER_PROMPT[rel])) for rel in sorted(PER_PROMPT)}
        expected_choices.append(pick)
        expected_scores.append(sum(PER_PROMPT[r][p] for r, p in pick.items()) / 3)
    assert draws.choices == expected_choices and draws.scores == pytest.approx(expected_scores)
    assert draws.min == min(draws.scores) and draws.max == max(draws.scores)
    assert draws.mean == pytest.approx(sum(draws.scores) / 4)
    assert random_prompt_draws(PER_PROMPT, 4, seed=7).scores == draws.scores
    # every achievable score lies between the all-worst and the all-best choice
    many = random_prompt_draws(PER_PROMPT, 200, seed=1)
    assert (0.2 + 0.1 + 0.5) / 3 - 1e-12 <= many.min <= many.max <= (0.6 + 0.9 + 0.5) / 3 + 1e-12
    assert many.min == pytest.approx(0.8 / 3) and many.max == pytest.approx(2.0 / 3)  # 200 draws reach both ends
    assert set(draws.to_dict()) >= {"min", "avg", "max", "n_draws"}
    # a relation with a single prompt always contributes it
    only = random_prompt_draws({"P1": {"only": 0.5}}, 3)
    assert only.scores == [0.5, 0.5, 0.5]
    with pytest.raises(ValueError):
        random_prompt_draws({}, 3)


def test_prompt_extremes():
    got = prompt_extremes(PER_PROMPT)
    assert got["min"] == pytest.approx((0.2 + 0.1 + 0.5) / 3)
    assert got["avg"] == pytest.approx((0.4 + 0.5 + 0.5) / 3)
    assert got["max"] == pytest.approx((0.6 + 0.9 + 0.5) / 3)


def test_outcomes_from_flat_records():
    records = [{"relation": rel, "uid": uid, "prompt": p, "top1": t, "correct": c}
               for rel, facts in RAW.items() for uid, by in facts.items() for p, (t, c) in by.items()]
    assert outcomes_from_records(records) == _outcomes()
