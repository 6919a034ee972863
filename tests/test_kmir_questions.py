"""KMIR questions: SQuAD F1/EM, Q-set robustness, seeded generation, and the KB answering with and without inference."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from eval.errors import DataError
from eval.f1 import best_over_golds, exact_match, f1_score, normalize_answer
from eval.kmir import (
    ENTITY_DISTINCTION,
    KINDS,
    NO,
    PREDICATE_REASONING,
    STATEMENT_CHECKING,
    TRIPLE_COMPLETION,
    TYPE_ASPECT,
    YES,
    InferredFact,
    generate,
    load_instance_of,
    load_multi_rel,
    outlier,
    score,
    summarize_kmir,
)
from eval.types import Entity, Fact, Relation
from kb.kmir_answer import TYPES_GRAPH, ensure_instance_of, kb_for, setting_graphs
from kb.reasoning import closure_graphs, ensure_inferred, load_axioms, read_inferred
from kb.store import GraphStore


# --- F1 and exact match -------------------------------------------------------------------------
def test_squad_normalisation():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("  A Tale of Two Cities. ") == "tale of two cities"
    assert normalize_answer("Theatre an der Wien") == "theatre der wien"  # "an" is an article to SQuAD


@pytest.mark.parametrize("prediction,gold,f1,em", [
    ("the Eiffel Tower", "Eiffel Tower in Paris", 2 / 3, 0.0),
    ("Paris, France", "France", 2 / 3, 0.0),
    ("new new york", "New York", 0.8, 0.0),
    ("The United States.", "united states", 1.0, 1.0),
    ("york new", "New York", 1.0, 0.0),
    ("Lyon", "Paris", 0.0, 0.0),
    ("a", "the", 1.0, 1.0),
    ("the", "Paris", 0.0, 0.0),
    ("", "Paris", 0.0, 0.0),
])
def test_f1_and_exact_match(prediction, gold, f1, em):
    assert f1_score(prediction, gold) == pytest.approx(f1, abs=1e-12)
    assert exact_match(prediction, gold) == em


def test_best_over_golds():
    assert best_over_golds("Paris", ["Lyon", "paris"]) == (1.0, 1.0)
    assert best_over_golds("Paris France", ["France", "Lyon"]) == (pytest.approx(2 / 3), 0.0)
    with pytest.raises(ValueError):
        best_over_golds("Paris", [])


def test_summary_rows_and_robustness_are_exact():
    records = [  # Q-set A: all right; B: partly; C: all wrong
        {"qset_id": "A", "kind": TRIPLE_COMPLETION, "f1": 1.0, "em": 1.0},
        {"qset_id": "A", "kind": STATEMENT_CHECKING, "f1": 1.0, "em": 1.0},
        {"qset_id": "B", "kind": TRIPLE_COMPLETION, "f1": 0.5, "em": 0.0},
        {"qset_id": "B", "kind": STATEMENT_CHECKING, "f1": 1.0, "em": 1.0},
        {"qset_id": "C", "kind": TRIPLE_COMPLETION, "f1": 0.0, "em": 0.0},
        {"qset_id": "C", "kind": STATEMENT_CHECKING, "f1": 0.0, "em": 0.0},
    ]
    rows = {(r["group"], r["metric"]): (r["value"], r["n_facts"]) for r in summarize_kmir(records)}
    assert {g for g, _ in rows} == {TRIPLE_COMPLETION, STATEMENT_CHECKING, "all"}
    assert rows[("all", "f1")] == (pytest.approx(350 / 6), 6)  # n: the questions the mean is over
    assert rows[("all", "em")] == (pytest.approx(50.0), 6)
    assert rows[(TRIPLE_COMPLETION, "em")][1] == 3
    assert rows[("all", "robust_all")] == (pytest.approx(100 / 3), 3)  # n: the Q-sets the share is of
    assert rows[("all", "robust_partial")][0] == pytest.approx(100 / 3)
    assert rows[("all", "robust_none")][0] == pytest.approx(100 / 3)
    assert rows[(TRIPLE_COMPLETION, "f1")][0] == pytest.approx(50.0)
    assert rows[(TRIPLE_COMPLETION, "robust_partial")][0] == 0.0  # one question per Q-set: never partly
    assert rows[(TRIPLE_COMPLETION, "robust_none")][0] == pytest.approx(200 / 3)
    assert rows[(STATEMENT_CHECKING, "f1")][0] == pytest.approx(200 / 3)
    assert all(r["setting"] == "raw" for r in summarize_kmir(records))
    assert summarize_kmir([]) == []


def test_outlier_needs_a_single_member_lacking_what_the_others_share():
    assert outlier([{"human"}, {"human"}, {"human"}, {"org"}]) == 3
    assert outlier([{"a", "b"}, {"a"}, {"a", "b"}, {"b"}]) is None  # two members lack a shared category
    assert outlier([{"a"}, {"b"}, {"c"}, {"d"}]) is None


# --- instance-of data ------------------------------------------------------------------------------
def test_load_instance_of(tmp_path):
    path = tmp_path / "io.txt"
    path.write_text("Q16\tQ6256,country\tQ3624078,sovereign state\nQ44\t\nQ5\tQ1,a, b\n")
    assert load_instance_of(path) == {"Q16": (("Q6256", "country"), ("Q3624078", "sovereign state")),
                                      "Q44": (), "Q5": (("Q1", "a, b"),)}
    path.write_text("Q16\tQ6256,country\nQ17\tQ6256\n")
    with pytest.raises(DataError, match=r"io.txt:2: type 'Q6256' is not 'TYPE_ID,label'"):
        load_instance_of(path)


# --- a hand-made KB ------------------------------------------------------------------------------------
AXIOMS = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix kbc: <urn:kbc:relation:> .
@prefix kbcv: <urn:kbc:> .
wdt:P47 a owl:SymmetricProperty .
kbc:country_of_birth a owl:ObjectProperty ; rdfs:label "country of birth" ;
    kbcv:template "[X] was born in the country [Y] ." ;
    owl:propertyChainAxiom ( wdt:P19 wdt:P17 ) .
"""
PEOPLE = {"Q1001": "Ada", "Q1002": "Bert", "Q1003": "Cleo", "Q1004": "Dora", "Q1005": "Emil"}
CITIES = {"Q90": "Paris", "Q456": "Lyon", "Q64": "Berlin", "Q1726": "Munich", "Q220": "Rome", "Q1741": "Vienna"}
COUNTRIES = {"Q142": "France", "Q183": "Germany", "Q38": "Italy", "Q29": "Spain", "Q40": "Austria"}
OTHER = {"Q2000": "Team X", "Q2001": "League", "Q2002": "chemist", "Q2003": "poet"}
LABELS = {**PEOPLE, **CITIES, **COUNTRIES, **OTHER}
FACTS = [("P19", "Q1001", "Q90"), ("P19", "Q1002", "Q456"), ("P19", "Q1003", "Q64"), ("P19", "Q1004", "Q1726"),
         ("P19", "Q1005", "Q220"),
         ("P17", "Q90", "Q142"), ("P17", "Q456", "Q142"), ("P17", "Q64", "Q183"), ("P17", "Q1726", "Q183"),
         ("P17", "Q220", "Q38"), ("P17", "Q1741", "Q40"),
         ("P47", "Q142", "Q29"), ("P47", "Q142", "Q183"), ("P47", "Q38", "Q142"),
         ("P463", "Q1001", "Q2001"), ("P463", "Q1002", "Q2001"), ("P463", "Q1003", "Q2001"),
         ("P463", "Q2000", "Q2001"),
         ("P106", "Q1001", "Q2002"), ("P106", "Q1002", "Q2002"), ("P106", "Q1003", "Q2002"),
         ("P106", "Q1004", "Q2003")]
