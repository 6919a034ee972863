"""KMIR-style questions (KMIR §3–4) as an experiment of the shared runner: KBs and LMs on the same questions.

One stage. For each corpus the questions are generated (`eval.kmir.generate`, seeded) from the
asked facts, with every fact of the corpus as the KB around them (alternatives, corrupted
statements, distractors) and the facts the axioms (`--axioms`, default `kb/axioms.ttl`) derive
from the corpus's gold graphs in the store (`kb.reasoning.ensure_inferred`). Types for entity
distinction come from X-FACTR's instance-of lists (`--instance-of`, default
`<data>/../xfactr/TREx_instanceof.txt` when present), also written to the store for the KB side.

Each question is one query (`KmirQuery`: uid = question id, `fact_uid` = its Q-set, the question
itself attached); a reasoning question's uid is `<question id>@<Q-set>`, as its id does not name the
Q-set (the fact it rests on) the way the other kinds' ids do. Prediction files are grouped by the
relation of the Q-set's fact, so a reasoning question about a derived relation (P1376 from P36)
lives with the facts it rests on.

How a prediction becomes an answer:
- triple completion (open): the top answer, asked with the relation's template ([X] = subject);
- choice kinds (statement checking, entity distinction, predicate reasoning): asked as a cloze
  whose answer slot is [Y] (the question text, or for predicate reasoning the relation's template),
  with the choices as the query's `choices` and targets. A closed question is never limited to a
  vocabulary its answers are not in: a masked LM ranks the choices over its whole vocabulary (a
  question with a choice that is not one token of the model is dropped), a causal LM scores the
  sentence of each choice. The answer is the best-ranked choice: by the exact ranks the predictor
  reports (a predictor with exact ranks that lacks one for a choice gives no answer), else the first
  of its ranked answers that shares a token with a choice; a yes/no choice only by an answer that reads
  as it exactly and is no entity (Freq's object "Yes", the band, answers no statement). The `kb`
  predictors look the question up.
A predictor answering by generation is asked each question as written (`eval.kmir.question_prompt`,
zero-shot): statement checking scores the yes or no its answer starts with (anything else scores 0), every
other kind the parsed and linked answer itself, by the same token F1.
A choice question whose predictor ranks none of the choices (Freq's relation objects on a yes/no
question) is dropped for it with the reason `ranks none of the choices`: scoring it 0 would put the
predictor below the chance floor for a question it never took. A KB that looks a question up and holds
none of its choices answers nothing, which scores 0 (closed world); so does an open question without
an answer. A question the runner drops for a predictor (it cannot
take it) is not scored for it and is listed with its reason, as dropped facts are: `own` holds the
questions a predictor answered, `shared` those every predictor scored on it answered. Rows per kind and `all`
(`all`: the mean over every question, not over kinds or relations): `f1`, `em`, the Q-set
robustness shares of KMIR Table 5, `answered` (% of the predictor's questions in the scope) and
`chance` (the exact match a uniform guess expects: 1 / choices; for an open question the golds
among the relation's objects, which the `random` predictor ranks).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from pathlib import Path

from bridge.experiments.base import (
    CHOICE_RULE,
    CHOICE_RULE_NOW,
    PROVENANCE_RULE,
    QUESTION_FACTS,
    Records,
    StageInput,
    StageRecords,
    single_stage,
)
from bridge.run.results import TOP_SAVED
from eval.answer_text import GENERATED, generation_fields, parse_yes_no
from eval.errors import ConfigError
from eval.f1 import f1_score, normalize_answer
from eval.kmir import (
    ENTITY_DISTINCTION,
    KINDS,
    KNOWLEDGE_TYPES,
    MASK,
    PREDICATE_REASONING,
    ROBUSTNESS,
    STATEMENT_CHECKING,
    TRIPLE_COMPLETION,
    KmirQuestion,
    generate,
    load_instance_of,
    load_multi_rel,
    question_prompt,
    score,
    summarize_kmir,
)
from eval.relations import relation_id
from eval.types import CHOICE_SCORES, CHOICE_SCORING, OBJECT_SLOT, Entity, Fact, Prediction, Query, answer_rows

DEFAULT_PER_RELATION = 20
NO_CHOICE = "ranks none of the choices"
INSTANCE_OF_FILE = Path("xfactr") / "TREx_instanceof.txt"
MULTI_REL_FILE = "TREx_multi_rel.txt"
# what fewer types cost: said on stderr when no list is found and in summary.md of a directory made without one
WITHOUT_TYPES = ("entity types come from the corpus's P31 facts alone, so an object without such a type gets no "
                 "false statement (statement checking) and entity distinction has fewer types to pick an outlier by: "
                 "fewer questions than with the list; pass --instance-of FILE")

log = logging.getLogger("kbc")


def multi_rel_beside(instance_of: str | Path | None) -> Path | None:
    """X-FACTR's `TREx_multi_rel.txt` in the folder of its instance-of list, if there is one: every object Wikidata
    holds for a subject and relation, which no corrupted statement may name."""
    if instance_of is None:
        return None
    path = Path(instance_of).parent / MULTI_REL_FILE
    return path if path.is_file() else None


def default_instance_of(data_dir: str | Path | None) -> Path | None:
    """X-FACTR's instance-of list in the data folder or beside it, if there is one."""
    from eval.datadir import optional_file

    if data_dir is None:
        return None
    return optional_file([root / INSTANCE_OF_FILE for root in (Path(data_dir), Path(data_dir).parent)],
                         "instance-of list")


