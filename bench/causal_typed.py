"""Causal typed querying: whole sentences against the shared prefix, in one run on the same queries.

Model: GPT-2's architecture (12 layers, hidden 768, 12 heads, 50,257 tokens), randomly initialised,
with the real gpt2 tokenizer (speed does not depend on the weights). Queries: T-REx facts drawn
uniformly at random (seeded), each ranking every object of its relation in the corpus, as
`kbc run lama` does. Both scoring paths get the same sentences, result cache off:
  full_sentence: every candidate sentence run whole (batched by length);
  prefix_cache:  the query's shared token prefix run once, the candidates (and any text after the slot)
                 as a token tree on it, in one attention-masked pass (see `lm.causal`).
Two prompt kinds: LAMA's templates (text after the slot: "[X] was born in [Y] .") and the coherency
paper's extended ones (the entity at the very end). max_abs_diff is the largest difference of a
sentence log-likelihood between the paths. Exact scoring cannot run fewer tokens than the prefix
plus the tree nodes that have children, and every token costs the same model pass on either path:
"tokens run" (stderr, and `tokens_ratio` on stdout) is that ratio, which bounds the speedup.
The paths run alternately, query by query, for `--repeat` rounds, and each keeps its fastest
time per query (shared cores drift).
Because the queries are a uniform sample, time per query x 34,039 estimates full T-REx typed
querying here.

    python bench/causal_typed.py [--n 8] [--repeat 2] [--threads N] [--seed 0] [--batch-size 32]

On shared cores, `--threads 1` keeps other processes from stalling torch's thread barriers.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
TOL = 1e-4


def sample(data_dir: Path, n: int, seed: int):
    from eval.lama import load_trex
    from eval.queries import make_queries

    corpus = load_trex(data_dir)
    objects: dict[str, list[str]] = {}
    for fact in corpus.facts:
        objects.setdefault(fact.relation, []).append(fact.object.label)
    objects = {rel: list(dict.fromkeys(v)) for rel, v in objects.items()}
    queries = [q for pairs in make_queries(corpus).values() for q, _ in pairs]
    total = sum(len(objects[q.relation]) for q in queries)
    return random.Random(seed).sample(queries, n), objects, len(queries), total


def run(scorer_kw: dict, model, tokenizer, groups, shared: bool):
    from lm.causal import CausalLMScorer

    scorer = CausalLMScorer(model, tokenizer, fingerprint="bench", shared_prefix=shared, **scorer_kw)
    start = time.perf_counter()
    scores = scorer.loglik_groups(groups)
    return time.perf_counter() - start, scores, scorer.tokens_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8, help="queries (each ranks all its relation's objects)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each path keeps its fastest")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--data-dir", default=os.environ.get("KBC_DATA", str(SHARED / "lama")))
    args = parser.parse_args()

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    from eval.datadir import resolve_data_dir
    from lm.causal import read_extended_templates

    if args.threads:
        torch.set_num_threads(args.threads)
    tokenizer = GPT2Tokenizer.from_pretrained(SHARED / "tokenizers" / "gpt2")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                                       eos_token_id=tokenizer.eos_token_id)).eval()
    queries, objects, n_queries, n_sentences = sample(resolve_data_dir(args.data_dir), args.n, args.seed)
    extended = read_extended_templates(SHARED / "prompts" / "coherency" / "relations_autregressive.jsonl")
    print(f"model: gpt2 architecture (12 x 768), random weights; torch threads: {torch.get_num_threads()}; "
          f"{len(queries)} T-REx queries, {sum(len(objects[q.relation]) for q in queries):,} sentences per prompt kind",
          file=sys.stderr)
    kw = {"batch_size": args.batch_size}
    warm = [[queries[0].text(c) for c in objects[queries[0].relation][:8]]]
    run(kw, model, tokenizer, warm, True)
    run(kw, model, tokenizer, warm, False)
    lines = []
    for kind in ("lama", "extended"):
        qs = [q if kind == "lama" else dataclasses.replace(q, template=extended[(q.relation, "object")])
              for q in queries]
        groups = [[q.text(c) for c in objects[q.relation]] for q in qs]
        best = {False: [float("inf")] * len(groups), True: [float("inf")] * len(groups)}
        scores: dict[bool, list] = {False: [None] * len(groups), True: [None] * len(groups)}
        tokens = {False: 0, True: 0}
        for _ in range(max(1, args.repeat)):
            tokens = {False: 0, True: 0}
            for i, group in enumerate(groups):
                for shared in (False, True):
                    seconds, got, n_tokens = run(kw, model, tokenizer, [group], shared)
                    best[shared][i] = min(best[shared][i], seconds)
                    scores[shared][i] = got[0]
                    tokens[shared] += n_tokens
        t_full, t_pref = sum(best[False]), sum(best[True])
        full, pref, tok_full, tok_pref = scores[False], scores[True], tokens[False], tokens[True]
        diff = max(abs(a[0] - b[0]) for ga, gb in zip(full, pref) for a, b in zip(ga, gb))
        est_full, est_pref = t_full / len(qs) * n_queries / 3600, t_pref / len(qs) * n_queries / 3600
        print(f"prompt={kind}: tokens run full {tok_full:,} / prefix {tok_pref:,} "
              f"({tok_full / tok_pref:.1f}x fewer); full T-REx ({n_queries:,} queries, {n_sentences:,} "
              f"sentences) estimate: full_sentence {est_full:.1f} h, prefix_cache {est_pref:.1f} h", file=sys.stderr)
        lines.append(f"prompt={kind} full_sentence_qps={len(qs) / t_full:.3f} prefix_cache_qps={len(qs) / t_pref:.3f} "
                     f"speedup={t_full / t_pref:.2f} tokens_ratio={tok_full / tok_pref:.2f} max_abs_diff={diff:.2e} "
                     f"trex_estimate_h_full={est_full:.1f} trex_estimate_h_prefix={est_pref:.1f}")
        if diff > TOL:
            print(f"warning: max_abs_diff {diff:.2e} above {TOL:g}", file=sys.stderr)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
