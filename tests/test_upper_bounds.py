"""Predictors that read the gold evidence are named as upper bounds wherever their numbers are printed."""

from __future__ import annotations

from bridge.predictors.registry import UPPER_BOUNDS, upper_bound_note


def test_the_oracles_are_the_upper_bounds():
    assert set(UPPER_BOUNDS) == {"re-oracle", "retrieval-oracle"}


def test_note_names_each_upper_bound_by_its_run_name():
    config = {"predictor_specs": {"freq": {"spec": "freq"}, "reo": {"spec": "re-oracle"},
                                  "retrieval-oracle": {"spec": "retrieval-oracle"}, "retrieval": {"spec": "retrieval"}}}
    assert upper_bound_note(config) == (
        "Upper bounds, not baselines: `reo` extracts from the test facts' own sentences with oracle entity linking; "
        "`retrieval-oracle` reads the fact's own evidence paragraphs.")
    assert upper_bound_note({"predictor_specs": {"freq": {"spec": "freq"}}}) is None
