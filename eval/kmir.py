"""KMIR-style questions from KB facts, and their scores (KMIR §3–4, Tables 3, 5 and 9).

Four question kinds, each testing one knowledge ability (KMIR §3):

| kind | ability | answer |
|---|---|---|
| `triple_completion` | memorization | open: the object label (several tokens allowed) |
| `entity_distinction` | identification | one of four entities: the one whose type differs |
| `statement_checking` | identification | "yes" for a true triple, "no" for a corrupted one |
| `predicate_reasoning` | reasoning | one of four entities: the object of an inferred fact |

Every question names the facts it rests on; questions built from one gold fact share its uid as
`qset_id`, so robustness (KMIR Table 5) can ask whether a predictor answers all of a fact's
questions right, some, or none. Generation is seeded and depends on nothing but its inputs.

Scores: token F1 and exact match with SQuAD's normalisation (`eval.f1`), the best over the
question's acceptable answers; a question counts as right for robustness when its exact match
is 1.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import DataError
from eval.f1 import best_over_golds
from eval.jsonl import read_text
from eval.relations import relation_id
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Entity, Fact, Relation

TRIPLE_COMPLETION = "triple_completion"
ENTITY_DISTINCTION = "entity_distinction"
STATEMENT_CHECKING = "statement_checking"
PREDICATE_REASONING = "predicate_reasoning"
KINDS = (TRIPLE_COMPLETION, ENTITY_DISTINCTION, STATEMENT_CHECKING, PREDICATE_REASONING)
KNOWLEDGE_TYPES = {
    TRIPLE_COMPLETION: "memorization",
    ENTITY_DISTINCTION: "identification",
    STATEMENT_CHECKING: "identification",
    PREDICATE_REASONING: "reasoning",
}
MASK = "[MASK]"
YES, NO = "yes", "no"
TYPE_ASPECT = "type"
INSTANCE_OF = "P31"  # the relation whose objects are types, beside the instance-of data

# KMIR Appendix A's prompt forms for the two identification kinds
STATEMENT_TEMPLATES = (
    "Is the statement \u201c{statement}\u201d true? [MASK].",
    "{statement}, is this true? [MASK].",
    "Is this true, {statement}? [MASK].",
    "Is the following statement true, {statement}? [MASK].",
)
DISTINCTION_TEMPLATES = (
    "{e1}, {e2}, {e3}, and {e4}, which is an outlier, in terms of the {aspect}? [MASK].",
    "Which is different from the others in terms of the {aspect}, {e1}, {e2}, {e3}, and {e4}? [MASK].",
    "Which is different from the others among the following entities in terms of the {aspect}, "
    "{e1}, {e2}, {e3}, and {e4}? [MASK].",
    "Among {e1}, {e2}, {e3}, and {e4}, [MASK] is the outlier in terms of the {aspect}.",
)
_SLOTS = re.compile(f"({re.escape(SUBJECT_SLOT)}|{re.escape(OBJECT_SLOT)})")

FactKey = tuple[str, str, str]  # (subject key, relation id, object key)


@dataclass(frozen=True, slots=True)
class InferredFact:
    """A fact an axiom derived, with the premises (gold or inferred) it was derived from.

    One per (fact, axiom): a fact two axioms derive appears twice. Premises are
    (subject key, relation id, object key) as `Entity.key` and relation ids name them; an inferred premise
    became derivable before the fact did (`kb.reasoning.derive`), so following premises ends in gold facts.
    """

    subject: Entity
    relation: str
    object: Entity
    axiom: str
    premises: tuple[FactKey, ...] = ()

    @property
    def key(self) -> FactKey:
        return (self.subject.key, self.relation, self.object.key)


@dataclass(frozen=True, slots=True)
class KmirQuestion:
    """One question. `text` holds the answer slot as [MASK]; `template` the relation's [X]/[Y] form.

    `choices` (with the matching `entities`) are set for choice kinds; `answer` is the gold and
    `alternatives` other answers that also count (other objects the KB holds for the subject).
    `subject`/`object` give the triple the question states or asks (object None when asked).
    """

    id: str
    qset_id: str
    kind: str
    knowledge_type: str
    relation: str
    text: str
    template: str
    answer: str
    source_facts: tuple[str, ...]
    choices: tuple[str, ...] = ()
    entities: tuple[Entity, ...] = ()
    alternatives: tuple[str, ...] = ()
    subject: Entity | None = None
    object: Entity | None = None
    aspect: str = ""
    axiom: str = ""

    @property
    def golds(self) -> tuple[str, ...]:
        return (self.answer, *self.alternatives)


_ARTICLE_A = re.compile(r"(^|\s)([Aa])(\s+)$")


def question_prompt(text: str) -> str:
    """A question's text as a model asked by generation reads it: one that ends in its answer slot ("... true?
    [MASK].") without the slot, any other with the slot as a blank to fill ("Fill in the blank: Dante was born in
    ___.")."""
    from eval.question_prompts import BLANK

    head, _, tail = text.partition(MASK)
    if head.rstrip().endswith("?") and tail.strip() in ("", "."):
        return head.rstrip()
    text = text.replace(MASK, BLANK).strip()
    return "Fill in the blank: " + (text[:-2] + "." if text.endswith(" .") else text)


