"""`kb` and `kb-inferred`: the graph store as a predictor, without and with the facts the axioms derive.

Both read the run's per-relation gold graphs (`gold-<corpus>-<relation>`); `kb-inferred` reads
the closure of those gold graphs as well (`kb.reasoning.ensure_inferred`: `kbc run kmir` reasons
with its `--axioms` before any predictor is built; elsewhere the shipped axioms are applied,
computing the closure when the store holds none of these facts).

Object queries get the objects the graphs hold for (subject, relation): every one is held, so all score 1.0, come in
label order, all of them whatever the answer depth (one tie is never cut), and share their tie
(`Prediction.shared_ties`: a gold among them counts at rank 1, never behind an equal by label order). Each answer
carries the entity's id and the label the relation's own facts give it, as the gold KB's answers do: an entity the
data names twice (Q1116, "Province of Antwerp" as an object of P1376, "Antwerp" as a subject of P36) answers a P1376
query as P1376's facts name it, whatever other relations the run asks. An object only the inferred graph gives the
relation has no label there; it takes the smaller of its labels in the graphs read. Queries that carry a KMIR question
with choices (`bridge.experiments.kmir.KmirQuery`) are answered by `choose`, which looks the question up in the graphs
(`kb.kmir_answer.KmirKB.answer`); the chosen label is the prediction's only answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from bridge.predictors.registry import PredictorContext
from bridge.run.options import declares
from eval.lama import Corpus
from eval.negated import PROBE_CORPORA
from eval.types import Answer, Entity, Fact, Prediction, Query
from kb.gold import no_lookup
from kb.kmir_answer import TYPES_GRAPH, KmirKB
from kb.store import GraphStore, entity_id, relation_key

CLOSED_WORLD = "closed_world"  # `Prediction.extra` key: the question was looked up, so no answer means no choice holds
# per setting, the KB its drop reasons name (`kb.gold.no_lookup`)
KB_NAMES = {"kb": "the KB (its gold graphs)",
            "kb-inferred": "the inferred KB (its gold graphs and the facts its axioms derive from them)"}


def corpus_graphs(store: GraphStore, corpus: Corpus) -> list[str]:
    """The corpus's per-relation gold graphs as the runner loads them (loading any that is missing)."""
    return sorted(relation_graphs(store, corpus).values())


def relation_graphs(store: GraphStore, corpus: Corpus) -> dict[str, str]:
    """Relation -> its gold graph, as the runner loads them (loading any that is missing); none for cloze facts."""
    from eval.lama import relation_versions

    if corpus.facts and corpus.facts[0].cloze:
        return {}
    return store.ensure_relations(corpus.name, relation_versions(corpus), corpus.by_relation())


