"""The masked engine's batched extraction (top with ties, exact ranks), its GPU-shaped length buckets and its
scoring path in reduced precision, against the definitions in eval.metrics and exact-length batches."""

from __future__ import annotations

import logging
import random

import lm_fixtures
import numpy as np
import pytest
from record_compare import assert_same_answers

from eval.metrics import exact_rank, gold_rank, top_order
from eval.types import Answer

tiny_models = lm_fixtures.tiny_models
kbc_log = lm_fixtures.kbc_log
TOL = 1e-5
TEXTS = ["Rome is in [MASK] .", "The city of Rome lies in the country of [MASK] .", "[MASK] .",
         "Paris is the capital of [MASK] .", "Dante was born in [MASK] .", "The river [MASK] flows through Vienna .",
         "[MASK] is a city .", "The Eiffel Tower is in [MASK] , the capital of France .", "Berlin is in [MASK] ."]


def _scores(seed: int, rows: int, n: int):
    """Scores with many exact ties (few distinct values), as float32 tensors."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 7, (rows, n), generator=gen) / 4.0 - 3.0).float()


@pytest.mark.parametrize("depth", [1, 3, 10, 40])
def test_top_with_ties_is_the_metrics_order(tiny_models, depth):
    """The engine's top (on the device, rows tied at the cut-off sorted in full when collected), down to a depth
    of every candidate."""
    import torch

    scorer, _ = _scorer(tiny_models("bert-cased"), 8, True)
    logp = _scores(depth, 6, 40)
    logp[0] = -torch.arange(40).float()  # no ties at all
    values, indices, _, _ = scorer._extract(logp, depth, scorer._extract_start(logp, depth, []), TEXTS[:6])
    for row in range(6):
        want = top_order(logp[row].numpy(), depth)
        assert indices[row].tolist() == want.tolist()
        assert values[row].tolist() == logp[row].numpy()[want].tolist()


def test_exact_ranks_are_the_metrics_ranks():
    import torch

    from lm.masked import _exact_ranks

    logp = _scores(1, 5, 30)
    pairs = [(r, p) for r in range(5) for p in random.Random(2).sample(range(30), 7)]
    where = torch.tensor(pairs)
    ranks, scores = _exact_ranks(logp, where[:, 0], where[:, 1])
    assert ranks.tolist() == [exact_rank(logp[r].numpy(), p) for r, p in pairs]
    assert scores.tolist() == [float(logp[r, p]) for r, p in pairs]
    none = _exact_ranks(logp, where[:0, 0], where[:0, 1])
    assert none[0].tolist() == [] and none[1].tolist() == []


def test_exact_ranks_where_few_rows_hold_ties():
    """On a CPU only the pairs whose score another candidate shares count ties: rows of distinct scores beside
    rows of ties, -inf ties, and more pairs than one comparison block holds."""
    import torch

    from lm.masked import _exact_ranks

    gen = torch.Generator().manual_seed(3)
    logp = torch.randn(6, 50, generator=gen)
    logp[1] = _scores(4, 1, 50)[0]  # ties everywhere
    logp[3, 10:20] = logp[3, 5]  # one run of ties, and the candidate before it
    logp[4, ::7] = float("-inf")
    pairs = [(r, p) for r in range(6) for p in range(50)] * 2
    where = torch.tensor(pairs)
    want = [exact_rank(logp[r].numpy(), p) for r, p in pairs]
    ranks, scores = _exact_ranks(logp, where[:, 0], where[:, 1])
    assert ranks.tolist() == want and ranks.dtype == torch.int64
    assert scores.tolist() == [float(logp[r, p]) for r, p in pairs]
    wide = torch.full((2, 1 << 20), -1.0)  # one pair per comparison block: the blocks are put together in order
    wide[0, 3:9] = 0.0
    wide[1, 1:] = -2.0
    where = torch.tensor([[0, 5], [1, 0], [0, 2], [1, 7], [0, 3]])
    ranks, _ = _exact_ranks(wide, where[:, 0], where[:, 1])
    assert ranks.tolist() == [3, 1, 9, 8, 1] == [exact_rank(wide[r].numpy(), p) for r, p in where.tolist()]


def test_bias_added_in_place_only_where_the_sum_keeps_its_dtype():
    import torch

    from lm.masked import _plus_bias

    gen = torch.Generator().manual_seed(5)
    logits, bias = torch.randn(4, 9, generator=gen), torch.randn(9, generator=gen)
    want = logits + bias
    got = _plus_bias(logits.clone(), bias)
    assert got.dtype == torch.float32 and torch.equal(got, want)
    low = logits.bfloat16()  # a float32 bias would round into bfloat16 in place: added out of place, as `+` does
    assert _plus_bias(low, bias).dtype == torch.float32 and torch.equal(_plus_bias(low.clone(), bias), low + bias)
    assert torch.equal(low, logits.bfloat16())


def _gold_rank_by_definition(answers, gold, exclude, lowercased, shared_ties):
    norm = (lambda s: s.lower()) if lowercased else (lambda s: s)
    kept = [a for a in answers if norm(a.label) == norm(gold) or norm(a.label) not in {norm(e) for e in exclude}]
    for i, a in enumerate(kept):
        if norm(a.label) == norm(gold):
            if shared_ties:  # the labels scoring higher (scores are sorted best first), each once
                return 1 + len({norm(b.label) for b in kept[:i] if b.score > a.score})
            return i + 1
    return None


def test_gold_rank_follows_its_definition():
    rng = random.Random(3)
    words = ["Paris", "paris", "Rome", "Berlin", "Vienna", "Lyon", "Oslo"]
    for _ in range(300):
        labels = rng.sample(words, rng.randint(0, len(words)))
        scores = sorted((rng.choice([-1.0, -2.0, -3.0]) for _ in labels), reverse=True)
        answers = [Answer(label, score) for label, score in zip(labels, scores)]
        gold, exclude = rng.choice(words), rng.sample(words, rng.randint(0, 3))
        for lowercased in (False, True):
            for shared in (False, True):
                assert gold_rank(answers, gold, exclude, lowercased, shared) == \
                    _gold_rank_by_definition(answers, gold, exclude, lowercased, shared)
    tied = [Answer("a", -1.0), Answer("b", -2.0), Answer("c", -2.0), Answer("d", -2.0)]
    assert gold_rank(tied, "d") == 4
    assert gold_rank(tied, "d", shared_ties=True) == 2
    assert gold_rank(tied, "d", exclude=["b"], shared_ties=False) == 3
    assert gold_rank(tied, "e") is None


def _scorer(path, batch_size, bucketing, dtype="float32"):
    from lm.loading import load
    from lm.masked import MaskedLMScorer

    loaded = load(str(path), "masked", "cpu", dtype)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype,
                            batch_size=batch_size)
    scorer.bucketing = bucketing
    return scorer, loaded


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_length_buckets_equal_exact_length_batches(tiny_models, kind):
    from lm.vocab import full_vocab, token_labels

    texts = [t.replace("[MASK]", "<mask>") for t in TEXTS] if kind == "roberta" else TEXTS
    exact, loaded = _scorer(tiny_models(kind), 1, bucketing=False)  # one prompt per pass: no padding at all
    padded, _ = _scorer(tiny_models(kind), 4, bucketing=True)
    lengths = [len(ids) for ids in padded.encode(texts)]
    batches = padded.batches(lengths)
    assert [len(b) for b in batches] == [4, 4, 1]
    assert sum(len({lengths[i] for i in b}) > 1 for b in batches) >= 2  # rows of different lengths share a pass
    cands = full_vocab(token_labels(loaded.tokenizer, exact.vocab_size))
    targets = [(3, 17, 2000 + i) for i in range(len(texts))]
    want = exact.score(texts, cands, 10, targets)
    got = padded.score(texts, cands, 10, targets)
    assert padded.forward_calls == 3 and exact.forward_calls == len(texts)
    # a padded pass groups its float32 sums otherwise (how, the CPU decides): candidates whose log-probs lie
    # within the tolerance of each other may come in either order, in the top and around a target's exact rank
    for ids, a, b in zip(exact.encode(texts), want, got):
        assert_same_answers([[int(p), float(v), None] for p, v in zip(a.pos, a.logp)],
                            [[int(p), float(v), None] for p, v in zip(b.pos, b.logp)], str(ids))
        assert float(np.max(np.abs(a.logp - b.logp))) < TOL
        assert list(a.ranks) == list(b.ranks)
        row = _log_probs(loaded, ids)
        for p, rank in a.ranks.items():
            near = int(np.sum(np.abs(row - a.target_logp[p]) <= 3 * TOL)) - 1  # the target itself left out
            assert abs(rank - b.ranks[p]) <= near, (ids, p, rank, b.ranks[p], near)
        assert max(abs(a.target_logp[p] - b.target_logp[p]) for p in a.target_logp) < TOL


def _log_probs(loaded, ids: list[int]) -> np.ndarray:
    """The log-probs of every vocabulary row at the mask, from the whole model in one unpadded pass."""
    import torch

    with torch.inference_mode():
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0, ids.index(loaded.tokenizer.mask_token_id)]
    return torch.log_softmax(logits.float(), -1).numpy()


@pytest.mark.parametrize("depth", [1, 3, 10])
def test_extraction_sent_to_the_host_keeps_the_metrics_order_and_ranks(tiny_models, depth):
    """What `_extract_start` computes on the device and `_extract` collects later: rows tied at the cut-off
    (most rows here) sorted in full, ranks exact, a non-finite row refused by its prompt."""
    import torch

    from lm.finite import NonFiniteScores

    scorer, _ = _scorer(tiny_models("bert-cased"), 8, True)
    logp = _scores(depth, 6, 40)
    logp[0] = -torch.arange(40).float()
    pairs = [(r, p) for r in range(6) for p in random.Random(depth).sample(range(40), 5)]
    top, pos, ranks, scores = scorer._extract(logp, depth, scorer._extract_start(logp, depth, pairs), TEXTS[:6])
    for row in range(6):
        want = top_order(logp[row].numpy(), depth)
        assert pos[row].tolist() == want.tolist()
        assert top[row].tolist() == logp[row].numpy()[want].tolist()
    assert ranks.tolist() == [exact_rank(logp[r].numpy(), p) for r, p in pairs]
    assert scores.tolist() == [float(logp[r, p]) for r, p in pairs]
    logp[4, 7] = float("nan")
    with pytest.raises(NonFiniteScores) as caught:
        scorer._extract(logp, depth, scorer._extract_start(logp, depth, pairs), TEXTS[:6])
    assert caught.value.bad == [TEXTS[4]]


def test_bfloat16_keeps_the_fast_path_and_says_which_once(tiny_models, kbc_log):
    from lm import masked

    path = tiny_models("bert-cased")
    masked._PATHS_SAID.clear()
    first, _ = _scorer(path, 8, False, dtype="bfloat16")
    again, _ = _scorer(path, 8, False, dtype="bfloat16")
    assert first.path == again.path == "last-layer+head-at-mask"
    said = [m for level, m in kbc_log if level == logging.INFO and "scoring path" in m]
    assert said == [f"{path}: masked-LM scoring path last-layer+head-at-mask (bfloat16 on cpu)"]


def test_agreement_tolerance_follows_the_dtype():
    import torch

    from lm.precision import agreement_tolerance

    ref = torch.tensor([-10.0, 4.0])
    assert agreement_tolerance(torch.float32, ref) == 1e-3
    assert agreement_tolerance(torch.bfloat16, ref) == 32 * 2 ** -7 * 10.0
    assert agreement_tolerance(torch.float16, ref) == 32 * 2 ** -10 * 10.0
    assert agreement_tolerance(torch.bfloat16, torch.zeros(2)) == 1e-3


def test_columns_hold_one_row_per_distinct_input_and_targets(tiny_models):
    """`columns`: repeated (text, targets) share a row, each text runs once, and the exact ranks and log-probs are
    those `score` gives one text at a time; `find` says where a (row, position) pair is among the targets."""
    from lm.vocab import full_vocab, token_labels

    scorer, loaded = _scorer(tiny_models("bert-cased"), 4, bucketing=False)
    alone, _ = _scorer(tiny_models("bert-cased"), 1, bucketing=False)
    cands = full_vocab(token_labels(loaded.tokenizer, scorer.vocab_size))
    texts = [TEXTS[0], TEXTS[1], TEXTS[0], TEXTS[2], TEXTS[1]]
    targets = [(17, 3, 17), (5,), (3, 17), (), (6, 5)]
    cols = scorer.columns(texts, cands, 10, targets)
    assert scorer.forward_calls == 3  # three distinct texts of three lengths, each run once
    assert cols.unit.tolist() == [0, 1, 0, 2, 3]
    assert cols.starts.tolist() == [0, 2, 3, 3, 5] and cols.targets.tolist() == [3, 17, 5, 5, 6]
    assert cols.n_tokens.tolist() == [len(ids) for ids in scorer.encode([TEXTS[0], TEXTS[1], TEXTS[2], TEXTS[1]])]
    for u, (text, tgt) in enumerate([(TEXTS[0], (3, 17)), (TEXTS[1], (5,)), (TEXTS[2], ()), (TEXTS[1], (5, 6))]):
        want = alone.score([text], cands, 10, [tgt])[0]
        at, to = cols.starts[u], cols.starts[u + 1]
        assert cols.pos[u].tolist() == want.pos.tolist()
        assert float(np.max(np.abs(cols.logp[u] - want.logp))) < TOL
        assert dict(zip(tgt, cols.ranks[at:to].tolist())) == want.ranks
        assert max((abs(x - want.target_logp[p]) for p, x in zip(tgt, cols.target_logp[at:to])), default=0) < TOL
    found = cols.find(np.array([0, 0, 3, 2, 1]), np.array([17, 5, 6, 3, 5]), len(cands))
    assert found.tolist() == [1, -1, 4, -1, 2]
    scored = scorer.score(texts, cands, 10, targets)
    assert [s.ranks for s in scored] == [dict(zip(cols.targets[cols.starts[u]:cols.starts[u + 1]].tolist(),
                                                  cols.ranks[cols.starts[u]:cols.starts[u + 1]].tolist()))
                                         for u in cols.unit.tolist()]


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_encoder_mask_is_the_mask_transformers_builds_without_reading_it_back(kind, monkeypatch):
    """A padded batch gives bit for bit the hidden states transformers gives from the 2D mask, and the model never
    asks the mask's values (on a GPU that question waits for the card at every pass). A decoder, a 4D mask and no
    mask pass through unchanged."""
    import torch
    from tiny_lms import build_model, tokenizer_for

    from lm.batches import encoder_mask

    model = build_model(kind, tokenizer_for(kind)).eval()
    ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0], [5, 6, 0, 0, 0]])
    att = (ids != 0).long()
    asked = []
    real = torch.Tensor.all
    monkeypatch.setattr(torch.Tensor, "all", lambda self, *a, **k: asked.append(1) or real(self, *a, **k))
    with torch.inference_mode():
        want = model.base_model(input_ids=ids, attention_mask=att).last_hidden_state
        assert asked  # transformers reads the 2D mask back
        asked.clear()
        got = model.base_model(input_ids=ids, attention_mask=encoder_mask(model.base_model, att)).last_hidden_state
    assert torch.equal(got, want)
    assert asked == []
    assert encoder_mask(model, None) is None
    four = encoder_mask(model, att)
    assert encoder_mask(model, four) is four and four.shape == (3, 1, 5, 5)
    decoder = build_model(kind, tokenizer_for(kind), is_decoder=True)
    assert encoder_mask(decoder, att) is att


def test_on_a_gpu_a_call_holds_at_least_one_full_batch(tiny_models):
    """The runner's chunk is the predictor's `chunk_size`: on a GPU a `--batch-size` above 512 makes passes of
    that size; on a CPU (exact-length batches) the runner's 512 stay."""
    from eval.types import QUERIES_PER_CALL
    from lm.masked import MaskedLMPredictor
    from lm.vocab import AnswerSpace, full_vocab, token_labels

    scorer, loaded = _scorer(tiny_models("bert-cased"), 2048, False)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    predictor = MaskedLMPredictor("bert", scorer, AnswerSpace(labels, fixed=full_vocab(labels)))
    assert QUERIES_PER_CALL == predictor.chunk_size == 512
    scorer.bucketing = True
    assert predictor.chunk_size == 2048
    scorer.batch_size = 64
    assert predictor.chunk_size == 512