def fill(template: str, subject: str, obj: str) -> str:
    """The template with [X] and [Y] filled in one pass (labels holding `[X]` stay plain text); "a" before a
    label that starts with a vowel becomes "an" ("is an actor", never "is a actor")."""
    values = {SUBJECT_SLOT: subject, OBJECT_SLOT: obj}
    out: list[str] = []
    for i, part in enumerate(_SLOTS.split(template)):
        if i % 2:
            value = values[part]
            if value[:1].lower() in "aeiou" and value and out and _ARTICLE_A.search(out[-1]):
                out[-1] = _ARTICLE_A.sub(lambda m: f"{m.group(1)}{m.group(2)}n{m.group(3)}", out[-1])
            out.append(value)
        else:
            out.append(part)
    return "".join(out)


def statement(template: str, subject: str, obj: str) -> str:
    """The filled template as a statement: LAMA's trailing " ." removed."""
    text = fill(template, subject, obj).strip()
    return text[:-1].rstrip() if text.endswith(".") else text


def in_sentence(form: str, template: str, text: str) -> str:
    """A statement placed in a question form: where it does not open the sentence and begins with the
    template's own word ("The capital of ..."), that word is lower-cased; a label that opens it stays as written."""
    opens = form.startswith("{statement}") or "\u201c{statement}" in form
    if opens or template.lstrip().startswith((SUBJECT_SLOT, OBJECT_SLOT)):
        return text
    return text[:1].lower() + text[1:]


