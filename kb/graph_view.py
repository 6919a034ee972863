"""A networkx view of a relation's triples: cardinality types and symmetry, computed from data.

Cardinality follows Bordes et al. (2013): average objects per subject (tph) and subjects per
object (hpt), each compared with 1.5. LAMA's test data holds at most 1,000 sampled facts per
relation, so a type computed here can disagree with `relations.jsonl` (which describes the
full relation): `compare_types` reports each disagreement rather than overriding the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

THRESHOLD = 1.5
# Asymmetric relations have no reverse pairs at all; a symmetric relation sampled at rate p shows
# about p of them (LAMA keeps <= 1,000 facts per relation), so a low bar separates the two.
SYMMETRIC_FRACTION = 0.1


@dataclass(frozen=True)
class RelationShape:
    relation: str
    n_triples: int
    tails_per_head: float
    heads_per_tail: float
    reverse_fraction: float  # share of (s, o) whose (o, s) is also a triple

    @property
    def type(self) -> str:
        many_heads = self.heads_per_tail >= THRESHOLD
        many_tails = self.tails_per_head >= THRESHOLD
        return {(False, False): "1-1", (True, False): "N-1", (False, True): "1-N", (True, True): "N-M"}[
            (many_heads, many_tails)
        ]

    @property
    def symmetric(self) -> bool:
        return self.reverse_fraction >= SYMMETRIC_FRACTION


def relation_graph(pairs: Iterable[tuple[str, str]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_edges_from(pairs)
    return graph


def shape(relation: str, pairs: Iterable[tuple[str, str]]) -> RelationShape:
    graph = relation_graph(pairs)
    heads = [n for n in graph if graph.out_degree(n)]
    tails = [n for n in graph if graph.in_degree(n)]
    n = graph.number_of_edges()
    reverse = sum(1 for s, o in graph.edges if s != o and graph.has_edge(o, s))
    return RelationShape(
        relation,
        n,
        n / len(heads) if heads else 0.0,
        n / len(tails) if tails else 0.0,
        reverse / n if n else 0.0,
    )


def compare_types(shapes: Iterable[RelationShape], declared: dict[str, str | None]) -> list[dict]:
    """One row per relation: declared vs computed type, and whether they agree."""
    rows = []
    for sh in shapes:
        want = declared.get(sh.relation)
        rows.append({
            "relation": sh.relation,
            "declared": want,
            "computed": sh.type,
            "agree": want == sh.type,
            "tails_per_head": round(sh.tails_per_head, 3),
            "heads_per_tail": round(sh.heads_per_tail, 3),
            "reverse_fraction": round(sh.reverse_fraction, 3),
            "symmetric": sh.symmetric,
            "n_triples": sh.n_triples,
        })
    return rows