INSTANCE_OF = {**{q: (("Q5", "human"),) for q in PEOPLE}, **{q: (("Q515", "city"),) for q in CITIES},
               **{q: (("Q6256", "country"),) for q in COUNTRIES}, "Q2000": (("Q43229", "organization"),)}
RELATIONS = {
    "P19": Relation("P19", "place of birth", "[X] was born in [Y] ."),
    "P17": Relation("P17", "country", "[X] is located in [Y] ."),
    "P47": Relation("P47", "shares border with", "[X] shares border with [Y] ."),
    "P463": Relation("P463", "member of", "[X] is a member of [Y] ."),
    "P106": Relation("P106", "occupation", "[X] works as a [Y] ."),
}


def uid(rel: str, s: str, o: str) -> str:
    return f"{rel}-{s}-{o}"


def toy_facts() -> list[Fact]:
    return [Fact(uid(r, s, o), "toy", r, Entity(LABELS[s], s), Entity(LABELS[o], o)) for r, s, o in FACTS]


@pytest.fixture()
def toy_kb(tmp_path):
    """(store, questions): the toy facts, their inferred facts and the questions over both."""
    path = tmp_path / "axioms.ttl"
    path.write_text(AXIOMS)
    onto = load_axioms(path)
    store = GraphStore.open(None)
    graph = store.ensure_corpus("toy", "v1", toy_facts())
    report = ensure_inferred(store, onto, [graph])
    assert report.counts == {"symmetric:P47": 3, "chain:P19/P17:country_of_birth": 5}
    ensure_instance_of(store, INSTANCE_OF)
    inferred = read_inferred(store, [graph], report.graph)
    questions = generate(toy_facts(), inferred, INSTANCE_OF, seed=7, relations={**RELATIONS, **onto.relations()})
    yield store, questions, inferred
    store.close()


