"""Statement scoring (BEAR): lm-pub-quiz 0.3.3 against kbcompare's scorer, same instances and model, one process.

Models: a bert-base-sized masked LM (12 layers, hidden 768, 12 heads, the real bert-base-cased tokenizer)
and a gpt2-sized causal LM (12 layers, hidden 768, the real gpt2 tokenizer), randomly initialised (speed
does not depend on the weights); `--size tiny` uses the test suite's 2-layer, 32-wide models instead.
Instances: BEAR instances drawn uniformly at random (seeded), each ranking its relation's whole answer
space under one template. lm-pub-quiz runs `evaluate_instance` per instance (`--lpq-batch-size`, default 1,
its own default in `evaluate_dataset`); kbcompare scores all instances at once (`lm.statement`). Both use
lm-pub-quiz's templating (`compat="lm-pub-quiz"`), float32 and `--threads` torch threads.

Prints, per model: `speedup=` (lm-pub-quiz seconds / kbcompare seconds over the same instances),
`max_abs_diff=` (largest difference of an option's score), `same_predictions=` (predicted options equal) and
`cpu_speedup=` (the same ratio of process CPU seconds: steadier than wall time when other work shares the cores);
for the masked LM also `flop_ratio=`, lm-pub-quiz's multiply-accumulates over kbcompare's for the same PLL.

Why the masked speed-up is bounded: exact PLL needs one encoder pass per scored token (a bidirectional
encoder shares no prefix), and BEAR's answers rarely share masked copies (seed 0: 3 instances need 708 copies,
680 distinct; 4 instances 1,062 and 1,012). kbcompare leaves out only what no scored token reads: the vocabulary
projection of the other positions and, in the last layer, everything but the keys and values of the other
positions (queries, attention, output projection and feed-forward run at the scored row only; other
architectures than BERT's run their last layer whole). For a bert-base-sized model that is `flop_ratio=1.38` on
3 instances (1,793 against 1,302 GFLOP) and 1.39 on 4 (3,030 against 2,177). Beyond the FLOP ratio, kbcompare
keeps both cores busy: its copy batches run side by side, one per torch thread (`lm.batches`), which saves 4-8%
against each batch using both threads. Measured, 3 instances, load 1.5-1.9: 11.6x (kbcompare 6.45 s, lm-pub-quiz
74.57 s; other runs 10.9x, 11.2x), max_abs_diff 5.7e-06; 4 instances: 8.0x (the fourth's longer statements cost
kbcompare in proportion to their FLOPs, lm-pub-quiz mostly per pass). Before the side-by-side batches, on an idle
machine: 9.5x on 3 (5.31 s against 50.35 s). Copy batches of 512 to 32,768 tokens are within 6%. Beyond the FLOP
ratio only batching helps, which is why the ratio falls to 1.5x against `--lpq-batch-size 32`. The one exact cut
left is the first layer's queries, keys and values, which depend only on a token, its position and segment, so
could be computed once per distinct one: 2.2% of kbcompare's FLOPs.

    python bench/statement_scoring.py [--model bert gpt2] [--n 3] [--threads 2] [--size base|tiny]
        [--pll within_word_l2r] [--reduction sum] [--template 0] [--seed 0] [--lpq-batch-size 1]
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
# bert-base's shape and its initialiser (the test models' wide 0.2 gives float32 sums no real model has)
BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
        "initializer_range": 0.02}


def build(kind: str, size: str):
    """(model, tokenizer for kbcompare, tokenizer for lm-pub-quiz): separate tokenizers, lm-pub-quiz edits its own."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_lms import build_model, tokenizer_for

    name = "bert-cased" if kind == "bert" else "gpt2"
    tokenizer = tokenizer_for(name)
    if size == "tiny":
        model = build_model(name, tokenizer)
    elif kind == "bert":
        model = build_model(name, tokenizer, **BASE)
    else:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_embd=768, n_layer=12, n_head=12,
                                           n_positions=1024, bos_token_id=tokenizer.bos_token_id,
                                           eos_token_id=tokenizer.eos_token_id))
    return model.eval(), tokenizer, tokenizer_for(name)


def sample(n: int, seed: int, template: int):
    from eval.bear import load_bear

    corpus = load_bear("bear", SHARED / "bear")
    facts = random.Random(seed).sample(corpus.facts, n)
    out = []
    for fact in facts:
        rel = corpus.relations[fact.relation]
        out.append((fact, rel.templates[template], [e.label for e in rel.answer_space]))
    return out


def run_lpq(model, tokenizer, kind: str, cases, args) -> tuple[float, float, list[list[float]]]:
    from lm_pub_quiz import Evaluator

    logging.getLogger("lm_pub_quiz").setLevel(logging.ERROR)
    kw = {"pll_metric": args.pll} if kind == "bert" else {}
    device = next(model.parameters()).device  # lm-pub-quiz sends its inputs where it is told, the CPU by default
    evaluator = Evaluator.from_model(model, model_type="MLM" if kind == "bert" else "CLM", tokenizer=tokenizer,
                                     device=device, **kw)
    start, cpu = time.perf_counter(), time.process_time()
    scores = [evaluator.evaluate_instance(template=t, answers=a, subject=f.subject.label, reduction=args.reduction,
                                          batch_size=args.lpq_batch_size) for f, t, a in cases]
    return time.perf_counter() - start, time.process_time() - cpu, scores


