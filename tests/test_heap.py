"""glibc's malloc thresholds raised for an LM on the CPU: where they are set, where not, and that freed blocks are
reused (counted in page faults, not timed)."""

from __future__ import annotations

import os
import subprocess
import sys

import lm_fixtures
import pytest

from lm import heap

tiny_models = lm_fixtures.tiny_models


@pytest.fixture
def calls(monkeypatch):
    """The (parameter, value) pairs given to a stand-in `mallopt`, none applied before."""
    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(heap, "_applied", (0, 0))
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda param, value: seen.append((param, value)) or 1)
    for name in heap.USER_SETTINGS + ("GLIBC_TUNABLES",):
        monkeypatch.delenv(name, raising=False)
    return seen


def test_thresholds_follow_the_batch_tensors_and_only_rise(calls):
    assert heap.keep_batch_memory(100 << 20, 8)
    assert calls == [(heap.M_TRIM_THRESHOLD, 800 << 20), (heap.M_MMAP_THRESHOLD, 200 << 20)]
    assert not heap.keep_batch_memory(50 << 20, 8)  # another, smaller LM in the same process: left as they are
    assert heap.keep_batch_memory(300 << 20, 2)  # a larger tensor, fewer of them: each threshold the larger
    assert calls[-2:] == [(heap.M_TRIM_THRESHOLD, 800 << 20), (heap.M_MMAP_THRESHOLD, 600 << 20)]
    assert heap.keep_batch_memory(1 << 30, 4)
    assert calls[-2:] == [(heap.M_TRIM_THRESHOLD, heap.LIMIT), (heap.M_MMAP_THRESHOLD, heap.LIMIT)]


def test_small_batches_never_go_below_glibcs_own_thresholds(calls):
    assert heap.keep_batch_memory(32 * 28996 * 4, 8)  # the default batch of 32, bert-base-cased's vocabulary
    assert calls == [(heap.M_TRIM_THRESHOLD, heap.FLOOR_TRIM), (heap.M_MMAP_THRESHOLD, heap.FLOOR_MMAP)]