def test_generation_is_seeded_and_deterministic(toy_kb):
    store, questions, inferred = toy_kb
    again = generate(toy_facts(), inferred, INSTANCE_OF, seed=7, relations=RELATIONS)
    assert [q.id for q in again] == [q.id for q in questions]
    kinds = Counter(q.kind for q in questions)
    # 22 facts: a completion and a true statement each; a corrupted one where the relation has another object
    # of the same type (P463 has only League; chemist and poet have no type); entity distinctions for Team X
    # (by type) and Dora (by occupation); 7 of the 8 inferred facts have three distractors (France-Italy has
    # none left: France borders every other country). France's two P47 facts get no corrupted statement: the only
    # other country among P47's objects is France itself, never its own distractor
    assert kinds == {TRIPLE_COMPLETION: 22, STATEMENT_CHECKING: 34, ENTITY_DISTINCTION: 2, PREDICATE_REASONING: 7}
    false = [q for q in questions if q.kind == STATEMENT_CHECKING and q.answer == "no"]
    assert false and all(q.object.key != q.subject.key for q in false)
    assert {q.knowledge_type for q in questions} == {"memorization", "identification", "reasoning"}
    assert len({q.id for q in questions}) == len(questions)


def test_question_contents(toy_kb):
    _, questions, _ = toy_kb
    by_id = {q.id: q for q in questions}
    ada = uid("P19", "Q1001", "Q90")
    tc = by_id[f"tc:{ada}"]
    assert tc.text == "Ada was born in [MASK] ." and tc.answer == "Paris" and tc.template == "[X] was born in [Y] ."
    assert tc.qset_id == ada and tc.source_facts == (ada,)
    true, false = by_id[f"sc+:{ada}"], by_id[f"sc-:{ada}"]
    assert true.answer == YES and "Ada was born in Paris" in true.text and true.object.label == "Paris"
    assert false.answer == NO and false.object.label in {"Lyon", "Berlin", "Munich", "Rome"}
    assert false.choices == (YES, NO)

    team = by_id[f"ed:{uid('P463', 'Q2000', 'Q2001')}"]
    assert team.aspect == TYPE_ASPECT and team.answer == "Team X"
    assert set(team.choices) == {"Ada", "Bert", "Cleo", "Team X"} and "[MASK]" in team.text
    dora = by_id[f"ed:{uid('P106', 'Q1004', 'Q2003')}"]
    assert dora.aspect == "occupation" and dora.answer == "Dora"
    assert set(dora.choices) == {"Ada", "Bert", "Cleo", "Dora"}

    reasoning = {q.id: q for q in questions if q.kind == PREDICATE_REASONING}
    cob = reasoning["pr:chain:P19/P17:country_of_birth:Q1001:country_of_birth:Q142"]
    assert cob.text.startswith("Ada was born in the country [MASK] . Choices: ") and cob.answer == "France"
    # France, Germany and Italy are the relation's objects; Spain and Austria come in as countries
    assert set(cob.choices) - {"France"} <= {"Germany", "Italy", "Spain", "Austria"} and len(set(cob.choices)) == 4
    assert cob.source_facts == (ada, uid("P17", "Q90", "Q142")) and cob.qset_id == ada
    assert cob.axiom == "chain:P19/P17:country_of_birth"
    spain = reasoning["pr:symmetric:P47:Q29:P47:Q142"]
    assert spain.answer == "France" and "Spain" not in spain.choices and spain.qset_id == uid("P47", "Q142", "Q29")
    assert all(q.answer in q.choices and len(q.choices) == 4 for q in reasoning.values())