PREFIXES = {"tc": TRIPLE_COMPLETION, "sc+": STATEMENT_CHECKING, "sc-": STATEMENT_CHECKING,
            "ed": ENTITY_DISTINCTION, "pr": PREDICATE_REASONING}


@dataclasses.dataclass(frozen=True)
class KmirQuery(Query):
    """A query that carries its KMIR question (predictors that look questions up read it) and, for a closed
    question, its choices: language models rank exactly these."""

    question: KmirQuestion | None = None
    choices: tuple[str, ...] = ()

    @property
    def question_text(self) -> str | None:
        """The question as a generating predictor is asked it (`eval.kmir.question_prompt`)."""
        return question_prompt(self.question.text) if self.question is not None else None


@dataclasses.dataclass(frozen=True)
class KmirFact(Fact):
    """The fact handed to predictors for one question; `choices` marks a closed question (see `KmirQuery`)."""

    choices: tuple[str, ...] = ()


def kind_of(uid: str) -> str:
    """The question kind from a query uid (`tc:`, `sc+:`, `sc-:`, `ed:`, `pr:`)."""
    return PREFIXES.get(uid.split(":", 1)[0], "")


def query_uid(question: KmirQuestion) -> str:
    """The question id; for a reasoning question with its Q-set appended (`@<Q-set>`)."""
    return f"{question.id}@{question.qset_id}" if question.kind == PREDICATE_REASONING else question.id


def qset_of(uid: str) -> str:
    """The Q-set of a query uid (see `query_uid`)."""
    return uid.rsplit("@", 1)[1] if kind_of(uid) == PREDICATE_REASONING else uid.split(":", 1)[1]


def pick_choice(pred: Prediction, choices: tuple[str, ...], words: bool = False) -> str | None:
    """The best-ranked choice of a prediction (see the module docstring); None when no answer names one.

    `words`: the choices are words, not entities (statement checking's yes and no). An answer that is an
    entity (it carries an id: Freq's relation objects, a KB's, an entity index's) never names one, whatever the
    entity is called (P463's object "Yes", the band), and any other answer names one only by reading as it
    exactly ("No Doubt" is no "no")."""
    if not choices:
        return None
    ranks = pred.target_ranks
    if ranks is not None:
        if not all(c in ranks for c in choices):
            return None  # ranked exactly, but not every choice: no guess among the rest
        return min(choices, key=lambda c: ranks[c])  # ties: choice order
    for answer in pred.answers:
        if words:
            if answer.id is None:
                said = normalize_answer(answer.label)
                named = [c for c in choices if normalize_answer(c) == said]
                if named:
                    return named[0]
            continue
        overlap = [f1_score(answer.label, c) for c in choices]
        best = max(overlap)
        if best > 0:
            return choices[overlap.index(best)]
    return None


def choice_scores(pred: Prediction, choices: tuple[str, ...]) -> list[list] | None:
    """Each choice with the score the predictor gave it and its exact rank (`[label, score, rank]`, choice order),
    where the predictor reports them: the record's answer can be checked against them. None where it does not."""
    scores = pred.extra.get(CHOICE_SCORES)
    if not scores:
        return None
    ranks = pred.target_ranks or {}
    return [[c, round(scores[c], 6) if c in scores else None, ranks.get(c)] for c in choices]


