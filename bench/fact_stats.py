"""Per-fact text statistics for all of T-REx (34,039 facts): SM, OM and co-occurrence in paragraphs and
sentences over the tantivy index of the LAMA evidence paragraphs (built first when missing, not timed).

    python bench/fact_stats.py [--data-dir ../shared/data/lama] [--index DIR] [--corpus trex]

Prints facts, seconds, facts/s, and how many facts co-occur in some paragraph / sentence.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eval.corpora import load_corpus
from kb.text.evidence import evidence_index
from kb.text.fact_stats import fact_text_stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--index", default=None, help="tantivy index folder (default: a temporary one, built here)")
    ap.add_argument("--corpus", default="trex")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: bench/ is no package
    from bench.lama_folder import lama_folder

    data = lama_folder(args.data_dir)
    if args.index:
        location = Path(args.index)
    else:
        import tempfile

        location = Path(tempfile.mkdtemp(prefix="kbc-fact-stats-")) / "lama-evidence"
    start = time.perf_counter()
    index = evidence_index(location, data)
    print(f"index: {len(index)} paragraphs at {location} (opened or built in {time.perf_counter() - start:.1f} s)")
    facts = load_corpus(args.corpus, data).facts
    start = time.perf_counter()
    rows = fact_text_stats(facts, index)
    seconds = time.perf_counter() - start
    print(f"{args.corpus}: {len(rows)} facts, {seconds:.1f} s, {len(rows) / seconds:.0f} facts/s")
    print(f"co-occurring in a paragraph: {sum(r['cooc_paragraphs'] > 0 for r in rows)}, "
          f"in a sentence: {sum(r['cooc_sentences'] > 0 for r in rows)}")


if __name__ == "__main__":
    main()
