"""Set rules for ranked LM answers (threshold, top-K, threshold tuned on train) and number parsing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval.disambiguate import LabelIndex, load_aliases
from eval.errors import ConfigError, DataError
from eval.set_answers import as_probabilities, ranked_objects, set_answer
from eval.set_rules import (
    SetRule,
    TuningPair,
    above_threshold,
    apply_rule,
    parse_number,
    parse_set_rule,
    top_k,
    tune_threshold,
)
from eval.types import Answer, Prediction

RANKED = [("Q1", 0.5), ("Q2", 0.1), ("Q1", 0.05), ("Q3", 0.02)]


def test_threshold_is_strict_and_may_give_the_empty_set():
    assert above_threshold(RANKED, 0.1) == ["Q1"]
    assert above_threshold(RANKED, 0.09) == ["Q1", "Q2"]
    assert above_threshold(RANKED, 0.5) == []


def test_top_k_counts_distinct_items():
    assert top_k(RANKED, 2) == ["Q1", "Q2"]
    assert top_k(RANKED, 3) == ["Q1", "Q2", "Q3"]


@pytest.mark.parametrize(("text", "rule"), [
    ("threshold:0.1", SetRule("threshold", 0.1)), ("top:3", SetRule("top", 3.0)),
    ("threshold-tuned", SetRule("threshold-tuned")), ("threshold:1", SetRule("threshold", 1.0)),
])
def test_parse_set_rule(text, rule):
    assert parse_set_rule(text) == rule


@pytest.mark.parametrize("text", ["threshold:abc", "threshold:1.5", "threshold:nan", "threshold:-0.1", "top:0",
                                  "top:2.5", "tops:3", "threshold-tuned:0.2", "threshold"])
def test_bad_set_rule(text):
    with pytest.raises(ConfigError, match=r"expected one of threshold:X, top:K, threshold-tuned"):
        parse_set_rule(text)


def test_score_outside_zero_one_is_refused():
    with pytest.raises(ConfigError, match=r"answer 'Q1' has score 2.5: a set rule needs probabilities in \[0, 1\]"):
        above_threshold([("Q1", 2.5)], 0.1)


def test_apply_rule():
    assert apply_rule(parse_set_rule("top:1"), RANKED) == ["Q1"]
    assert apply_rule(parse_set_rule("threshold-tuned"), RANKED, tuned=0.05) == ["Q1", "Q2"]
    with pytest.raises(ConfigError, match="needs a threshold tuned on the train split"):
        apply_rule(parse_set_rule("threshold-tuned"), RANKED)


def test_tuned_threshold_maximises_macro_f1():
    pairs = [TuningPair((("Q1", 0.9), ("Q2", 0.6), ("Q3", 0.2)), ("Q1", "Q2")),
             TuningPair((("Q4", 0.7), ("Q5", 0.3)), ())]
    # summed F1 at 0: .8 + 0; .2: 1 + 0; .3: 1 + 0; .6: 2/3 + 0; .7: 2/3 + 1 (both empty); .9: 0 + 1
    assert tune_threshold(pairs) == 0.7


def test_tuned_threshold_ties_go_to_the_larger_threshold():
    # every threshold scores F1 0: the largest, which predicts nothing
    assert tune_threshold([TuningPair((("X", 0.5), ("Y", 0.3)), ("Z",))]) == 0.5


def test_tuning_counts_exact_label_matches():
    pairs = [TuningPair((("Big Board", 0.4), ("Q9", 0.2)), ("Q6",), ("Big Board",))]
    assert tune_threshold(pairs) == 0.2


def test_tuning_needs_pairs():
    with pytest.raises(ConfigError, match="no pair of this relation to tune on"):
        tune_threshold([])


@pytest.mark.parametrize(("text", "number"), [
    ("13", "13"), ("It has 1,024 episodes", "1024"), ("007", "7"), ("one hundred and twelve", "112"),
    ("twenty-two episodes", "22"), ("twelve thousand", "12000"), ("two thousand and five", "2005"),
    ("ten or eleven", "10"), ("the series has Seven", "7"), ("many", None), ("", None),
])
def test_parse_number(text, number):
    assert parse_number(text) == number


@pytest.mark.parametrize(("text", "number"), [
    ("52 episodes", "52"), ("It has 1,024 episodes", "1024"), ("(52).", "52"), ("seventy", "70"),
    ("179trotro Erin cue", None), (" Career035 sung", None), ("12th season", None), ("1990s", None),
    ("S01E52, then 8 more", "8"),
])
def test_a_written_answer_states_a_number_as_a_word_of_its_own(text, number):
    """A model's noise glues digits to letters ("179trotro"): read as a count, it would score by chance."""
    assert parse_number(text, word=True) == number


def test_label_index_resolves_labels_then_aliases_then_ignoring_case():
    index = LabelIndex({"Q142": "France", "Q90": "Paris", "Q167646": "Paris", "Q61": "Washington, D.C.",
                        "Q230": "Georgia", "Q1428": "Georgia (U.S. state)"},
                       {"Q61": ["Washington DC"], "Q142": ["French Republic", "FR"], "Q1428": ["Georgia"],
                        "Q31": ["FR"]})
    texts = ("France", "france ", "French Republic", "washington dc", "Paris", "Lyon", "Georgia", "FR")
    # "Georgia": a label beats an alias; "FR": an alias of two ids names neither; "Paris": two labels
    assert [index.resolve(t) for t in texts] == ["Q142", "Q142", "Q142", "Q61", "Paris", "Lyon", "Q230", "FR"]
    pred = Prediction("u", (Answer("france", 0.4), Answer("France", 0.3), Answer("Lyon", 0.2), Answer("Paris", 0.1)))
    assert ranked_objects(pred, index) == [("Q142", 0.4), ("Lyon", 0.2), ("Paris", 0.1)]
    numbers = Prediction("u", (Answer("ten", 0.5), Answer("many", 0.3), Answer("10", 0.1), Answer("12", 0.05)))
    assert ranked_objects(numbers, index, numeric=True) == [("10", 0.5), ("12", 0.05)]