def test_kb_inferred_answers_reasoning_questions_the_gold_kb_cannot(toy_kb):
    store, questions, _ = toy_kb
    assert setting_graphs(store, "kb", "toy") == ["gold-toy"]
    [closure] = closure_graphs(store)
    assert setting_graphs(store, "kb-inferred", "toy") == ["gold-toy", closure]
    assert TYPES_GRAPH in store.graph_names()
    summaries = {}
    for setting in ("kb", "kb-inferred"):
        kb = kb_for(store, setting, "toy")
        records = [score(q, kb.answer(q)) for q in questions]
        summaries[setting] = {(r["group"], r["metric"]): r["value"] for r in summarize_kmir(records)}
    gold, inferred = summaries["kb"], summaries["kb-inferred"]
    for kind in (TRIPLE_COMPLETION, STATEMENT_CHECKING, ENTITY_DISTINCTION):
        assert gold[(kind, "f1")] == inferred[(kind, "f1")] == 100.0
    assert gold[(PREDICATE_REASONING, "f1")] == 0.0
    assert inferred[(PREDICATE_REASONING, "f1")] == 100.0
    # every Q-set holding a reasoning question is partly right for `kb`, all right for `kb-inferred`
    qsets = {q.qset_id for q in questions}
    with_reasoning = {q.qset_id for q in questions if q.kind == PREDICATE_REASONING}
    assert gold[("all", "robust_partial")] == pytest.approx(100 * len(with_reasoning) / len(qsets))
    assert inferred[("all", "robust_all")] == 100.0
    assert gold[("all", "f1")] == pytest.approx(100 * (len(questions) - 7) / len(questions))


def test_unknown_setting_is_a_config_error(toy_kb):
    from eval.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown KB setting 'kb-magic'"):
        kb_for(toy_kb[0], "kb-magic")


def test_kb_inferred_needs_the_closure_of_exactly_its_graphs(tmp_path):
    """No closure of the gold graphs asked (none at all, or one of more facts): an error naming `kbc kb infer`,
    never an answer from another closure."""
    path = tmp_path / "axioms.ttl"
    path.write_text(AXIOMS + "wdt:P36 owl:inverseOf wdt:P1376 .\n")
    known = ["P17", "P19", "P36", "P47", "P1376"]
    with GraphStore.open(None) as store:
        toy = store.ensure_corpus("toy", "v1", toy_facts())
        with pytest.raises(DataError, match=r"^kb-inferred: no closure of gold-toy in the store \(the store holds no "
                                            r"inferred graph\); compute it with kbc kb infer$"):
            setting_graphs(store, "kb-inferred", "toy")
        more = store.ensure_corpus("more", "v1", [Fact("m1", "more", "P36", Entity("France", "Q142"),
                                                       Entity("Paris", "Q90"))])
        wider = ensure_inferred(store, load_axioms(path), [toy, more], known)
        with pytest.raises(DataError, match="the closures there were computed from more relations"):
            setting_graphs(store, "kb-inferred", "toy")
        own = ensure_inferred(store, load_axioms(path), [toy], known)
        assert own.graph != wider.graph and setting_graphs(store, "kb-inferred", "toy") == [toy, own.graph]


