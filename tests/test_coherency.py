"""Coherency (Algorithm 1): instances as the paper counts them, both rounds, exclusion, scores, summaries."""

from __future__ import annotations

from collections import Counter

import pytest

from eval.coherency import (
    CONTAINED,
    SAME_LABELS,
    correct_answers,
    filter_instances,
    first_step_query,
    partial_match,
    run_instances,
    score_instance,
    second_step_depth,
    second_step_query,
    summarize_coherency,
    symmetric_relations,
    unsupported_slot,
)
from eval.types import Answer, Entity, Fact, Prediction

TEMPLATES = {"P36": "The capital of [X] is [Y] .", "P47": "[X] shares border with [Y] ."}


def fact(uid: str, rel: str, s: str, o: str) -> Fact:
    return Fact(uid, "toy", rel, Entity(s, f"Q{s}"), Entity(o, f"Q{o}"))


class TableModel:
    """Answers from a table (slot, known label) -> ranked labels; records what it was asked."""

    slots = ("object", "subject")

    def __init__(self, table: dict[tuple[str, str], list[str]]) -> None:
        self.table = table
        self.asked: list[tuple[str, str, int]] = []

    def predict(self, queries, depth):
        out = []
        for q in queries:
            self.asked.append((q.text("[MASK]"), q.slot, depth))
            labels = self.table.get((q.slot, q.known.label), [])
            out.append(Prediction(q.uid, tuple(Answer(x, -i) for i, x in enumerate(labels))[:depth]))
        return out


ONE_ONE = [fact("f", "P36", "France", "Paris"), fact("i", "P36", "Italy", "Rome"), fact("s", "P36", "Spain", "Madrid")]
ONE_ONE_MODEL = {
    ("object", "France"): ["Paris"], ("object", "Italy"): ["Milan"], ("object", "Spain"): ["Madrid"],
    ("subject", "Paris"): ["France"], ("subject", "Milan"): ["Italy"], ("subject", "Rome"): ["Italy"],
    ("subject", "Madrid"): ["Portugal", "Spain"], ("object", "Portugal"): ["Lisbon"],
}
N_M = [fact("gf", "P47", "Germany", "France"), fact("bf", "P47", "Belgium", "France"),
       fact("sf", "P47", "Spain", "France"), fact("gp", "P47", "Germany", "Poland")]
N_M_MODEL = {
    ("object", "Belgium"): ["France"],
    ("subject", "France"): ["Germany", "Spain", "Belgium", "Italy"],
    ("object", "Germany"): ["Poland", "France", "Austria"],
}


def test_partial_match():
    assert partial_match("paris", "Paris, Texas") and partial_match("Paris, Texas", " PARIS ")
    assert not partial_match("Paris", "Rome") and not partial_match("", "Rome") and not partial_match(" ", " ")


def test_one_to_one_both_rounds():
    model = TableModel(ONE_ONE_MODEL)
    records = run_instances(model.predict, ONE_ONE, TEMPLATES)
    got = {(r["fact_uid"], r["round"]): (r["first_answer"], r["second_answer"], r["coherent"]) for r in records}
    assert got == {
        ("f", 1): ("Paris", "France", True),
        ("i", 1): ("Milan", "Italy", True),  # coherent though the first answer is wrong
        ("s", 1): ("Madrid", "Portugal", False),
        ("f", 2): ("France", "Paris", True),
        ("i", 2): ("Italy", "Milan", False),
        ("s", 2): ("Portugal", "Lisbon", False),
    }
    assert ("The capital of Italy is [MASK] .", "object", 1) in model.asked
    assert ("The capital of [MASK] is Milan .", "subject", 1) in model.asked
    rows = summarize_coherency(records, {"P36": "1-1"})
    p36 = {r["metric"]: r["value"] for r in rows if r["group"] == "P36"}
    assert p36 == pytest.approx({"coherency_round1": 200 / 3, "coherency_round2": 100 / 3, "coherency": 50.0,
                                 "c1": 200 / 3, "c2": 200 / 3, "all_correct": 100 / 3, "n_instances": 3.0})
    assert {r["group"] for r in rows} == {"all", "1-1", "P36"}
    assert all(r["setting"] == "raw" and r["n_facts"] == 3 for r in rows)