def load_instance_of(path: str | Path) -> dict[str, tuple[tuple[str, str], ...]]:
    """X-FACTR's `TREx_instanceof.txt`: entity id -> ((type id, type label), ...).

    One entity a line: `Q16<TAB>Q6256,country<TAB>...`; an entity may have no types.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such instance-of file (X-FACTR's TREx_instanceof.txt)")
    types: dict[str, tuple[tuple[str, str], ...]] = {}
    text = read_text(path, f"instance-of file {path}")
    for lineno, line in enumerate(text.split("\n"), 1):
        parts = line.rstrip("\r").split("\t")
        entity = parts[0].strip()
        if not entity:
            if len(parts) == 1:
                continue
            raise DataError(f"{path}:{lineno}: no entity id before the types")
        pairs = []
        for part in parts[1:]:
            if not part:
                continue
            tid, sep, label = part.partition(",")
            if not sep or not tid or not label:
                raise DataError(f"{path}:{lineno}: type {part!r} is not 'TYPE_ID,label'")
            pairs.append((tid, label))
        types[entity] = tuple(pairs)
    if not types:
        raise DataError(f"{path}: no entities")
    return types


def load_multi_rel(path: str | Path) -> dict[tuple[str, str], frozenset[str]]:
    """X-FACTR's `TREx_multi_rel.txt`: (subject id, relation) -> every object id Wikidata holds for them.

    One pair a line: `Q615<TAB>P27<TAB>Q414 Q38 Q29`. A corpus such as LAMA keeps one object of an N-M fact; this
    list keeps a corrupted statement ("Germany maintains diplomatic relations with Russia") from being one that is
    true, as KMIR filters its corrupted triples against the whole KB.
    """
    path = Path(path)
    held: dict[tuple[str, str], frozenset[str]] = {}
    text = read_text(path, f"multi-relation file {path}")
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not parts[0] or not parts[1] or not parts[2].split():
            raise DataError(f"{path}:{lineno}: not 'SUBJECT_ID<TAB>RELATION<TAB>OBJECT_ID ...'")
        key = (parts[0], parts[1])
        held[key] = held.get(key, frozenset()) | frozenset(parts[2].split())
    return held


class _Kb:
    """What the generator looks up: facts by subject, relation and object (gold and inferred), and types."""

    def __init__(self, facts: Sequence[Fact], inferred: Sequence[InferredFact],
                 instance_of: Mapping[str, Sequence[tuple[str, str]]],
                 known_true: Mapping[tuple[str, str], Collection[str]] | None = None) -> None:
        self.instance_of = instance_of
        self.known_true = known_true or {}  # (subject id, relation) -> object ids true beyond the facts
        # (entity id, relation) -> ids `known_true` links it to under the relation, either way round
        self.true_linked: dict[tuple[str, str], set[str]] = defaultdict(set)
        for (subject_id, rel), object_ids in self.known_true.items():
            self.true_linked[(subject_id, rel)].update(object_ids)
            for object_id in object_ids:
                self.true_linked[(object_id, rel)].add(subject_id)
        self.entities: dict[str, Entity] = {}
        self.uid: dict[FactKey, str] = {}
        self.objects: dict[tuple[str, str], set[str]] = defaultdict(set)  # (s, r) -> object keys
        self.object_labels: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.subjects_of: dict[str, dict[str, Entity]] = defaultdict(dict)
        self.objects_of: dict[str, dict[str, Entity]] = defaultdict(dict)
        self.holders: dict[tuple[str, str], set[str]] = defaultdict(set)  # (r, o) -> subject keys
        self.linked: dict[str, set[str]] = defaultdict(set)  # entity key -> keys of entities it has a fact with
        self.linked_labels: dict[str, set[str]] = defaultdict(set)  # entity key -> their labels
        self.gold_objects_of: dict[str, dict[str, Entity]] = defaultdict(dict)
        for f in facts:
            self.uid.setdefault((f.subject.key, f.relation, f.object.key), f.uid)
            self._add(f.subject, f.relation, f.object)
            self.gold_objects_of[f.relation].setdefault(f.object.key, f.object)
        # fact -> each derivation of it (one per axiom), by axiom name: none is lost to another
        self.inferred: dict[FactKey, list[InferredFact]] = {}
        for i in sorted(inferred, key=lambda i: (i.key, i.axiom, i.premises)):
            self.inferred.setdefault(i.key, []).append(i)
            self._add(i.subject, i.relation, i.object)
        self._roots: dict[FactKey, list[str]] = {}
        self._sorted: dict[tuple[str, str], list[Entity]] = {}
        self._typed: dict[str, dict[str, list[Entity]]] = {}
        self._labels: dict[tuple[int, str], set[str]] = {}
        self._types: dict[str, dict[str, str]] = {}

    def types(self, entity: Entity) -> dict[str, str]:
        """Type id -> label of an entity's types: the instance-of data and the objects of its P31 facts."""
        if entity.key not in self._types:
            found = dict(self.instance_of.get(entity.id or "", ()))
            for key in sorted(self.objects.get((entity.key, INSTANCE_OF), ())):
                found.setdefault(key, self.entities[key].label)
            self._types[entity.key] = found
        return self._types[entity.key]

    def pool(self, slot: str, relation: str) -> list[Entity]:
        """Entities in key order: a relation's "subject"s or "object"s (gold and inferred facts), its
        "gold-object"s, or "all" entities."""
        key = (slot, relation)
        if key not in self._sorted:
            source = {"all": self.entities, "subject": self.subjects_of[relation],
                      "object": self.objects_of[relation], "gold-object": self.gold_objects_of[relation]}[slot]
            self._sorted[key] = [e for _, e in sorted(source.items())]
        return self._sorted[key]

    def typed(self, slot: str, relation: str) -> dict[str, list[Entity]]:
        """Type id -> the entities of `pool(slot, relation)` that have it, in key order."""
        key = f"{slot}\t{relation}"
        if key not in self._typed:
            index: dict[str, list[Entity]] = defaultdict(list)
            for e in self.pool(slot, relation):
                for tid in self.types(e):
                    index[tid].append(e)
            self._typed[key] = dict(index)
        return self._typed[key]

    def labels(self, typed: dict[str, list[Entity]], tid: str) -> set[str]:
        """The distinct labels of `typed[tid]` (cached per index and type)."""
        key = (id(typed), tid)
        if key not in self._labels:
            self._labels[key] = {e.label for e in typed[tid]}
        return self._labels[key]

    def _add(self, s: Entity, r: str, o: Entity) -> None:
        self.entities.setdefault(s.key, s)
        self.entities.setdefault(o.key, o)
        self.objects[(s.key, r)].add(o.key)
        self.object_labels[(s.key, r)].add(o.label)
        self.subjects_of[r].setdefault(s.key, s)
        self.objects_of[r].setdefault(o.key, o)
        self.holders[(r, o.key)].add(s.key)
        self.linked[s.key].add(o.key)
        self.linked[o.key].add(s.key)
        self.linked_labels[s.key].add(o.label)
        self.linked_labels[o.key].add(s.label)

    def roots(self, key: FactKey, path: frozenset[FactKey] = frozenset()) -> list[str]:
        """Uids of the gold facts a fact rests on: its own for a gold fact, else those of its first derivation (by
        axiom name; `sources`). `path`: the facts whose derivations are being followed."""
        if key in self.uid:
            return [self.uid[key]]
        if key not in self._roots:
            found = self.inferred.get(key)
            if not found:
                raise DataError(f"inferred premise {' '.join(key)} is neither a gold fact nor an inferred one: the "
                                "closure was computed from other facts (recompute it: kbc kb infer)")
            self._roots[key] = self.sources(found[0], path)
        return self._roots[key]

    def sources(self, fact: InferredFact, path: frozenset[FactKey] = frozenset()) -> list[str]:
        """Uids of the gold facts this derivation rests on, premises in order, depth first, each inferred premise by
        its own first derivation. Derivations are well-founded (`kb.reasoning.derive`), so the walk ends in gold
        facts; one that comes back to a fact on its way is provenance recorded otherwise, refused, never cut short
        to fewer facts."""
        path = path | {fact.key}
        out: list[str] = []
        for premise in fact.premises:
            if premise in path:
                raise DataError(f"the derivation of {' '.join(fact.key)} by {fact.axiom} rests on "
                                f"{' '.join(premise)}, which rests on it: provenance of an earlier kbc version "
                                "(recompute it: kbc kb infer)")
            out += [u for u in self.roots(premise, path) if u not in out]
        return out


