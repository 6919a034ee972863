"""Answers from an extracted KB: objects of (subject, relation) ranked by the extractor's confidence.

One SPARQL query per relation reads the reified statements of the graph; answers are ranked by
confidence (ties by label, ascending: the candidate order of `eval.metrics`'s tie rule), one
answer per label. A subject the graph knows nothing about gets an empty answer list, which scores
as wrong, as LAMA's RE baselines do. Ranks count within that list (`ranks = "list"`).
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.types import Answer, Prediction, Query
from kb.extraction.kb_build import CONFIDENCE
from kb.store import WD, GraphStore, entity_iri, graph_iri, relation_iri

RANKING_QUERY = """
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?s ?o ?sl ?ol ?c WHERE {{ GRAPH <{graph}> {{
  ?st rdf:predicate <{relation}> ; rdf:subject ?s ; rdf:object ?o ; <{confidence}> ?c .
  OPTIONAL {{ ?s rdfs:label ?sl }} OPTIONAL {{ ?o rdfs:label ?ol }}
}} }}
"""


class ExtractedKBPredictor:
    ranks = "list"  # only the objects the extractor found for the subject are answers

    def __init__(self, name: str, store: GraphStore, graph: str, labels: dict[str, str] | None = None,
                 info: dict | None = None) -> None:
        self.name = name
        self.store = store
        self.graph = graph
        self._labels = labels or {}  # entity IRI -> label in the asking corpus (labels differ across corpora)
        self._info = info or {}
        self._ranked: dict[tuple[str, str], dict[str, tuple[Answer, ...]]] = {}

    def describe(self) -> dict:
        return {"predictor": self.name, "graph": self.graph, "ranking": "confidence desc, label asc",
                "ranks": self.ranks, **self._info}

    def ranking(self, relation: str, slot: str = "object") -> dict[str, tuple[Answer, ...]]:
        """Known entity IRI -> answers for the asked slot, best first."""
        key = (relation, slot)
        if key not in self._ranked:
            rows = self.store.select(RANKING_QUERY.format(
                graph=graph_iri(self.graph), relation=relation_iri(relation), confidence=CONFIDENCE))
            best: dict[str, dict[str, tuple[float, str]]] = {}  # known -> label -> (-confidence, IRI)
            for s, o, s_label, o_label, conf in rows:
                known, asked, asked_label = (s, o, o_label) if slot == "object" else (o, s, s_label)
                label = self._labels.get(str(asked)) or (str(asked_label) if asked_label is not None else str(asked))
                answers = best.setdefault(str(known), {})
                cand = (-float(conf), str(asked))
                if label not in answers or cand < answers[label]:
                    answers[label] = cand  # one answer per label: its best entity, ties to the smaller IRI
            self._ranked[key] = {
                k: tuple(Answer(label, -neg, _wikidata_id(iri))
                         for label, (neg, iri) in sorted(v.items(), key=lambda kv: (kv[1][0], kv[0])))
                for k, v in best.items()
            }
        return self._ranked[key]

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        out = []
        for q in queries:
            answers = self.ranking(q.relation, q.slot).get(str(entity_iri(q.known)), ())
            out.append(Prediction(q.uid, answers[:depth]))
        return out


def _wikidata_id(iri: str) -> str | None:
    return iri[len(WD):] if iri.startswith(WD) else None
