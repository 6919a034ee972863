"""Coherency compares entities by Wikidata id where both sides have one, shares a KB's ties, and counts
dropped facts as facts: exact values on hand-made facts and on the real T-REx data."""

from __future__ import annotations

import json

import lm_fixtures
import pandas as pd
import pytest
from cli_support import run_kbc

from eval.coherency import correct_answers, first_step_correct, score_instance
from eval.types import Answer, Entity, Fact, Prediction

tiny_models = lm_fixtures.tiny_models


def fact(uid: str, rel: str, s: Entity, o: Entity) -> Fact:
    return Fact(uid, "toy", rel, s, o)


PUNJAB_PK, PUNJAB_IN = Entity("Punjab", "Q4478"), Entity("Punjab", "Q22424")
SINDH, HARYANA = Entity("Sindh", "Q37211"), Entity("Haryana", "Q1174")
BORDERS = [fact("a", "P47", PUNJAB_PK, SINDH), fact("b", "P47", PUNJAB_PK, PUNJAB_IN),
           fact("c", "P47", PUNJAB_IN, PUNJAB_PK), fact("d", "P47", HARYANA, PUNJAB_IN)]


def test_entities_sharing_a_label_are_told_apart_by_id():
    """(Punjab [PK], borders, Sindh): the KB's first answer is Punjab [IN]; asked back, the subject Punjab
    [PK] is the truth, not a repeat of the first answer, and Haryana is excluded by id."""
    correct = correct_answers(BORDERS)
    first = [Answer("Punjab", 1.0, "Q22424")]
    second = [Answer("Haryana", 1.0, "Q1174"), Answer("Punjab", 1.0, "Q4478")]
    scored = score_instance(BORDERS[0], 1, first, second, correct)
    assert (scored["second_answer"], scored["excluded"], scored["same_as_first"], scored["coherent"]) == (
        "Punjab", ["haryana"], False, True)
    # the same answers without ids (a language model's) compare by label, as the paper does
    bare = score_instance(BORDERS[0], 1, [Answer("Punjab", 0.0)], [Answer("Punjab", 0.0)], correct)
    assert (bare["same_as_first"], bare["coherent"]) == (True, False)


def test_one_entity_with_two_labels_is_one_answer():
    """Q239 is "Brussels" in one fact and "City of Brussels" in another: the KB's "Brussels" is the truth."""
    belgium, flanders = Entity("Belgium", "Q31"), Entity("Flanders", "Q234")
    facts = [fact("x", "P1376", Entity("City of Brussels", "Q239"), flanders),
             fact("y", "P1376", Entity("Brussels", "Q239"), belgium)]
    scored = score_instance(facts[0], 1, [Answer("Belgium", 1.0, "Q31")], [Answer("Brussels", 1.0, "Q239")],
                            correct_answers(facts))
    assert (scored["excluded"], scored["second_answer"], scored["second_correct"], scored["coherent"]) == (
        [], "Brussels", True, True)


def test_a_kb_first_step_is_right_when_the_truth_is_among_its_tied_top_answers():
    euler = [Answer("mathematics", 0.8, "Q395"), Answer("physics", 0.8, "Q413"), Answer("optics", 0.3, "Q14620")]
    physics, optics = Entity("physics", "Q413"), Entity("optics", "Q14620")
    assert first_step_correct(Prediction("q", tuple(euler), shared_ties=True), physics)
    assert not first_step_correct(Prediction("q", tuple(euler)), physics)  # a language model: its top answer
    assert not first_step_correct(Prediction("q", tuple(euler), shared_ties=True), optics)
    assert first_step_correct([Answer("science", 1.0, "Q336")], Entity("Science", "Q336"))  # same id, other case


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    return tmp_path


def _all(out, scope: str = "own") -> dict[tuple[str, str], float]:
    rows = json.loads((out / "summary.json").read_text())
    return {(r["predictor"], r["metric"]): r["value"] for r in rows if r["group"] == "all" and r["scope"] == scope}


def test_gold_kb_is_coherent_on_every_instance_of_relations_with_shared_labels(lama_dir, cache, capsys):
    """P36, P47, P138, P1376, P101 hold Punjab/Sindh, Lima/Peru, Arrow/arrow, Q239's two labels: by id the
    gold KB is coherent on all 2,510 instances (5,020 rounds), and its first steps are all right."""
    out = cache / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--predictors", "gold", "--relations", "P36",
                            "P47", "P138", "P1376", "P101", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    got = _all(out)
    assert got[("gold", "n_instances")] == 2510
    for metric in ("coherency", "coherency_round1", "coherency_round2", "c1", "c2", "all_correct"):
        assert got[("gold", metric)] == 100.0, metric
    table = pd.read_parquet(out / "instances.parquet")
    ruled = table[table["dropped"].notna()]  # the facts whose labels contain each other: one row each
    assert len(ruled) == 690 and set(ruled["dropped"]) == {"one label contains the other",
                                                          "subject and object labels are equal"}
    table = table[table["dropped"].isna()]
    assert len(table) == 5020 and table["coherent"].astype(bool).all()
    sindh = table[(table["first_truth"] == "Sindh") & (table["round"] == 1) & (table["relation"] == "P47")]
    assert list(zip(sindh["first_answer"], sindh["second_answer"], sindh["coherent"])) == [("Punjab", "Punjab", True)]