# --- the real T-REx facts -------------------------------------------------------------------------------
def test_trex_questions(trex, shared_data):
    instance_of = load_instance_of(shared_data / "xfactr" / "TREx_instanceof.txt")
    assert len(instance_of) == 35131
    store = GraphStore.open(None)
    graph = store.ensure_corpus(trex.name, trex.version, trex.facts)
    onto = load_axioms()
    report = ensure_inferred(store, onto, [graph], known_relations=trex.relations)
    inferred = read_inferred(store, [graph], report.graph)
    relations = {**trex.relations, **onto.relations()}
    questions = generate(trex.facts, inferred, instance_of, seed=0, per_relation=3, relations=relations)
    assert questions == generate(trex.facts, inferred, instance_of, seed=0, per_relation=3, relations=relations)
    other_seed = generate(trex.facts, inferred, instance_of, seed=1, per_relation=3, relations=relations)
    assert {q.qset_id for q in other_seed} != {q.qset_id for q in questions}
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == set(KINDS)
    assert kinds[PREDICATE_REASONING] == 36  # 3 per axiom, 12 axioms

    facts = {f.uid: f for f in trex.facts}
    held = defaultdict(set)
    objects = defaultdict(set)
    for f in trex.facts:
        held[(f.subject.key, f.relation)].add(f.object.key)
        objects[f.relation].add(f.object.key)
    for i in inferred:
        held[(i.subject.key, i.relation)].add(i.object.key)
    for q in questions:
        assert q.qset_id in facts and set(q.source_facts) <= set(facts)
        if q.kind == STATEMENT_CHECKING and q.answer == NO:
            assert q.object.key in objects[q.relation] and q.object.key not in held[(q.subject.key, q.relation)]
            true_types = {t for t, _ in instance_of.get(facts[q.qset_id].object.id or "", ())}
            assert true_types & {t for t, _ in instance_of.get(q.object.id or "", ())}, q.text
        if q.kind == ENTITY_DISTINCTION and q.aspect == TYPE_ASPECT:
            types = [{t for t, _ in instance_of.get(e.id or "", ())} | held[(e.key, "P31")] for e in q.entities]
            assert q.entities[outlier(types)].label == q.answer == facts[q.qset_id].subject.label
        if q.kind == PREDICATE_REASONING:
            assert len(set(q.choices)) == 4 and q.answer in q.choices
            distractors = [e for e in q.entities if e.label != q.answer]
            assert not any(e.key in held[(q.subject.key, q.relation)] for e in distractors)


# --- plausible negatives and distractors ------------------------------------------------------------------
def _facts(rows: list[tuple[str, str, str]], labels: dict[str, str]) -> list[Fact]:
    return [Fact(uid(r, s, o), "toy", r, Entity(labels[s], s), Entity(labels[o], o)) for r, s, o in rows]


def test_corrupted_statements_keep_the_type_of_the_true_object():
    labels = {"Q1": "Forbidden City", "Q2": "Louvre", "Q3": "Mindanao", "Q4": "Sicily", "Q5": "noise",
              "Q10": "Beijing", "Q11": "Paris", "Q12": "Philippines", "Q13": "Italy", "Q14": "sound"}
    rows = [("P361", "Q1", "Q10"), ("P361", "Q2", "Q11"), ("P361", "Q3", "Q12"), ("P361", "Q4", "Q13"),
            ("P361", "Q5", "Q14")]
    types = {"Q10": (("Q515", "city"),), "Q11": (("Q515", "city"),), "Q12": (("Q6256", "country"),),
             "Q13": (("Q6256", "country"),)}
    questions = generate(_facts(rows, labels), [], types, seed=0,
                         relations={"P361": Relation("P361", "part of", "[X] is part of [Y] .")})
    negatives = {q.subject.label: q.object.label for q in questions if q.kind == STATEMENT_CHECKING and q.answer == NO}
    # a city for a city, a country for a country; "sound" has no type, so "noise" gets no false statement
    assert negatives == {"Forbidden City": "Paris", "Louvre": "Beijing", "Mindanao": "Italy", "Sicily": "Philippines"}