def _template(relations: Mapping[str, Relation], relation: str) -> str:
    rel = relations.get(relation)
    if rel is not None and rel.template:
        return rel.template
    label = rel.label if rel is not None else relation
    return f"{SUBJECT_SLOT} {label} {OBJECT_SLOT} ."


def _aspect(relations: Mapping[str, Relation], relation: str) -> str:
    rel = relations.get(relation)
    return rel.label if rel is not None and rel.label else relation


def _sample(items: list, n: int | None, rng: random.Random) -> list:
    return list(items) if n is None or n >= len(items) else rng.sample(items, n)


def generate(facts: Sequence[Fact], inferred: Sequence[InferredFact],
             instance_of: Mapping[str, Sequence[tuple[str, str]]], seed: int = 0,
             per_relation: int | None = None, relations: Mapping[str, Relation] | None = None,
             asked: Iterable[str] | None = None,
             known_true: Mapping[tuple[str, str], Collection[str]] | None = None) -> list[KmirQuestion]:
    """KMIR questions over `facts` (and the `inferred` facts), seeded and deterministic.

    Per relation, `per_relation` facts (all when None) are drawn; per axiom, `per_relation`
    inferred facts. Each drawn fact gets a triple completion, a true and a corrupted statement
    check (when the relation has an object the KB does not hold for the subject) and an entity
    distinction (when one can be built); each drawn inferred fact gets a predicate-reasoning
    question naming the axiom it was drawn for, and the gold facts that axiom's derivation rests on
    (`_Kb.sources`) get the other kinds too, so its Q-set is complete.
    `relations` gives templates and labels (new properties of an ontology included). `asked`
    (fact uids; default all) limits the questions to those resting on asked facts only, while
    every fact still serves as the KB (alternatives, corrupted statements, distractors); `known_true`
    (`load_multi_rel`) adds the objects a corrupted statement or a distractor must not name either.
    """
    relations = relations or {}
    allowed = None if asked is None else set(asked)
    kb = _Kb(facts, inferred, instance_of, known_true)
    by_uid = {f.uid: f for f in facts}
    by_relation: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        by_relation[f.relation].append(f)

    drawn: list[str] = []
    for rel in sorted(by_relation):
        group = sorted((f for f in by_relation[rel] if allowed is None or f.uid in allowed), key=lambda f: f.uid)
        drawn += [f.uid for f in _sample(group, per_relation, random.Random(f"{seed}:draw:{rel}"))]

    reasoning: list[KmirQuestion] = []
    by_axiom: dict[str, list[InferredFact]] = defaultdict(list)
    for fact in inferred:
        by_axiom[fact.axiom].append(fact)
    used: set[FactKey] = set()
    for axiom in sorted(by_axiom):
        group = sorted((i for i in by_axiom[axiom] if i.key not in kb.uid
                        and (allowed is None or set(kb.sources(i)) <= allowed)), key=lambda i: i.key)
        rng = random.Random(f"{seed}:reason:{axiom}")
        for fact in _sample([i for i in group if i.key not in used], per_relation, rng):
            used.add(fact.key)
            q = _predicate_reasoning(fact, kb, relations, rng)
            if q is not None:
                reasoning.append(q)
                drawn += [u for u in q.source_facts if u in by_uid]

    questions: list[KmirQuestion] = []
    done: set[str] = set()
    for uid in drawn:
        if uid in done:
            continue
        done.add(uid)
        fact = by_uid[uid]
        rng = random.Random(f"{seed}:fact:{uid}")
        questions.append(_triple_completion(fact, kb, relations))
        questions += _statement_checks(fact, kb, relations, rng)
        q = _entity_distinction(fact, kb, relations, rng)
        if q is not None:
            questions.append(q)
    return questions + reasoning