def layer_macs(config, length: int, rows: int | None = None) -> float:
    """Multiply-accumulates of one BERT layer over `length` tokens whose output is kept at `rows` of them (all by
    default): keys and values for every token; queries, attention, output projection and feed-forward at `rows`."""
    h, i = config.hidden_size, config.intermediate_size
    rows = length if rows is None else rows
    return length * 2 * h * h + rows * (2 * h * h + 2 * h * i + 2 * length * h)


def flop_bound(model, tokenizer, cases, copies_asked: int, copies_run: int) -> float:
    """lm-pub-quiz's MACs over kbcompare's for the same PLL: lm-pub-quiz runs every masked copy (`copies_asked`)
    through every layer and projects every position onto the vocabulary; kbcompare runs the distinct copies
    (`copies_run`), its last layer and the vocabulary projection at the scored position only.
    Batching and threads aside, this is the speed-up exact PLL allows."""
    from lm.statement import fill

    config = model.config
    h, v, layers = config.hidden_size, config.vocab_size, config.num_hidden_layers
    lpq = ours = 0.0
    for fact, template, answers in cases:
        for answer in answers:
            text = fill(template, fact.subject.label, answer, "lm-pub-quiz").text
            n = len(tokenizer(text)["input_ids"])
            scored = n - 2  # [CLS] and [SEP] are not scored
            lpq += scored * (layers * layer_macs(config, n) + n * (h * h + h * v))
            ours += scored * ((layers - 1) * layer_macs(config, n) + layer_macs(config, n, 1) + h * h + h * v)
    return lpq / (ours * copies_run / copies_asked)


def run_ours(model, tokenizer, kind: str, cases, args) -> tuple[float, float, list[list[float]]]:
    """kbcompare's scores of the cases in the model's own dtype and on its device (copies padded into length-sorted
    batches on a GPU, exact-length batches on a CPU); `args.batch_size`: a causal pass's packed rows."""
    from lm.statement import CausalStatementScorer, MaskedStatementScorer, fill

    start, cpu = time.perf_counter(), time.process_time()  # building the scorer (its self-checks) counts too
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    groups = [[fill(t, f.subject.label, a, "lm-pub-quiz") for a in answers] for f, t, answers in cases]
    if kind == "bert":
        from lm.masked import MaskedLMScorer

        scorer = MaskedStatementScorer(MaskedLMScorer(model, tokenizer, fingerprint="bench", dtype=dtype), args.pll)
        flat = scorer.score([s for g in groups for s in g], args.reduction)
        elapsed = time.perf_counter() - start, time.process_time() - cpu
        scores, at = [], 0
        for g in groups:
            scores.append(flat[at:at + len(g)])
            at += len(g)
        print(f"  masked copies: {scorer.copies_asked} needed, {scorer.copies_run} run in "
              f"{scorer.scorer.forward_calls} passes ({'padded' if scorer.bucketing else 'exact-length'} batches, "
              f"{dtype}); exact-PLL bound "
              f"flop_ratio={flop_bound(model, tokenizer, cases, scorer.copies_asked, scorer.copies_run):.2f}",
              file=sys.stderr)
        return *elapsed, scores
    else:
        from lm.causal import CausalLMScorer

        scorer = CausalStatementScorer(CausalLMScorer(model, tokenizer, fingerprint="bench", dtype=dtype,
                                                      batch_size=args.batch_size))
        scores = scorer.score_groups(groups, args.reduction)
        print(f"  tokens run: {scorer.scorer.tokens_run} in {scorer.scorer.forward_calls} passes "
              f"({scorer.scorer.path}, {dtype})", file=sys.stderr)
    return time.perf_counter() - start, time.process_time() - cpu, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", nargs="+", choices=("bert", "gpt2"), default=["bert", "gpt2"])
    parser.add_argument("--n", type=int, default=3, help="BEAR instances")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", choices=("base", "tiny"), default="base")
    parser.add_argument("--pll", default="within_word_l2r")
    parser.add_argument("--reduction", default="sum", choices=("sum", "mean"))
    parser.add_argument("--template", type=int, default=0, choices=(0, 1, 2))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lpq-batch-size", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32, help="kbcompare's causal passes: packed rows each")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    cases = sample(args.n, args.seed, args.template)
    n_options = sum(len(a) for _, _, a in cases)
    print(f"instances={args.n} options={n_options} relations={','.join(f.relation for f, _, _ in cases)} "
          f"threads={args.threads} size={args.size} pll={args.pll} reduction={args.reduction} "
          f"lpq_batch_size={args.lpq_batch_size}")
    for kind in args.model:
        model, ours_tok, lpq_tok = build(kind, args.size)
        ours_s, ours_cpu, ours = run_ours(model, ours_tok, kind, cases, args)
        print(f"  kbcompare: {ours_s:.2f} s", file=sys.stderr, flush=True)
        lpq_s, lpq_cpu, ref = run_lpq(model, lpq_tok, kind, cases, args)
        diff = max(float(np.max(np.abs(np.asarray(r) - np.asarray(g)))) for r, g in zip(ref, ours))
        same = all(list(r).index(max(r)) == list(g).index(max(g)) for r, g in zip(ref, ours))
        print(f"model={kind} lpq_s={lpq_s:.2f} ours_s={ours_s:.2f} lpq_s_per_instance={lpq_s / args.n:.2f} "
              f"ours_s_per_instance={ours_s / args.n:.2f} speedup={lpq_s / ours_s:.1f} max_abs_diff={diff:.2e} "
              f"same_predictions={same} cpu_speedup={lpq_cpu / ours_cpu:.1f}", flush=True)


if __name__ == "__main__":
    main()