def to_query(question: KmirQuestion, source: Fact) -> tuple[KmirQuery, Fact]:
    """The query of a question, and the fact the runner hands predictors (its object: the answer)."""
    if question.kind in (STATEMENT_CHECKING, ENTITY_DISTINCTION):
        template = question.text.replace(MASK, OBJECT_SLOT)
    else:
        template = question.template
    if question.kind == TRIPLE_COMPLETION:
        answer = source.object
    elif question.kind == ENTITY_DISTINCTION and question.subject is not None:
        answer = question.subject
    else:
        answer = next((e for e in question.entities if e.label == question.answer), Entity(question.answer))
    subject = question.subject or source.subject
    query = KmirQuery(query_uid(question), question.qset_id, source.corpus, question.relation, subject, "object",
                      template, targets=question.choices, prompt="kmir", question=question, choices=question.choices)
    fact = KmirFact(query.uid, source.corpus, question.relation, subject, answer, cloze=source.cloze,
                    choices=question.choices)
    return query, fact


class KmirExperiment:
    name = "kmir"
    stages = ("",)
    title = "KMIR-style questions (Total: the mean over every question, not over kinds or relations)"
    pooled_total = True  # the Total averages over every unit, not over relations: no relation outweighs
    unit = "questions"  # what the summary's scopes count
    scored_settings = ("raw",)  # a question is scored against its own gold or choices: nothing to filter
    metrics = ("f1", "em", "answered", "chance", *ROBUSTNESS)

    def __init__(self, per_relation: int = DEFAULT_PER_RELATION, axioms: str | None = None,
                 instance_of: str | None = None, seed: int = 0, prompts: str | None = None,
                 context: str | None = None, prompt_draws: int | None = None, limit: int | None = None) -> None:
        from kb.reasoning import PROVENANCE_RULE as PROVENANCE_RULE_NOW
        from kb.reasoning import load_axioms

        if per_relation < 1:
            raise ConfigError(f"--questions-per-relation {per_relation}: must be at least 1")
        for flag, value, default in (("--prompts", prompts, "lama"), ("--context", context, "none"),
                                     ("--prompt-draws", prompt_draws, 10)):
            if value not in (None, default):
                raise ConfigError(f"kbc run kmir does not take {flag} {value}: KMIR questions carry their own "
                                  "wording and no evidence (use kbc run lama or kbc run coherency)")
        self.per_relation, self.seed, self.limit = per_relation, seed, limit
        self.axioms_path, self.instance_of_path = axioms, instance_of
        self.ontology = load_axioms(axioms)
        self.settings = {"questions_per_relation": per_relation, "axioms": self.ontology.digest,
                         "instance_of": instance_of or "default", "question_seed": seed,
                         CHOICE_RULE: CHOICE_RULE_NOW, PROVENANCE_RULE: PROVENANCE_RULE_NOW}
        self._instance_of: dict | None = None
        self._known_true: dict | None = None
        self._questions: dict[str, KmirQuestion] = {}
        self._made: dict[tuple, dict[str, list[tuple[Query, Fact]]]] = {}
        self._chance: dict[str, float] = {}  # query uid -> exact match a uniform guess expects
        self._labels: dict[str, dict[str, str]] = {}  # corpus -> relation id -> label, of every relation asked

    def check(self, corpora: dict, data_dir) -> None:
        """Corpora with subjects and relations only; the instance-of file read before any work."""
        for name, corpus in corpora.items():
            if corpus.facts and corpus.facts[0].cloze:
                raise ConfigError(f"kmir questions need facts with subjects and relations; corpus {name} has cloze "
                                  "sentences only (use trex or google_re)")
        self._types(data_dir)
        for name, corpus in corpora.items():
            self._check_axioms(name, corpus, data_dir)
        # a fact's questions (their choices, distractors, the reasoning questions around it) are drawn from every
        # fact of the relations asked and the --limit sample: a rerun must ask the same (`bridge.run.config`)
        self.settings[QUESTION_FACTS] = {name: {"relations": sorted(corpus.relations), "limit": self.limit}
                                         for name, corpus in corpora.items()}

    def extra_relations(self) -> dict[str, str]:
        """Relation ids the questions may ask beyond the corpus's own, each -> where the axioms name it: every property
        an axiom names (P1376 from P36's inverse), which records and tables name beside the corpus's relations and
        `bridge.run.name_clashes` checks with them."""
        from kb.store import relation_key

        return {relation_id(relation_key(p)): self.ontology.where(p) for p in sorted(self.ontology.properties())}

    def _check_axioms(self, name: str, corpus, data_dir) -> None:
        """The axioms name relations the corpus holds (or declare them), checked before anything is written."""
        from bridge.predictors.kmir import default_axioms_problem, known_relations

        if self.axioms_path is not None:  # the user's own file: its line is the place to fix
            self.ontology.check(known_relations(corpus, data_dir))
            return
        problem = default_axioms_problem(self.ontology, corpus, data_dir)
        if problem:
            raise ConfigError(f"kmir on {name}: {problem}")

    def _types(self, data_dir) -> dict:
        if self._instance_of is None:
            if self.instance_of_path:
                self._instance_of = load_instance_of(self.instance_of_path)
            else:
                found = default_instance_of(data_dir)
                self._instance_of = load_instance_of(found) if found else {}
                if found is None and data_dir is not None:
                    roots = (Path(data_dir), Path(data_dir).parent)
                    where = " or ".join(str(root / INSTANCE_OF_FILE) for root in roots)
                    log.warning("kmir: no instance-of list (%s): %s", where, WITHOUT_TYPES)
        return self._instance_of

    def _true_objects(self, data_dir) -> dict:
        """What Wikidata holds beyond the corpus (`load_multi_rel`), read beside the instance-of list used."""
        if self._known_true is None:
            found = multi_rel_beside(self.instance_of_path or default_instance_of(data_dir))
            self._known_true = load_multi_rel(found) if found else {}
        return self._known_true

    @staticmethod
    def config_notes(config: dict) -> list[str]:
        """A directory whose questions were made without X-FACTR's instance-of list says so: it holds fewer."""
        if config.get("settings", {}).get("instance_of") != "none":
            return []
        return [f"No instance-of list was found (X-FACTR's `{INSTANCE_OF_FILE.as_posix()}`, looked for in the data "
                f"folder and beside it): {WITHOUT_TYPES}."]

    def questions(self, given: StageInput) -> list[KmirQuestion]:
        """The corpus's questions over the asked facts (deterministic for the same inputs and seed)."""
        from bridge.predictors.kmir import corpus_graphs, known_relations
        from eval.relations import load_relations
        from kb.kmir_answer import ensure_instance_of
        from kb.reasoning import ensure_inferred, read_inferred

        store = given.store
        if store is None:
            raise ConfigError("kmir questions need the run's graph store")
        sources = corpus_graphs(store, given.corpus)
        closure = ensure_inferred(store, self.ontology, sources,
                                  known_relations=known_relations(given.corpus, given.data_dir))
        inferred = read_inferred(store, sources, closure.graph)
        instance_of = self._types(given.data_dir)
        if instance_of:
            ensure_instance_of(store, instance_of)
        relations = {}
        lama_relations = Path(given.data_dir) / "relations.jsonl" if given.data_dir is not None else None
        if lama_relations is not None and lama_relations.is_file():
            relations.update(load_relations(lama_relations))
        relations.update(given.corpus.relations)
        relations.update(self.ontology.relations())
        made = generate(given.corpus.facts, inferred, instance_of, seed=self.seed, per_relation=self.per_relation,
                        relations=relations, asked=[f.uid for f in given.facts],
                        known_true=self._true_objects(given.data_dir))
        labels = self._labels.setdefault(given.corpus.name, {})
        for question in made:
            known = relations.get(question.relation)
            if known is not None and known.label:
                labels.setdefault(relation_id(question.relation), known.label)
        return made

    def relation_labels(self, corpus: str) -> dict[str, str]:
        """Relation id -> label of the relations this corpus's questions ask, derived ones too (P1376 from P36's
        inverse, an axioms file's `schema:birthPlace`), which the corpus's own relations do not hold."""
        return dict(self._labels.get(corpus, {}))

    def queries(self, stage: str, given: StageInput) -> dict[str, list[tuple[Query, Fact]]]:
        key = (given.corpus.name, tuple(f.uid for f in given.facts))
        if key not in self._made:
            by_uid = {f.uid: f for f in given.corpus.facts}
            out: dict[str, list[tuple[Query, Fact]]] = {rel: [] for rel in given.corpus.relations}
            objects: dict[str, set[str]] = {}
            for f in given.corpus.facts:
                objects.setdefault(f.relation, set()).add(f.object.label)
            for question in self.questions(given):
                source = by_uid[question.qset_id]
                self._questions[query_uid(question)] = question
                self._chance[query_uid(question)] = chance(question, objects.get(question.relation, set()))
                out.setdefault(source.relation, []).append(to_query(question, source))
            self._made[key] = out
        return self._made[key]

    def record(self, stage: str, query: Query, fact: Fact, pred: Prediction, rel_valid: dict[str, set[str]]) -> dict:
        from bridge.predictors.kmir import CLOSED_WORLD

        question = getattr(query, "question", None) or self._questions[query.uid]
        generated = generation_fields(pred.extra)
        if generated:  # a written answer: read as yes/no for a statement, else the (linked) text itself
            given = parse_yes_no(generated[GENERATED]) if question.kind == STATEMENT_CHECKING else \
                pred.answers[0].label if pred.answers else None
        elif question.choices:
            given = pick_choice(pred, question.choices, words=question.kind == STATEMENT_CHECKING)
            if given is None and not pred.extra.get(CLOSED_WORLD):
                return {"uid": query.uid, "relation": relation_id(question.relation), "subject": fact.subject.label,
                        "subject_id": fact.subject.id, "gold": question.answer, "dropped": NO_CHOICE,
                        "answers": answer_rows(pred.answers, TOP_SAVED)}
        else:
            given = pred.answers[0].label if pred.answers else None
        scored = score(question, given)
        out = {"uid": query.uid, "question_id": question.id, "relation": relation_id(question.relation),
               "kind": question.kind, "knowledge_type": question.knowledge_type, "qset_id": question.qset_id,
               "question": question.text,
               "answer": given, "gold": question.answer, "f1": scored.f1, "em": scored.em,
               "answers": answer_rows(pred.answers, TOP_SAVED)}
        if question.alternatives:
            out["alternatives"] = list(question.alternatives)
        if question.choices:
            out["choices"] = list(question.choices)
            scored_choices = choice_scores(pred, question.choices)
            if scored_choices:
                out["choice_scores"], out["choice_scoring"] = scored_choices, pred.extra.get(CHOICE_SCORING)
        if question.axiom:
            out["axiom"] = question.axiom
        if query.uid in self._chance:
            out["chance"] = self._chance[query.uid]
        return {**out, **generated}

    @staticmethod
    def dropped_unit(settings: dict) -> str:
        """One record per question, several questions per fact."""
        return "questions"

    def instances(self, records: StageRecords) -> Records:
        """The records, each knowing how many questions of its kind the predictor was given (for `answered`).

        A question the runner dropped (the predictor cannot take it) stays dropped, with its kind and
        Q-set: it is listed with its reason and left out of both scopes, as a dropped fact is.
        """
        out: Records = {}
        given = Counter(kind_of(uid) for uid in single_stage(records))
        for uid, r in single_stage(records).items():
            kind = kind_of(uid)
            if "dropped" in r:
                out[uid] = {**r, "kind": kind, "knowledge_type": KNOWLEDGE_TYPES.get(kind, ""),
                            "qset_id": qset_of(uid), "answer": None}
                continue
            out[uid] = {**r, "questions_of_kind": given[kind], "questions": sum(given.values()),
                        "questions_by_kind": dict(given)}  # a kind dropped whole still has its share (0)
        return out

    def summarize(self, instances: list[dict], relation_types: dict[str, str | None], mrr_cutoff: int | None
                  ) -> tuple[list[dict], list[dict]]:
        """`summarize_kmir`'s rows, and `answered`: the scope's share of the questions the predictor was given,
        for every kind it was given (0 where it dropped them all)."""
        rows = summarize_kmir(instances)
        given: dict[str, int] = instances[0].get("questions_by_kind") or {} if instances else {}
        groups = [k for k in KINDS if given.get(k) or any(r["kind"] == k for r in instances)]
        for group in [*groups, "all"] if instances else []:
            chosen = [r for r in instances if group == "all" or r["kind"] == group]
            total = (chosen[0]["questions" if group == "all" else "questions_of_kind"] if chosen
                     else given[group])
            rows.append({"setting": "raw", "group": group, "metric": "answered", "value": 100.0 * len(chosen) / total,
                         "n_facts": len(chosen)})
        return rows, []

    @staticmethod
    def counted(metric: str) -> str:
        """What a row's `n_facts` counts: questions, or for a robustness share the Q-sets it is a share of."""
        return "Q-sets" if metric in ROBUSTNESS else "questions"


def chance(question: KmirQuestion, objects: set[str]) -> float:
    """The exact match a uniform guess expects: 1 / choices, or for an open question the share of the
    relation's objects (what `random` ranks) that are right answers."""
    if question.choices:
        return 1.0 / len(question.choices)
    return len(set(question.golds) & objects) / len(objects) if objects else 0.0
