"""Causal-LM typed querying: sentence log-likelihoods are exact, batching-invariant, and rank candidates."""

from __future__ import annotations

import lm_fixtures
import pytest

from eval.lama import Corpus
from eval.types import Entity, Fact, Query, Relation

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


@pytest.fixture(scope="module")
def gpt2(tiny_models):
    from lm.loading import load

    return load(str(tiny_models("gpt2")), "causal")


def _scorer(loaded, batch_size=4, cache=None):
    from lm.causal import CausalLMScorer

    return CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, batch_size=batch_size,
                          cache=cache)


def _reference_loglik(loaded, text: str) -> float:
    """Unbatched: BOS + tokens, mean cross-entropy from the model's own loss, times the token count."""
    import torch

    ids = [loaded.tokenizer.bos_token_id] + loaded.tokenizer(text)["input_ids"]
    x = torch.tensor([ids])
    with torch.no_grad():
        loss = loaded.model(input_ids=x, labels=x).loss
    return -float(loss) * (len(ids) - 1)


def test_loglik_equals_the_models_own_loss(gpt2):
    texts = ["Dante was born in Florence .", "Dante was born in Ulaanbaatar Province .", "Rome ."]
    got = _scorer(gpt2, batch_size=3).loglik(texts)  # padded batch: lengths differ
    for text, (ll, n) in zip(texts, got):
        assert abs(ll - _reference_loglik(gpt2, text)) < 1e-3
        assert n == len(gpt2.tokenizer(text)["input_ids"])


def test_batching_dedup_and_cache(gpt2, tmp_path):
    from lm.cache import ResultCache

    texts = ["A is in B .", "A is in Bavaria .", "A is in B .", "The cat sat on the mat ."]
    one = _scorer(gpt2, batch_size=1)
    a = one.loglik(texts)
    assert one.forward_calls == 3  # the repeated sentence runs once
    cache = ResultCache(tmp_path / "c.sqlite")
    many = _scorer(gpt2, batch_size=8, cache=cache)
    b = many.loglik(texts)
    assert [round(x, 3) for x, _ in a] == [round(x, 3) for x, _ in b]
    again = _scorer(gpt2, cache=cache)
    assert again.loglik(texts) == b and again.forward_calls == 0


def test_typed_querying_ranks_multi_token_candidates(gpt2):
    from lm.causal import NOT_IN_SET, CausalTypedPredictor

    cands = {"P19": ["Florence", "Ulaanbaatar Province", "Rome", "Florence"]}
    pred = CausalTypedPredictor("tiny", _scorer(gpt2), cands, "test")
    assert pred.candidates["P19"] == ["Florence", "Ulaanbaatar Province", "Rome"]
    q = Query("u", "f", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] .")
    (p,) = pred.predict([q], 10)
    assert len(p.answers) == 3 and {a.label for a in p.answers} == set(pred.candidates["P19"])
    for a in p.answers:
        assert abs(a.score - _reference_loglik(gpt2, f"Dante was born in {a.label} .")) < 1e-3
    assert all(x.score >= y.score for x, y in zip(p.answers, p.answers[1:]))
    assert pred.predict([q], 2)[0].answers == p.answers[:2]
    facts = [Fact("1", "trex", "P19", Entity("Dante"), Entity("Rome")),
             Fact("2", "trex", "P19", Entity("X"), Entity("Paris"))]
    kept, dropped = pred.filter_facts(facts)
    assert kept == facts[:1] and dropped == {NOT_IN_SET: 1}


def test_factory_uses_the_relation_objects(gpt2, tiny_models, tmp_path):
    from bridge.predictors.lm import make_causal
    from bridge.predictors.registry import PredictorContext

    rel = Relation("P36", "capital", "The capital of [X] is [Y] .", "1-1")
    facts = [Fact("1", "trex", "P36", Entity("Italy"), Entity("Rome")),
             Fact("2", "trex", "P36", Entity("France"), Entity("Paris")),
             Fact("3", "trex", "P36", Entity("Lazio"), Entity("Rome"))]
    ctx = PredictorContext(Corpus("trex", {"P36": rel}, facts), None, tmp_path, tmp_path, options={"cache": "off"})
    pred = make_causal(str(tiny_models("gpt2")), ctx)
    assert pred.candidates == {"P36": ["Rome", "Paris"]}
    assert pred.describe()["candidates_per_relation"] == {"P36": 2}
    # said before the work: every entity of the relation is a candidate, however few facts a run samples
    asked = [Query(f"{f.uid}-{slot}", f.uid, "trex", "P36", f.subject if slot == "object" else f.object, slot,
                   rel.template) for f in facts[:1] for slot in ("object", "subject")]
    assert pred.cost(asked) == ("typed querying will score 5 sentences (2 queries x 2 to 3 candidates each: every "
                                "entity of the relation in the corpus, which --limit does not shrink; "
                                f"{pred.scorer.path})")


@pytest.mark.parametrize("marker", ["</s", "</s>"])
def test_closing_end_marker_is_not_scored_as_text(gpt2, marker):
    from eval.types import asked_prompt
    from lm.causal import CausalTypedPredictor

    pred = CausalTypedPredictor("tiny", _scorer(gpt2), {"P19": ["Florence", "Rome"]}, "test")
    q = Query("u", "f", "trex", "P19", Entity("Dante"), "object", f"[X] was born in [Y]. {marker}")
    (p,) = pred.predict([q], 10)
    for a in p.answers:  # the sentence up to its last word, as the GPT-2 AutoPrompt sets mean it
        assert abs(a.score - _reference_loglik(gpt2, f"Dante was born in {a.label}.")) < 1e-3
    assert asked_prompt(q, p) == "Dante was born in [MASK]."  # the record names the sentence scored
    plain = Query("u", "f", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y].")
    (same,) = pred.predict([plain], 10)
    assert same.answers == p.answers and "template" not in same.extra