def test_reasoning_distractors_have_no_fact_with_the_subject():
    labels = {"Q1001": "Ada", "Q1002": "Bert", "Q1003": "Cleo", "Q90": "Paris", "Q64": "Berlin", "Q220": "Rome",
              "Q1741": "Vienna", "Q597": "Lisbon", "Q142": "France", "Q183": "Germany", "Q38": "Italy",
              "Q40": "Austria", "Q45": "Portugal", "Q29": "Spain"}
    rows = [("P19", "Q1001", "Q90"), ("P19", "Q1002", "Q64"), ("P19", "Q1003", "Q220"),
            ("P17", "Q90", "Q142"), ("P17", "Q64", "Q183"), ("P17", "Q220", "Q38"), ("P17", "Q1741", "Q40"),
            ("P17", "Q597", "Q45"),
            ("P27", "Q1001", "Q183"),  # Ada is a citizen of Germany
            ("P6", "Q29", "Q1001")]  # Spain names Ada, the other way round
    facts = _facts(rows, labels)
    types = {q: (("Q6256", "country"),) for q in ("Q142", "Q183", "Q38", "Q40", "Q45", "Q29")}
    cob = "country_of_birth"
    inferred = [InferredFact(Entity(labels[p], p), cob, Entity(labels[c], c), "chain:P19/P17:" + cob,
                             (("Q" + p[1:], "P19", city), (city, "P17", c)))
                for p, city, c in (("Q1001", "Q90", "Q142"), ("Q1002", "Q64", "Q183"), ("Q1003", "Q220", "Q38"))]
    relations = {cob: Relation(cob, "country of birth", "[X] was born in the country [Y] .")}
    questions = generate(facts, inferred, types, seed=0, relations=relations)
    ada = next(q for q in questions if q.kind == PREDICATE_REASONING and q.subject.label == "Ada")
    # Germany (Ada's citizenship) and Spain (a fact naming Ada) would be second right answers in the data
    assert ada.answer == "France" and set(ada.choices) == {"France", "Italy", "Austria", "Portugal"}


def test_articles_and_capitals_read_as_english():
    """"an" before a vowel ("is an actor", never "a actor"); a statement that does not open the question and
    starts with the template's own word is lower-cased there; a label that starts it stays as written."""
    from eval.kmir import fill, in_sentence, statement

    assert fill("[X] is a [Y] by profession .", "Tom Hanks", "actor") == "Tom Hanks is an actor by profession ."
    assert fill("[X] is a [Y] .", "Ada", "chemist") == "Ada is a chemist ."
    assert fill("A [Y] is where [X] lives .", "Ada", "island") == "An island is where Ada lives ."
    template = "The capital of [X] is [Y] ."
    text = statement(template, "France", "Paris")
    assert in_sentence("Is this true, {statement}? [MASK].", template, text) == \
        "the capital of France is Paris"
    assert in_sentence("{statement}, is this true? [MASK].", template, text) == "The capital of France is Paris"
    assert in_sentence("Is the statement \u201c{statement}\u201d true? [MASK].", template, text) == \
        "The capital of France is Paris"
    assert in_sentence("Is this true, {statement}? [MASK].", "[X] was born in [Y] .", "Ada was born in Paris") == \
        "Ada was born in Paris"


def test_summary_rows_do_not_depend_on_the_order_the_questions_came_in():
    # asked with --relations P36 P1376 or P1376 P36, the same questions: the same bytes in summary.json
    records = [{"qset_id": q, "kind": TRIPLE_COMPLETION, "relation": "P36", "f1": v, "em": 0.0, "chance": v}
               for q, v in (("A", 0.1), ("B", 0.2), ("C", 0.3))]
    assert summarize_kmir(records) == summarize_kmir(records[::-1])


def test_no_false_statement_names_an_object_the_multi_relation_list_holds(tmp_path):
    # LAMA keeps one object of an N-M fact: "the Louvre is part of Beijing" is false, but a list of every object
    # Wikidata holds for the Forbidden City (X-FACTR's TREx_multi_rel.txt) rules out its only other city, Paris
    labels = {"Q1": "Forbidden City", "Q2": "Louvre", "Q10": "Beijing", "Q11": "Paris"}
    rows = [("P361", "Q1", "Q10"), ("P361", "Q2", "Q11")]
    types = {"Q10": (("Q515", "city"),), "Q11": (("Q515", "city"),)}
    listed = tmp_path / "TREx_multi_rel.txt"
    listed.write_text("Q1\tP361\tQ10 Q11\nQ7\tP17\tQ8\n")
    relations = {"P361": Relation("P361", "part of", "[X] is part of [Y] .")}
    questions = generate(_facts(rows, labels), [], types, seed=0, relations=relations,
                         known_true=load_multi_rel(listed))
    negatives = {q.subject.label: q.object.label for q in questions if q.kind == STATEMENT_CHECKING and q.answer == NO}
    assert negatives == {"Louvre": "Beijing"}
    listed.write_text("Q1\tP361\tQ10\nQ2 P361 Q11\n")
    with pytest.raises(DataError, match=r"TREx_multi_rel.txt:2: not 'SUBJECT_ID<TAB>RELATION<TAB>OBJECT_ID \.\.\.'"):
        load_multi_rel(listed)


