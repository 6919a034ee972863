"""Factual coherency (Youssef et al., "The Queen of England is not England's Queen", Algorithm 1).

A model is coherent on a fact (S, R, O) when the entity it predicts in one direction leads back
to the fact in the other direction. Two rounds per fact, each two inference steps:
  round 1: O' = model(t(S, R), object slot);  S'' = model(t(O', R), subject slot);  coherent if S'' ~ S
  round 2: S' = model(t(O, R), subject slot); O'' = model(t(S', R), object slot);  coherent if O'' ~ O
In the second step every answer that is correct in the data for the first-step answer is
excluded, except the ground truth (the paper, after Bordes et al. 2013: otherwise an N-M relation
could never be coherent). `~` compares Wikidata ids where both sides have one (KB answers do:
"Punjab" of Pakistan is not "Punjab" of India, "Brussels" and "City of Brussels" are both Q239),
else partial match: one label lower-cased contained in the other. As in the paper's released
code, a second answer that is the first-step answer (same id, else same label) is not coherent.
"Correct in the data" (`correct_answers`) is built from the instances by default, as that code
builds its exclusion lists; `correct_answers(corpus.facts)` counts every fact of the corpus
instead (what `kbc run coherency` does).

Per relation the score is the mean over both rounds of all its instances, then macro-averaged over
relations; types, symmetric relations and `all` are means over their relations. Correctness
(Appendix A): c1 = first step of round 1 right, c2 = first step of round 2 right, all_correct =
all four steps right; "right" is `~` with the ground truth. A KB whose answers are equally true at
equal score (`Prediction.shared_ties`) has its first step right when the truth is among its tied top
answers: a label order does not make it wrong.

Instances (§3.2 and the released code): facts whose subject and object labels differ and neither
contains the other (lower-cased for uncased models: "easy" facts), and for BERT-style models only
facts whose subject and object are each one token of the model's tokenizer. bert-base-uncased
keeps 2,915 T-REx instances over 39 relations (the paper: 2,919); without the token rule (T5,
causal LMs, KBs) 29,678 over 41 (the paper: 29,672).

Everything here is pure: the runner asks the queries (`first_step_query`, `second_step_query`)
with any predictor and hands the answers to `score_instance`; `run_instances` does both steps
with a predict function for callers that hold the predictor themselves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from eval.types import RELATION_TYPES, Answer, Entity, Fact, Prediction, Query, Slot, entity_ids

ROUNDS = (1, 2)
# slot asked in the first and in the second step of each round
STEPS: dict[int, tuple[Slot, Slot]] = {1: ("object", "subject"), 2: ("subject", "object")}
METRICS = ("coherency_round1", "coherency_round2", "coherency", "c1", "c2", "all_correct", "n_instances")
SYMMETRIC_FRACTION = 0.1  # as kb.graph_view: share of (s, o) pairs whose (o, s) is also a fact

SAME_LABELS = "subject and object labels are equal"
CONTAINED = "one label contains the other"
SUBJECT_NOT_ONE_TOKEN = "subject is not a single token of the model"
OBJECT_NOT_ONE_TOKEN = "object is not a single token of the model"
NOT_IN_VOCAB = "subject or object is not in the vocabulary"
SLOT_NOT_ANSWERED = "predictor does not answer the {slot} slot"

Answers = Prediction | Sequence[Answer] | None


def partial_match(a: str, b: str) -> bool:
    """True when one label, stripped and lower-cased, contains the other (empty labels never match)."""
    x, y = a.strip().lower(), b.strip().lower()
    return bool(x) and bool(y) and (x in y or y in x)


def rule_reason(fact: Fact, lowercase: bool = False) -> str | None:
    """Why the instance rule (§3.2) leaves `fact` out: equal labels, or one label containing the other
    (lower-cased when `lowercase`); None for an instance."""
    return labels_reason(fact.subject.label, fact.object.label, lowercase)


def labels_reason(s: str, o: str, lowercase: bool = False) -> str | None:
    """`rule_reason` of a subject and an object label (a record's `subject` and `gold`)."""
    if s == o:
        return SAME_LABELS
    sn, on = (s.lower(), o.lower()) if lowercase else (s, o)
    return CONTAINED if sn in on or on in sn else None


def _uncased(tokenizer) -> bool:
    if hasattr(tokenizer, "do_lower_case"):
        return bool(tokenizer.do_lower_case)
    pieces = tokenizer.tokenize("Paris XYZ")
    return bool(pieces) and all(p == p.lower() for p in pieces)


def filter_instances(facts: Iterable[Fact], tokenizer=None, *, vocab: Collection[str] | None = None,
                     lowercase: bool | None = None) -> tuple[list[Fact], dict[str, int]]:
    """The coherency instances among `facts`, and the others counted by reason.

    `tokenizer` (BERT-style models): both labels must be one token of it (`tokenizer.tokenize`).
    `vocab`: both labels (lower-cased when `lowercase`) must be in it, e.g. a candidate vocabulary.
    `lowercase` defaults to whether the tokenizer lower-cases (False without a tokenizer).
    """
    lower = _uncased(tokenizer) if lowercase is None and tokenizer is not None else bool(lowercase)
    vocab_set = set(vocab) if vocab is not None else None
    one_token: dict[str, bool] = {}

    def single(label: str) -> bool:
        if label not in one_token:
            one_token[label] = len(tokenizer.tokenize(label)) == 1
        return one_token[label]

    kept: list[Fact] = []
    dropped: dict[str, int] = {}
    for fact in facts:
        s, o = fact.subject.label, fact.object.label
        reason = None
        if s == o:
            reason = SAME_LABELS
        elif tokenizer is not None and not single(s):
            reason = SUBJECT_NOT_ONE_TOKEN
        elif tokenizer is not None and not single(o):
            reason = OBJECT_NOT_ONE_TOKEN
        else:
            sn, on = (s.lower(), o.lower()) if lower else (s, o)
            if vocab_set is not None and (sn not in vocab_set or on not in vocab_set):
                reason = NOT_IN_VOCAB
            else:
                reason = rule_reason(fact, lower)
        if reason is None:
            kept.append(fact)
        else:
            dropped[reason] = dropped.get(reason, 0) + 1
    return kept, dropped


def coherency_instances(facts: Iterable[Fact], tokenizer=None, *, vocab: Collection[str] | None = None,
                        lowercase: bool | None = None) -> list[Fact]:
    """The facts Algorithm 1 runs on (see `filter_instances`)."""
    return filter_instances(facts, tokenizer, vocab=vocab, lowercase=lowercase)[0]


def _norm(label: str) -> str:
    return label.strip().lower()


def same_entity(a: Entity, b: Entity) -> bool:
    """One entity: a shared id where both have ids, else equal labels (stripped, lower-cased)."""
    if a.id is not None and b.id is not None:
        return bool(entity_ids(a.id) & entity_ids(b.id))
    return _norm(a.label) == _norm(b.label)


def matches(answer: Entity, truth: Entity) -> bool:
    """An answer names the truth: a shared id where both have ids, else partial match of the labels."""
    if answer.id is not None and truth.id is not None:
        return bool(entity_ids(answer.id) & entity_ids(truth.id))
    return partial_match(answer.label, truth.label)


@dataclass(frozen=True)
class CorrectAnswers:
    """What the data says is correct: per (relation, slot asked, known entity), the answer entities.

    The known entity is looked up by its id where it has one (a KB's answer), else by its label
    lower-cased (a language model's answer: every entity of that label).
    """

    by_label: Mapping[tuple[str, str, str], frozenset[Entity]]
    by_id: Mapping[tuple[str, str, str], frozenset[Entity]]

    def of(self, relation: str, slot: Slot, known: Entity | str) -> frozenset[Entity]:
        known = known if isinstance(known, Entity) else Entity(known)
        found = [self.by_id[key] for i in entity_ids(known.id) if (key := (relation, slot, i)) in self.by_id]
        if found:
            return frozenset().union(*found)
        return self.by_label.get((relation, slot, _norm(known.label)), frozenset())


def correct_answers(instances: Iterable[Fact]) -> CorrectAnswers:
    by_label: dict[tuple[str, str, str], set[Entity]] = defaultdict(set)
    by_id: dict[tuple[str, str, str], set[Entity]] = defaultdict(set)
    for f in instances:
        for slot, known, answer in (("object", f.subject, f.object), ("subject", f.object, f.subject)):
            entry = Entity(answer.label, answer.id)
            by_label[(f.relation, slot, _norm(known.label))].add(entry)
            if known.id is not None:
                by_id[(f.relation, slot, known.id)].add(entry)
    return CorrectAnswers({k: frozenset(v) for k, v in by_label.items()},
                          {k: frozenset(v) for k, v in by_id.items()})


def symmetric_relations(facts: Iterable[Fact], threshold: float = SYMMETRIC_FRACTION) -> set[str]:
    """Relations where at least `threshold` of the (s, o) pairs also occur as (o, s) (entity keys).

    Run it on the whole corpus, not the instances: LAMA samples facts, so only a fraction of a
    symmetric relation's reverse pairs is there (T-REx: P47, P190, P530).
    """
    pairs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for f in facts:
        pairs[f.relation].add((f.subject.key, f.object.key))
    out = set()
    for rel, edges in pairs.items():
        reverse = sum(1 for s, o in edges if s != o and (o, s) in edges)
        if edges and reverse / len(edges) >= threshold:
            out.add(rel)
    return out


def _answers(given: Answers) -> tuple[Answer, ...]:
    if given is None:
        return ()
    return tuple(given.answers) if isinstance(given, Prediction) else tuple(given)


def query_uid(fact: Fact, round_: int, step: int) -> str:
    return f"{fact.uid}:coherency:r{round_}s{step}"


def first_step_query(fact: Fact, round_: int, template: str) -> Query:
    """Round 1 asks the object given the subject; round 2 the subject given the object."""
    slot = STEPS[round_][0]
    known = fact.subject if slot == "object" else fact.object
    return Query(query_uid(fact, round_, 1), fact.uid, fact.corpus, fact.relation, known, slot, template)


def _truth(fact: Fact, slot: Slot) -> Entity:
    return fact.subject if slot == "subject" else fact.object


def excluded_answers(fact: Fact, round_: int, first: Entity | str, correct: CorrectAnswers) -> frozenset[Entity]:
    """Entities barred from the second step: correct for the first answer, but not the truth."""
    slot = STEPS[round_][1]
    truth = _truth(fact, slot)
    return frozenset(e for e in correct.of(fact.relation, slot, first) if not same_entity(e, truth))


def is_excluded(answer: Answer, excluded: frozenset[Entity], truth: Entity) -> bool:
    """An answer with an id is barred by id (or by the label of a barred entity without one); an
    answer without an id by label, unless its label is the truth's."""
    if answer.id is not None:
        ids = entity_ids(answer.id)
        if truth.id is not None and ids & entity_ids(truth.id):  # it names the truth (among others)
            return False
        return any(e.id in ids if e.id is not None else _norm(e.label) == _norm(answer.label) for e in excluded)
    label = _norm(answer.label)
    return label != _norm(truth.label) and any(_norm(e.label) == label for e in excluded)


def tied_top(given: Answers) -> tuple[Answer, ...]:
    """The first answer, and every answer tied with it where ties are shared (`Prediction.shared_ties`)."""
    answers = _answers(given)
    if not answers:
        return ()
    if not (isinstance(given, Prediction) and given.shared_ties):
        return answers[:1]
    return tuple(a for a in answers if a.score == answers[0].score)


def first_step_correct(given: Answers, truth: Entity) -> bool:
    """The first step names the truth (any of the tied top answers of a KB that shares ties)."""
    return any(matches(Entity(a.label, a.id), truth) for a in tied_top(given))


def second_step_query(fact: Fact, round_: int, first_answers: Answers, template: str) -> Query | None:
    """The query back from the first step's top answer; None when the first step gave no answer.

    Ask it `second_step_depth(...)` answers deep: `score_instance` skips the excluded ones.
    """
    top = _answers(first_answers)
    if not top or not top[0].label.strip():
        return None
    slot = STEPS[round_][1]
    known = Entity(top[0].label, top[0].id)
    return Query(query_uid(fact, round_, 2), fact.uid, fact.corpus, fact.relation, known, slot, template)


def second_step_depth(fact: Fact, round_: int, first_answers: Answers, correct: CorrectAnswers,
                      depth: int = 1) -> int:
    """Answers to ask for in the second step so that `depth` remain after the exclusions."""
    top = _answers(first_answers)
    return depth + (len(excluded_answers(fact, round_, Entity(top[0].label, top[0].id), correct)) if top else 0)


def pick_position(answers: Sequence[Answer], excluded: frozenset[Entity], truth: Entity) -> int | None:
    """The position of the second step's answer: the first answer not excluded."""
    return next((i for i, a in enumerate(answers) if not is_excluded(a, excluded, truth)), None)


def truth_position(given: Answers, truth: Entity) -> int | None:
    """The position of the first tied top answer naming the truth (what makes a first step right)."""
    return next((i for i, a in enumerate(tied_top(given)) if matches(Entity(a.label, a.id), truth)), None)


def _pick(answers: Sequence[Answer], excluded: frozenset[Entity], truth: Entity) -> Answer | None:
    at = pick_position(answers, excluded, truth)
    return None if at is None else answers[at]


def score_instance(fact: Fact, round_: int, first_answers: Answers, second_answers: Answers,
                   correct: CorrectAnswers) -> dict:
    """One round of one fact: both steps' answers, what was excluded, correctness and coherency."""
    first_slot, second_slot = STEPS[round_]
    first_truth, second_truth = _truth(fact, first_slot), _truth(fact, second_slot)
    first = _answers(first_answers)
    known = Entity(first[0].label, first[0].id) if first else None
    excluded = excluded_answers(fact, round_, known, correct) if known is not None else frozenset()
    second = _pick(_answers(second_answers), excluded, second_truth) if known is not None else None
    said = Entity(second.label, second.id) if second is not None else None
    same = said is not None and known is not None and same_entity(said, known)
    second_correct = said is not None and matches(said, second_truth)
    return {
        "fact_uid": fact.uid,
        "relation": fact.relation,
        "round": round_,
        "first_slot": first_slot,
        "first_truth": first_truth.label,
        "first_answer": known.label if known is not None else None,
        "first_correct": first_step_correct(first_answers, first_truth),
        "excluded": sorted({_norm(e.label) for e in excluded}),
        "second_slot": second_slot,
        "second_truth": second_truth.label,
        "second_answer": said.label if said is not None else None,
        "second_correct": second_correct,
        "same_as_first": same,
        "coherent": second_correct and not same,
    }


PredictFn = Callable[[Sequence[Query], int], list[Prediction]]


def run_instances(predict: PredictFn, instances: Sequence[Fact], templates: Mapping[str, str],
                  correct: CorrectAnswers | None = None, rounds: Sequence[int] = ROUNDS) -> list[dict]:
    """Both steps of each round for every instance with `predict(queries, depth)`; one record per round.

    `templates`: relation -> template with [X] and [Y]. `correct` defaults to the instances' own.
    The second step asks deep enough that one answer remains after the exclusions.
    """
    correct = correct if correct is not None else correct_answers(instances)
    records: list[dict] = []
    for round_ in rounds:
        firsts = predict([first_step_query(f, round_, templates[f.relation]) for f in instances], 1)
        seconds: list[Prediction | None] = [None] * len(instances)
        asked = [(i, second_step_query(f, round_, p, templates[f.relation]))
                 for i, (f, p) in enumerate(zip(instances, firsts))]
        asked = [(i, q) for i, q in asked if q is not None]
        if asked:
            depth = max(second_step_depth(instances[i], round_, firsts[i], correct) for i, _ in asked)
            for (i, _), pred in zip(asked, predict([q for _, q in asked], depth)):
                seconds[i] = pred
        records += [score_instance(f, round_, p, s, correct) for f, p, s in zip(instances, firsts, seconds)]
    return records


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def relation_scores(records: Iterable[dict]) -> dict[str, dict[str, float]]:
    """Per relation: each metric in percent (those its records allow) and `n_instances`."""
    by_rel: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_rel[r["relation"]].append(r)
    out: dict[str, dict[str, float]] = {}
    for rel, recs in by_rel.items():
        rounds = {k: [r for r in recs if r["round"] == k] for k in ROUNDS}
        scores: dict[str, float] = {"n_instances": float(len({r["fact_uid"] for r in recs}))}
        for k in ROUNDS:
            if rounds[k]:
                scores[f"coherency_round{k}"] = 100 * _mean([r["coherent"] for r in rounds[k]])
                scores[f"c{k}"] = 100 * _mean([r["first_correct"] for r in rounds[k]])
        scores["coherency"] = 100 * _mean([r["coherent"] for r in recs])
        per_fact: dict[tuple[str, str | None], list[dict]] = defaultdict(list)
        for r in recs:  # under a prompt set, a fact's rounds asked with one prompt
            per_fact[(r["fact_uid"], r.get("prompt_id"))].append(r)
        complete = [rs for rs in per_fact.values() if {r["round"] for r in rs} == set(ROUNDS)]
        if complete:
            scores["all_correct"] = 100 * _mean([all(r["first_correct"] and r["second_correct"] for r in rs)
                                                 for rs in complete])
        out[rel] = scores
    return out


def summarize_coherency(records: Iterable[dict], relation_types: Mapping[str, str | None],
                        symmetric: Iterable[str] = ()) -> list[dict]:
    """Tidy rows {setting, group, metric, value, n_facts}: per relation, per type, `symmetric` and `all`.

    Group values are means over their relations (macro); `n_instances` and `n_facts` are sums.
    """
    per_rel = relation_scores(records)
    groups: dict[str, list[str]] = {"all": sorted(per_rel)}
    for kind in RELATION_TYPES:
        groups[kind] = sorted(r for r in per_rel if relation_types.get(r) == kind)
    groups["symmetric"] = sorted(r for r in per_rel if r in set(symmetric))
    rows: list[dict] = []

    def add(group: str, rels: list[str]) -> None:
        n = int(sum(per_rel[r]["n_instances"] for r in rels))
        for metric in METRICS:
            if metric == "n_instances":
                value = float(n)
            else:
                values = [per_rel[r][metric] for r in rels if metric in per_rel[r]]
                if not values:
                    continue
                value = _mean(values)
            rows.append({"setting": "raw", "group": group, "metric": metric, "value": value, "n_facts": n})

    for group, rels in groups.items():
        if rels:
            add(group, rels)
    for rel in sorted(per_rel):
        add(rel, [rel])
    return rows


def unsupported_slot(predictor, slot: Slot) -> str | None:
    """The drop reason when `predictor` does not answer `slot` (predictors without `slots` answer objects)."""
    return None if slot in getattr(predictor, "slots", ("object",)) else SLOT_NOT_ANSWERED.format(slot=slot)
