"""Counts in messages name their unit in the right number: '1 relation', '2 relations', '1 query'."""

from __future__ import annotations

import pytest

from eval.cells import count_of


@pytest.mark.parametrize(("n", "unit", "said"), [
    (1, "relations", "1 relation"), (0, "relations", "0 relations"), (2, "facts", "2 facts"),
    (1, "queries", "1 query"), (3, "queries", "3 queries"), (1, "triples", "1 triple"), (1, "axioms", "1 axiom"),
])
def test_count_of_names_its_unit_in_the_right_number(n, unit, said):
    assert count_of(n, unit) == said


def test_the_leaderboards_weights_note_names_one_prompted_query_in_the_singular():
    """A relation of one (fact, prompt) query in the shared scope: 'query weighs', not 'querie weighs'."""
    from bridge.run.leaderboard import _weights_note

    records = {"a@1": {"relation": "P19"}, "b@1": {"relation": "P36"}, "c@1": {"relation": "P36"}}
    note, = _weights_note("trex", set(records), records, "(fact, prompt) queries")
    assert note.endswith("so P19's 1 (fact, prompt) query weighs 1/2 of it"), note


def test_a_fewrel_run_of_one_relation_says_its_macro_scores_are_over_1_relation():
    from bridge.experiments.fewrel import asked_note

    assert asked_note(["P177"]).startswith("Macro P/R/F1 are means over the 1 relation asked (P177), ")
    assert asked_note(["P177", "P361"]).startswith("Macro P/R/F1 are means over the 2 relations asked (P177, P361)")
