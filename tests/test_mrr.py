"""Exact MRR, the LAMA cut-off, filtered exact ranks and the tie rule, on hand-made rankings."""

import numpy as np
import pytest

from eval.metrics import (
    LAMA_MRR_CUTOFF,
    Ranked,
    exact_rank,
    filtered_exact_rank,
    gold_rank,
    mean_reciprocal_rank,
    pk_curve,
    summarize,
    top_order,
)
from eval.types import Answer


def test_mrr_cutoff_counts_ranks_up_to_the_cutoff_only():
    ranks = [1, 4, 10_000, 10_001, None]
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 0.25 + 1e-4 + 1 / 10_001) / 5)
    assert mean_reciprocal_rank(ranks, cutoff=LAMA_MRR_CUTOFF) == pytest.approx((1 + 0.25 + 1e-4) / 5)
    assert mean_reciprocal_rank(ranks, cutoff=4) == pytest.approx(1.25 / 5)
    assert LAMA_MRR_CUTOFF == 10_000


def test_mrr_uses_exact_ranks_and_pk_the_list_ranks():
    # gold below the answer depth (list rank None) but exact rank 200; another row without exact ranks
    rows = [Ranked("P1", None, None, 200, 150), Ranked("P1", 2, 1, 2, 1), Ranked("P1", 3, 3)]
    out = summarize(rows, {"P1": "N-1"}, metrics=("p@1", "p@10", "mrr"))
    get = {(r["setting"], r["group"], r["metric"]): r["value"] for r in out}
    assert get[("raw", "P1", "mrr")] == pytest.approx((1 / 200 + 1 / 2 + 1 / 3) / 3)
    assert get[("filtered", "P1", "mrr")] == pytest.approx((1 / 150 + 1 + 1 / 3) / 3)
    assert get[("raw", "P1", "p@10")] == pytest.approx(200 / 3)  # list ranks: the first row is a miss
    assert get[("filtered", "P1", "p@1")] == pytest.approx(100 / 3)
    cut = {(r["setting"], r["metric"]): r["value"]
           for r in summarize(rows, {}, metrics=("mrr",), mrr_cutoff=100) if r["group"] == "P1"}
    assert cut[("raw", "mrr")] == pytest.approx((1 / 2 + 1 / 3) / 3)
    assert cut[("filtered", "mrr")] == pytest.approx((1 + 1 / 3) / 3)
    curve = {(r["setting"], r["k"]): r["value"] for r in pk_curve(rows)}
    assert curve[("raw", 100)] == pytest.approx(200 / 3)


def test_filtered_exact_rank_removes_only_other_valid_objects_above_the_gold():
    # candidates ranked: Paris 1, Lyon 2, Nice 3, Lille 4 (gold), Metz 6; Toulouse is no candidate
    ranks = {"Lille": 4, "Paris": 1, "Nice": 3, "Metz": 6}
    assert filtered_exact_rank(ranks, "Lille", {"Paris", "Nice", "Metz", "Toulouse", "Lille"}) == 2
    assert filtered_exact_rank(ranks, "Lille", set()) == 4
    assert filtered_exact_rank(ranks, "Metz", {"Lille"}) == 5
    assert filtered_exact_rank(ranks, "Toulouse", {"Paris"}) is None
    assert filtered_exact_rank(None, "Lille", {"Paris"}) is None
    # uncased: labels equal after lower-casing are one candidate, and one equal to the gold is the gold
    low = {"lille": 4, "Paris": 1, "paris": 1, "LILLE": 4}
    assert filtered_exact_rank(low, "Lille", {"Paris", "paris", "LILLE"}, lowercased=True) == 3
    # the same answers as a list give the same filtered rank (the two agree within the depth)
    answers = tuple(Answer(label, -i) for i, label in enumerate(["Paris", "Lyon", "Nice", "Lille", "X", "Metz"]))
    assert gold_rank(answers, "Lille", {"Paris", "Nice", "Metz"}) == filtered_exact_rank(
        ranks, "Lille", {"Paris", "Nice", "Metz"})


def test_tie_rule_exact_rank_is_the_position_in_the_top_list():
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5, 0.9], dtype=np.float32)
    # order: 0.9 at positions 1, 3, 6; then 0.5 at 0, 2, 5; then 0.1 at 4
    assert top_order(scores, 7).tolist() == [1, 3, 6, 0, 2, 5, 4]
    assert top_order(scores, 4).tolist() == [1, 3, 6, 0]  # a tie across the cut keeps the first position
    assert [exact_rank(scores, p) for p in range(7)] == [4, 1, 5, 2, 7, 6, 3]
    for k in range(1, 8):
        for place, pos in enumerate(top_order(scores, k), start=1):
            assert exact_rank(scores, int(pos)) == place
    rng = np.random.default_rng(0)
    many = rng.integers(0, 5, size=300).astype(np.float32)  # heavy ties
    order = top_order(many, 300)
    assert order.tolist() == sorted(range(300), key=lambda p: (-many[p], p))
    assert top_order(many, 17).tolist() == order[:17].tolist()
