"""The shared types travel to Ray workers by pickle: every field comes back, subclasses' included."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from bridge.experiments.kmir import KmirFact, KmirQuery
from eval.types import (
    Answer,
    Entity,
    Evidence,
    Fact,
    Prediction,
    Query,
    Relation,
    SetFact,
    answers_of,
    ranked_prediction,
    with_targets,
)


def test_every_shared_type_and_subclass_round_trips():
    paris, france = Entity("Paris", "Q90", ("City of Light",)), Entity("France", "Q142")
    fact = Fact("u1", "trex", "P1376", paris, france, (Evidence("Paris is in France.", "Paris is in [MASK]."),),
                None, 3)
    objects = [
        paris, Relation("P1376", "capital of", "[X] is the capital of [Y] .", "N-1", "d", (france,), ("t",), ("geo",)),
        fact, SetFact("s1", "lmkbc2024", "r", paris, (france, paris), ("France",), "c"),
        Query("q1", "u1", "trex", "P1376", paris, "object", "[X] is the capital of [Y] .", "ctx", ("France",), "p2"),
        Answer("France", -0.5, "Q142"),
        Prediction("q1", (Answer("France", -0.5, "Q142"),), True, {"k": 1}, {"France": 1}, True),
        KmirFact("u1", "trex", "P1376", paris, france, (), None, None, ("yes", "no")),
        KmirQuery("q2", "u1", "trex", "P1376", paris, "object", "[X] ? [Y]", None, (), "lama", None, ("yes", "no")),
    ]
    for obj in objects:
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and repr(back) == repr(obj)
        assert copy.deepcopy(obj) == obj
    assert pickle.loads(pickle.dumps(objects[-2])).choices == ("yes", "no")


def test_answers_of_are_the_answers_the_constructor_makes():
    """`answers_of` skips the frozen `__init__` but makes the same objects: equal, hashed, pickled and frozen alike."""
    made = answers_of(["France", "Italy"], [-0.5, -1.25])
    want = (Answer("France", -0.5), Answer("Italy", -1.25))
    assert made == want and [hash(a) for a in made] == [hash(a) for a in want]
    assert repr(made) == repr(want) and pickle.loads(pickle.dumps(made)) == want
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].label = "Spain"
    assert answers_of([], []) == ()


def test_ranked_prediction_is_the_prediction_the_constructor_makes():
    """`ranked_prediction` skips the frozen `__init__` but makes the same object, every field set."""
    answers = answers_of(["France"], [-0.5])
    made = ranked_prediction("q1", answers, True, {"n_tokens": 7}, {"France": 1})
    want = Prediction("q1", answers, True, {"n_tokens": 7}, {"France": 1})
    assert repr(made) == repr(want) and made == want and hash(made) == hash(want)
    assert [getattr(made, f.name) for f in dataclasses.fields(Prediction)] == \
        [getattr(want, f.name) for f in dataclasses.fields(Prediction)]
    assert repr(pickle.loads(pickle.dumps(made))) == repr(want)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.lowercased = False


def test_with_targets_is_replace_for_queries_and_their_subclasses():
    """`with_targets` skips the frozen `__init__` for a plain Query but makes what `replace` makes; a subclass keeps
    its own fields and type."""
    paris = Entity("Paris", "Q90", ("City of Light",))
    plain = Query("q1", "u1", "trex", "P1376", paris, "subject", "[X] is the capital of [Y] .", "ctx", ("old",), "p2")
    made = with_targets(plain, ("France", "Italy"))
    want = dataclasses.replace(plain, targets=("France", "Italy"))
    assert type(made) is Query and repr(made) == repr(want) and made == want and hash(made) == hash(want)
    assert plain.targets == ("old",)  # the query it copies is left as it was
    assert repr(pickle.loads(pickle.dumps(made))) == repr(want)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.targets = ()
    kmir = KmirQuery("q2", "u1", "trex", "P1376", paris, "object", "[X] ? [Y]", None, (), "lama", None, ("yes", "no"))
    assert with_targets(kmir, ("yes",)) == dataclasses.replace(kmir, targets=("yes",))
    assert type(with_targets(kmir, ("yes",))) is KmirQuery and with_targets(kmir, ("yes",)).choices == ("yes", "no")