def test_no_reasoning_distractor_is_linked_to_the_subject_in_the_multi_relation_list(tmp_path):
    # the corpus keeps one border of Quebec (Maine); Wikidata (X-FACTR's TREx_multi_rel.txt) also holds Vermont, and
    # Texas naming Quebec the other way round: both would be second right answers to "Quebec shares border with",
    # so neither is a distractor; a link under a relation the question does not rest on (P530) rules nothing out
    labels = {"Q176": "Quebec", "Q724": "Maine", "Q16551": "Vermont", "Q1397": "Ohio", "Q1439": "Texas",
              "Q829": "Utah", "Q1546": "Iowa", "Q1558": "Kansas"}
    rows = [("P47", "Q724", "Q176"), ("P47", "Q1397", "Q16551"), ("P47", "Q1439", "Q829"), ("P47", "Q1546", "Q1558")]
    types = {q: (("Q35657", "state"),) for q in ("Q724", "Q16551", "Q829", "Q1558", "Q1439", "Q1397")}
    inferred = [InferredFact(Entity("Quebec", "Q176"), "P47", Entity("Maine", "Q724"), "symmetric:P47",
                             (("Q724", "P47", "Q176"),))]
    relations = {"P47": Relation("P47", "shares border with", "[X] shares border with [Y] .")}
    listed = tmp_path / "TREx_multi_rel.txt"
    listed.write_text("Q176\tP47\tQ16551\nQ1439\tP47\tQ176\nQ176\tP530\tQ829\n")
    choices = []
    for known_true in ({}, load_multi_rel(listed)):
        questions = generate(_facts(rows, labels), inferred, types, seed=0, relations=relations,
                             known_true=known_true)
        choices.append(set(next(q for q in questions if q.kind == PREDICATE_REASONING).choices))
    assert choices == [{"Maine", "Vermont", "Utah", "Kansas"}, {"Maine", "Utah", "Kansas", "Ohio"}]


