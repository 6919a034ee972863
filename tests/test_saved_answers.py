"""Records hold what their verdicts rest on: a gold or a chosen answer inside a tie group is saved, not cut off."""

from __future__ import annotations

from bridge.experiments.coherency import CoherencyExperiment
from bridge.experiments.lama import ranked_record
from bridge.run.results import TOP_SAVED, saved_answers
from eval.coherency import correct_answers, first_step_query, second_step_query
from eval.types import Answer, Entity, Fact, Prediction, Query

TIED = tuple(Answer(f"Place{i:02}", 1.0, f"Q{100 + i}") for i in range(12)) + (Answer("Rome", 0.5, "Q220"),)


def rows(answers) -> list[list]:
    return [[a.label, a.score, a.id] for a in answers]


def test_a_used_answer_goes_first_among_its_equals_and_nothing_else_moves():
    assert saved_answers(TIED) == rows(TIED[:TOP_SAVED])
    assert saved_answers(TIED, (11,), shared_ties=True) == rows((TIED[11], *TIED[:9]))
    assert saved_answers(TIED, (0, 11), shared_ties=True) == rows((TIED[0], TIED[11], *TIED[1:9]))
    # a used answer in a later group goes first in that group, and the list reaches it
    assert saved_answers(TIED, (12,), shared_ties=True) == rows(TIED)
    # without shared ties the order is the ranking's: the list reaches down to the used answer
    assert saved_answers(TIED, (11,)) == rows(TIED[:12])
    assert saved_answers(TIED, (None,), shared_ties=True) == rows(TIED[:TOP_SAVED])


def test_a_lama_record_holds_the_gold_its_rank_counts():
    """The gold 12th of a tie group at the top ranks 1: the record must show it (first among its equals)."""
    fact = Fact("f0", "trex", "P276", Entity("Syrian Civil War", "Q109"), Entity("Place11", "Q111"))
    query = Query("q0", "f0", "trex", "P276", fact.subject, "object", "[X] is located in [Y] .")
    record = ranked_record(query, fact, Prediction("q0", TIED, shared_ties=True), {})
    assert record["rank_raw"] == 1
    assert record["answers"] == rows((TIED[11], *TIED[:9]))
    # two entities of the gold's label: the record shows the gold's own entity first
    namesakes = (Answer("Hanoi", 0.9, "Q1858"), Answer("Lisbon", 0.9, "Q2310637"), Answer("Lisbon", 0.9, "Q597"))
    fact = Fact("f1", "trex", "P19", Entity("Sofia Ester"), Entity("Lisbon", "Q597"))
    record = ranked_record(query, fact, Prediction("q0", namesakes, shared_ties=True), {})
    assert (record["rank_raw"], record["answers"][0]) == (1, ["Lisbon", 0.9, "Q597"])
    # a language model's record is its top ten, the gold or not
    record = ranked_record(query, fact, Prediction("q0", TIED), {})
    assert (record["rank_raw"], record["answers"]) == (None, rows(TIED[:TOP_SAVED]))


def test_coherency_records_hold_the_second_answer_and_the_truth_of_the_first_step():
    """Twelve people born in London are correct for it and excluded; the thirteenth, tied, is the second answer."""
    london = Entity("London", "Q84")
    people = [Entity(f"Person{i:02}", f"Q{100 + i}") for i in range(13)]
    facts = [Fact(f"f{i}", "trex", "P19", p, london) for i, p in enumerate(people)]
    exp = CoherencyExperiment()
    exp._correct, exp._corpus = correct_answers(facts[1:]), "trex"
    fact = facts[0]
    template = "[X] was born in [Y] ."
    second_q = second_step_query(fact, 1, [Answer("London", 1.0, "Q84")], template)
    answers = tuple(Answer(p.label, 1.0, p.id) for p in people[1:]) + (Answer("Person00", 1.0, "Q100"),)
    record = exp.record("second", second_q, fact, Prediction(second_q.uid, answers, shared_ties=True), {})
    assert (record["second_answer"], record["second_correct"], len(record["excluded"])) == ("Person00", True, 12)
    assert record["answers"][0] == ["Person00", 1.0, "Q100"] and len(record["answers"]) == TOP_SAVED
    # a language model's pick below its top ten: the record reaches down to it
    ranked = tuple(Answer(a.label, 1.0 - i / 100, a.id) for i, a in enumerate(answers))
    record = exp.record("second", second_q, fact, Prediction(second_q.uid, ranked), {})
    assert record["second_answer"] == "Person00" and record["answers"][-1][0] == "Person00"
    assert len(record["answers"]) == 13
    # the first step: the top answer stays first (it is asked back from), the truth among the tied top follows it
    first_q = first_step_query(fact, 2, template)
    subjects = tuple(Answer(p.label, 1.0, p.id) for p in people[1:]) + (Answer("Person00", 1.0, "Q100"),)
    record = exp.record("first", first_q, fact, Prediction(first_q.uid, subjects, shared_ties=True), {})
    assert record["correct"] is True
    assert [a[0] for a in record["answers"][:3]] == ["Person01", "Person00", "Person02"]
