"""Text index benchmark: LAMA evidence corpus + the Wikipedia sample repeated to >= 200,000 paragraphs.

Measures, in one run on the embedded tantivy backend: build rate, index size, BM25 top-10 latency
(p50/p95) for LAMA queries, phrase co-occurrence count latency (p50) for subject/object pairs,
and a brute-force scan computing the same counts (which must agree exactly).

    python bench/text_index.py [--data-dir ../shared/data/lama] [--target 200000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from eval.lama import load_google_re, load_trex
from eval.queries import make_queries
from kb.text.cooccur import ScanIndex, mention_of
from kb.text.index import build_index
from kb.text.paragraphs import Paragraph, evidence_paragraphs, read_dump
from kb.text.retrieval import retrieval_text


def _ms(seconds: list[float], q: float) -> float:
    return statistics.quantiles(seconds, n=100)[int(q) - 1] * 1000 if len(seconds) > 1 else seconds[0] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--target", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--scan-pairs", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: bench/ is no package
    from bench.lama_folder import lama_folder

    lama = lama_folder(args.data_dir)
    trex, google_re = load_trex(lama), load_google_re(lama)
    paragraphs = evidence_paragraphs([trex, google_re])
    wiki = list(read_dump(lama.parent / "wikipedia" / "enwiki-sample-206-pages.xml.bz2"))
    copy = 0
    while len(paragraphs) < args.target:
        copy += 1
        paragraphs += [Paragraph(f"{p.pid}@{copy}", p.title, p.para, p.text, p.links) for p in wiki]
    print(f"corpus: {len(paragraphs)} paragraphs (LAMA evidences + Wikipedia sample x{copy})", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        index = build_index(paragraphs, "tantivy", Path(tmp) / "idx", progress=True)
        build_s = time.perf_counter() - start
        size_mb = index.stats()["size_bytes"] / 1e6
        rng = random.Random(0)
        queries = [q for pairs in make_queries(trex).values() for q, _ in pairs]
        queries = rng.sample(queries, min(args.queries, len(queries)))
        for q in queries[:20]:
            index.search(retrieval_text(q), 10)  # warm-up
        bm25 = []
        for q in queries:
            t = time.perf_counter()
            index.search(retrieval_text(q), 10)
            bm25.append(time.perf_counter() - t)
        facts = rng.sample(trex.facts, min(args.queries, len(trex.facts)))
        pairs = [(mention_of(f.subject), mention_of(f.object)) for f in facts]
        counts, cooc = [], []
        for a, b in pairs:
            t = time.perf_counter()
            counts.append(index.count(a, b))
            cooc.append(time.perf_counter() - t)
        scan = ScanIndex(paragraphs)
        scan_times, agree = [], 0
        for (a, b), n in zip(pairs[:args.scan_pairs], counts):
            t = time.perf_counter()
            m = scan.count(a, b)
            scan_times.append(time.perf_counter() - t)
            agree += m == n
    n_scan = min(args.scan_pairs, len(pairs))
    cooc_p50 = _ms(cooc, 50)
    scan_p50 = _ms(scan_times, 50)
    print(f"build {build_s:.1f} s, index {size_mb:.1f} MB, bm25 p95 {_ms(bm25, 95):.2f} ms, "
          f"scan p50 {scan_p50:.1f} ms, scan agrees on {agree}/{n_scan} pairs, "
          f"pairs with co-occurrences {sum(1 for c in counts if c)}/{len(counts)}")
    if agree != n_scan:
        print("error: index counts differ from the brute-force scan", file=sys.stderr)
        sys.exit(1)
    print(f"paragraphs={len(paragraphs)} build_pps={len(paragraphs) / build_s:.0f} bm25_p50_ms={_ms(bm25, 50):.2f} "
          f"cooccur_p50_ms={cooc_p50:.3f} scan_over_index={scan_p50 / cooc_p50:.0f}")


if __name__ == "__main__":
    main()
