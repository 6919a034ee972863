"""The shared vocabulary: every predictor, KB or LM, takes `Query`s and returns `Prediction`s."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from operator import attrgetter
from typing import Literal

Slot = Literal["object", "subject"]
RELATION_TYPES = ("1-1", "N-1", "N-M")
SUBJECT_SLOT = "[X]"
OBJECT_SLOT = "[Y]"
# queries the runner hands a predictor per `predict` call, unless the predictor asks for other (`chunk_size`)
QUERIES_PER_CALL = 512
_SLOTS = re.compile(f"({re.escape(SUBJECT_SLOT)}|{re.escape(OBJECT_SLOT)})")


@lru_cache(maxsize=65536)
def _template_format(template: str) -> str:
    """A template as a `str.format` pattern, made once per template (a corpus asks each thousands of times): its
    text with braces doubled, `{0}` at [X] and `{1}` at [Y]. `format` inserts its arguments as they are, so a label
    holding a slot marker, a mask token or a brace is plain text."""
    # re.split with one capture group puts the slot markers at the odd positions
    return "".join(("{0}" if part == SUBJECT_SLOT else "{1}") if i % 2 else part.replace("{", "{{").replace("}", "}}")
                   for i, part in enumerate(_SLOTS.split(template)))


class _Pickled:
    """Pickled as the constructor and its field values: a slotted dataclass's own state methods look its
    fields up for every object (pickling all of T-REx's facts took 1.96 s that way, 1.37 s this way)."""

    __slots__ = ()

    def __reduce__(self):
        cls = type(self)
        names = _INIT_FIELDS.get(cls)
        if names is None:  # a subclass's own __slots__ name only its own fields: ask the dataclass once
            names = _INIT_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.init)
        return cls, tuple(getattr(self, name) for name in names)


_INIT_FIELDS: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class Entity(_Pickled):
    """A KB entity; `id` is a Wikidata id (Q...) where known, else another stable id or None."""

    label: str
    id: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Identity used for grouping: the id where present, else the label."""
        return self.id if self.id else f"label:{self.label}"


@dataclass(frozen=True, slots=True)
class Relation(_Pickled):
    id: str
    label: str
    template: str
    type: str | None = None
    description: str = ""
    # a closed answer space (BEAR): every fact of the relation is asked to rank exactly these objects
    answer_space: tuple[Entity, ...] = ()
    templates: tuple[str, ...] = ()  # all templates a corpus gives the relation (`template` is the one asked)
    domains: tuple[str, ...] = ()  # knowledge domains (BEAR's relation_info.json), a summary group


@dataclass(frozen=True, slots=True)
class Evidence(_Pickled):
    """A Wikipedia sentence or snippet aligned to a fact; `masked` has the object as [MASK]."""

    text: str
    masked: str | None = None
    sub_surface: str | None = None
    obj_surface: str | None = None
    url: str | None = None


_SET_EVIDENCE = tuple(getattr(Evidence, f.name).__set__ for f in fields(Evidence))
assert len(_SET_EVIDENCE) == 5


def new_evidence(text: str, masked: str | None, sub_surface: str | None, obj_surface: str | None,
                 url: str | None) -> Evidence:
    """`Evidence(...)` at half the cost of the frozen dataclass's `__init__` (a corpus loads hundreds of thousands)."""
    evidence = object.__new__(Evidence)
    set_text, set_masked, set_sub, set_obj, set_url = _SET_EVIDENCE
    set_text(evidence, text)
    set_masked(evidence, masked)
    set_sub(evidence, sub_surface)
    set_obj(evidence, obj_surface)
    set_url(evidence, url)
    return evidence


def evidences_of(*columns: Iterable) -> list[Evidence]:
    """`Evidence(*fields)` of each row of the columns, at half the cost of `__init__` (T-REx has 178K of them)."""
    return list(map(new_evidence, *columns))


@dataclass(frozen=True, slots=True)
class Fact(_Pickled):
    uid: str
    corpus: str
    relation: str
    subject: Entity
    object: Entity
    evidences: tuple[Evidence, ...] = ()
    cloze: str | None = None  # a given cloze sentence with [Y] (SQuAD, ConceptNet) instead of a template
    answer_idx: int | None = None  # the gold's position in its relation's `answer_space` (BEAR)


@dataclass(frozen=True, slots=True)
class SetFact(_Pickled):
    """A subject and relation whose gold is a *set* of objects (LM-KBC): zero, one or many.

    `objects` are scored by id; `labels` are the data's surface forms of the whole set (not aligned
    with `objects`), against which an answer no id was found for can still match by exact label.
    `scored` False: a split without objects (the challenge's test file): asked and submitted, never scored.
    """

    uid: str
    corpus: str
    relation: str
    subject: Entity
    objects: tuple[Entity, ...]
    labels: tuple[str, ...] = ()
    cloze: str | None = None
    scored: bool = True


