"""Statement scoring outside BEAR: LAMA and coherency facts whose object (or subject) is several tokens are
answered over the relation's typed answer space instead of dropped, with lm-pub-quiz's ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)

from eval.types import Entity, Fact, Query
from lm.statement import Statement
from lm.statement_predictor import SUBJECT_NOT_IN_SPACE, StatementPredictor

NOT_SINGLE = "object is not a single token of the model"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _lpq_rank(evaluator, template: str, options: list[str], subject: str, gold: str) -> int:
    """lm-pub-quiz's rank of the gold option (ties: answer-space order, as kbcompare breaks them)."""
    scores = evaluator.evaluate_instance(template=template, answers=options, subject=subject, reduction="sum",
                                         batch_size=64)
    at = options.index(gold)
    return 1 + sum(s > scores[at] for s in scores) + sum(s == scores[at] for s in scores[:at])


def test_lama_multi_token_objects_are_answered(tiny_models, lama_dir, trex, tmp_path, monkeypatch, capsys):  # noqa: F811
    from lm_pub_quiz import Evaluator
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model = tiny_models("roberta")  # RoBERTa's BPE splits most record labels (P264)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P463", "P264", "--predictors",
                            f"slot={model}", f"stmt={model}", "--set", "slot.candidates=relation", "--set",
                            "stmt.scoring=statement", "--limit", "6", "--compat", "lm-pub-quiz", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    assert {(d["predictor"], d["relation"], d["reason"], d["n"]) for d in dropped} == {
        ("slot", "P264", NOT_SINGLE, 5)}
    evaluator = Evaluator.from_model(AutoModelForMaskedLM.from_pretrained(model).eval(), model_type="MLM",
                                     tokenizer=AutoTokenizer.from_pretrained(model))
    templates = {r.id: r.template for r in trex.relations.values()}
    for rel in ("P463", "P264"):
        options = list(dict.fromkeys(f.object.label for f in trex.facts if f.relation == rel))
        slot = {r["uid"]: r for r in _records(out / "predictions" / "trex" / "slot" / f"{rel}.jsonl")}
        stmt = _records(out / "predictions" / "trex" / "stmt" / f"{rel}.jsonl")
        assert len(stmt) == 6 and not any("dropped" in r for r in stmt)
        multi = [r for r in stmt if "dropped" in slot[r["uid"]]]
        assert len(multi) == {"P463": 0, "P264": 5}[rel]
        assert all(r["extra"]["n_candidates"] == len(options) for r in stmt)
        # lm-pub-quiz takes seconds an instance here: it ranks the first and the last record of each kind (a
        # multi-token object the slot predictor dropped, a single-token one), the ends of the batches they share
        kinds = ([r for r in stmt if "dropped" in slot[r["uid"]]], [r for r in stmt if "dropped" not in slot[r["uid"]]])
        checked = list({r["uid"]: r for kind in kinds for r in kind[:1] + kind[-1:]}.values())
        assert len(checked) == {"P463": 2, "P264": 3}[rel]
        for r in checked:
            expected = _lpq_rank(evaluator, templates[rel], options, r["subject"], r["gold"])
            assert (r["rank_exact_raw"], r["rank_raw"]) == (expected, expected), r["uid"]
    rows = json.loads((out / "summary.json").read_text())
    n = {(r["predictor"], r["group"]): r["n_facts"] for r in rows
         if r["metric"] == "p@1" and r["scope"] == "own" and r["setting"] == "raw"}
    assert (n[("slot", "all")], n[("stmt", "all")]) == (7, 12)


def test_subject_queries_fill_the_candidate_at_x():
    predictor = StatementPredictor("m", scorer=None, answers={"P30": ["Europe", "Insular Oceania"]},
                                   subjects={"P30": ["Mount Berlin", "Rome"]})
    query = Query("u:r2", "u", "trex", "P30", Entity("Insular Oceania"), "subject", "[X] is located in [Y] .")
    assert predictor.slots == ("object", "subject")
    assert predictor.statements(query) == [Statement("Mount Berlin is located in Insular Oceania .", (0, 12)),
                                           Statement("Rome is located in Insular Oceania .", (0, 4))]
    assert (predictor.answer_space_size("P30", "subject"), predictor.answer_space_size("P30")) == (2, 2)
    facts = [Fact("a", "trex", "P30", Entity("Rome"), Entity("Europe")),
             Fact("b", "trex", "P30", Entity("Paris"), Entity("Europe"))]
    kept, gone = predictor.filter_facts(facts, "subject")
    assert [f.uid for f in kept] == ["a"] and gone == {SUBJECT_NOT_IN_SPACE: 1}


def test_coherency_asks_multi_token_entities_both_ways(tiny_models, lama_dir, trex, tmp_path, monkeypatch,  # noqa: F811
                                                      capsys):
    from lm_pub_quiz import Evaluator
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model = tiny_models("roberta")
    out = tmp_path / "coherency"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P463", "--predictors",
                            f"slot={model}", f"stmt={model}", "--set", "slot.candidates=relation", "--set",
                            "stmt.scoring=statement", "--limit", "3", "--compat", "lm-pub-quiz", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    dropped = json.loads((out / "dropped.json").read_text())
    assert [(d["predictor"], d["reason"], d["n"]) for d in dropped] == [
        ("slot", "subject is not a single token of the model", 3)]
    import pandas as pd

    rows = pd.read_parquet(out / "instances.parquet")
    stmt = rows[rows["predictor"] == "stmt"]
    assert len(stmt) == 6 and stmt["dropped"].isna().all()
    assert sorted(zip(stmt["round"], stmt["first_slot"], stmt["second_slot"])) == (
        [(1, "object", "subject")] * 3 + [(2, "subject", "object")] * 3)
    assert stmt["second_answer"].notna().all()
    # asking the subject: the candidate subject goes to [X]; lm-pub-quiz puts its answers at [Y], so it is given
    # the template with the slots swapped and ranks the relation's subjects the same way
    evaluator = Evaluator.from_model(AutoModelForMaskedLM.from_pretrained(model).eval(), model_type="MLM",
                                     tokenizer=AutoTokenizer.from_pretrained(model))
    subjects = list(dict.fromkeys(f.subject.label for f in trex.facts if f.relation == "P463"))
    swapped = trex.relations["P463"].template.replace("[X]", "[S]").replace("[Y]", "[X]").replace("[S]", "[Y]")
    asked_back = [r for r in _records(out / "predictions" / "trex" / "stmt" / "first" / "P463.jsonl")
                  if r["slot"] == "subject"]
    assert len(asked_back) == 3
    for r in asked_back[:1]:  # the others differ only in the object given
        # lm-pub-quiz scores every subject at 11 s an instance: it is given the run's answers and every fifth other
        # subject, among which the run's answers must come first, in its order, with its scores
        saved = [a[0] for a in r["answers"]]
        asked = saved + [s for s in subjects[::5] if s not in saved]
        scores = evaluator.evaluate_instance(template=swapped, answers=asked, subject=r["gold"], reduction="sum",
                                             batch_size=64)
        top = sorted(range(len(asked)), key=lambda i: (-scores[i], i))[:len(saved)]
        assert len(asked) > 3 * len(saved) and saved == [asked[i] for i in top]
        assert [a[1] for a in r["answers"]] == pytest.approx([scores[i] for i in top], abs=1e-4)
