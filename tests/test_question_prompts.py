"""The exact prompts of each generation style, zero- and k-shot, plain and as chat turns."""

from __future__ import annotations

import pytest

from eval.errors import DataError
from eval.question_prompts import LMKBC_SYSTEM, Example, Prompter, read_questions
from eval.types import Entity, Query

TEMPLATES = {"P19": "[X] was born in [Y] .", "P20": "[X] died in [Y] .", "P17": "[X] is located in [Y] (country)."}
POOL = [Example("P19", "Dante", "Q1067", ("Florence",), "f1"),
        Example("P19", "Goethe", "Q5879", ("Frankfurt",), "f2"),
        Example("P19", "Ada Lovelace", "Q7259", ("London",), "f3"),
        Example("P20", "Dante", "Q1067", ("Ravenna",), "f4"),
        Example("P19", "Mozart", "Q254", ("Salzburg",), "f5")]


def query(rel: str, subject: str, key: str, uid: str = "q1", fact: str = "f0") -> Query:
    return Query(uid, fact, "trex", rel, Entity(subject, key), "object", TEMPLATES[rel])


def test_lama_style_continues_the_template_or_asks_a_blank():
    p = Prompter("lama", TEMPLATES)
    assert p.prompt(query("P19", "Alan Turing", "Q7251")).text == "Alan Turing was born in"
    assert p.prompt(query("P17", "Tower Bridge", "Q83125")).text == (
        "Q: Fill in the blank: Tower Bridge is located in ___ (country).\nA:")


def test_k_shot_examples_are_seeded_per_query_and_never_the_subject_or_the_fact():
    p = Prompter("lama", TEMPLATES, shots=2, seed=3, pool=POOL)
    asked = query("P19", "Dante", "Q1067", fact="f5")
    first = p.prompt(asked)
    assert first == p.prompt(asked)  # the same draw every time
    assert set(first.shots) <= {"f2", "f3"} and len(first.shots) == 2  # not Dante (f1), not the fact (f5)
    lines = first.text.split("\n")
    shown = {"f2": "Goethe was born in Frankfurt.", "f3": "Ada Lovelace was born in London."}
    assert lines == [shown[u] for u in first.shots] + ["Dante was born in"]
    other_seed = {Prompter("lama", TEMPLATES, shots=1, seed=s, pool=POOL).prompt(asked).shots for s in range(20)}
    assert other_seed == {("f2",), ("f3",)}  # seeds differ in what they draw, from the allowed pool only


def test_question_style_with_a_question_file_and_shots(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("Relation,PromptTemplate\nP19,Where was {subject_entity} born?\n")
    p = Prompter("question", TEMPLATES, shots=1, seed=0, questions=read_questions(path), pool=POOL[1:2])
    assert p.prompt(query("P19", "Alan Turing", "Q7251")).text == (
        "Q: Where was Goethe born?\nA: Frankfurt\n\nQ: Where was Alan Turing born?\nA:")
    chat = Prompter("question", TEMPLATES, shots=1, questions=read_questions(path), pool=POOL[1:2], chat=True)
    assert chat.prompt(query("P19", "Alan Turing", "Q7251")).sent() == [
        {"role": "user", "content": "Where was Goethe born?"}, {"role": "assistant", "content": "Frankfurt"},
        {"role": "user", "content": "Where was Alan Turing born?"}]


def test_lmkbc2024_style_is_the_baseline_recipe():
    questions = {"P19": "Where was {subject_entity} born?", "P20": "Where did {subject_entity} die?",
                 "P17": "Where is {subject_entity}?"}
    pool = [Example("P20", "Dante", "Q1067", ("Ravenna",), "t1"), Example("P19", "Goethe", "Q5879", (), "t2")]
    plain = Prompter("lmkbc2024", TEMPLATES, shots=2, questions=questions, pool=pool, every_relation=True)
    text = plain.prompt(query("P19", "Alan Turing", "Q7251")).text
    assert sorted(text.split("\n")[:2]) == ["Where did Dante die? Ravenna", "Where was Goethe born? None"]
    assert text.split("\n")[2:] == ["Where was Alan Turing born?"]
    # a pool of the relations a run asks (LAMA's own facts): the asked relation's examples, whatever else it asks
    own = Prompter("lmkbc2024", TEMPLATES, shots=2, questions=questions, pool=pool)
    assert own.prompt(query("P19", "Alan Turing", "Q7251")).text == "Where was Goethe born? None\nWhere was Alan " \
        "Turing born?"
    alone = Prompter("lmkbc2024", TEMPLATES, shots=2, questions=questions, pool=pool[1:])
    assert alone.prompt(query("P19", "Alan Turing", "Q7251")) == own.prompt(query("P19", "Alan Turing", "Q7251"))
    chat = Prompter("lmkbc2024", TEMPLATES, shots=2, questions=questions, pool=pool, chat=True)
    assert chat.prompt(query("P19", "Alan Turing", "Q7251")).sent() == [  # chat: examples of the same relation only
        {"role": "system", "content": LMKBC_SYSTEM}, {"role": "user", "content": "Where was Goethe born?"},
        {"role": "assistant", "content": "None"}, {"role": "user", "content": "Where was Alan Turing born?"}]


def test_bad_question_files_and_styles_are_one_line_errors(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("Relation,PromptTemplate\nP19,Where was he born?\n")
    with pytest.raises(DataError, match=r"q.csv:2: the question must hold \{subject_entity\} once"):
        read_questions(path)
    with pytest.raises(DataError, match="no question for P17, P20"):
        Prompter("lmkbc2024", TEMPLATES, questions={"P19": "Where was {subject_entity} born?"})
    with pytest.raises(DataError, match="use one of lama, question, lmkbc2024"):
        Prompter("cloze", TEMPLATES)


def test_a_prompt_set_asks_with_its_own_template():
    import dataclasses

    asked = dataclasses.replace(query("P19", "Alan Turing", "Q7251"), template="[X] is a native of [Y] .")
    assert Prompter("lama", TEMPLATES).prompt(asked).text == "Alan Turing is a native of"
    assert Prompter("question", TEMPLATES, shots=1, pool=POOL[1:2]).prompt(asked).text == (
        "Q: Fill in the blank: Goethe is a native of ___.\nA: Frankfurt\n\n"
        "Q: Fill in the blank: Alan Turing is a native of ___.\nA:")