def test_load_aliases(tmp_path):
    path = tmp_path / "aliases.txt"
    path.write_text("Q61\tDC\tWashington, D.C.\nQ2\tEarth\n\nQ61\tD.C.\n")
    assert load_aliases(path, keep={"Q61"}) == {"Q61": ["DC", "Washington, D.C.", "D.C."]}
    path.write_text("Q61\tDC\nWashington\tDC\n")
    with pytest.raises(DataError, match=r"aliases\.txt:2: expected a Wikidata id \(Q\.\.\.\) then tab-separated"):
        load_aliases(path)


def test_an_alias_list_read_again_is_the_list_as_it_is_now(tmp_path):
    """A process reads a list once while its text stays the same: a changed list is read again, and a caller
    changing what it got changes no later answer."""
    path = tmp_path / "aliases.txt"
    path.write_text("Q61\tDC\tWashington, D.C.\nQ2\tEarth\n")
    first = load_aliases(path)
    assert first == {"Q61": ["DC", "Washington, D.C."], "Q2": ["Earth"]}
    first["Q61"].append("mine")
    first["Q3"] = ["other"]
    assert load_aliases(path) == {"Q61": ["DC", "Washington, D.C."], "Q2": ["Earth"]}
    assert load_aliases(path, keep={"Q2"}) == {"Q2": ["Earth"]}
    path.write_text("Q61\tDC\tWashington, D.C.\nQ2\tTerra\n")  # the same size: the text is what counts
    assert load_aliases(path) == {"Q61": ["DC", "Washington, D.C."], "Q2": ["Terra"]}
    path.write_text("Q61\tDC\nWashington\tDC\n")
    with pytest.raises(DataError, match=r"aliases\.txt:2: expected a Wikidata id"):
        load_aliases(path)
    with pytest.raises(DataError, match=r"aliases\.txt:2: expected a Wikidata id"):  # a bad list is never kept
        load_aliases(path)


def test_real_aliases_name_washington(shared_data):
    aliases = load_aliases(shared_data / "xfactr" / "alias_TREx_en.txt", keep={"Q61", "Q142"})
    index = LabelIndex({}, aliases)
    assert [index.resolve(t) for t in ("Washington, D.C.", "République française", "La France")] == [
        "Q61", "Q142", "Q142"]


def test_set_answer_from_a_prediction():
    index = LabelIndex({"Q142": "France", "Q183": "Germany"})
    pred = Prediction("u", (Answer("france", 0.5), Answer("Spain", 0.2), Answer("Deutschland", 0.1, "Q183"),
                            Answer("France", 0.05)))
    assert ranked_objects(pred, index) == [("Q142", 0.5), ("Spain", 0.2), ("Q183", 0.1)]
    assert set_answer(pred, index) == ["Q142", "Spain", "Q183"]
    assert set_answer(pred, index, parse_set_rule("threshold:0.15")) == ["Q142", "Spain"]
    assert set_answer(pred, index, parse_set_rule("threshold-tuned"), tuned=0.3) == ["Q142"]
    numbers = Prediction("u", (Answer("twelve", 0.3), Answer("the", 0.2), Answer("12", 0.1), Answer("8", 0.05)))
    assert set_answer(numbers, index, parse_set_rule("top:2"), numeric=True) == ["12", "8"]


def test_log_probabilities_become_probabilities():
    index = LabelIndex({"Q142": "France"})
    pred = Prediction("u", (Answer("France", math.log(0.5)), Answer("Spain", math.log(0.05))))
    assert set_answer(pred, index, parse_set_rule("threshold:0.1")) == ["Q142"]
    assert as_probabilities([("a", 0.0), ("b", 0.3)]) == [("a", 0.0), ("b", 0.3)]
    assert as_probabilities([("a", 0.0), ("b", math.log(0.25))]) == [("a", 1.0), ("b", pytest.approx(0.25))]


def test_prefix_true_positives_equal_those_of_each_prefix():
    """Tuning counts the true positives of every prefix of a ranked list in one pass: the same counts as scoring
    each prefix alone, with repeated items, label matches, gold ids repeated and the cap at the gold's size."""
    from eval.set_metrics import true_positives
    from eval.set_rules import prefix_true_positives

    rng = np.random.default_rng(0)
    words = [f"Q{i}" for i in range(12)] + ["Paris", "paris", "Lyon"]
    for _ in range(300):
        items = list(rng.choice(words, size=int(rng.integers(0, 20))))
        gold = list(rng.choice(words[:12], size=int(rng.integers(0, 5))))
        labels = list(rng.choice(words, size=int(rng.integers(0, 4))))
        want = [true_positives(items[:n], gold, labels) for n in range(len(items) + 1)]
        assert prefix_true_positives(items, gold, labels).tolist() == want