class KmirKBPredictor:
    """Answers from fixed graphs of the store; `setting` is `kb` or `kb-inferred`."""

    ranks = "list"
    slots = ("object",)

    def __init__(self, name: str, setting: str, kb: KmirKB, relation_graphs: Mapping[str, str] | None = None,
                 axioms: str | None = None, closure_of: Sequence[str] | None = None) -> None:
        self.name, self.setting, self.kb, self.axioms = name, setting, kb, axioms
        self.closure_of = None if closure_of is None else sorted(closure_of)  # relations whose facts it reasons from
        self.relation_graphs = dict(relation_graphs or {})  # relation -> the gold graph whose labels answers take
        self._labels: dict[str, dict[str, str]] = {}

    def filter_facts(self, facts: Sequence[Fact], slot: str = "object") -> tuple[list[Fact], dict[str, int]]:
        """Drop what no lookup can answer, as the gold KB does: a SQuAD cloze has no subject to look up, a ConceptNet
        one no KB holding its subject, and a negated or misprimed probe is a sentence, so none may count as a miss."""
        whys = [no_lookup(f, KB_NAMES[self.setting]) for f in facts]
        kept = [f for f, why in zip(facts, whys) if why is None]
        gone = Counter(why for why in whys if why is not None)
        return kept, dict(gone)

    def relation_labels(self, relation: str) -> dict[str, str]:
        """Entity key -> the label the relation's own gold graph gives each of its objects (the smaller of two, as
        the gold KB answers); empty for a relation without a gold graph here."""
        if relation not in self._labels:
            graph = self.relation_graphs.get(relation)
            labels: dict[str, str] = {}
            for _, key, label in self.kb.store.pairs(relation, graph) if graph else ():
                if label and (key not in labels or label < labels[key]):
                    labels[key] = label
            self._labels[relation] = labels
        return self._labels[relation]

    def object_answers(self, known: Entity, relation: str) -> tuple[Answer, ...]:
        """Every object held for (known, relation), with its id and the relation's label for it, in label order."""
        own = self.relation_labels(relation)
        answers = []
        for iri, label in self.kb.objects(known, relation):
            eid = entity_id(iri)
            label = own.get(eid, label) if eid is not None else label
            if label:
                answers.append(Answer(label, 1.0, eid))
        return tuple(sorted(answers, key=lambda a: (a.label, a.id or "")))

    def describe(self) -> dict:
        axioms = {"axioms": self.axioms} if self.axioms else {}
        if self.closure_of is not None:
            axioms["closure_of"] = self.closure_of
        return {"predictor": self.setting, "graphs": self.kb.graphs, "ranks": self.ranks, "slots": list(self.slots),
                "ranking": "every held object, score 1, label order", "ties": "shared",
                "labels": "as the relation's own facts name each entity",
                "choices": "looked up in the graphs (closed world)", **axioms}

    def choose(self, queries: Sequence[Query]) -> list[str | None]:
        """The choice the graphs support for each query's question (None: no question, or no choice held)."""
        out: list[str | None] = []
        for q in queries:
            question = getattr(q, "question", None)
            out.append((self.kb.answer(question) or None) if question is not None else None)
        return out

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        out = []
        for q in queries:
            question = getattr(q, "question", None)
            if question is not None and question.choices:
                chosen = self.choose([q])[0]
                out.append(Prediction(q.uid, (Answer(chosen, 1.0),) if chosen else (), extra={CLOSED_WORLD: True},
                                      shared_ties=True))
                continue
            # every held object, whatever the depth: all are tied, and a cut inside the tie could drop the gold
            out.append(Prediction(q.uid, self.object_answers(q.known, q.relation), shared_ties=True))
        return out


# records before shared ties ranked a gold behind its equals by label, and records before "labels" named an entity
# by the smaller of its labels in every graph read (a gold named otherwise by another relation asked was a miss),
# and records before "answers" cut the held objects at the answer depth in label order (a gold past it was a miss):
# and records before "unasked" answered a cloze fact or a negated probe with no object (each a miss): a rerun must never
# mix them
KB_IDENTITY = {"ties": "shared", "labels": "relation", "answers": "every held object", "unasked": "dropped"}
UNASKED_CORPORA = ("squad", "conceptnet", *PROBE_CORPORA)  # corpora whose facts no lookup answers


def _types(store: GraphStore) -> list[str]:
    return [TYPES_GRAPH] if TYPES_GRAPH in store.graph_names(TYPES_GRAPH) else []


@declares()
def make_kb(name: str, ctx: PredictorContext) -> KmirKBPredictor:
    """The gold graphs of the corpus."""
    graphs = relation_graphs(ctx.store, ctx.corpus)
    return KmirKBPredictor(name, "kb", KmirKB(ctx.store, sorted(graphs.values()), _types(ctx.store)), graphs)


@declares()
def make_kb_inferred(name: str, ctx: PredictorContext) -> KmirKBPredictor:
    """The gold graphs of the corpus and their closure under the axioms."""
    from kb.reasoning import ensure_inferred, load_axioms

    ontology = load_axioms(ctx.axioms)
    by_relation = relation_graphs(ctx.store, ctx.corpus)
    graphs = sorted(by_relation.values())
    closure = []
    if graphs:  # computed unless the store holds the closure of these facts under these axioms
        closure = [ensure_inferred(ctx.store, ontology, graphs,
                                   known_relations=known_relations(ctx.corpus, ctx.data_dir)).graph]
    named = {relation_key(p) for p in ontology.properties()}
    return KmirKBPredictor(name, "kb-inferred", KmirKB(ctx.store, [*graphs, *closure], _types(ctx.store)), by_relation,
                           f"{ctx.axioms or 'kb/axioms.ttl'} {ontology.digest}", sorted(set(by_relation) & named))