def test_exclusion_changes_the_n_m_answer():
    correct = correct_answers(N_M)
    bf = N_M[1]
    first = first_step_query(bf, 1, TEMPLATES["P47"])
    assert (first.slot, first.known.label, first.text("[MASK]")) == ("object", "Belgium",
                                                                     "Belgium shares border with [MASK] .")
    answers = (Answer("France", 0.0, "QFrance"),)
    second = second_step_query(bf, 1, answers, TEMPLATES["P47"])
    assert (second.slot, second.known, second.text("[MASK]")) == ("subject", Entity("France", "QFrance"),
                                                                  "[MASK] shares border with France .")
    assert second_step_depth(bf, 1, answers, correct) == 3  # Germany and Spain are excluded
    model = TableModel(N_M_MODEL)
    ranked = model.predict([second], 10)[0]
    scored = score_instance(bf, 1, answers, ranked, correct)
    assert scored["excluded"] == ["germany", "spain"]
    assert (scored["second_answer"], scored["coherent"]) == ("Belgium", True)
    # without exclusion the top answer, Germany, would make the fact incoherent
    bare = score_instance(bf, 1, answers, ranked, correct_answers([bf]))
    assert (bare["second_answer"], bare["coherent"]) == ("Germany", False)

    records = {(r["fact_uid"], r["round"]): r for r in run_instances(model.predict, N_M, TEMPLATES)}
    r2 = records[("bf", 2)]  # subject of France: Germany; Germany's objects minus the truth: Poland excluded
    assert (r2["first_answer"], r2["excluded"], r2["second_answer"], r2["coherent"]) == (
        "Germany", ["poland"], "France", True)
    assert records[("sf", 1)]["first_answer"] is None and not records[("sf", 1)]["coherent"]
    rows = summarize_coherency(records.values(), {"P47": "N-M", "P36": "1-1"}, symmetric={"P47"})
    value = {(r["group"], r["metric"]): r["value"] for r in rows}
    assert {m: value[("P47", m)] for m in ("coherency_round1", "coherency_round2", "coherency", "c1", "c2",
                                            "all_correct", "n_instances")} == {
        "coherency_round1": 25.0, "coherency_round2": 75.0, "coherency": 50.0, "c1": 50.0, "c2": 25.0,
        "all_correct": 0.0, "n_instances": 4.0}
    assert value[("symmetric", "coherency")] == value[("N-M", "coherency")] == 50.0
    assert ("1-1", "coherency") not in value  # no 1-1 relation among the records


def test_summary_macro_averages_relations():
    records = run_instances(TableModel(ONE_ONE_MODEL).predict, ONE_ONE, TEMPLATES)
    records += run_instances(TableModel(N_M_MODEL).predict, N_M, TEMPLATES)
    rows = summarize_coherency(records, {"P36": "1-1", "P47": "N-M"}, symmetric=["P47"])
    value = {(r["group"], r["metric"]): r["value"] for r in rows}
    n = {r["group"]: r["n_facts"] for r in rows}
    assert value[("all", "coherency")] == pytest.approx((value[("P36", "coherency")]
                                                         + value[("P47", "coherency")]) / 2)
    assert value[("all", "n_instances")] == 7 and n == {"all": 7, "1-1": 3, "N-M": 4, "symmetric": 4,
                                                        "P36": 3, "P47": 4}
    per_round = [r for r in records if r["relation"] == "P47"]
    assert value[("P47", "coherency")] == pytest.approx(100 * sum(r["coherent"] for r in per_round) / 8)


def test_second_answer_repeating_the_first_is_not_coherent():
    f = fact("x", "P47", "Lyon", "France")
    scored = score_instance(f, 1, [Answer("Lyon", 0.0)], [Answer("Lyon", 0.0)], correct_answers([f]))
    assert scored["second_correct"] and scored["same_as_first"] and not scored["coherent"]
    assert second_step_query(f, 1, [], TEMPLATES["P47"]) is None
    assert second_step_query(f, 1, Prediction("u", ()), TEMPLATES["P47"]) is None


