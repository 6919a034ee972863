"""An answer naming several entities (`Q179876|Q21`: LAMA's Freq counts a label over every entity of it) is right
wherever any of them is the gold; in a predicted set it is one item, the gold entity it names, else one wrong item."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
from cli_support import run_kbc

from bridge.experiments.lama import gold_position
from bridge.experiments.lmkbc import LmkbcExperiment
from bridge.serve.sides import set_fields
from eval.answer_space import AnswerSpacePredictor
from eval.generated_scores import answer_hits
from eval.set_metrics import score_pair, true_positives
from eval.set_rules import prefix_true_positives
from eval.types import Answer, Entity, Prediction, Query, Relation, SetFact


def test_a_joined_item_is_the_gold_entity_it_names_and_one_item_only():
    # right for either entity
    assert score_pair("r", "s", ["Q1|Q2"], ["Q2"]).tp == 1
    # one item, one gold entity: never two of the gold for one answer
    both = score_pair("r", "s", ["Q1|Q2"], ["Q1", "Q2"])
    assert (both.tp, both.n_pred, both.n_gold) == (1, 1, 2)
    # the gold an earlier item took is not taken twice; the item stays in the set, a wrong one
    again = score_pair("r", "s", ["Q1", "Q1|Q3"], ["Q1"])
    assert (again.tp, again.n_pred) == (1, 2)
    # naming none of the gold: one wrong item, never dropped
    wrong = score_pair("r", "s", ["Q3|Q4", "Q1"], ["Q1"])
    assert (wrong.tp, wrong.n_pred, wrong.p) == (1, 2, 0.5)


def test_tuning_counts_a_joined_item_as_the_set_scores_it():
    items, gold = ["Q9", "Q1|Q2", "Q2", "Q1"], ["Q1", "Q2"]
    got = prefix_true_positives(items, gold)
    assert list(got) == [true_positives(items[:n], gold) for n in range(len(items) + 1)] == [0, 0, 1, 2, 2]
    assert isinstance(got, np.ndarray)


def test_an_lmkbc_record_submits_the_gold_id_a_joined_answer_names():
    exp = LmkbcExperiment()
    exp._index = SimpleNamespace(resolve=lambda label: None)  # every answer here has its id
    fact = SetFact("r:Q5", "lmkbc2024", "awardWonBy", Entity("Nobel", "Q5"), (Entity("Daniel Kahneman", "Q213500"),))
    query = Query("u", fact.uid, fact.corpus, fact.relation, fact.subject, "object", "[X] won by [Y].")
    pred = Prediction("u", (Answer("Daniel Kahneman", 0.6, "Q125121|Q213500"), Answer("Other", 0.3, "Q7")))
    record = exp.record("", query, fact, pred, {})
    assert record["predicted"] == ["Q213500", "Q7"]
    assert [item for item, _ in record["ranked"]] == ["Q125121|Q213500", "Q7"]


def test_a_closed_answer_space_finds_an_option_by_any_id_a_joined_answer_names():
    space = (Entity("Kingdom of England", "Q179876"), Entity("France", "Q142"))
    relations = {"P1": Relation("P1", "capital of", "[X] is the capital of [Y] .", answer_space=space)}
    predictor = AnswerSpacePredictor(SimpleNamespace(), relations)
    assert predictor.option("P1", Answer("England", 5.0, "Q179876|Q21")) == space[0]
    assert predictor.option("P1", Answer("France", 1.0, "Q142")) == space[1]


def test_the_gold_position_among_namesakes_is_the_answer_naming_its_entity():
    answers = (Answer("England", 1.0, "Q1"), Answer("England", 1.0, "Q179876|Q21"))
    assert gold_position(answers, Entity("England", "Q21")) == 1
    assert gold_position(answers, Entity("England", "Q1")) == 0


def test_a_written_answer_naming_several_entities_hits_either():
    assert answer_hits(["England", 1.0, "Q179876|Q21"], "England", "Q21") == (True, True)
    assert answer_hits(["England", 1.0, "Q179876|Q21"], "England", "Q5") == (False, False)


def test_the_explorer_set_shows_a_joined_answer_as_the_gold_entity_it_names():
    held = Prediction("u", (Answer("Daniel Kahneman", 1.0, "Q213500"),))
    gold = SimpleNamespace(predict=lambda queries, depth: [held])
    explorer = SimpleNamespace(
        labels=SimpleNamespace(resolve=lambda label: None), gold=gold, object_labels={"Q213500": "Daniel Kahneman"}
    )
    query = Query("u", "r:Q5", "lmkbc2024", "awardWonBy", Entity("Nobel", "Q5"), "object", "[X] won by [Y].")
    pred = Prediction("u", (Answer("Daniel Kahneman", 0.6, "Q125121|Q213500"), Answer("Other", 0.3, "Q7")))
    shown = set_fields(explorer, SimpleNamespace(set_rule="top:2"), query, pred)["set"]
    assert shown == [
        {"label": "Daniel Kahneman", "id": "Q213500", "gold": True},
        {"label": "Other", "id": "Q7", "gold": False},
    ]


def _as_older_freq(out):
    """The folder as an older kbc left it: Freq's identity without `answer_ids` (its answers named one entity)."""
    path = out / "config.json"
    config = json.loads(path.read_text())
    config["predictor_specs"]["freq"].pop("answer_ids", None)
    path.write_text(json.dumps(config))


def test_an_older_coherency_folder_with_freq_records_is_refused(lama_dir, tmp_path, capsys):
    out = tmp_path / "coh"
    args = [
        "run",
        "coherency",
        "--corpus",
        "trex",
        "--relations",
        "P1376",
        "--predictors",
        "freq",
        "--data-dir",
        str(lama_dir),
        "--out",
        str(out),
        "--quiet",
        "--bootstrap",
        "0",
    ]
    code, _, err = run_kbc(args, capsys)
    assert code == 0, err
    _as_older_freq(out)
    code, _, err = run_kbc(args, capsys)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code != 0 and len(lines) == 1 and "Traceback" not in err
    assert "earlier kbc version" in lines[0] and "first entity of its label" in lines[0] and "another --out" in lines[0]


def test_older_lama_and_lmkbc_folders_with_freq_records_keep_working(lama_dir, tmp_path, capsys):
    """LAMA ranks compare labels and LM-KBC's Freq counts ids: Freq's joined ids change no score there."""
    for args in (
        ["run", "lama", "--corpus", "trex", "--relations", "P1376"],
        ["run", "lmkbc", "--relations", "personHasCityOfDeath"],
    ):
        out = tmp_path / args[1]
        given = [*args, "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
        code, _, err = run_kbc(given, capsys)
        assert code == 0, err
        before = (out / "summary.json").read_text()
        _as_older_freq(out)
        code, _, err = run_kbc(given, capsys)
        assert code == 0, err
        assert (out / "summary.json").read_text() == before
        assert json.loads((out / "config.json").read_text())["predictor_specs"]["freq"]["answer_ids"]