def _triple_completion(fact: Fact, kb: _Kb, relations: Mapping[str, Relation]) -> KmirQuestion:
    template = _template(relations, fact.relation)
    others = sorted(kb.object_labels[(fact.subject.key, fact.relation)] - {fact.object.label})
    return KmirQuestion(
        f"tc:{fact.uid}", fact.uid, TRIPLE_COMPLETION, KNOWLEDGE_TYPES[TRIPLE_COMPLETION], fact.relation,
        fill(template, fact.subject.label, MASK), template, fact.object.label, (fact.uid,),
        alternatives=tuple(others), subject=fact.subject)


def _statement_checks(fact: Fact, kb: _Kb, relations: Mapping[str, Relation],
                      rng: random.Random) -> list[KmirQuestion]:
    """The true triple, and the triple with another gold object of the relation, of a type the true object
    has, that the KB (gold and inferred, and `known_true`) does not hold for the subject.

    Sharing a type keeps the false statement plausible (a city for a city, never a person); an object
    without types in the data gets no corrupted statement.
    """
    template = _template(relations, fact.relation)
    held = kb.objects[(fact.subject.key, fact.relation)]
    held_labels = kb.object_labels[(fact.subject.key, fact.relation)]
    true_ids = kb.known_true.get((fact.subject.id or "", relation_id(fact.relation)), ())
    typed = kb.typed("gold-object", fact.relation)
    same_type = {e.key: e for t in sorted(kb.types(fact.object)) for e in typed.get(t, [])}
    wrong = [same_type[k] for k in sorted(same_type)  # never the subject itself ("Essex shares border with Essex")
             if k not in held and same_type[k].label not in held_labels and k != fact.subject.key
             and same_type[k].label != fact.subject.label and same_type[k].id not in true_ids]
    out = []
    for sign, obj, answer in (("+", fact.object, YES), ("-", rng.choice(wrong) if wrong else None, NO)):
        if obj is None:
            continue
        form = rng.choice(STATEMENT_TEMPLATES)
        out.append(KmirQuestion(
            f"sc{sign}:{fact.uid}", fact.uid, STATEMENT_CHECKING, KNOWLEDGE_TYPES[STATEMENT_CHECKING],
            fact.relation, form.format(statement=in_sentence(form, template, statement(
                template, fact.subject.label, obj.label))), template,
            answer, (fact.uid,), choices=(YES, NO), subject=fact.subject, object=obj))
    return out


