"""Coherency and KMIR asked by generation: the exact questions sent, each step's answer read from the text, and the
scores those answers give (a scripted OpenAI-compatible server writes the answers)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from cli_support import run_kbc
from served_support import Scripted, completion

from eval.answer_text import parse_yes_no
from eval.errors import DataError
from eval.kmir import question_prompt
from eval.question_prompts import Prompter
from eval.types import Entity, Query

TEMPLATE = "[X] was born in [Y] ."


def ask(slot: str, known: str, style: str = "question", chat: bool = False, **kw) -> object:
    query = Query("u1", "f1", "trex", "P19", Entity(known, "Q1"), slot, TEMPLATE)
    return Prompter(style, {"P19": TEMPLATE}, chat=chat, **kw).prompt(query).sent()


def test_a_subject_is_asked_with_a_blank_in_its_place():
    assert ask("subject", "Alexandra") == "Q: Fill in the blank: ___ was born in Alexandra.\nA:"
    assert ask("subject", "Alexandra", "lama") == "Q: Fill in the blank: ___ was born in Alexandra.\nA:"
    assert ask("object", "Allan Peiper", "lama") == "Allan Peiper was born in"
    assert ask("subject", "Alexandra", chat=True) == [
        {"role": "user", "content": "Fill in the blank: ___ was born in Alexandra."}]
    with pytest.raises(DataError, match="cannot ask for the subject"):
        ask("subject", "Alexandra", questions={"P19": "Where was {subject_entity} born?"})


def test_kmir_questions_as_a_generating_model_reads_them():
    assert question_prompt("Is the statement \u201cDante was born in Florence.\u201d true? [MASK].") == \
        "Is the statement \u201cDante was born in Florence.\u201d true?"
    assert question_prompt("Dante was born in [MASK] .") == "Fill in the blank: Dante was born in ___."
    assert question_prompt("Among A, B, C, and D, [MASK] is the outlier in terms of the type.") == \
        "Fill in the blank: Among A, B, C, and D, ___ is the outlier in terms of the type."
    assert [parse_yes_no(t) for t in ("Yes, it is.", "no", " False.", "TRUE", "Perhaps", "", "Nope", "* yes")] == \
        ["yes", "no", "no", "yes", None, None, None, "yes"]


# T-REx P19 facts whose subject and object labels are each unique in the relation
FACTS = [("Q1886736", "Allan Peiper", "Q2643563", "Alexandra"), ("Q333193", "Anthony Barber", "Q58900", "Doncaster"),
         ("Q1026809", "Yeung Sum", "Q16572", "Guangzhou"), ("Q319896", "Ze'ev Jabotinsky", "Q1874", "Odessa"),
         ("Q7685535", "Taras Kuzio", "Q826561", "Halifax"), ("Q5444191", "Fergus McMaster", "Q36074", "Queensland")]
RIGHT = {"Allan Peiper", "Anthony Barber", "Yeung Sum"}  # the others' birthplace is answered "Atlantis"
ASKED = re.compile(r"^Fill in the blank: (.+) was born in (.+)\.$")


def coherency_script(path: str, body: dict, n: int):
    subject, obj = ASKED.match(body["messages"][-1]["content"]).groups()
    if obj == "___":  # round 1 first step, round 2 second step: the object of a subject
        _, s, _, o = next(f for f in FACTS if f[1] == subject)
        text = o if s in RIGHT else "Atlantis"
    else:  # the subject of an object: the one fact holding it, or an abstention
        text = next((s for _, s, _, o in FACTS if o == obj), "I don't know")
    return 200, completion(f"{text}.\nQ: more", "chat")


def test_coherency_by_generation(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(next(line for line in (lama_dir / "relations.jsonl").read_text().splitlines()
                                               if '"P19"' in line) + "\n")
    rows = [{"uuid": f"p19-{i}", "predicate_id": "P19", "sub_uri": s, "sub_label": sl, "obj_uri": o, "obj_label": ol}
            for i, (s, sl, o, ol) in enumerate(FACTS)]
    (data / "TREx" / "P19.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    server = Scripted(coherency_script)
    try:
        out = tmp_path / "run"
        code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--predictors", f"llm={server.url}", "--set",
                                "llm.model=tiny", "--data-dir", str(data), "--out", str(out), "--store",
                                str(tmp_path / "store"), "--quiet", "--bootstrap", "50"], capsys)
        assert code == 0, err
        # 6 objects and 6 subjects asked, and "Atlantis" asked back once: every other step back asks what the
        # other round asked first, answered from the response cache
        assert len(server.bodies) == 13
    finally:
        server.close()
    records = [json.loads(line) for p in (out / "predictions" / "trex" / "llm").rglob("*.jsonl")
               for line in p.read_text().splitlines()]
    second = {r["unit"]: r for r in records if "second_correct" in r}
    assert len(second) == 2 * len(FACTS)
    for i, (_, s, _, o) in enumerate(FACTS):
        right = s in RIGHT
        r1, r2 = second[f"p19-{i}:r1"], second[f"p19-{i}:r2"]
        assert (r1["first_answer"], r1["first_correct"], r1["second_answer"], r1["coherent"]) == \
            ((o, True, s, True) if right else ("Atlantis", False, None, False))
        assert (r2["first_answer"], r2["first_correct"], r2["second_answer"], r2["coherent"]) == \
            (s, True, o if right else "Atlantis", right)
        asked_back = o if right else "Atlantis"
        assert r1["prompt"] == [{"role": "user", "content": f"Fill in the blank: ___ was born in {asked_back}."}]
        assert r1["generation"] == (f"{s}.\nQ: more" if right else "I don't know.\nQ: more")
        assert r1["abstained"] is not right and r2["generation"] == f"{asked_back}.\nQ: more"
    rows = json.loads((out / "summary.json").read_text())
    get = {(r["metric"], r["group"]): r["value"] for r in rows
           if r["predictor"] == "llm" and r.get("scope", "own") == "own" and r.get("setting", "raw") == "raw"}
    assert (get[("coherency", "all")], get[("coherency_round1", "all")], get[("coherency_round2", "all")]) == \
        (50.0, 50.0, 50.0)
    # kbc show prints each step's messages as sent and the raw generation its one answer was parsed from
    first = next(r for r in records if r["uid"] == "p19-0:coherency:r1s1")
    code, shown, err = run_kbc(["show", str(out), "--uid", "p19-0"], capsys)
    assert (code, err) == (0, "")
    lines = shown.splitlines()
    at = lines.index(f"       round 1  asks the object: [user] {first['prompt'][0]['content']}")
    generation = first["generation"].split("\n")
    assert lines[at + 1:at + 3] == [f"{' ' * 16}generation: {generation[0]}", f"{' ' * 28}{generation[1]}"]
    assert lines[at + 3] == f"{' ' * 16}truth {first['truth']}, right: {'yes' if first['correct'] else 'no'}"


def kmir_script(path: str, body: dict, n: int):
    """Statements: yes, no or neither by the question's length; a capital or neighbour asked by a blank: the
    corpus's first object of its subject; any other question: Atlantis."""
    asked = body["messages"][-1]["content"]
    if asked.endswith("?") and "true" in asked:  # the four statement forms; no other question says "true"
        return 200, completion(("Yes, it is.", "No.", "Perhaps")[len(asked) % 3], "chat")
    found = re.match(r"^Fill in the blank: (?:The capital of (.+) is|(.+) shares border with) ___\.$", asked)
    text = KMIR_OBJECTS[("P36", found.group(1)) if found.group(1) else ("P47", found.group(2))] if found \
        else "Atlantis"
    return 200, completion(text, "chat")


