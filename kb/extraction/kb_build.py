"""Builds the extracted KB of a corpus into the graph store, once per data version.

Representation (standard RDF reification, which every SPARQL 1.1 store understands; Oxigraph's
RDF-star support differs across versions): each extracted triple is asserted as `s p o` in the
named graph, and a statement node `urn:kbc:stmt:<graph>:<hash>` carries `rdf:subject`,
`rdf:predicate`, `rdf:object` and `kbc:confidence` (xsd:double, the best confidence the
extractor gave the triple in any sentence). Both graphs `re-naive` and `re-oracle` hold every
corpus that was built; the `meta` graph records `<corpus>@<data version>/<method version>` per
graph, and the extraction (triples and held-out scores) is cached as JSON under the cache folder,
so an interrupted build resumes at the store-writing step.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rdflib import RDF, RDFS, XSD, Literal, URIRef
from tqdm import tqdm

from eval.checked_json import read_checked, write_checked
from eval.errors import DataError
from eval.lama import Corpus
from eval.types import Entity
from kb.extraction import candidates as cand
from kb.extraction.linking import LabelIndex, ScoredTriple, merge, naive_triples, oracle_triples
from kb.store import GraphStore, entity_iri, graph_iri, relation_iri
from kb.writer_lock import this_process

if TYPE_CHECKING:  # scikit-learn loads where extraction runs, not where the graphs are named
    from kb.extraction.extractor import Settings

log = logging.getLogger("kbc")

METHOD_VERSION = "re-1"
GRAPHS = ("re-naive", "re-oracle")
CONFIDENCE = URIRef("urn:kbc:confidence")
STMT_NS = "urn:kbc:stmt:"
SUPPORTED = ("trex", "google_re")
WRITE_BATCH = 20_000


def held_graphs(store: GraphStore) -> list[str]:
    """The extracted graphs the store holds (built, or recorded as built): a store `kbc kb build-re` never filled
    lists none."""
    names = set(store.graph_names("re-"))
    return [g for g in GRAPHS if g in names or store.loaded_versions(g)]


def build_tag(corpus: Corpus) -> str:
    return f"{corpus.name}@{corpus.version}/{METHOD_VERSION}"


def statement_iri(graph: str, s: URIRef, p: URIRef, o: URIRef) -> URIRef:
    digest = hashlib.sha1(f"{s} {p} {o}".encode()).hexdigest()[:24]
    return URIRef(f"{STMT_NS}{graph}:{digest}")


def extract(corpus: Corpus, settings: Settings | None = None, progress: bool = True) -> dict:
    """Candidates, k-fold extraction and both linkings of one corpus, as a JSON-able result."""
    from kb.extraction.extractor import Settings, kfold_extract

    settings = settings or Settings()
    if corpus.name not in SUPPORTED:
        raise DataError(f"relation extraction needs aligned evidence sentences: corpus {corpus.name!r} has none "
                        f"(use {' or '.join(SUPPORTED)})")
    started = time.perf_counter()
    facts = corpus.facts
    if corpus.name == "trex":
        gazetteer = cand.Gazetteer(cand.entity_names(facts, aliases=False))
        sentences, dropped = cand.trex_sentences(facts, gazetteer)
    else:
        gazetteer = cand.Gazetteer(cand.entity_names(facts, aliases=True))
        sentences, dropped = cand.snippet_sentences(facts, gazetteer)
    if not sentences:
        raise DataError(f"{corpus.name}: none of the {len(facts)} facts of relations "
                        f"{', '.join(corpus.relations)} has an evidence sentence to extract from; "
                        "relation extraction needs the aligned evidences of the LAMA data")
    extraction = kfold_extract(sentences, facts, settings, progress)
    naive = naive_triples(extraction.triples, sentences, LabelIndex(facts))
    oracle = merge(naive, oracle_triples(extraction.triples, sentences, facts))
    return {
        "tag": build_tag(corpus),
        "settings": settings.describe(),
        "seconds_extract": round(time.perf_counter() - started, 1),
        "sentences": len(sentences),
        "mentions": sum(len(s.mentions) for s in sentences),
        "labelled_pairs": sum(len(s.gold) for s in sentences),
        "train_rows": extraction.train_rows,
        "extracted": len(extraction.triples),
        "dropped": dropped,
        "scores": extraction.scores,
        "coverage": coverage(corpus, oracle),
        "graphs": {"re-naive": [_row(t) for t in naive.values()], "re-oracle": [_row(t) for t in oracle.values()]},
    }


def coverage(corpus: Corpus, oracle: dict) -> dict[str, dict[str, int]]:
    """Per relation: facts, facts with evidence sentences, facts whose triple the RE_o graph holds."""
    out: dict[str, dict[str, int]] = {r: {"facts": 0, "with_evidence": 0, "in_oracle_kb": 0} for r in corpus.relations}
    for fact in corpus.facts:
        row = out[fact.relation]
        row["facts"] += 1
        row["with_evidence"] += bool(fact.evidences)
        row["in_oracle_kb"] += (fact.subject.key, fact.relation, fact.object.key) in oracle
    return out


def _row(t: ScoredTriple) -> list:
    return [t.subject.label, t.subject.id, t.relation, t.object.label, t.object.id, round(t.confidence, 6)]


def _from_row(row: list) -> ScoredTriple:
    return ScoredTriple(Entity(row[0], row[1]), row[2], Entity(row[3], row[4]), row[5])


def cache_path(cache_dir: Path, corpus: Corpus, kind: str = "extraction") -> Path:
    """The cached extraction (`.json.gz`, with triples) or build report (`.report.json`) of a corpus."""
    suffix = ".json.gz" if kind == "extraction" else ".report.json"
    return Path(cache_dir) / "re" / f"{corpus.name}-{corpus.version}-{METHOD_VERSION}{suffix}"


def write_graph(store: GraphStore, graph: str, triples: Iterable[ScoredTriple], progress: bool = True) -> int:
    g = graph_iri(graph)
    triples = list(triples)
    quads: list[tuple] = []
    for t in tqdm(triples, desc=f"write {graph}", unit="triple", disable=not progress, file=sys.stderr):
        s, p, o = entity_iri(t.subject), relation_iri(t.relation), entity_iri(t.object)
        st = statement_iri(graph, s, p, o)
        quads += [
            (s, p, o, g),
            (st, RDF.subject, s, g),
            (st, RDF.predicate, p, g),
            (st, RDF.object, o, g),
            (st, CONFIDENCE, Literal(t.confidence, datatype=XSD.double), g),
            (s, RDFS.label, Literal(t.subject.label), g),
            (o, RDFS.label, Literal(t.object.label), g),
        ]
        if len(quads) >= WRITE_BATCH * 7:
            store.add_quads(quads)
            quads = []
    if quads:
        store.add_quads(quads)
    return len(triples)


def ensure_re_kb(store: GraphStore, corpus: Corpus, cache_dir: Path, settings: Settings | None = None,
                 progress: bool = True, force: bool = False, why: str = "") -> dict:
    """Build the RE graphs for `corpus` unless this data version is already in the store.

    Returns the build report (without the triples): held-out scores, coverage, counts, seconds.
    A graph holding another version of the same corpus is dropped (with every corpus in it; those
    rebuild on their next use), so stale confidences never mix with new ones. An extraction to compute is
    announced first (it takes minutes on the whole of T-REx), with `why` (what the caller asked it for) after.
    """
    from kb.extraction.extractor import Settings

    settings = settings or Settings()
    tag = build_tag(corpus)
    path = cache_path(cache_dir, corpus)
    with store.filling(lambda: not force and all(tag in store.loaded_versions(g) for g in GRAPHS)) as needed:
        if not needed:
            report_file = cache_path(cache_dir, corpus, "report")
            report = read_checked(report_file, "build report") or {"tag": tag}
            report["built"] = False
            return report
        return _build_re_kb(store, corpus, settings, tag, path, cache_dir, progress, force, why)


def _build_re_kb(store: GraphStore, corpus: Corpus, settings: Settings, tag: str, path: Path, cache_dir: Path,
                 progress: bool, force: bool, why: str = "") -> dict:
    started, builder = time.perf_counter(), this_process()
    result = None if force else read_checked(path, "extraction")
    if result is None:
        if corpus.name in SUPPORTED and any(f.evidences for f in corpus.facts):  # said before the work; `extract`
            log.info("%s", build_notice(corpus, settings) + why)
        result = extract(corpus, settings, progress)  # refuses other corpora and facts without evidences
        write_checked(path, result)
    for graph in GRAPHS:
        stale = [v for v in store.loaded_versions(graph) if v.startswith(f"{corpus.name}@") and v != tag]
        if stale or force:
            store.drop_graph(graph)
    write_started = time.perf_counter()
    for graph in GRAPHS:
        write_graph(store, graph, (_from_row(r) for r in result["graphs"][graph]), progress)
        store.mark_loaded(tag, graph)
    result["seconds_write"] = round(time.perf_counter() - write_started, 1)
    result["seconds_total"] = round(time.perf_counter() - started, 1)
    counts = {g: dict(Counter(r[2] for r in result["graphs"][g])) for g in GRAPHS}
    report = {k: v for k, v in result.items() if k != "graphs"}
    report["triples"] = counts
    report["built"] = True
    report["built_by"] = builder  # a command that finds the graphs built names who built them
    write_checked(cache_path(cache_dir, corpus, "report"), report)
    return report


def build_notice(corpus: Corpus, settings: Settings) -> str:
    """What an extraction about to start reads and does, and that it is done once per data version."""
    return (f"{corpus.name}: building the extracted KB (re-naive, re-oracle) from the evidence sentences of all "
            f"{len(corpus.facts):,} facts of its {len(corpus.relations)} relations, {settings.folds}-fold training "
            "(minutes on a CPU; once per data version, then kept in the store and the cache)")


def held_out_table(report: dict) -> list[dict]:
    """Per relation: held-out precision/recall of pairs and coverage of facts."""
    from kb.extraction.extractor import precision_recall

    pr = precision_recall(report.get("scores", {}))
    rows = []
    for rel, cov in report.get("coverage", {}).items():
        p, r = pr.get(rel, (0.0, 0.0))
        rows.append({"relation": rel, "precision": p, "recall": r, **cov,
                     "gold_pairs": report.get("scores", {}).get(rel, {}).get("gold", 0)})
    return rows
