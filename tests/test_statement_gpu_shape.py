"""Statement scoring in the shape it takes on a GPU, run on a CPU: masked copies padded into length-sorted batches
equal exact-length batches, the causal token tree in a GPU's large passes equals its CPU passes, and bfloat16
picks float32's option on a small BEAR set, its log p read in float32.

The instances: the first two of four BEAR relations (one-word continents, hyphenated voice types, person names
opening the statement, a subject with a leading space), each ranking its relation's whole answer space.
"""

from __future__ import annotations

from pathlib import Path

import lm_fixtures
import numpy as np
import pytest
from record_compare import close

from eval.bear import load_bear
from lm.loading import load
from lm.statement import PLL_VARIANTS, fill, reduce

tiny_models = lm_fixtures.tiny_models
BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"
RELATIONS = ("P30", "P412", "P162", "P175")


@pytest.fixture(scope="module")
def groups() -> list[list]:
    """One group of statements per instance: its template filled with each option of the answer space."""
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    corpus = load_bear("bear", BEAR, list(RELATIONS))
    by_rel = corpus.by_relation()
    out = []
    for rel_id in RELATIONS:
        rel = corpus.relations[rel_id]
        options = [a.label for a in rel.answer_space]
        out += [[fill(rel.templates[0], f.subject.label, a) for a in options] for f in by_rel[rel_id][:2]]
    return out


def _masked(path, dtype: str = "float32"):
    from lm.masked import MaskedLMScorer

    loaded = load(str(path), "masked", "cpu", dtype)
    return MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype)


def _causal(path, dtype: str = "float32", **kw):
    from lm.causal import CausalLMScorer

    loaded = load(str(path), "causal", "cpu", dtype)
    return CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype, **kw)


def _split(flat: list, groups: list[list]) -> list[list]:
    ends = np.cumsum([len(g) for g in groups]).tolist()
    return [flat[end - len(g):end] for g, end in zip(groups, ends)]


def _choices(scores: list[list[float]]) -> list[int]:
    """Each instance's predicted option: the first best (lm-pub-quiz's rule)."""
    return [row.index(max(row)) for row in scores]


@pytest.mark.parametrize(("kind", "plls", "passes"), [  # passes of 64 copies: (padded, exact lengths)
    ("bert-cased", PLL_VARIANTS, {"within_word_l2r": (18, 23), "original": (19, 23), "sentence_l2r": (9, 12),
                                  "answer_l2r+word_l2r": (17, 22)}),
    ("roberta", ("within_word_l2r", "answer_l2r+word_l2r"), {"within_word_l2r": (19, 24),
                                                             "answer_l2r+word_l2r": (18, 23)}),
])
def test_padded_copies_equal_exact_length_batches(tiny_models, groups, kind, plls, passes):
    from lm.statement import MaskedStatementScorer

    engine = _masked(tiny_models(kind))
    assert MaskedStatementScorer(engine).bucketing is False  # a CPU engine: exact-length batches
    statements = [s for g in groups for s in g]
    for pll in plls:
        exact = MaskedStatementScorer(engine, pll, bucketing=False, batch_size=64)
        engine.forward_calls = 0
        want = exact.token_scores(statements)
        exact_passes = engine.forward_calls
        padded = MaskedStatementScorer(engine, pll, bucketing=True, batch_size=64)
        engine.forward_calls = 0
        got = padded.token_scores(statements)
        # full batches of 64 copies whatever their lengths; exact lengths leave a part-filled batch per length
        assert (engine.forward_calls, exact_passes) == passes[pll]
        assert engine.forward_calls == -(-padded.copies_run // 64) and padded.copies_run == exact.copies_run
        assert [len(row) for row in got] == [len(row) for row in want]
        assert all(close(a, b) for x, y in zip(want, got) for a, b in zip(x, y))
        for reduction in ("sum", "mean"):
            assert _choices(_split([reduce(r, reduction) for r in got], groups)) == \
                _choices(_split([reduce(r, reduction) for r in want], groups))


def test_padded_copies_follow_the_engine_and_fill_the_token_budget(tiny_models, groups, monkeypatch):
    """An engine that pads (as on a GPU) makes statement scoring pad too; without a batch size the passes are cut
    by padded tokens."""
    import lm.statement
    from lm.statement import MaskedStatementScorer

    engine = _masked(tiny_models("bert-cased"))
    want = MaskedStatementScorer(engine, bucketing=False).token_scores([s for g in groups for s in g])
    engine.bucketing = True
    monkeypatch.setattr(lm.statement, "COPY_TOKENS", 2048)
    padded = MaskedStatementScorer(engine)
    assert padded.bucketing is True
    engine.forward_calls = 0
    got = padded.token_scores([s for g in groups for s in g])
    assert engine.forward_calls == 8  # 1,145 copies, up to 2,048 padded tokens a pass
    assert all(close(a, b) for x, y in zip(want, got) for a, b in zip(x, y))


def test_causal_gpu_sized_passes_equal_cpu_passes(tiny_models, groups):
    from lm.causal import GPU_FORWARD_TOKENS
    from lm.statement import CausalStatementScorer

    path = tiny_models("gpt2")
    cpu = CausalStatementScorer(_causal(path, batch_size=1))  # a packed row (256 tokens) a pass
    gpu = CausalStatementScorer(_causal(path, batch_size=256))
    gpu.scorer.forward_tokens = GPU_FORWARD_TOKENS
    texts = [[s for s in g] for g in groups]
    want, got = cpu.score_groups(texts), gpu.score_groups(texts)
    assert (gpu.scorer.forward_calls, cpu.scorer.forward_calls) == (1, 2)
    assert all(close(a, b) for x, y in zip(want, got) for a, b in zip(x, y))
    assert _choices(got) == _choices(want)


@pytest.mark.parametrize(("kind", "agree"), [("bert-cased", 8), ("roberta", 8), ("gpt2", 8)])
def test_bfloat16_picks_float32s_options(tiny_models, groups, kind, agree):
    """Measured on these eight instances: bfloat16's choice is float32's on all of them; the smallest bfloat16
    margin between the best and the second option is 0.06 (BERT), far above what rounding differences between
    CPUs could move."""
    import torch

    from lm.statement import CausalStatementScorer, MaskedStatementScorer

    scores, tokens = {}, {}
    for dtype in ("float32", "bfloat16"):
        if kind == "gpt2":
            scorer = CausalStatementScorer(_causal(tiny_models(kind), dtype))
            assert next(scorer.scorer.model.parameters()).dtype == getattr(torch, dtype)
            scores[dtype] = scorer.score_groups(groups)
        else:
            scorer = MaskedStatementScorer(_masked(tiny_models(kind), dtype))
            assert next(scorer.scorer.model.parameters()).dtype == getattr(torch, dtype)
            tokens[dtype] = scorer.token_scores([s for g in groups for s in g])
            scores[dtype] = _split([reduce(r, "sum") for r in tokens[dtype]], groups)
    assert sum(a == b for a, b in zip(_choices(scores["float32"]), _choices(scores["bfloat16"]))) == agree
    assert min(sorted(row)[-1] - sorted(row)[-2] for row in scores["bfloat16"]) > 0.05
    assert max(abs(a - b) for x, y in zip(scores["float32"], scores["bfloat16"]) for a, b in zip(x, y)) < 0.25
    if tokens:  # log-softmax in float32: bfloat16 log p would all be bfloat16 numbers
        flat = [v for row in tokens["bfloat16"] for v in row]
        assert sum(float(torch.tensor(v).bfloat16()) != v for v in flat) > len(flat) // 2
