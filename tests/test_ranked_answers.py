"""A masked LM's answers stay two lists (`RankedAnswers`) until one is read: records, ranks and every other read
must come out as they do from the tuple of `Answer`s they stand for."""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle

import lm_fixtures
import pytest

from bridge.experiments.lama import ranked_record, targets
from bridge.run.results import saved_answers
from bridge.run.runner import valid_objects_of
from eval.errors import KbcError
from eval.jsonl import jsonl_text
from eval.metrics import gold_rank, gold_ranks
from eval.queries import make_queries
from eval.types import Answer, Entity, Fact, Prediction, Query, RankedAnswers, answer_labels, answer_rows, answers_of

tiny_models = lm_fixtures.tiny_models


def plain(pred: Prediction) -> Prediction:
    """The same prediction with its answers a tuple of `Answer`s, as before they were held as lists."""
    return dataclasses.replace(pred, answers=tuple(pred.answers))


def record_lines(pairs, preds, valid) -> list[str]:
    return [jsonl_text(ranked_record(q, f, p, valid)) for (q, f), p in zip(pairs, preds)]


@pytest.mark.parametrize("kind", ["bert-cased", "bert-uncased"])
def test_masked_records_equal_those_of_the_answer_tuples(kind, tiny_models, trex):
    """Real prompts through the real tokenizers, gold and other valid objects as targets (or none, so that the
    gold's log-prob is read off the answers): the record lines are the very bytes the tuples give. Each relation
    ranks its own objects, so that golds are often among the answers."""
    from test_lm_masked import _scorer

    from lm.masked import MaskedLMPredictor
    from lm.vocab import AnswerSpace, token_labels

    scorer, loaded = _scorer(tiny_models(kind))
    by_rel = trex.by_relation()
    objects = {rel: [f.object.label for f in facts] for rel, facts in by_rel.items()}
    pred = MaskedLMPredictor(kind, scorer, AnswerSpace(token_labels(loaded.tokenizer, scorer.vocab_size),
                                                       per_relation=objects))
    read_off = 0
    for rel, pairs in list(make_queries(trex).items())[:6]:
        valid = valid_objects_of(by_rel[rel])
        facts = {f.uid for f in pred.filter_facts([f for _, f in pairs])[0]}
        pairs = [(dataclasses.replace(q, targets=targets(f, valid) if i % 2 else ()), f)
                 for i, (q, f) in enumerate(pairs[:20]) if f.uid in facts]
        preds = pred.predict([q for q, _ in pairs], 30)
        assert all(type(p.answers) is RankedAnswers for p in preds)
        assert record_lines(pairs, preds, valid) == record_lines(pairs, [plain(p) for p in preds], valid)
        for (q, f), p in zip(pairs, preds):
            gold = f.object.label.lower() if p.lowercased else f.object.label
            if not q.targets and gold in answer_labels(p.answers):
                want = next(a.score for a in tuple(p.answers) if a.label == gold)
                assert p.extra["gold_logprob"] == round(want, 6)
                read_off += 1
            assert gold_rank(p.answers, f.object.label, valid.get(f.subject.key, ()), p.lowercased) == \
                gold_rank(tuple(p.answers), f.object.label, valid.get(f.subject.key, ()), p.lowercased)
    assert read_off  # a gold among the answers but no target: its log-prob is read off the labels


TIED = (["Rome", "Paris", "rome", "Paris", "Oslo", "Lima", "Bern"], [-1.0, -1.0, -1.0, -2.0, -math.inf, -3.0, -3.0])


@pytest.mark.parametrize("lowercased", [False, True])
@pytest.mark.parametrize("shared_ties", [False, True])
def test_ties_repeated_labels_and_infinite_scores_read_as_the_tuple(lowercased, shared_ties):
    lists = RankedAnswers(*TIED)
    tup = answers_of(*TIED)
    for gold in ("Paris", "rome", "Lima", "Bern", "Kyiv"):
        for exclude in ((), ("Rome",), ("Paris", "Oslo")):
            assert gold_rank(lists, gold, exclude, lowercased, shared_ties) == \
                gold_rank(tup, gold, exclude, lowercased, shared_ties)
            assert gold_ranks(lists, gold, exclude, lowercased, shared_ties) == \
                gold_ranks(tup, gold, exclude, lowercased, shared_ties)
    for used in ((), (3,), (0, 6)):
        assert saved_answers(lists, used, shared_ties, top=4) == saved_answers(tup, used, shared_ties, top=4)
    assert answer_rows(lists, 4) == answer_rows(tup, 4) == [["Rome", -1.0, None], ["Paris", -1.0, None],
                                                            ["rome", -1.0, None], ["Paris", -2.0, None]]
    assert answer_labels(lists) == answer_labels(tup) == TIED[0]


def test_a_non_finite_score_is_refused_alike():
    """An infinity or NaN among the saved answers makes no record line, whichever way the answers are held."""
    paris = Entity("Paris", "Q90")
    fact = Fact("f1", "trex", "P36", Entity("France", "Q142"), paris)
    query = Query("q1", "f1", "trex", "P36", fact.subject, "object", "The capital of [X] is [Y] .")
    for bad in (-math.inf, math.nan):
        labels, scores = ["Paris", "Lyon"], [-0.5, bad]
        for answers in (RankedAnswers(labels, scores), answers_of(labels, scores)):
            record = ranked_record(query, fact, Prediction("q1", answers), {})
            assert record["rank_raw"] == 1
            with pytest.raises(KbcError, match="NaN or infinity"):
                jsonl_text(record)


