"""Answers from an extracted KB: objects of (subject, relation) ranked by the extractor's confidence.

One SPARQL query per relation reads the reified statements of the graph; answers are ranked by
confidence (listed by label, ascending, at equal confidence; the tie is shared,
`Prediction.shared_ties`: a gold among equally confident answers ranks first), one answer per
label. A subject the graph knows nothing about gets an empty answer list, which scores as wrong,
as LAMA's RE baselines do. Ranks count within that list (`ranks = "list"`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

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
    slots = ("object", "subject")

    def __init__(self, name: str, store: GraphStore, graph: str, labels: dict[str, str] | None = None,
                 info: dict | None = None) -> None:
        self.name = name
        self.store = store
        self.graph = graph
        self._labels = labels or {}  # entity IRI -> label in the asking corpus (labels differ across corpora)
        self._info = info or {}
        self._ranked: dict[tuple[str, str], dict[str, tuple[Answer, ...]]] = {}
        self._by_label: dict[tuple[str, str], dict[str, list[str]]] = {}  # (relation, slot) -> label -> known IRIs
        self._held: dict[tuple[str, str], dict[str, tuple[Answer, ...]]] = {}

    def describe(self) -> dict:
        return {"predictor": self.name, "graph": self.graph, "ranking": "confidence desc, label asc", "ties": "shared",
                "ranks": self.ranks, "slots": list(self.slots), **self._info}

    def _rows(self, relation: str, slot: str) -> Iterator[tuple[str, str, str | None, str, float]]:
        """(known IRI, asked IRI, known label or None, asked label, confidence) of each triple of the relation: the
        labels the asking corpus gives, else the graph's (the asked entity's IRI where it has none)."""
        rows = self.store.select(RANKING_QUERY.format(
            graph=graph_iri(self.graph), relation=relation_iri(relation), confidence=CONFIDENCE))
        for s, o, s_label, o_label, conf in rows:
            if slot == "object":
                known, asked, known_label, asked_label = s, o, s_label, o_label
            else:
                known, asked, known_label, asked_label = o, s, o_label, s_label
            known, asked = str(known), str(asked)
            known_label = self._labels.get(known) or known_label
            label = self._labels.get(asked) or (str(asked_label) if asked_label is not None else asked)
            yield known, asked, None if known_label is None else str(known_label), label, float(conf)

    def ranking(self, relation: str, slot: str = "object") -> dict[str, tuple[Answer, ...]]:
        """Known entity IRI -> answers for the asked slot, best first."""
        key = (relation, slot)
        if key not in self._ranked:
            best: dict[str, dict[str, tuple[float, str]]] = {}  # known -> label -> (-confidence, IRI)
            by_label: dict[str, list[str]] = {}
            for known, asked, known_label, label, conf in self._rows(relation, slot):
                if known_label is not None:
                    iris = by_label.setdefault(known_label, [])
                    if known not in iris:
                        iris.append(known)
                answers = best.setdefault(known, {})
                cand = (-conf, asked)
                if label not in answers or cand < answers[label]:
                    answers[label] = cand  # one answer per label: its best entity, ties to the smaller IRI
            self._ranked[key] = {
                k: tuple(Answer(label, -neg, _wikidata_id(iri))
                         for label, (neg, iri) in sorted(v.items(), key=lambda kv: (kv[1][0], kv[0])))
                for k, v in best.items()
            }
            self._by_label[key] = by_label
        return self._ranked[key]

    def held(self, relation: str, slot: str = "object") -> dict[str, tuple[Answer, ...]]:
        """Known entity IRI -> every entity the graph holds in the asked slot, best confidence first.

        One answer per entity, not per label: two entities of one label both belong to a set."""
        key = (relation, slot)
        if key not in self._held:
            best: dict[str, dict[str, float]] = {}  # known -> asked IRI -> confidence
            labels: dict[str, str] = {}
            for known, asked, _known_label, label, conf in self._rows(relation, slot):
                labels[asked] = label
                answers = best.setdefault(known, {})
                answers[asked] = max(answers.get(asked, 0.0), conf)
            self._held[key] = {
                k: tuple(Answer(labels[iri], conf, _wikidata_id(iri))
                         for iri, conf in sorted(v.items(), key=lambda kv: (-kv[1], labels[kv[0]], kv[0])))
                for k, v in best.items()
            }
        return self._held[key]

    def answers(self, query: Query) -> tuple[Answer, ...]:
        ranked = self.ranking(query.relation, query.slot)
        exact = ranked.get(str(entity_iri(query.known)))
        if exact is not None or query.known.id is not None:
            return exact or ()
        iris = self._by_label[(query.relation, query.slot)].get(query.known.label, [])
        if len(iris) <= 1:
            return ranked.get(iris[0], ()) if iris else ()
        merged: dict[str, Answer] = {}  # several entities share the label: best confidence per answer label
        for iri in iris:
            for a in ranked.get(iri, ()):
                if a.label not in merged or a.score > merged[a.label].score:
                    merged[a.label] = a
        return tuple(sorted(merged.values(), key=lambda a: (-a.score, a.label)))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self.answers(q)[:depth], shared_ties=True) for q in queries]


def _wikidata_id(iri: str) -> str | None:
    return iri[len(WD):] if iri.startswith(WD) else None
