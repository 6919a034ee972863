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


def test_note_says_per_relation_how_many_facts_had_evidence_of_their_own():
    config = {"predictor_specs": {"ro": {"spec": "retrieval-oracle"}, "r": {"spec": "retrieval"}},
              "own_evidence": {"trex": {"ro": {"P19": [944, 944], "P36": [0, 703]}, "r": {"P19": [944, 944]}},
                               "google_re": {"ro": {"place_of_birth": [2937, 2937]}}}}
    assert upper_bound_note(config) == (
        "Upper bounds, not baselines: `ro` reads the fact's own evidence paragraphs (facts of each relation whose own "
        "evidence its index holds: trex P19 944 of 944, P36 0 of 703; google_re place_of_birth 2,937 of 2,937; none "
        "on trex P36: there it reads what the leak-free retrieval reads, no upper bound).")
    config["own_evidence"]["trex"]["ro"]["P36"] = [1, 703]
    assert upper_bound_note(config) == (
        "Upper bounds, not baselines: `ro` reads the fact's own evidence paragraphs (facts of each relation whose own "
        "evidence its index holds: trex P19 944 of 944, P36 1 of 703; google_re place_of_birth 2,937 of 2,937).")