def _entity_distinction(fact: Fact, kb: _Kb, relations: Mapping[str, Relation],
                        rng: random.Random, tries: int = 5) -> KmirQuestion | None:
    """The subject as the outlier among three entities of the same relation that share what it lacks.

    First by type (instance-of data and the facts' own P31): three other subjects of the relation
    share a type the subject does not have. Else by the facts: three other subjects share an
    object of the relation the subject does not hold, as KMIR's "in terms of occupation". Either
    way the subject must be the only choice that lacks a category the three others share.
    """
    s, rel = fact.subject, fact.relation
    group: list[Entity] | None = None
    aspect = ""
    own = kb.types(s)
    if own:
        typed = kb.typed("subject", rel)
        eligible = sorted(t for t, es in typed.items()
                          if t not in own and len(kb.labels(typed, t) - {s.label}) >= 3)
        rng.shuffle(eligible)
        for t in eligible[:tries]:
            group = _unique_group([e for e in typed[t] if e.label != s.label], s, lambda e: set(kb.types(e)), rng)
            if group:
                aspect = TYPE_ASPECT
                break
    if not group:
        held = kb.objects[(s.key, rel)]
        candidates: dict[str, list[Entity]] = {}
        for o in kb.pool("object", rel):
            if o.key in held or o.key == s.key:
                continue
            others = [kb.entities[k] for k in sorted(kb.holders[(rel, o.key)]) if kb.entities[k].label != s.label]
            if len({e.label for e in others}) >= 3:
                candidates[o.key] = others
        keys = sorted(candidates)
        rng.shuffle(keys)
        for key in keys[:tries]:
            group = _unique_group(candidates[key], s, lambda e: kb.objects.get((e.key, rel), set()), rng)
            if group:
                aspect = _aspect(relations, rel)
                break
    if not group:
        return None
    entities = [*group, s]
    rng.shuffle(entities)
    names = [e.label for e in entities]
    form = rng.choice(DISTINCTION_TEMPLATES)
    text = form.format(e1=names[0], e2=names[1], e3=names[2], e4=names[3], aspect=aspect)
    return KmirQuestion(
        f"ed:{fact.uid}", fact.uid, ENTITY_DISTINCTION, KNOWLEDGE_TYPES[ENTITY_DISTINCTION], rel, text, "",
        s.label, (fact.uid,), choices=tuple(names), entities=tuple(entities), subject=s, aspect=aspect)