KMIR_OBJECTS: dict[tuple[str, str], str] = {}  # (relation, subject) -> its first object in the corpus


def test_kmir_by_generation(lama_dir, tmp_path, capsys, monkeypatch):
    from eval.corpora import load_corpus

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    for f in load_corpus("trex", lama_dir, ["P36", "P47"]).facts:
        KMIR_OBJECTS.setdefault((f.relation, f.subject.label), f.object.label)
    server = Scripted(kmir_script)
    try:
        out = tmp_path / "run"
        code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
                                "--questions-per-relation", "4", "--predictors", f"llm={server.url}", "--set",
                                "llm.model=tiny", "--data-dir", str(lama_dir), "--out", str(out), "--store",
                                str(tmp_path / "store"), "--quiet", "--bootstrap", "50"], capsys)
        assert code == 0, err
    finally:
        server.close()
    records = [json.loads(line) for p in (out / "predictions" / "trex" / "llm").rglob("*.jsonl")
               for line in p.read_text().splitlines()]
    kinds = Counter(r["kind"] for r in records)
    said_by_length = {("yes", "no", None)[len(question_prompt(r["question"])) % 3] for r in records
                      if r["kind"] == "statement_checking"}
    assert said_by_length == {"yes", "no", None}  # every answer form is scored
    assert set(kinds) == {"triple_completion", "statement_checking", "entity_distinction", "predicate_reasoning"}
    assert not any("dropped" in r for r in records)
    for r in records:
        asked = question_prompt(r["question"])
        assert r["prompt"] == [{"role": "user", "content": asked}], r["uid"]
        if r["kind"] == "statement_checking":
            said = ("yes", "no", None)[len(asked) % 3]
            right = 1.0 if said == r["gold"] else 0.0  # a record holds fractions, the summary percentages
            assert (r["answer"], r["f1"], r["em"]) == (said, right, right), r["uid"]
        elif r["kind"] == "triple_completion":
            assert r["generation"] in (r["gold"], *r.get("alternatives", ())) and r["answer"] == r["generation"]
            assert (r["f1"], r["em"]) == (1.0, 1.0), r["uid"]
        else:
            assert (r["generation"], r["answer"], r["f1"], r["em"]) == ("Atlantis", "Atlantis", 0.0, 0.0), r["uid"]
    rows = json.loads((out / "summary.json").read_text())
    get = {(r["metric"], r["group"]): r["value"] for r in rows if r["predictor"] == "llm" and r["scope"] == "own"}
    scored = [r["em"] for r in records]
    assert get[("em", "all")] == pytest.approx(100.0 * sum(scored) / len(scored))
    assert get[("f1", "triple_completion")] == 100.0 and get[("f1", "entity_distinction")] == 0.0
