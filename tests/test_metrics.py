"""Exact metric values on small hand-made rankings."""

import pytest

from eval.metrics import Ranked, gold_rank, gold_ranks, mean_reciprocal_rank, pk_curve, precision_at, summarize
from eval.types import Answer


def answers(*labels):
    return tuple(Answer(label, -i) for i, label in enumerate(labels))


def test_gold_rank_raw_and_filtered_change_the_answer():
    # Subject has two valid objects, Paris and Lyon; the fact asks for Lyon.
    ranked = answers("Paris", "Lyon", "Nice")
    assert gold_rank(ranked, "Lyon") == 2
    assert gold_rank(ranked, "Lyon", exclude={"Paris", "Lyon"}) == 1  # the gold itself is never removed
    assert gold_rank(ranked, "Marseille") is None
    assert gold_rank(answers("paris", "lyon"), "Lyon", lowercased=True) == 2


def test_shared_ties_rank_the_gold_first_in_its_tie_group():
    """A KB's equally true answers (equal score) are one tie group: label order does not demote the gold."""
    tied = (Answer("mathematics", 0.9), Answer("physics", 0.9), Answer("astronomy", 0.5), Answer("optics", 0.5))
    assert gold_rank(tied, "physics") == 2  # the candidate-order rule, as for language models
    assert gold_rank(tied, "physics", shared_ties=True) == 1
    assert gold_rank(tied, "optics", shared_ties=True) == 3
    assert gold_rank(tied, "optics", exclude={"mathematics"}, shared_ties=True) == 2
    assert gold_rank(tied, "chemistry", shared_ties=True) is None


def test_shared_ties_count_a_label_listed_for_several_entities_once():
    """A KB answers entities: two entities of one label above the gold are one label above it, as LAMA compares
    labels."""
    namesakes = (Answer("London", 0.9, "Q84"), Answer("London", 0.9, "Q3258936"), Answer("Paris", 0.9, "Q90"),
                 Answer("Lisbon", 0.5, "Q597"), Answer("Lisbon", 0.5, "Q2310637"), Answer("Rome", 0.2, "Q220"))
    assert gold_rank(namesakes, "Lisbon", shared_ties=True) == 3
    assert gold_rank(namesakes, "Rome", shared_ties=True) == 4
    assert gold_ranks(namesakes, "Rome", {"Paris"}, shared_ties=True) == (4, 3)
    assert gold_rank(namesakes, "Rome") == 6  # without shared ties the list position, as for language models


def test_gold_ranks_are_gold_rank_raw_and_filtered():
    """One pass gives both ranks of `gold_rank`: excluded labels above the gold are taken off, the gold never is."""
    ranked = answers("Paris", "lyon", "Nice", "Lyon", "Paris", "Rome")
    assert gold_ranks(ranked, "Lyon", {"Paris", "Nice"}) == (4, 2)
    assert gold_ranks(ranked, "Lyon", {"Paris", "lyon"}, lowercased=True) == (2, 1)
    assert gold_ranks(ranked, "Lyon", {"LYON"}, lowercased=True) == (2, 2)  # the gold itself, however written
    assert gold_ranks(ranked, "Rome", {"Rome", "Milan"}) == (6, 6)
    assert gold_ranks(ranked, "Milan", {"Paris"}) == (None, None)
    tied = (Answer("a", 0.9), Answer("b", 0.9), Answer("c", 0.5), Answer("d", 0.5))
    assert gold_ranks(tied, "d", {"a"}, shared_ties=True) == (3, 2)
    for gold in ("Paris", "lyon", "Lyon", "Nice", "Rome", "Milan"):
        for exclude in ((), {"Paris"}, {"Nice", "Rome"}, {"lyon", "Lyon", "Paris"}):
            for lowercased in (False, True):
                assert gold_ranks(ranked, gold, exclude, lowercased) == (
                    gold_rank(ranked, gold, (), lowercased), gold_rank(ranked, gold, exclude, lowercased))


def test_precision_and_mrr_exact():
    ranks = [1, 2, None, 11]
    assert precision_at(ranks, 1) == 25.0
    assert precision_at(ranks, 10) == 50.0
    assert precision_at(ranks, 11) == 75.0
    assert mean_reciprocal_rank(ranks) == pytest.approx((1 + 0.5 + 0 + 1 / 11) / 4)
    assert precision_at([], 1) == 0.0


def test_macro_average_over_relations_and_types():
    rows = [
        Ranked("P1", 1, 1), Ranked("P1", 3, 1),  # P1: raw p@1 50, filtered 100
        Ranked("P2", 1, 1), Ranked("P2", 1, 1), Ranked("P2", None, 2), Ranked("P2", 2, 2),  # P2: 50 / 50
        Ranked("P3", None, None),  # P3: 0
    ]
    out = summarize(rows, {"P1": "1-1", "P2": "N-M", "P3": "N-M"}, metrics=("p@1", "mrr"))
    get = {(r["setting"], r["group"], r["metric"]): r for r in out}
    assert get[("raw", "P1", "p@1")]["value"] == 50.0
    assert get[("filtered", "P1", "p@1")]["value"] == 100.0
    # macro: every relation counts once, not every fact
    assert get[("raw", "all", "p@1")]["value"] == pytest.approx((50 + 50 + 0) / 3)
    assert get[("raw", "all", "p@1")]["n_facts"] == 7
    assert get[("filtered", "N-M", "p@1")]["value"] == pytest.approx((50 + 0) / 2)
    assert get[("raw", "P2", "mrr")]["value"] == pytest.approx((1 + 1 + 0 + 0.5) / 4)
    assert get[("filtered", "1-1", "mrr")]["value"] == 1.0


def test_pk_curve_is_monotone_and_exact():
    rows = [Ranked("P1", 1, 1), Ranked("P1", 5, 2), Ranked("P2", 100, 50), Ranked("P2", None, None)]
    curve = {(r["setting"], r["k"]): r["value"] for r in pk_curve(rows)}
    assert curve[("raw", 1)] == pytest.approx((50 + 0) / 2)
    assert curve[("raw", 5)] == pytest.approx((100 + 0) / 2)
    assert curve[("raw", 100)] == pytest.approx((100 + 50) / 2)
    assert curve[("filtered", 2)] == pytest.approx(50.0)
    values = [curve[("raw", k)] for k in range(1, 101)]
    assert values == sorted(values)