@pytest.mark.parametrize("name, value", [("MALLOC_MMAP_THRESHOLD_", "1048576"), ("MALLOC_TRIM_THRESHOLD_", "0"),
                                         ("MALLOC_TOP_PAD_", "0"),
                                         ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=1048576")])
def test_the_users_own_settings_win(calls, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert not heap.keep_batch_memory(100 << 20, 8)
    assert calls == []


def test_other_tunables_leave_the_thresholds_to_kbc(calls, monkeypatch):
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=2048")
    assert heap.keep_batch_memory(100 << 20, 8)


@pytest.mark.parametrize("confstr", [None, "musl"])
def test_nothing_is_called_without_glibc(monkeypatch, confstr):
    def no_libc(_name):
        raise AssertionError("the C library was opened on a system without glibc")

    def version(_name):
        if confstr is None:
            raise ValueError("unrecognized configuration name")  # what os.confstr says outside glibc
        return confstr

    monkeypatch.setattr(heap, "_applied", (0, 0))
    monkeypatch.setattr(heap.os, "confstr", version)
    monkeypatch.setattr(heap.ctypes, "CDLL", no_libc)
    for name in heap.USER_SETTINGS + ("GLIBC_TUNABLES",):
        monkeypatch.delenv(name, raising=False)
    assert not heap.keep_batch_memory(100 << 20, 8)
    assert heap._applied == (0, 0)


def test_lms_on_the_cpu_size_them_by_their_passes(tiny_models, monkeypatch):
    """The masked engine by its batch, its statement scoring by its copies per pass, a causal LM by its tokens."""
    import lm.causal
    import lm.masked
    import lm.statement
    from lm.loading import load

    sizes: list[tuple[int, int]] = []
    for module in (lm.masked, lm.statement, lm.causal):
        monkeypatch.setattr(module, "keep_batch_memory", lambda size, tensors: sizes.append((size, tensors)))
    loaded = load(str(tiny_models("bert-cased")), "masked", "cpu")
    scorer = lm.masked.MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint,
                                      batch_size=512)
    lm.statement.MaskedStatementScorer(scorer)
    copies = lm.statement.COPY_TOKENS // lm.statement.SHORT_STATEMENT
    assert sizes == [(512 * 28996 * 4, 8), (copies * 28996 * 4, 4)]
    causal = load(str(tiny_models("gpt2")), "causal", "cpu")
    lm.causal.CausalLMScorer(causal.model, causal.tokenizer, fingerprint=causal.fingerprint, batch_size=64)
    assert sizes[-1] == (64 * lm.causal.SENTENCE_TOKENS * 50257 * 4, 4)


def test_generating_lms_on_the_cpu_size_them_by_their_steps_and_answer_the_same(tiny_models, tmp_path, monkeypatch):
    """Span filling by each step's [batch x beams, vocabulary] logits, with every step's log-probs kept for the beams'
    scores; local generation by its batch and beams. The answers are those of a run that leaves malloc alone."""
    import lm.generation
    import lm.seq2seq
    from lm.loading import load

    sizes: list[tuple[int, int]] = []
    monkeypatch.setattr(lm.seq2seq, "keep_batch_memory", lambda size, tensors: sizes.append((size, tensors)))
    monkeypatch.setattr(lm.generation, "keep_batch_memory", lambda size, tensors: sizes.append((size, tensors)))
    t5 = load(str(lm_fixtures.tiny_t5_dir(tmp_path)), "seq2seq", "cpu")
    span = lm.seq2seq.Seq2SeqSpanPredictor("t5", t5.model, t5.tokenizer, fingerprint=t5.fingerprint, beams=3,
                                           max_new_tokens=5, batch_size=16)
    assert sizes == [(16 * 3 * 384 * 4, 5 + 4)] and t5.model.config.vocab_size == 384
    gpt2 = load(str(tiny_models("gpt2")), "causal", "cpu")
    local = lm.generation.LocalGenerator(gpt2.model, gpt2.tokenizer, fingerprint=gpt2.fingerprint, name="gpt2",
                                         seq2seq=False, batch_size=6)
    params = lm.generation.GenerationParams(max_new_tokens=3, beams=2)
    prompts = ["Dante was born in", "The capital of Italy is"]
    spans = ["Dante was born in <extra_id_0>.", "<extra_id_0> is the capital of Italy."]
    stubbed = (span.generate(spans), local.generate(prompts, params))
    assert sizes[-1] == (6 * 2 * 50257 * 4, 4)
    assert local.generate(prompts, lm.generation.GenerationParams(max_new_tokens=3, temperature=0.5)) and \
        sizes[-1] == (1 * 1 * 50257 * 4, 4)  # sampling draws per prompt alone
    monkeypatch.setattr(lm.seq2seq, "keep_batch_memory", heap.keep_batch_memory)
    monkeypatch.setattr(lm.generation, "keep_batch_memory", heap.keep_batch_memory)
    span = lm.seq2seq.Seq2SeqSpanPredictor("t5", t5.model, t5.tokenizer, fingerprint=t5.fingerprint, beams=3,
                                           max_new_tokens=5, batch_size=16)
    assert (span.generate(spans), local.generate(prompts, params)) == stubbed


REUSE = """
import ctypes, resource, sys
from lm import heap
if sys.argv[1] == "keep":
    assert heap.keep_batch_memory(64 << 20, 2)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):  # a batch's [batch, vocabulary] tensor, written and freed
    block = libc.malloc(64 << 20)
    libc.memset(block, 1, 64 << 20)
    libc.free(block)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(heap._mallopt() is None, reason="glibc's malloc only")
def test_freed_blocks_are_reused_instead_of_faulted_in_again():
    env = {k: v for k, v in os.environ.items() if k not in heap.USER_SETTINGS and k != "GLIBC_TUNABLES"}

    def faults(mode: str) -> int:
        done = subprocess.run([sys.executable, "-c", REUSE, mode], env=env, capture_output=True, text=True,
                              check=True)
        return int(done.stdout)

    pages = (64 << 20) // os.sysconf("SC_PAGE_SIZE")
    assert faults("fresh") > 10 * pages  # each block mapped and faulted in anew
    assert faults("keep") < 3 * pages  # faulted in once, then reused
