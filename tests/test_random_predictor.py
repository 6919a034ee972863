"""`random`: seeded, uniform, and the same order however queries are batched."""

from __future__ import annotations

from bridge.experiments.kmir import KmirFact, KmirQuery
from bridge.predictors.random_baseline import RandomPredictor
from eval.types import Entity, Fact, Query

CITIES = ("Paris", "Lyon", "Rome", "Berlin", "Vienna")
FACTS = [Fact(f"f{i}", "toy", "P19", Entity(f"person {i}", f"Q{i}"), Entity(city, f"Q9{i}"))
         for i, city in enumerate(CITIES * 4)]


def _query(uid: str, **extra) -> Query:
    return Query(uid, uid, "toy", "P19", Entity("person 0", "Q0"), "object", "[X] was born in [Y] .", **extra)


def test_ranks_the_relations_entities_the_same_way_in_any_batch():
    predictor = RandomPredictor(FACTS, seed=3)
    assert predictor.answer_space_size("P19") == 5 and predictor.answer_space_size("P19", "subject") == 20
    queries = [_query(f"q{i}", targets=("Rome",)) for i in range(40)]
    together = predictor.predict(queries, depth=100)
    alone = [predictor.predict([q], depth=100)[0] for q in reversed(queries)][::-1]
    assert [[a.label for a in p.answers] for p in together] == [[a.label for a in p.answers] for p in alone]
    for p in together:
        labels = [a.label for a in p.answers]
        assert sorted(labels) == sorted(CITIES) and p.target_ranks == {"Rome": labels.index("Rome") + 1}
    # uniform: every city comes first for some of the 40 queries; another seed gives other orders
    assert {p.answers[0].label for p in together} == set(CITIES)
    other = RandomPredictor(FACTS, seed=4).predict(queries, depth=100)
    assert [p.answers[0].label for p in other] != [p.answers[0].label for p in together]


def test_closed_questions_rank_their_choices():
    predictor = RandomPredictor(FACTS, seed=0)
    queries = [KmirQuery(f"sc:{i}", f"f{i}", "toy", "P19", Entity("x"), "object", "Is it true? [Y].",
                         targets=("yes", "no"), choices=("yes", "no")) for i in range(200)]
    preds = predictor.predict(queries, depth=100)
    assert all(sorted(p.target_ranks.values()) == [1, 2] and len(p.answers) == 2 for p in preds)
    assert sum(p.answers[0].label == "yes" for p in preds) == 104  # about half of 200
    fact = KmirFact("sc:0", "toy", "P19", Entity("x"), Entity("no"), choices=("yes", "no"))
    kept, dropped = predictor.filter_facts([fact, FACTS[0], Fact("z", "toy", "P19", Entity("y"), Entity("Oslo"))])
    assert [f.uid for f in kept] == ["sc:0", "f0"] and dropped == {"object is not an entity of the relation": 1}