def test_filter_reasons_and_symmetry():
    facts = [fact("1", "P47", "Lyon", "Lyon"), fact("2", "P47", "Congo", "Republic of the Congo"),
             fact("3", "P47", "A", "B"), fact("4", "P47", "B", "A"), fact("5", "P36", "A", "C")]
    kept, dropped = filter_instances(facts)
    assert [f.uid for f in kept] == ["3", "4", "5"] and dropped == {SAME_LABELS: 1, CONTAINED: 1}
    assert filter_instances(facts, vocab={"A", "B"})[0] == facts[2:4]
    assert symmetric_relations(facts) == {"P47"}
    assert unsupported_slot(TableModel({}), "subject") is None
    assert unsupported_slot(object(), "subject") == "predictor does not answer the subject slot"


def test_bert_uncased_instances_match_the_paper(trex, shared_data):
    """Paper Table 4: 2,919 instances over 39 relations for bert-base-uncased (1-1: 232, Table 5)."""
    from transformers import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(shared_data / "tokenizers" / "bert-base-uncased", do_lower_case=True)
    kept, _ = filter_instances(trex.facts, tokenizer)
    per_rel = Counter(f.relation for f in kept)
    assert len(kept) == 2915 and abs(len(kept) - 2919) <= 10 and len(per_rel) == 39
    types = {r: rel.type for r, rel in trex.relations.items()}
    assert sum(n for r, n in per_rel.items() if types[r] == "1-1") == 232
    symmetric = symmetric_relations(trex.facts)
    assert symmetric == {"P47", "P190", "P530"}
    assert abs(sum(per_rel[r] for r in symmetric) - 1927) <= 10
    # T5 and causal LMs: every fact but the easy ones (the paper: 29,672 over 41 relations)
    every = filter_instances(trex.facts)[0]
    assert abs(len(every) - 29672) <= 10 and len({f.relation for f in every}) == 41


def test_a_run_keeps_the_paper_instances_minus_labels_the_model_cannot_spell(trex, tmp_path, lama_dir):
    """The instances `kbc run coherency` asks a bert-base-uncased model (`candidates=full`): the
    tokenizer rule's 2,915 less the five whose label is one token only once its accent is stripped
    (Ōsaka -> osaka): the model can never answer them as written."""
    import lm_fixtures
    from transformers import BertTokenizer

    from bridge.experiments.base import StageInput
    from bridge.experiments.coherency import CoherencyExperiment
    from bridge.predictors.lm import make_masked
    from bridge.predictors.registry import PredictorContext
    from bridge.run.runner import _drop_left_out, _drop_unsuitable, _drop_unsupported

    path = lm_fixtures.tiny_model_dir("bert-uncased", tmp_path)
    ctx = PredictorContext(trex, None, tmp_path, lama_dir, options={"candidates": "full", "cache": "off"})
    predictor = make_masked(str(path), ctx)
    experiment = CoherencyExperiment()
    queries = experiment.queries("first", StageInput(trex, trex.facts, {}, {}, lama_dir))
    todo, ruled = _drop_left_out(experiment, [(rel, pairs, None) for rel, pairs in queries.items() if pairs])
    assert len({f.uid for items in ruled.values() for _, f, _ in items}) == len(trex.facts) - 29678
    todo, gone = _drop_unsupported(predictor, todo, experiment.instance_slots)
    todo, easy = _drop_unsuitable(experiment, predictor, todo)
    easy_facts = {f.uid for items in easy.values() for _, f, _ in items}  # both rounds of each
    assert len(easy_facts) == 7  # Arrow/arrow, euro/Europe, ...: lower-cased containment
    kept = {f.uid: f for _, pairs, _ in todo for _, f in pairs}
    assert len(kept) == 2910 and len({f.relation for f in kept.values()}) == 39
    tokenizer = BertTokenizer.from_pretrained(lama_dir.parent / "tokenizers" / "bert-base-uncased",
                                              do_lower_case=True)
    rule = {f.uid: f for f in filter_instances(trex.facts, tokenizer)[0]}
    assert set(kept) <= set(rule)
    unspellable = [rule[u] for u in set(rule) - set(kept)]
    assert sorted(f.subject.label for f in unspellable) == ["Hokkaidō", "Kōbe", "Kōbe", "Ōsaka", "Ōsaka"]
