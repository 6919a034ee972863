"""Columnar P@k / MRR / curves give exactly the numbers of eval.metrics, row for row and bit for bit."""

from __future__ import annotations

import random

import pytest

from bridge.run.results import to_ranked
from eval.metrics import LAMA_MRR_CUTOFF, pk_curve, summarize
from eval.rank_table import RankTable, curve_table, summarize_table


def _records(seed: int) -> list[dict]:
    """Queries of several relations with ranks from 1 to beyond the cut-off, missing ranks and exact ranks."""
    rng = random.Random(seed)
    out = []
    for i in range(3000):
        rel = rng.choice(["P19", "P1376", "P30", "date_of_birth", "P140"])
        listed = {s: rng.choice([None, *range(1, 120)]) for s in ("raw", "filtered")}
        record = {"uid": str(i), "relation": rel, "rank_raw": listed["raw"], "rank_filtered": listed["filtered"]}
        if rel != "P30":  # some predictors report exact ranks, some do not
            for s in ("raw", "filtered"):
                record[f"rank_exact_{s}"] = rng.choice([None, listed[s] or rng.randrange(100, 30000)])
        out.append(record)
    return out


@pytest.mark.parametrize("cutoff", [None, LAMA_MRR_CUTOFF])
@pytest.mark.parametrize("seed", [0, 1])
def test_columnar_rows_equal_the_reference(seed, cutoff):
    records = _records(seed)
    types = {"P19": "N-1", "P1376": "1-1", "P30": "N-1", "P140": "N-M", "date_of_birth": None}
    ranked = [to_ranked(r) for r in records]
    table = RankTable.from_records(records)
    reference = summarize(ranked, types, mrr_cutoff=cutoff) if cutoff else summarize(ranked, types)
    assert summarize_table(table, types, mrr_cutoff=cutoff) == reference
    assert curve_table(table) == pk_curve(ranked)
    assert len(reference) == 2 * 3 * (5 + 4) and reference[0]["group"] in types  # relations, 3 types and `all`


def test_one_query_per_relation_and_float_order():
    records = [{"uid": "a", "relation": "P1", "rank_raw": 3, "rank_filtered": 1},
               {"uid": "b", "relation": "P2", "rank_raw": None, "rank_filtered": None,
                "rank_exact_raw": 7, "rank_exact_filtered": 6}]
    rows = summarize_table(RankTable.from_records(records), {"P1": "1-1", "P2": "1-1"})
    got = {(r["setting"], r["group"], r["metric"]): r["value"] for r in rows}
    assert got[("raw", "P1", "mrr")] == 1 / 3 and got[("raw", "P2", "mrr")] == 1 / 7
    assert got[("raw", "all", "mrr")] == (1 / 3 + 1 / 7) / 2
    # a gold below a short list (--depth 5) with an exact rank of 7 is within P@10, not a miss
    assert got[("filtered", "1-1", "p@1")] == 50.0 and got[("raw", "P2", "p@10")] == 100.0


def test_totals_are_the_same_bits_whatever_order_the_relations_come_in():
    """P@1 per relation 1/12, 3/4, 1/2 and 0 (P19, P30, P140, P1376): summed in one order and the other, plain
    float sums differ in the last bit; the Total is their exactly rounded mean in both orders."""
    hits = {"P19": (1, 12), "P30": (3, 4), "P140": (1, 2), "P1376": (0, 4)}
    records = [{"uid": f"{rel}:{i}", "relation": rel, "rank_raw": 1 if i < right else 2,
                "rank_filtered": 1 if i < right else 2} for rel, (right, n) in hits.items() for i in range(n)]
    types = dict.fromkeys(hits, "N-1")
    totals = []
    for order in (["P30", "P140", "P1376", "P19"], ["P19", "P30", "P140", "P1376"]):
        ordered = sorted(records, key=lambda r: order.index(r["relation"]))
        for rows in (summarize_table(RankTable.from_records(ordered), types),
                     summarize([to_ranked(r) for r in ordered], types)):
            totals.append(next(r["value"] for r in rows if r["group"] == "all" and r["metric"] == "p@1"
                               and r["setting"] == "raw"))
        totals.append(next(r["value"] for r in pk_curve([to_ranked(r) for r in ordered]) if r["k"] == 1
                           and r["setting"] == "raw"))
    assert totals == [33.333333333333336] * 6  # (100/12 + 75 + 50 + 0) / 4, as exactly as a float holds it


def test_values_do_not_depend_on_the_order_of_the_records():
    """A resumed run may hold a relation's records in another order than an uninterrupted one (an attempt with
    another --limit asked some of them first): its MRR, type, `all` and curve values are the same to the last bit."""
    records = _records(0)
    types = {"P19": "N-1", "P1376": "1-1", "P30": "N-1", "P140": "N-M", "date_of_birth": None}

    def values(rs: list[dict]) -> tuple[dict, dict, list]:
        table = RankTable.from_records(rs)
        keyed = {(r["setting"], r["group"], r["metric"]): r["value"] for r in summarize_table(table, types)}
        ranked = [to_ranked(r) for r in rs]
        reference = {(r["setting"], r["group"], r["metric"]): r["value"] for r in summarize(ranked, types)}
        return keyed, reference, [r["value"] for r in curve_table(table)]

    first = values(records)
    assert first[0] == first[1]
    for seed in range(5):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        assert values(shuffled) == first
