"""The prompts a model is asked by generation: a style per run, zero-shot or k-shot, plain text or chat turns.

Styles (`--set NAME.prompt=STYLE`):
  lama       the relation's template up to the asked slot, to be continued ("Dante was born in"); a template
             whose slot is not at its end is asked as a `question`. Examples are whole statements, one a line.
  question   "Q: <question>\\nA:" with the relation's question from a question file (`Relation,PromptTemplate`
             with `{subject_entity}`, as LM-KBC's `question_prompts.csv`), else "Fill in the blank: <template with
             ___>". Examples are earlier Q/A pairs; as chat, user and assistant turns.
  lmkbc2024  the LM-KBC 2024 baseline as written: its `question_prompts.csv`; as chat, its system message and
             examples of the same relation as turns; as plain text, examples of any relation of LM-KBC's train
             split (`every_relation`; a LAMA pool, the run's own facts, gives the asked relation's, so that a
             relation's prompts never depend on the relations a run loads), "question answers" one a line, then
             the question (answers joined by ", ", "None" for an empty set).
Examples (`shots=K`) are drawn per query from a pool the run does not score (LM-KBC's train split; on LAMA, the
relation's other facts), seeded by the query's uid, never the asked fact and never a fact of its subject.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import DataError
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Query

STYLES = ("lama", "question", "lmkbc2024")
LMKBC_SYSTEM = ("Given a question, your task is to provide the list of answers without any other context. If there "
                "are multiple answers, separate them with a comma. If there are no answers, type \"None\".")
QUESTIONS = Path("prompt_templates") / "question_prompts.csv"
BLANK = "___"


@dataclass(frozen=True)
class Example:
    """A solved question for k-shot prompts: its relation, subject (label and key) and answers."""

    relation: str
    subject: str
    subject_key: str
    answers: tuple[str, ...]
    uid: str = ""


@dataclass(frozen=True)
class Prompt:
    """What is sent: plain text, or chat turns (`messages`) that a chat template or server renders."""

    text: str
    messages: tuple[dict, ...] | None = None
    shots: tuple[str, ...] = field(default=(), compare=False)  # uids of the examples shown

    def sent(self) -> str | list[dict]:
        """The prompt as a record keeps it: the text, or the turns."""
        return self.text if self.messages is None else [dict(m) for m in self.messages]


def read_questions(path: Path) -> dict[str, str]:
    """A question file: `Relation,PromptTemplate` rows, each question holding `{subject_entity}` once."""
    from eval.lmkbc import template_rows

    out: dict[str, str] = {}
    for where, rel, question in template_rows(path, "question file not found"):
        if question.count("{subject_entity}") != 1:
            raise DataError(f"{where}: the question must hold {{subject_entity}} once, got {question!r}")
        out[rel] = question
    return out


def _fill(template: str, subject: str, answer: str) -> str:
    """The template with the subject and `answer` in place (one pass, so labels holding slots stay text)."""
    parts = template.replace(SUBJECT_SLOT, "\0X\0").replace(OBJECT_SLOT, "\0Y\0").split("\0")
    return "".join(subject if p == "X" else answer if p == "Y" else p for p in parts)


def _statement(template: str, subject: str, answer: str) -> str:
    text = _fill(template, subject, answer).strip()
    return text[:-2] + "." if text.endswith(" .") else text


def _stem(template: str) -> str | None:
    """The template before its [Y] when [Y] ends it (a full stop after it aside), else None."""
    head, _, tail = template.partition(OBJECT_SLOT)
    return head.rstrip() if tail.strip() in ("", ".") and SUBJECT_SLOT in head else None


class Prompter:
    """Builds each query's prompt for one style, shot count and seed; `chat` says whether turns are sent."""

    def __init__(self, style: str, templates: dict[str, str], *, shots: int = 0, seed: int = 0, chat: bool = False,
                 questions: dict[str, str] | None = None, pool: Sequence[Example] = (),
                 every_relation: bool = False) -> None:
        if style not in STYLES:
            raise DataError(f"prompt style {style!r}: use one of {', '.join(STYLES)}")
        self.style, self.templates, self.shots, self.seed, self.chat = style, templates, shots, seed, chat
        self.questions = questions or {}
        if style == "lmkbc2024":
            missing = sorted(set(templates) - set(self.questions))
            if missing:
                raise DataError(f"prompt=lmkbc2024: the question file has no question for {', '.join(missing)}")
        self.pool: dict[str, list[Example]] = {}
        for ex in pool:
            self.pool.setdefault(ex.relation, []).append(ex)
        self.every = list(pool)
        self.every_relation = every_relation  # the pool holds every relation, whatever the run asks

    def describe(self) -> dict:
        return {"prompt": self.style, "shots": self.shots, "shots_seed": self.seed, "chat": self.chat}

    def asked_as_questions(self) -> list[str]:
        """The relations whose template does not end in its slot: under `lama` they are asked as a `question`."""
        if self.style != "lama":
            return []
        return sorted(rel for rel, template in self.templates.items() if _stem(template) is None)

    def question(self, relation: str, subject: str, template: str | None = None) -> str:
        """The relation's question about `subject`, else its template (`template`: the one asked) with a blank."""
        if relation in self.questions:
            return self.questions[relation].replace("{subject_entity}", subject)
        return f"Fill in the blank: {_statement(template or self.templates[relation], subject, BLANK)}"

    def _examples(self, query: Query) -> list[Example]:
        if not self.shots:
            return []
        # the baseline's plain prompt draws from every relation
        same = self.style != "lmkbc2024" or self.chat or not self.every_relation
        pool = self.pool.get(query.relation, []) if same else self.every
        fit = [e for e in pool if e.subject_key != query.known.key and e.uid != query.fact_uid]
        rng = random.Random(f"{self.seed}:{query.uid}")
        return rng.sample(fit, min(self.shots, len(fit)))

    def prompt(self, query: Query, asked: str | None = None) -> Prompt:
        """The prompt of a query; `asked`: a question worded by the experiment (KMIR's), sent as written,
        zero-shot. A subject-slot query (asked back, as coherency does) is the template with the object in
        place and a blank for the subject, in the `question` form whatever the style."""
        if asked is not None:
            return self._qa(asked, [], ())
        examples = self._examples(query)
        uids = tuple(e.uid for e in examples)
        rel, subject, template = query.relation, query.known.label, query.template  # a prompt set's own template
        if query.slot == "subject":
            if self.style == "lmkbc2024" or rel in self.questions:
                raise DataError(f"{rel}: a question about a subject cannot ask for the subject; asking a subject "
                                "back takes prompt=question or prompt=lama without a question file")
            pairs = [(_blank_subject(template if e.relation == rel else self.templates[e.relation],
                                     ", ".join(e.answers)), e.subject) for e in examples]
            return self._qa(_blank_subject(template, subject), pairs, uids)
        if self.style == "lama" and _stem(template) is not None:
            lines = [_statement(template if e.relation == rel else self.templates[e.relation], e.subject,
                                ", ".join(e.answers)) for e in examples]
            text = "\n".join([*lines, _fill(_stem(template) or "", subject, "")])
            return Prompt(text, ({"role": "user", "content": text},) if self.chat else None, uids)
        if self.style == "lmkbc2024":
            answer = [", ".join(e.answers) if e.answers else "None" for e in examples]
            if not self.chat:
                lines = [f"{self.question(e.relation, e.subject)} {a}" for e, a in zip(examples, answer)]
                return Prompt("\n".join(lines) + "\n" + self.question(rel, subject), None, uids)
            turns = [{"role": "system", "content": LMKBC_SYSTEM}]
            for e, a in zip(examples, answer):
                turns += [{"role": "user", "content": self.question(e.relation, e.subject)},
                          {"role": "assistant", "content": a}]
            turns.append({"role": "user", "content": self.question(rel, subject)})
            return Prompt(self.question(rel, subject), tuple(turns), uids)
        pairs = [(self.question(e.relation, e.subject, template), ", ".join(e.answers) or "None") for e in examples]
        return self._qa(self.question(rel, subject, template), pairs, uids)

    def _qa(self, asked: str, pairs: list[tuple[str, str]], uids: tuple[str, ...]) -> Prompt:
        """A question after solved (question, answer) pairs: as chat turns, or as "Q: …\nA: …" blocks."""
        if self.chat:
            turns = []
            for q, a in pairs:
                turns += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
            return Prompt(asked, (*turns, {"role": "user", "content": asked}), uids)
        shown = [f"Q: {q}\nA: {a}" for q, a in pairs]
        return Prompt("\n\n".join([*shown, f"Q: {asked}\nA:"]), None, uids)


def _blank_subject(template: str, obj: str) -> str:
    """The question asking a template's subject, its object given."""
    return f"Fill in the blank: {_statement(template, BLANK, obj)}"