@dataclass(frozen=True, slots=True)
class Query(_Pickled):
    """One fact asked one way. `template` holds [X] (subject) and/or [Y] (object) as in LAMA."""

    uid: str
    fact_uid: str
    corpus: str
    relation: str
    known: Entity
    slot: Slot
    template: str
    context: str | None = None
    # labels whose exact rank among all candidates the predictor should report (gold first, then
    # the other valid objects); set by the runner, ignored by predictors that return short lists
    targets: tuple[str, ...] = ()
    prompt: str = "lama"  # id of the prompt the template came from (a prompt set may give several)

    @property
    def asked(self) -> str:
        return OBJECT_SLOT if self.slot == "object" else SUBJECT_SLOT

    @property
    def own_facts(self) -> frozenset[str]:
        """The facts whose evidence is this query's own, left out by leak-free retrieval: its fact."""
        return frozenset((self.fact_uid,))

    @property
    def given(self) -> str:
        return SUBJECT_SLOT if self.slot == "object" else OBJECT_SLOT

    def text(self, mask: str) -> str:
        """The prompt with the known entity filled in and `mask` at the asked slot.

        Both slots are filled in one pass over the template, so a label that itself contains
        `[X]`, `[Y]` or a mask token is inserted as plain text and never read as a slot.
        """
        if self.slot == "object":
            return _template_format(self.template).format(self.known.label, mask)
        return _template_format(self.template).format(mask, self.known.label)


_QUERY_FIELDS = attrgetter(*(f.name for f in fields(Query)))  # a query's field values, in field order
_QUERY_SETS = tuple(getattr(Query, f.name).__set__ for f in fields(Query))
_SET_TARGETS = Query.targets.__set__  # type: ignore[attr-defined]


def with_targets(query: Query, targets: tuple[str, ...]) -> Query:
    """`dataclasses.replace(query, targets=targets)`: a plain `Query` is copied field by field without the frozen
    dataclass's constructor (half the time; a run asks tens of thousands of queries), another kind by `replace`."""
    if type(query) is not Query:
        return replace(query, targets=targets)
    new = object.__new__(Query)
    for put, value in zip(_QUERY_SETS, _QUERY_FIELDS(query)):
        put(new, value)
    _SET_TARGETS(new, targets)
    return new


@dataclass(frozen=True, slots=True)
class Answer(_Pickled):
    label: str
    score: float
    id: str | None = None


ID_JOIN = "|"  # joins the ids of an answer naming several entities (Freq's label count: "England" Q179876|Q21)


def entity_ids(id_: str | None) -> frozenset[str]:
    """The Wikidata ids an answer's id names: one, or several joined by `ID_JOIN` (LAMA's Freq counts a label over
    every entity of that label). Such an answer is right wherever any of them is the gold."""
    return frozenset(id_.split(ID_JOIN)) if id_ else frozenset()


def named_gold(id_: str | None, gold: Iterable[str]) -> str | None:
    """The gold id an answer's id names (the first in sorted order where it names several), None where none."""
    hits = sorted(entity_ids(id_).intersection(gold))
    return hits[0] if hits else None


_NEW = object.__new__
_SET_LABEL, _SET_SCORE, _SET_ID = Answer.label.__set__, Answer.score.__set__, Answer.id.__set__  # type: ignore[attr-defined]
assert tuple(f.name for f in fields(Answer)) == ("label", "score", "id")  # `answers_of` sets every field


def answers_of(labels: Iterable[str], scores: Iterable[float]) -> tuple[Answer, ...]:
    """`Answer(label, score)` of each pair, made at half the cost: a frozen dataclass's `__init__` goes through
    `object.__setattr__` for each field, and a masked LM makes ten or more answers per query (one loop, no call
    per answer)."""
    out = []
    for label, score in zip(labels, scores):
        answer = _NEW(Answer)
        _SET_LABEL(answer, label)
        _SET_SCORE(answer, score)
        _SET_ID(answer, None)
        out.append(answer)
    return tuple(out)


TOP_SAVED = 10  # answers a record keeps, unless its verdict uses one further down (`saved_answers`)
SCORE_DIGITS = 6  # a record's scores are rounded to this many decimal places