def closure_change(before: Mapping | None, now: Mapping) -> str | None:
    """Why answers `kb-inferred` recorded as `before` describes (its `describe()`) came from another closure than
    those it gives as `now` describes, or None: the answers of one relation depend on every relation the axioms name
    among those asked, so a directory holds the answers of one closure per corpus."""
    if not before or "closure_of" not in now:
        return None
    was, rels = before.get("closure_of"), now["closure_of"]
    if was is None:  # recorded before the relations were: the closure's graph names its source graphs
        old = [g for g in before.get("graphs", ()) if g.startswith("inferred-")]
        new = [g for g in now.get("graphs", ()) if g.startswith("inferred-")]
        return None if old == new else (f"from a closure of other relations ({', '.join(old) or 'none'}, now "
                                        f"{', '.join(new) or 'none'}); use another --out")
    if was == rels and before.get("axioms", "").rpartition(" ")[2] == now.get("axioms", "").rpartition(" ")[2]:
        return None
    if was != rels:
        was_text, now_text = ", ".join(was) or "no relation", ", ".join(rels) or "no relation"
        return (f"from the closure of the facts of {was_text} that the axioms name; this run's relations make it the "
                f"closure of those of {now_text}, which derives other objects: ask the relations the axioms name as "
                f"before ({', '.join(was) or 'none'}), or use another --out")
    return f"with other axioms ({before.get('axioms')}, now {now.get('axioms')}); use another --out"


make_kb.identity_extra = make_kb_inferred.identity_extra = KB_IDENTITY
make_kb.unasked = make_kb_inferred.unasked = (UNASKED_CORPORA, "scored each fact it cannot look up (a cloze sentence, "
                                              "a negated probe) as a miss; use another --out to leave them out as not "
                                              "applicable")


def known_relations(corpus: Corpus, data_dir) -> set[str]:
    """Relation ids axioms may name: the corpus's and every LAMA relation (`relations.jsonl`)."""
    return set(corpus.relations) | listed_relations(data_dir)


def own_relations(corpus: Corpus, data_dir) -> set[str]:
    """Relation ids axioms over this corpus alone may name: its own, and those `relations.jsonl` lists where it lists
    the corpus's (a T-REx copy lacking some files), not where it sits beside another corpus (Google-RE's LAMA
    folder, where axioms over T-REx would derive nothing)."""
    listed = listed_relations(data_dir)
    return set(corpus.relations) | (listed if set(corpus.relations) <= listed else set())


def default_axioms_problem(ontology, corpus: Corpus, data_dir) -> str | None:
    """Why the shipped axioms (over T-REx's relations) do not fit this corpus, or None."""
    missing = list(dict.fromkeys(relation_key(p) for _, p in ontology.unknown(own_relations(corpus, data_dir))))
    if not missing:
        return None
    if corpus.name.startswith("trex"):  # a copy of T-REx with neither the data nor the relations.jsonl line
        return (f"the default axioms (kb/axioms.ttl) name {', '.join(missing)}, which this copy of {corpus.name} "
                "neither holds nor lists in relations.jsonl; pass --axioms FILE with axioms over its relations")
    return (f"the default axioms (kb/axioms.ttl, over T-REx's relations) name {', '.join(missing)}, which "
            f"{corpus.name} does not hold; pass --axioms FILE with axioms over {corpus.name}'s relations, or ask trex")


def listed_relations(data_dir) -> set[str]:
    """The relation ids `relations.jsonl` in `data_dir` lists (none without one)."""
    from pathlib import Path

    from eval.relations import load_relations

    path = Path(data_dir) / "relations.jsonl" if data_dir is not None else None
    return set(load_relations(path)) if path is not None and path.is_file() else set()