def outlier(categories: Sequence[set[str]]) -> int | None:
    """The index of the only member lacking a category all the others share (None: no such single member)."""
    lacking = [i for i, own in enumerate(categories)
               if set.intersection(*(set(c) for j, c in enumerate(categories) if j != i)) - set(own)]
    return lacking[0] if len(lacking) == 1 else None


def _unique_group(members: list[Entity], answer: Entity, categories, rng: random.Random,
                  tries: int = 5) -> list[Entity] | None:
    """Three members with distinct labels among which `answer` is the only outlier, in a few draws."""
    for _ in range(tries):
        group = _distinct_labels(members, rng)
        if outlier([categories(e) for e in (*group, answer)]) == 3:
            return group
    return None


def _distinct_labels(entities: list[Entity], rng: random.Random, n: int = 3) -> list[Entity]:
    """`n` entities with distinct labels, drawn by `rng` (first entity of each label, in order)."""
    firsts: dict[str, Entity] = {}
    for e in entities:
        firsts.setdefault(e.label, e)
    return rng.sample(list(firsts.values()), n)


def _predicate_reasoning(fact: InferredFact, kb: _Kb, relations: Mapping[str, Relation],
                         rng: random.Random) -> KmirQuestion | None:
    """The inferred fact's object among three distractors the KB (gold and inferred) does not link to the subject.

    Distractors are objects of the same relation; where it has too few, entities sharing a type
    with the object. A distractor has no fact with the subject under any relation, either way
    round (gold or inferred): the axioms tie relations together (inverse, sub-property, chains), so
    an entity the subject is linked to at all might be a second right answer; so might one `known_true` links
    it to, either way round, under the asked relation or a premise's (Quebec borders Vermont though the corpus
    keeps only Maine). Four choices make the answer unique (KMIR §4.3).
    """
    s, rel, o = fact.subject, fact.relation, fact.object
    linked, linked_labels = kb.linked[s.key], kb.linked_labels[s.key]
    asked = {relation_id(rel)} | {relation_id(premise[1]) for premise in fact.premises}
    true_linked = set().union(*(kb.true_linked.get((s.id or "", r), ()) for r in sorted(asked)))

    def usable(pool: Iterable[Entity]) -> list[Entity]:
        return [e for e in pool if e.key not in linked and e.label not in linked_labels and e.key != s.key
                and e.label != s.label and (e.id or "") not in true_linked]

    candidates = usable(kb.pool("object", rel))
    if len({e.label for e in candidates}) < 3:
        typed = kb.typed("all", "")
        same_type = {e.key: e for t in sorted(kb.types(o)) for e in typed.get(t, [])}
        seen = {e.key for e in candidates}
        candidates += [e for e in usable(same_type[k] for k in sorted(same_type)) if e.key not in seen]
    if len({e.label for e in candidates}) < 3:
        return None
    entities = [*_distinct_labels(candidates, rng), o]
    rng.shuffle(entities)
    names = tuple(e.label for e in entities)
    template = _template(relations, rel)
    sources = tuple(kb.sources(fact))
    if not sources:
        return None
    text = f"{fill(template, s.label, MASK)} Choices: {', '.join(names)}."
    return KmirQuestion(
        f"pr:{fact.axiom}:{s.key}:{rel}:{o.key}", sources[0], PREDICATE_REASONING,
        KNOWLEDGE_TYPES[PREDICATE_REASONING], rel, text, template, o.label, sources, choices=names,
        entities=tuple(entities), subject=s, axiom=fact.axiom)