def test_a_first_step_asking_the_subject_reaches_every_subject_of_a_popular_object(lama_dir, cache, capsys):
    """Asia has thousands of P30 subjects, all equally true for the gold KB: the first step of round 2 asks
    deep enough to hold them all, so the truth is among the answers (c2 100, not cut at --depth)."""
    out = cache / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--predictors", "gold", "--relations", "P30",
                            "--limit", "20", "--depth", "10", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    got = _all(out)
    assert (got[("gold", "n_instances")], got[("gold", "c1")], got[("gold", "c2")]) == (20, 100.0, 100.0)


def test_dropped_facts_and_units_are_counted_and_labelled_alike(tiny_models, lama_dir, cache, capsys):
    """A masked LM drops facts whose labels are not one token: the printed line, dropped.json and summary.md
    count facts (each asked in two rounds); the scope note counts (fact, round) units and says so."""
    out = cache / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "8",
                            "--predictors", "gold", f"bert={tiny_models('bert-cased')}", "--set", "bert.cache=off",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert "trex / bert / first: dropped 11 facts (22 queries) it cannot answer" in err  # two rounds each
    dropped = json.loads((out / "dropped.json").read_text())
    assert [(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped] == [
        ("gold", "P36", "one label contains the other", 2),  # the instance rule: every predictor drops them
        ("bert", "P36", "one label contains the other", 2),
        ("bert", "P36", "subject is not a single token of the model", 5),
        ("bert", "P47", "subject is not a single token of the model", 6)]
    summary = (out / "summary.md").read_text()
    assert "| trex | bert | P36 | subject is not a single token of the model | 5 |" in summary
    assert ("Scope `shared`: per metric, the (fact, round) units, two per fact, every predictor scored on that metric "
            "answered (trex: 6 answered by all of gold, bert)") in summary
    assert "| trex | gold | open | 3 |" in summary  # the tables count facts: 3 facts, 6 units
    assert _all(out, "shared")[("gold", "n_instances")] == 3
    table = pd.read_parquet(out / "instances.parquet")
    assert table[table["dropped"].notna()].shape[0] == 15  # one row per dropped fact: 11, and the rule's 2 each


def test_lama_raw_setting_shares_a_kbs_ties_and_keeps_freqs_order(lama_dir, cache, capsys):
    """The gold KB scores every valid object 1.0: in the raw setting the gold is among its tied top answers
    (P@1 100, against 97.05 / 68.66 / 94.83 with label order); Freq keeps its data-order ties."""
    out = cache / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P138", "P47", "P101",
                            "--predictors", "gold", "freq", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    rows = json.loads((out / "summary.json").read_text())
    p1 = {(r["predictor"], r["group"]): r["value"] for r in rows
          if r["scope"] == "own" and r["setting"] == "raw" and r["metric"] == "p@1"}
    assert [p1[("gold", rel)] for rel in ("P138", "P47", "P101")] == [100.0, 100.0, 100.0]
    assert [p1[("freq", rel)] for rel in ("P138", "P47", "P101")] == pytest.approx(
        [100 * 11 / 645, 100 * 15 / 922, 100 * 75 / 696])


def test_freqs_first_step_is_right_where_its_lama_rank_is_1(lama_dir, cache, capsys):
    """Freq counts labels: P1376's "England" counts Q21 once and Q179876 four times, and P36's subject "England"
    Q179876 three times and Q21 once. Its answer names both entities, so a first step is right on exactly the facts
    where the same answer has LAMA rank 1 (all five, not only the one of the entity seen first), and on P36's four
    England subjects, never on "South West England", which a partial match of the label would take."""
    coh, lama = cache / "coh", cache / "lama"
    for experiment, out in (("coherency", coh), ("lama", lama)):
        code, _, err = run_kbc(["run", experiment, "--corpus", "trex", "--relations", "P1376", "P36",
                                "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
                                "--bootstrap", "0"], capsys)
        assert code == 0, err
    rank1 = {}
    for rel in ("P1376", "P36"):
        for line in (lama / "predictions" / "trex" / "freq" / f"{rel}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            rank1[rec["uid"]] = rec["rank_raw"] == 1
    table = pd.read_parquet(coh / "instances.parquet")
    table = table[table["dropped"].isna()]
    first = table[table["round"] == 1]
    got = {uid: bool(ok) for uid, ok in zip(first["fact_uid"], first["first_correct"])}
    assert sum(got[uid] for uid in got if uid in rank1 and table.loc[table["fact_uid"] == uid, "relation"].iloc[0]
               == "P1376") == 5
    assert got == {uid: rank1[uid] for uid in got}
    # round 2 asks P36's subject: "England" is right for its four facts (both entities), no England-like subject
    second = table[(table["round"] == 2) & (table["relation"] == "P36") & table["first_correct"].astype(bool)]
    assert sorted(second["first_truth"]) == ["England"] * 4