PART_OF_AXIOMS = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
wdt:P361 a owl:TransitiveProperty .
wdt:P361 owl:inverseOf wdt:P527 .
"""


def test_reasoning_questions_follow_derivations_from_earlier_facts(tmp_path):
    # Rwanda part of East Africa part of Africa: "Rwanda part of Africa" comes from transitivity, never from the
    # inverse of "Africa has part Rwanda", which rests on it; three more part-of facts give the distractors
    labels = {"Q1037": "Rwanda", "Q27407": "East Africa", "Q15": "Africa", "Q1": "Sicily", "Q2": "Italy",
              "Q3": "Crete", "Q4": "Greece", "Q5": "Corsica", "Q6": "France"}
    rows = [("P361", "Q1037", "Q27407"), ("P361", "Q27407", "Q15"), ("P361", "Q1", "Q2"), ("P361", "Q3", "Q4"),
            ("P361", "Q5", "Q6")]
    facts = _facts(rows, labels)
    path = tmp_path / "part_of.ttl"
    path.write_text(PART_OF_AXIOMS)
    with GraphStore.open(None) as store:
        graph = store.ensure_corpus("toy", "v1", facts)
        report = ensure_inferred(store, load_axioms(path), [graph], known_relations=["P361", "P527"])
        inferred = read_inferred(store, [graph], report.graph)
    relations = {"P361": Relation("P361", "part of", "[X] is part of [Y] ."),
                 "P527": Relation("P527", "has part", "[X] has part [Y] .")}
    questions = generate(facts, inferred, {}, seed=0, relations=relations)
    asked = {q.id: q.source_facts for q in questions if q.kind == PREDICATE_REASONING}
    rwanda, east_africa = uid("P361", "Q1037", "Q27407"), uid("P361", "Q27407", "Q15")
    inverse = "pr:inverse:P361:P527"
    assert asked == {
        "pr:transitive:P361:Q1037:P361:Q15": (rwanda, east_africa),
        f"{inverse}:Q15:P527:Q1037": (rwanda, east_africa),  # by the inverse of the transitive fact
        f"{inverse}:Q27407:P527:Q1037": (rwanda,), f"{inverse}:Q15:P527:Q27407": (east_africa,),
        f"{inverse}:Q2:P527:Q1": (uid("P361", "Q1", "Q2"),), f"{inverse}:Q4:P527:Q3": (uid("P361", "Q3", "Q4"),),
        f"{inverse}:Q6:P527:Q5": (uid("P361", "Q5", "Q6"),)}
    # both source facts get the other kinds too: the reasoning question's Q-set is complete
    assert {q.qset_id for q in questions if q.kind == TRIPLE_COMPLETION} >= {rwanda, east_africa}


def test_a_fact_keeps_the_derivation_of_every_axiom_and_a_cycle_is_refused():
    from eval.kmir import _Kb

    a, b = Entity("Ada", "Q1"), Entity("Paris", "Q2")
    facts = [Fact("g1", "toy", "P1", a, b), Fact("g2", "toy", "P2", a, b)]
    # A P3 B by two axioms, each from its own gold fact; A P4 B from it
    by_p1 = InferredFact(a, "P3", b, "subproperty:P1:P3", (("Q1", "P1", "Q2"),))
    by_p2 = InferredFact(a, "P3", b, "subproperty:P2:P3", (("Q1", "P2", "Q2"),))
    on_top = InferredFact(a, "P4", b, "subproperty:P3:P4", (("Q1", "P3", "Q2"),))
    kb = _Kb(facts, [on_top, by_p2, by_p1], {})
    assert kb.inferred[("Q1", "P3", "Q2")] == [by_p1, by_p2]
    assert (kb.sources(by_p1), kb.sources(by_p2)) == (["g1"], ["g2"])
    assert kb.roots(("Q1", "P3", "Q2")) == kb.roots(("Q1", "P4", "Q2")) == ["g1"]
    # each derivation is the one its question names: A P3 B asked once, under the first axiom, with its gold fact
    relations = {r: Relation(r, r, f"[X] {r} [Y] .") for r in ("P1", "P2", "P3", "P4")}
    more = [Fact(f"x{i}", "toy", r, Entity(f"X{i}", f"Q{10 + i}"), Entity(f"Y{i}", f"Q{20 + i}"))
            for i in range(3) for r in ("P3", "P4")]
    questions = generate([*facts, *more], [on_top, by_p1, by_p2], {}, relations=relations)
    asked = {q.id: q.source_facts for q in questions if q.kind == PREDICATE_REASONING}
    assert asked == {"pr:subproperty:P1:P3:Q1:P3:Q2": ("g1",), "pr:subproperty:P3:P4:Q1:P4:Q2": ("g1",)}
    # provenance going round in a circle, or resting on a fact the KB lacks, is refused, never cut to fewer facts
    circle = [InferredFact(a, "P5", b, "inverse:P5:P6", (("Q1", "P6", "Q2"),)),
              InferredFact(a, "P6", b, "inverse:P5:P6", (("Q1", "P5", "Q2"),))]
    with pytest.raises(DataError, match=r"^the derivation of Q1 P6 Q2 by inverse:P5:P6 rests on Q1 P5 Q2, which rests "
                                        r"on it: provenance of an earlier kbc version \(recompute it: kbc kb infer\)$"):
        _Kb(facts, circle, {}).roots(("Q1", "P5", "Q2"))
    with pytest.raises(DataError, match=r"^inferred premise Q1 P7 Q2 is neither a gold fact nor an inferred one"):
        _Kb(facts, [InferredFact(a, "P8", b, "subproperty:P7:P8", (("Q1", "P7", "Q2"),))], {}).roots(("Q1", "P8", "Q2"))