# --- scores ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class KmirScore:
    question_id: str
    qset_id: str
    kind: str
    f1: float
    em: float
    prediction: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def as_record(self) -> dict:
        return {"question_id": self.question_id, "qset_id": self.qset_id, "kind": self.kind,
                "f1": self.f1, "em": self.em, "prediction": self.prediction, **self.extra}


def score(question: KmirQuestion, prediction: str | None) -> KmirScore:
    """F1 and EM of one answer (None: no answer, scored as an empty string) against the question's golds."""
    text = prediction or ""
    f1, em = best_over_golds(text, question.golds)
    return KmirScore(question.id, question.qset_id, question.kind, f1, em, text)


ROBUSTNESS = ("robust_all", "robust_partial", "robust_none")
PER_RELATION = ("f1", "em")  # the metrics scored per relation too (a question's relation: its fact's, or derived)


def summarize_kmir(records: Iterable[Mapping | KmirScore]) -> list[dict]:
    """Tidy rows `{setting, group, metric, value, n_facts}` over scored questions.

    Groups: each question kind present, `all`, and each relation the questions ask (`f1` and `em` alone:
    the mean over that relation's questions, whatever their kind). Metrics, in percent: `f1` and `em` (means
    over the group's questions) and the Q-set robustness shares of KMIR Table 5 (`robust_all`:
    every question of the fact's Q-set exactly right; `robust_partial`: some; `robust_none`:
    none), a Q-set restricted to the group's questions, and `chance` (mean of the records'
    `chance`, the exact match a uniform guess expects: 50 for yes/no; only when every record has
    one). `n_facts`: what each value is a share of: the group's questions, for the robustness shares its Q-sets.
    """
    rows = [r.as_record() if isinstance(r, KmirScore) else dict(r) for r in records]
    groups = [k for k in KINDS if any(r["kind"] == k for r in rows)]
    out: list[dict] = []
    for group in [*groups, "all"] if rows else []:
        chosen = [r for r in rows if group == "all" or r["kind"] == group]
        qsets: dict[str, list[float]] = defaultdict(list)
        for r in chosen:
            qsets[str(r["qset_id"])].append(float(r["em"]))
        right = [sum(v == 1.0 for v in ems) for ems in qsets.values()]
        sizes = [len(ems) for ems in qsets.values()]
        n = len(qsets)
        values = {
            "f1": 100.0 * math.fsum(float(r["f1"]) for r in chosen) / len(chosen),
            "em": 100.0 * math.fsum(float(r["em"]) for r in chosen) / len(chosen),
            "robust_all": 100.0 * sum(k == m for k, m in zip(right, sizes)) / n,
            "robust_partial": 100.0 * sum(0 < k < m for k, m in zip(right, sizes)) / n,
            "robust_none": 100.0 * sum(k == 0 for k in right) / n,
        }
        if all(r.get("chance") is not None for r in chosen):
            values["chance"] = 100.0 * math.fsum(float(r["chance"]) for r in chosen) / len(chosen)
        out += [{"setting": "raw", "group": group, "metric": m, "value": v,
                 "n_facts": n if m in ROBUSTNESS else len(chosen)} for m, v in values.items()]
    for relation in sorted({relation_id(str(r["relation"])) for r in rows if r.get("relation")}):
        chosen = [r for r in rows if r.get("relation") and relation_id(str(r["relation"])) == relation]
        out += [{"setting": "raw", "group": relation, "metric": m,
                 "value": 100.0 * math.fsum(float(r[m]) for r in chosen) / len(chosen), "n_facts": len(chosen)}
                for m in PER_RELATION]
    return out
