"""Answers from an extracted KB: objects of (subject, relation) ranked by the extractor's confidence.

One SPARQL query per relation reads the reified statements of the graph. Each entity the graph holds for the
asked slot is one answer, carrying its own Wikidata id, at the best confidence of its triple: naive linking links a
mention to every entity of its label at the mention's confidence, so the entities of one label (Lisbon, Portugal
and Lisbon, New Hampshire) tie, and the extraction cannot tell which one the sentence meant (in `re-oracle` the
oracle's triple and the naive ones coincide). Answers are ranked by confidence, then label, then Wikidata number
(Q597 before Q2310637) at equal confidence; the tie is shared (`Prediction.shared_ties`: a gold among equally
confident answers ranks first, and a label listed for several entities counts once, `eval.metrics.gold_rank`).
A subject the graph knows nothing about gets an empty answer list, which scores as wrong, as LAMA's RE
baselines do. Ranks count within that list (`ranks = "list"`).
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

    def describe(self) -> dict:
        return {"predictor": self.name, "graph": self.graph, "answers": "one per entity",
                "ranking": "confidence desc, label asc, Wikidata number asc", "ties": "shared",
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
        """Known entity IRI -> one answer per entity the graph holds in the asked slot, best first.

        Not one per label: the entities of one label tie at the confidence of the mention they were linked from,
        and an answer carries the entity of its own triple, never a namesake's."""
        key = (relation, slot)
        if key not in self._ranked:
            best: dict[str, dict[str, float]] = {}  # known -> asked IRI -> best confidence
            labels: dict[str, str] = {}
            by_label: dict[str, list[str]] = {}
            for known, asked, known_label, label, conf in self._rows(relation, slot):
                if known_label is not None:
                    iris = by_label.setdefault(known_label, [])
                    if known not in iris:
                        iris.append(known)
                labels[asked] = label
                answers = best.setdefault(known, {})
                answers[asked] = max(answers.get(asked, conf), conf)
            self._ranked[key] = {
                k: tuple(Answer(labels[iri], conf, _wikidata_id(iri)) for iri, conf in
                         sorted(v.items(), key=lambda kv: (-kv[1], labels[kv[0]], _entity_order(kv[0]))))
                for k, v in best.items()
            }
            self._by_label[key] = by_label
        return self._ranked[key]

    def held(self, relation: str, slot: str = "object") -> dict[str, tuple[Answer, ...]]:
        """Known entity IRI -> every entity the graph holds in the asked slot, best confidence first: the ranking,
        whose answers are entities (two entities of one label both belong to a set)."""
        return self.ranking(relation, slot)

    def answers(self, query: Query) -> tuple[Answer, ...]:
        ranked = self.ranking(query.relation, query.slot)
        exact = ranked.get(str(entity_iri(query.known)))
        if exact is not None or query.known.id is not None:
            return exact or ()
        iris = self._by_label[(query.relation, query.slot)].get(query.known.label, [])
        if len(iris) <= 1:
            return ranked.get(iris[0], ()) if iris else ()
        merged: dict[tuple[str, str | None], Answer] = {}  # several entities share the label: best per answer entity
        for iri in iris:
            for a in ranked.get(iri, ()):
                key = (a.label, a.id)
                if key not in merged or a.score > merged[key].score:
                    merged[key] = a
        return tuple(sorted(merged.values(), key=lambda a: (-a.score, a.label, _id_order(a.id))))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self.answers(q)[:depth], shared_ties=True) for q in queries]


def _wikidata_id(iri: str) -> str | None:
    return iri[len(WD):] if iri.startswith(WD) else None


def _id_order(wikidata_id: str | None) -> tuple[int, int, str]:
    """Wikidata ids by number (Q84 before Q3258936; as strings Q3258936 would come first), then the rest."""
    digits = wikidata_id[1:] if wikidata_id else ""
    if wikidata_id and wikidata_id[0] in "QP" and digits.isdigit():
        return 0, int(digits), wikidata_id
    return 1, 0, wikidata_id or ""


def _entity_order(iri: str) -> tuple[int, int, str]:
    wikidata_id = _wikidata_id(iri)
    return _id_order(wikidata_id) if wikidata_id is not None else (1, 0, iri)