class RankedAnswers(Sequence):
    """Answers `(label, score)` with no id, held as a list of labels and a list of scores, made into `Answer`s only
    when one is read: a masked LM ranks ~110 answers per query, and a run's record needs their labels and its top
    ten alone (`answer_labels`, `answer_rows`). Reads as the tuple of those `Answer`s: equal to it, hashed, sliced
    (into a tuple), copied and pickled (as a tuple) alike. `rounded`, where given, holds the first scores (any
    number of them) already rounded to `SCORE_DIGITS` places, as `round` gives them."""

    __slots__ = ("labels", "scores", "rounded", "_made")

    def __init__(self, labels: list[str], scores: list[float], rounded: list[float] | None = None) -> None:
        self.labels = labels
        self.scores = scores
        self.rounded = rounded
        self._made: tuple[Answer, ...] | None = None

    def answers(self) -> tuple[Answer, ...]:
        """The tuple of `Answer`s, made on the first read."""
        made = self._made
        if made is None:
            made = self._made = answers_of(self.labels, self.scores)
        return made

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, at):
        return self.answers()[at]

    def __iter__(self):
        return iter(self.answers())

    def __reversed__(self):
        return reversed(self.answers())

    def __contains__(self, answer) -> bool:
        return answer in self.answers()

    def __eq__(self, other) -> bool:
        if isinstance(other, RankedAnswers):
            other = other.answers()
        return self.answers() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.answers())

    def __add__(self, other):
        return self.answers() + (other.answers() if isinstance(other, RankedAnswers) else other)

    def __radd__(self, other):
        return other + self.answers()

    def __repr__(self) -> str:
        return repr(self.answers())

    def __reduce__(self):
        return tuple, (self.answers(),)


def answer_labels(answers: Sequence[Answer]) -> list[str]:
    """Each answer's label, best first, read off `RankedAnswers` without making its `Answer`s."""
    if type(answers) is RankedAnswers:
        return answers.labels
    return [a.label for a in answers]


def answer_rows(answers: Sequence[Answer], top: int) -> list[list]:
    """`[label, score rounded to SCORE_DIGITS places, id]` of the first `top` answers, as a record keeps them (read off
    `RankedAnswers` without making its `Answer`s)."""
    if type(answers) is RankedAnswers:
        labels = answers.labels[:top]
        scores = answers.rounded
        if scores is None or len(scores) < len(labels):
            scores = [round(score, SCORE_DIGITS) for score in answers.scores[:top]]
        return [[label, score, None] for label, score in zip(labels, scores)]
    return [[a.label, round(a.score, SCORE_DIGITS), a.id] for a in answers[:top]]


@dataclass(frozen=True, slots=True)
class Prediction(_Pickled):
    """Ranked answers, best first. `lowercased` marks answers from an uncased model. `answers` is a tuple, or a
    masked LM's `RankedAnswers`, which reads as one."""

    query_uid: str
    answers: tuple[Answer, ...]
    lowercased: bool = False
    extra: dict = field(default_factory=dict, compare=False)
    # exact 1-based rank among all scored candidates of each `Query.targets` label it holds
    # (None: the predictor only returns a short list, ranks count within `answers`)
    target_ranks: dict[str, int] | None = field(default=None, compare=False)
    # answers of equal score are equally true (a KB's answers): a gold answer counts at the first
    # position of its tie group (`eval.metrics.gold_rank`), never behind an equal by label order
    shared_ties: bool = False


_PREDICTION_SETS = tuple(getattr(Prediction, f.name).__set__ for f in fields(Prediction))
assert tuple(f.name for f in fields(Prediction)) == ("query_uid", "answers", "lowercased", "extra", "target_ranks",
                                                    "shared_ties")  # `ranked_prediction` sets every field


def ranked_prediction(query_uid: str, answers: Sequence[Answer], lowercased: bool, extra: dict,
                      target_ranks: dict[str, int] | None) -> Prediction:
    """`Prediction(query_uid, answers, lowercased, extra, target_ranks)`, made without the frozen dataclass's
    constructor (as `answers_of`): a masked LM makes one per query."""
    pred = _NEW(Prediction)
    uid, ans, lower, ext, ranks, shared = _PREDICTION_SETS
    uid(pred, query_uid)
    ans(pred, answers)
    lower(pred, lowercased)
    ext(pred, extra)
    ranks(pred, target_ranks)
    shared(pred, False)
    return pred


ASKED_TEMPLATE = "template"  # `Prediction.extra`: the template a predictor asked in place of the query's own
# `Prediction.extra` of a closed question (a query with `choices`): each choice's score, and how it was computed, so
# that the choice picked can be checked against the scores behind it (a masked LM's saved top answers rarely hold them)
CHOICE_SCORES = "choice_scores"
CHOICE_SCORING = "choice_scoring"
# `Prediction.extra`: the prompt as asked where it is not the query's filled in (statement scoring strips labels)
ASKED_PROMPT = "prompt"


def asked_prompt(query: Query, pred: Prediction) -> str:
    """The prompt the predictor was asked, with [MASK] at the slot: a record holds what was scored, also where a
    predictor swaps the query's template for its own (a causal LM's `prompt=extended`) or rewrites the filled
    statement (statement scoring's stripped labels and upper-cased opening)."""
    asked = pred.extra.get(ASKED_PROMPT)
    if isinstance(asked, str):
        return asked
    template = pred.extra.get(ASKED_TEMPLATE)
    return (replace(query, template=template) if template else query).text("[MASK]")
