"""The gold KB as a predictor: the answers the graph store holds for (subject, relation) or (relation, object).

It is the symbolic side at its best, an upper bound for every other predictor on the same
queries: objects of (subject, relation) for object queries, subjects of (relation, object) for
subject queries, read by one SPARQL query per relation from the graph holding exactly that
relation's facts (the graph the runner filters by). Every answer is correct, so they all score
1.0 and come in label order; the tie is shared (`Prediction.shared_ties`): a gold among them
ranks 1. A known entity is found by its IRI; one without an id that the graph lacks under its
label IRI (a language model's answer fed back in coherency's second step) is found by its label.
Ranks count within the returned list (`ranks = "list"`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from eval.negated import PROBE_CORPORA
from eval.types import Answer, Fact, Prediction, Query
from kb.store import GraphStore, entity_id, entity_iri, entity_key, graph_iri, relation_iri

NO_GRAPH = "no gold graph of this run holds this relation"
NO_SUBJECT = "a SQuAD question has no subject to look up: its facts are cloze sentences about a passage"
NO_KB = "a ConceptNet fact's relation has no gold graph: no KB of this run holds its subject to look up"
PROBE = "a negated or misprimed probe is a sentence, not a (subject, relation) lookup: {kb} answers no probes"
GOLD_KB = "the gold KB"


def no_lookup(fact: Fact, kb: str = GOLD_KB) -> str | None:
    """Why no KB lookup answers `fact`, or None for a (subject, relation) fact: a negated or misprimed probe is a
    sentence, a SQuAD cloze holds one placeholder subject, a ConceptNet one a subject no KB of a run holds. `kb`:
    the KB that looks facts up, as a drop reason names it."""
    if fact.corpus in PROBE_CORPORA:
        return PROBE.format(kb=kb)
    if fact.cloze is not None:
        return NO_SUBJECT if fact.corpus == "squad" else NO_KB
    return None

PAIRS_QUERY = """
SELECT ?s ?o ?sl ?ol WHERE {{ GRAPH <{graph}> {{
  ?s <{relation}> ?o . OPTIONAL {{ ?s rdfs:label ?sl }} OPTIONAL {{ ?o rdfs:label ?ol }}
}} }}
"""


class GoldKBPredictor:
    ranks = "list"  # the answers are exactly the valid ones; a gold object is never below the list
    slots = ("object", "subject")

    def __init__(self, name: str, store: GraphStore, graphs: Mapping[str, str]) -> None:
        self.name = name
        self.store = store
        self.graphs = dict(graphs)  # relation -> graph name
        # (relation, slot) -> (known IRI -> answers, known label -> known IRIs)
        self._tables: dict[tuple[str, str], tuple[dict[str, tuple[Answer, ...]], dict[str, list[str]]]] = {}

    def describe(self) -> dict:
        return {"predictor": self.name, "kind": "gold-kb", "graphs": dict(sorted(self.graphs.items())),
                "ranking": "every valid answer, score 1, label order", "ties": "shared", "ranks": self.ranks,
                "slots": list(self.slots)}

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        kept = [f for f in facts if f.relation in self.graphs and f.cloze is None]
        gone = Counter(no_lookup(f) or NO_GRAPH for f in facts if not (f.relation in self.graphs and f.cloze is None))
        return kept, dict(gone)

    def _table(self, relation: str, slot: str) -> tuple[dict[str, tuple[Answer, ...]], dict[str, list[str]]]:
        key = (relation, slot)
        if key not in self._tables:
            rows = self.store.select(PAIRS_QUERY.format(graph=graph_iri(self.graphs[relation]),
                                                        relation=relation_iri(relation)))
            answers: dict[str, dict[str, str]] = {}  # known IRI -> answer IRI -> label
            by_label: dict[str, list[str]] = {}
            for s, o, s_label, o_label in rows:
                known, asked, known_label, label = (s, o, s_label, o_label) if slot == "object" else (o, s, o_label,
                                                                                                     s_label)
                seen = answers.setdefault(str(known), {})
                text = str(label) if label is not None else entity_key(str(asked))
                if str(asked) not in seen or text < seen[str(asked)]:
                    seen[str(asked)] = text  # an entity with two labels answers with the smaller one
                if known_label is not None:
                    iris = by_label.setdefault(str(known_label), [])
                    if str(known) not in iris:
                        iris.append(str(known))
            ranked = {k: tuple(sorted((Answer(text, 1.0, entity_id(iri)) for iri, text in v.items()),
                                      key=lambda a: (a.label, a.id or "")))
                      for k, v in answers.items()}
            self._tables[key] = (ranked, by_label)
        return self._tables[key]

    def answers(self, query: Query) -> tuple[Answer, ...]:
        if query.relation not in self.graphs:
            return ()
        ranked, by_label = self._table(query.relation, query.slot)
        exact = ranked.get(str(entity_iri(query.known)))
        if exact is not None or query.known.id is not None:
            return exact or ()
        merged = {(a.label, a.id): a for iri in by_label.get(query.known.label, []) for a in ranked.get(iri, ())}
        return tuple(sorted(merged.values(), key=lambda a: (a.label, a.id or "")))

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        return [Prediction(q.uid, self.answers(q)[:depth], shared_ties=True) for q in queries]