def test_ranked_answers_are_the_tuple_they_stand_for():
    """Equal, hashed, indexed, sliced, joined, copied and pickled as the tuple of `Answer`s; a prediction holding
    them equals one holding the tuple, and answers with ids (one entity or several) still save their ids."""
    lists = RankedAnswers(["France", "Italy", "Spain"], [-0.5, -1.25, -1.25])
    tup = (Answer("France", -0.5), Answer("Italy", -1.25), Answer("Spain", -1.25))
    assert lists == tup and tup == lists and not (lists != tup) and lists != tup[:2] and lists != list(tup)
    assert hash(lists) == hash(tup) and repr(lists) == repr(tup) and len(lists) == 3 and lists
    assert lists[1] == tup[1] and lists[-1] == tup[-1] and lists[:2] == tup[:2] and type(lists[:2]) is tuple
    assert list(lists) == list(tup) and list(reversed(lists)) == list(reversed(tup)) and tup[2] in lists
    assert lists + (Answer("Rome", -2.0),) == tup + (Answer("Rome", -2.0),) == () + lists + (Answer("Rome", -2.0),)
    assert lists.index(tup[2]) == 2 and lists.count(tup[1]) == 1
    for back in (pickle.loads(pickle.dumps(lists)), copy.deepcopy(lists), copy.copy(lists)):
        assert type(back) is tuple and back == tup
    assert not RankedAnswers([], []) and RankedAnswers([], []) == ()
    held, made = Prediction("q1", lists, True, {"n": 1}, {"France": 1}), Prediction("q1", tup, True)
    assert held == made and hash(held) == hash(made)
    back = pickle.loads(pickle.dumps(held))
    assert back == made and type(back.answers) is tuple and back.target_ranks == {"France": 1}
    with_ids = (Answer("England", -0.5, "Q179876|Q21"), Answer("Italy", -1.0, "Q38"))
    assert answer_rows(with_ids, 5) == [["England", -0.5, "Q179876|Q21"], ["Italy", -1.0, "Q38"]]
    assert RankedAnswers(["England", "Italy"], [-0.5, -1.0]) != with_ids


def test_answers_travel_to_and_from_ray_workers_as_lists():
    """Packed for a Ray worker's reply straight from the lists, and unpacked into lists again where no answer has an
    id: the same predictions and record rows, no `Answer` made on the way."""
    from bridge.run.ray_executor import pack, unpack

    lists = RankedAnswers(["Paris", "Lyon", "Paris"], [-0.5, -1.25, -1.25])
    sent = [Prediction("u1", lists, False, {"n_tokens": 7}, {"Paris": 1}),
            Prediction("u2", (Answer("Paris", -0.5, "Q90"), Answer("Rome", -2.0))),
            Prediction("u3", RankedAnswers([], []))]
    got = unpack(pack(sent))
    assert lists._made is None and got[0].answers._made is None
    assert got == sent
    assert [type(p.answers) for p in got] == [RankedAnswers, tuple, RankedAnswers]
    assert [answer_rows(p.answers, 10) for p in got] == [answer_rows(tuple(p.answers), 10) for p in sent]


def test_float32_scores_round_in_one_go_as_round_does():
    """Random log-probs, tiny and huge values, exact halves (multiples of 2**-7 are ties at 6 places), signed zeros
    and non-finite ones: each rounds to the very float `round` gives, so a record's bytes do not change."""
    import numpy as np

    from lm.masked import rounded_scores

    rng = np.random.default_rng(7)
    scores = np.concatenate([rng.uniform(-60, 0, 200_000), -np.exp(rng.uniform(-30, 5, 100_000)),
                             np.arange(-40 * 128, 128) / 128, np.arange(-4000, 4000) / 2 ** 20,
                             [0.0, -0.0, 1e-8, -1e-8, 5e-7, -5e-7, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan]])
    scores = scores.astype(np.float32)
    assert [repr(s) for s in rounded_scores(scores).tolist()] == [repr(round(s, 6)) for s in scores.tolist()]
    assert round(0.0078125, 6) == rounded_scores(np.float32([2 ** -7]))[0] == 0.007812  # a tie, kept even
    with pytest.raises(TypeError):
        rounded_scores(scores.astype(np.float64))


def test_rounded_scores_given_or_not_save_the_same_rows():
    """`rounded` holds the first scores rounded: rows read it as far as it reaches, and round the scores where it
    does not reach as far as the rows asked."""
    labels, scores = ["a", "b", "c", "d"], [-0.12345678, -1.00000049, -2.5, -3.0000005]
    want = answer_rows(answers_of(labels, scores), 10)
    for rounded in (None, *([round(s, 6) for s in scores[:k]] for k in (0, 1, 4))):
        for top in (0, 1, 3, 10):
            assert answer_rows(RankedAnswers(labels, scores, rounded), top) == want[:top]
