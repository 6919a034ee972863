"""Throughput of the OpenAI-compatible client: N requests sent with concurrency C against one at a time, to the
same server, printed with their ratio.

Either point it at a running server (`--url URL --model NAME`: vLLM, TGI, llama.cpp, Ollama, any OpenAI API),
or let it start `transformers serve` on localhost with a tiny random GPT-2 built from the real GPT-2 tokenizer
(`--tokenizer DIR`, default ../shared/data/tokenizers/gpt2). A server that answers one request at a time
(`transformers serve` without continuous batching) gains little; one that batches (vLLM) or an API with network
latency gains up to C times.

    python bench/generation.py [--n 32] [--concurrency 8] [--max-tokens 16] [--url URL --model NAME]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tiny_gpt2(tokenizer_dir: Path, out: Path) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    tokenizer = GPT2Tokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=64, n_layer=2, n_head=2, n_positions=256,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def timed(url: str, model: str, prompts: list[str], concurrency: int, max_tokens: int) -> float:
    from lm.generation import GenerationParams
    from lm.served import ServedGenerator, ServerSettings

    client = ServedGenerator(ServerSettings(url, model, api="completions", concurrency=concurrency, timeout=300))
    start = time.perf_counter()
    client.generate(prompts, GenerationParams(max_new_tokens=max_tokens))
    return time.perf_counter() - start


def main() -> None:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--url")
    parser.add_argument("--model")
    parser.add_argument("--tokenizer", type=Path, default=ROOT.parent / "shared" / "data" / "tokenizers" / "gpt2")
    args = parser.parse_args()
    prompts = [f"Fact number {i}: the capital city of country {i} is" for i in range(args.n)]
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        url, model = args.url, args.model
        if url is None:
            from lm.local_server import LocalServer

            model = str(tiny_gpt2(args.tokenizer, Path(tmp) / "tiny-gpt2"))
            server = LocalServer(model)
            url = server.url
            print(f"started transformers serve on {url} with a tiny GPT-2 (2 layers, width 64)")
        try:
            timed(url, model, prompts[:2], 1, args.max_tokens)  # warm-up: the model loaded, the first call paid
            sequential = timed(url, model, prompts, 1, args.max_tokens)
            concurrent = timed(url, model, prompts, args.concurrency, args.max_tokens)
        finally:
            if server is not None:
                server.close()
    print(f"{args.n} requests, {args.max_tokens} new tokens each, against {url}")
    print(f"sequential:       {sequential:7.2f} s  ({args.n / sequential:6.1f} requests/s)")
    print(f"concurrency {args.concurrency:3d}:  {concurrent:7.2f} s  ({args.n / concurrent:6.1f} requests/s)")
    print(f"ratio (sequential / concurrent): {sequential / concurrent:.2f}x")


if __name__ == "__main__":
    main()
