"""Reasoner benchmark: owlrl's OWL-RL closure against SPARQL rules run by Oxigraph, on all T-REx facts.

Both engines get the same input: every T-REx fact with its labels (the quads `kbc kb load` writes)
and the axioms of `kb/axioms.ttl` (or `--axioms`). SPARQL rules run on an in-memory Oxigraph
store (`--store PATH` for an on-disk one), `--repeat` times, best time kept; owlrl runs once (it
takes minutes). Prints both times, the new facts of each and whether they are the same set.

    python bench/reasoning.py [--data-dir ../shared/data/lama] [--repeat 3] [--no-owlrl]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from eval.lama import load_trex
from kb.reasoning import derive, ensure_inferred, inferred_triples, load_axioms, owlrl_new_facts, provenance_quads
from kb.store import GraphStore, fact_quads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--axioms", default=None)
    ap.add_argument("--store", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-owlrl", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: bench/ is no package
    from bench.lama_folder import lama_folder

    corpus = load_trex(lama_folder(args.data_dir))
    ontology = load_axioms(args.axioms)
    store = GraphStore.open(args.store)
    start = time.perf_counter()
    graph = store.ensure_corpus(corpus.name, corpus.version, corpus.facts)
    print(f"facts={len(corpus.facts)} quads={store.count(graph)} axioms={len(ontology.axioms)} "
          f"load_store_s={time.perf_counter() - start:.2f}")
    best = None
    for _ in range(args.repeat):
        report = ensure_inferred(store, ontology, [graph], known_relations=corpus.relations, force=True)
        best = report if best is None or report.seconds_closure < best.seconds_closure else best
    start = time.perf_counter()
    derivations = derive(store, ontology, [graph], best.graph)
    derive_s = time.perf_counter() - start
    quads = provenance_quads(ontology, derivations, best.graph)
    print(f"sparql_closure_s={best.seconds_closure:.3f} rounds={best.rounds} "
          f"provenance_s={best.seconds_provenance:.2f} (derive {derive_s:.2f}, {len(quads)} quads written) "
          f"new_facts={best.facts}")
    for name, n in best.counts.items():
        print(f"  {best.kinds[name]:16s} {name:44s} {n}")
    if args.no_owlrl:
        return
    new, seconds = owlrl_new_facts((q[:3] for q in fact_quads(corpus.facts, graph)), ontology)
    same = new == inferred_triples(store, best.graph)
    print(f"owlrl_closure_s={seconds:.1f} owlrl_new_facts={len(new)} same_new_facts={same} "
          f"speedup={seconds / best.seconds_closure:.0f}x")


if __name__ == "__main__":
    main()
