"""Every side's answers to one query, as the JSON objects the page renders and the API returns.

A column is `{"side", "name", "status": "ok" | "not configured" | "not applicable" | "error",
"message", "answers": [...]}`; answers carry `label`, `score`, `id` and `gold` (whether the gold KB
holds that answer). One failing side becomes an `error` column; it never fails the whole query.
"""

from __future__ import annotations

import difflib
import logging
import math
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from rdflib import RDF, RDFS, Literal

from bridge.analysis.retrieved import from_hits, marks, read_paragraphs, window
from bridge.predictors.registry import UPPER_BOUNDS
from bridge.serve.explorer import Column, Explorer
from eval.answer_text import generation_fields
from eval.cells import count_of
from eval.errors import ConfigError, KbcError
from eval.labels import clean_label, control_character, search_key
from eval.lama import MASK, SQUAD_RELATION
from eval.metrics import gold_rank
from eval.types import OBJECT_SLOT, Answer, Entity, Query
from kb.store import GRAPH_NS, entity_key, graph_iri, relation_iri

log = logging.getLogger("kbc")
K_MAX = 100
EVIDENCE_K = 5
NOT_CONFIGURED = "not configured"
PARTIAL = "partial"  # no closure of the served facts, only one of fewer relations or other facts: said, not used
# longest subject and cloze taken: far above any corpus label, far below what a model's input must cut
MAX_SUBJECT_CHARS = 300
MAX_CLOZE_CHARS = 1000
MASK_SPELLINGS = (MASK, "<mask>", "<MASK>")  # BERT's and RoBERTa's mask tokens


@dataclass(frozen=True)
class Ask:
    """One query as the user typed it: subject + relation, or a cloze with one [MASK]."""

    subject: str = ""
    relation: str = ""
    cloze: str = ""
    k: int = 10


def check(ask: Ask, explorer: Explorer) -> Ask:
    """The query cleaned, or a ConfigError naming what is wrong (the API answers it with 400)."""
    if not 1 <= ask.k <= K_MAX:
        raise ConfigError(f"k={ask.k}: must be between 1 and {K_MAX}")
    cloze = ask.cloze.strip()
    if cloze:
        if len(cloze) > MAX_CLOZE_CHARS:
            raise ConfigError(f"the cloze has {len(cloze)} characters; at most {MAX_CLOZE_CHARS} are taken")
        if cloze.count(MASK) != 1:
            raise ConfigError(f"a cloze needs exactly one {MASK} (it has {cloze.count(MASK)}), "
                              f"e.g. 'Paris is the capital of {MASK} .'")
        return Ask(cloze=cloze, k=ask.k)
    subject = ask.subject.strip()
    if not subject:
        raise ConfigError("empty subject: type a subject and pick a relation, or write a cloze with [MASK]")
    if len(subject) > MAX_SUBJECT_CHARS:
        raise ConfigError(f"the subject has {len(subject)} characters; at most {MAX_SUBJECT_CHARS} are taken")
    if bad := control_character(subject):  # no label holds one (the loaders refuse them); a prompt would carry it
        raise ConfigError(f"the subject holds the control character {bad}; type the subject as text")
    if any(mask in subject for mask in MASK_SPELLINGS):
        raise ConfigError(f"the subject holds a mask token ({', '.join(MASK_SPELLINGS)}); the mask marks the answer "
                          "slot only (write a cloze to place it yourself)")
    if not ask.relation:
        raise ConfigError("no relation: pick one (e.g. P19) or write a cloze with [MASK]")
    if ask.relation not in explorer.relations:
        import difflib

        close = difflib.get_close_matches(ask.relation, explorer.relations, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown relation {ask.relation!r}{hint}")
    if ask.relation == SQUAD_RELATION.id and explorer.cloze_facts:
        raise ConfigError(f"{explorer.corpus.name} cannot be asked by subject and relation: each of its facts is a "
                          "question about a passage, all labelled with the one subject 'Squad'; write a cloze with "
                          f"{MASK} instead (e.g. one of its sentences)")
    return Ask(subject=subject, relation=ask.relation, k=ask.k)


SUGGESTIONS = 5


def subject_label(explorer: Explorer, typed: str) -> tuple[str, list[str]]:
    """The corpus's own spelling of a typed subject (matched case-insensitively), and close labels to suggest
    when the corpus has no subject of that name: close spellings first, then labels sharing a word. The typed text is
    cleaned as the corpus's labels are (`clean_label`: NFC), so "Jose\u0301" pasted from macOS finds "Jos\u00e9"."""
    typed = clean_label(typed)
    if typed in explorer.subjects:
        return typed, []
    folded = getattr(explorer, "folded_subjects", None)
    if folded is None:
        folded = {}
        for label in explorer.subjects:
            folded.setdefault(label.casefold(), []).append(label)
        explorer.folded_subjects = folded
    same = folded.get(typed.casefold(), []) or _loosely(explorer, typed)
    if len(same) == 1:
        return same[0], []
    if same:
        return typed, sorted(same)
    close = difflib.get_close_matches(typed.casefold(), list(folded), n=SUGGESTIONS, cutoff=0.75)
    found = [label for c in close for label in folded[c]]
    if len(found) < SUGGESTIONS:
        found += [label for label in _sharing_words(explorer, folded, typed.casefold()) if label not in found]
    return typed, found[:SUGGESTIONS]


def _loosely(explorer: Explorer, typed: str) -> list[str]:
    """The subjects whose `search_key` is the typed text's: ΚΥΠΡΟΥ finds Κύπρου and IĞDIR Iğdır, which `casefold`
    keeps apart (Greek capitals drop accents, Turkish has a dotless ı and a dotted İ)."""
    loose = getattr(explorer, "loose_subjects", None)
    if loose is None:
        loose = {}
        for label in explorer.subjects:
            loose.setdefault(search_key(label), []).append(label)
        explorer.loose_subjects = loose
    return loose.get(search_key(typed), [])


WORD = re.compile(r"\w+")


def _sharing_words(explorer: Explorer, folded: dict[str, list[str]], typed: str) -> list[str]:
    """Labels sharing a word with `typed` ("Dante Alighieri": "Dante Rivera"), a spelling too far for difflib:
    the rarer the words shared, the earlier; then the closer the spelling."""
    words = getattr(explorer, "subject_words", None)
    if words is None:
        words = {}
        for label in folded:
            for word in set(WORD.findall(label)):
                words.setdefault(word, []).append(label)
        explorer.subject_words = words
    weight: dict[str, float] = {}
    for word in set(WORD.findall(typed)):
        for label in words.get(word, ()):
            weight[label] = weight.get(label, 0.0) + 1 / len(words[word])
    ranked = sorted(weight, key=lambda f: (-weight[f], -difflib.SequenceMatcher(None, typed, f).ratio(), f))
    return [label for f in ranked[:SUGGESTIONS] for label in sorted(folded[f])]


@dataclass(frozen=True)
class AskedQuery(Query):
    """A subject + relation query of the explorer: `facts` are the corpus's facts it asks (those of the subject
    and relation), so a predictor answers it as `kbc run` answers them, their own evidence left out."""

    facts: tuple[str, ...] = ()
    no_sentence: str = ""  # why nothing is asked: a corpus of cloze sentences holds none for this subject and relation

    @property
    def own_facts(self) -> frozenset[str]:
        return frozenset(self.facts) | {self.fact_uid}


def make_query(ask: Ask, explorer: Explorer) -> Query:
    uid = f"serve-{uuid.uuid4().hex[:12]}"
    if ask.cloze:
        template = ask.cloze.replace(MASK, OBJECT_SLOT)
        return Query(uid, uid, explorer.corpus.name, "cloze", Entity(""), "object", template)
    relation = explorer.relations[ask.relation]
    asked = [f for f in explorer.by_subject.get(ask.subject, ()) if f.relation == ask.relation]
    known = list(dict.fromkeys(f.subject for f in asked)) or explorer.subjects.get(ask.subject, [Entity(ask.subject)])
    # an id where the label names exactly one subject of the relation's facts (else of the corpus): "Antwerp" names
    # the city in P1376 and the province in P36; else the gold KB merges by label
    entity = known[0] if len(known) == 1 else Entity(ask.subject)
    facts = tuple(f.uid for f in asked)
    # one fact: the run's own query of it; several (or a subject the corpus lacks): no fact is named, and the
    # evidence of every fact asked is left out
    fact_uid = facts[0] if len(facts) == 1 else uid
    template, no_sentence = relation.template, ""
    if explorer.cloze_facts:  # each fact is its own sentence: asked as a run asks it (`eval.queries.make_queries`)
        if asked:
            template = asked[0].cloze
        else:
            no_sentence = (f"{explorer.corpus.name} asks each fact with its own sentence and has no fact of "
                           f"{ask.subject!r} for {ask.relation}: there is no sentence to ask (write a cloze with "
                           f"{MASK} instead)")
    return AskedQuery(uid, fact_uid, explorer.corpus.name, ask.relation, entity, "object", template,
                      facts=facts, no_sentence=no_sentence)


def unasked(query: Query) -> str:
    """Why a query asks nothing of the predictors ("" when it asks)."""
    return getattr(query, "no_sentence", "")


def _answer(a: Answer, gold: set[str], lowercased: bool = False, prob: bool = False, causal: bool = False) -> dict:
    """An answer as the page shows it. A masked LM's score is the log-probability of one token among its
    vocabulary: shown as a probability. A causal LM's is the log-likelihood of a whole sentence, a probability
    far below 0.0001: shown as the log-probability itself."""
    folded = {g.casefold() for g in gold} if lowercased else gold
    out = {"label": a.label, "score": a.score, "id": a.id,
           "gold": (a.label.casefold() if lowercased else a.label) in folded}
    if causal and a.score <= 0:
        out["log_probability"] = a.score
    elif prob and a.score <= 0:
        out["probability"] = math.exp(a.score)
    return out


def is_causal(column: Column) -> bool:
    """Whether a column's scores are sentence log-likelihoods (causal typed querying)."""
    return type(column.predictor).__name__.startswith("Causal")


def gold_rank_of(pred, gold: set[str]) -> dict | None:
    """The best rank of a gold object: exact where the predictor ranked every candidate (`target_ranks`), else
    its place in the answers returned (`exact` false; None there: not among them)."""
    if not gold:
        return None
    exact = [r for label, r in (pred.target_ranks or {}).items() if label in gold and r is not None]
    if exact:
        return {"rank": min(exact), "exact": True, "of": None}
    ranks = [r for g in gold if (r := gold_rank(pred.answers, g, (), pred.lowercased, pred.shared_ties)) is not None]
    return {"rank": min(ranks) if ranks else None, "exact": pred.target_ranks is not None and bool(ranks),
            "of": len(pred.answers)}


def _column(side: str, name: str, status: str = "ok", message: str = "", answers: list | None = None,
            **extra) -> dict:
    """One side's column; every column carries `gold_rank` (null where it ranks nothing against a gold object)."""
    return {"side": side, "name": name, "status": status, "message": message, "answers": answers or [],
            "gold_rank": None, **extra}


def set_rank(answers: list[dict]) -> dict | None:
    """The gold rank of an unranked column (the gold KB's objects, the inferred graph's): every object it holds is
    equally true, so a gold object among them is at rank 1 of the answers returned; null where it holds none."""
    if not answers:
        return None
    return {"rank": 1 if any(a["gold"] for a in answers) else None, "exact": False, "of": len(answers)}


def gold_column(explorer: Explorer, query: Query) -> tuple[dict, set[str]]:
    if query.relation == "cloze":
        return _column("gold", "gold KB", "not applicable", "a cloze has no subject and relation to look up"), set()
    if explorer.set_valued:  # LM-KBC: the split's gold set of the pair, possibly empty (an answer of its own)
        answers = explorer.gold.predict([query], 0)[0].answers
        gold = {a.label for a in answers}
        message = "" if answers else "the gold set of this subject and relation is empty"
        listed = [_answer(a, gold) for a in answers]
        return _column("gold", "gold KB", "ok", message, listed, gold_rank=set_rank(listed),
                       source=f"the gold sets of {explorer.corpus.name}"), gold
    if explorer.cloze_facts:
        return cloze_gold_column(explorer, query)
    answers = explorer.gold.answers(query)
    gold = {a.label for a in answers}
    graph = explorer.gold.graphs.get(query.relation)
    message = "" if answers else "the gold KB holds no object for this subject and relation"
    listed = [_answer(a, gold) for a in answers]
    return _column("gold", "gold KB", "ok", message, listed, gold_rank=set_rank(listed),
                   graph=graph, sparql="SPARQL over the graph " + str(graph)), gold


def cloze_gold_column(explorer: Explorer, query: Query) -> tuple[dict, set[str]]:
    """The gold of a corpus whose facts are cloze sentences (negated LAMA, SQuAD, ConceptNet), held in no gold graph:
    the objects of the corpus's facts of the subject and relation, each with its fact's sentence filled in."""
    source = f"the facts of {explorer.corpus.name} (cloze sentences; no gold graph)"
    if unasked(query):
        return _column("gold", "gold KB", "ok", unasked(query), source=source), set()
    facts = [f for f in explorer.by_subject.get(query.known.label, ()) if f.relation == query.relation]
    objects: dict[str, dict] = {}
    for f in facts:
        sentence = (f.cloze or "").replace("[X]", query.known.label).replace("[Y]", f.object.label)
        objects.setdefault(f.object.label, {"id": f.object.id, "sentence": sentence})
    gold = set(objects)
    answers = [{**_answer(Answer(label, 1.0, o["id"]), gold), "sentence": o["sentence"]}
               for label, o in objects.items()]
    sentences = list(dict.fromkeys(f.cloze for f in facts))
    message = (f"{len(sentences)} sentences ask these facts; the prompt is the first, and each object shows its own"
               if len(sentences) > 1 else "")
    return _column("gold", "gold KB", "ok", message, answers, gold_rank=set_rank(answers), source=source), gold


def entity_iris(explorer: Explorer, label: str, more: Sequence[str] = ()) -> list[str]:
    """IRIs carrying `label` in the gold graphs (and the graphs `more`: those a closure was computed from, where a
    subject may be named by relations not served); the label goes into SPARQL only as an escaped literal."""
    allowed = ", ".join(f"<{graph_iri(g)}>" for g in dict.fromkeys([*explorer.gold_graphs, *more]))
    if not allowed:
        return []
    rows = explorer.store.select(f"SELECT DISTINCT ?e WHERE {{ GRAPH ?g {{ ?e rdfs:label {Literal(label).n3()} }} "
                                 f"FILTER(?g IN ({allowed})) }}")
    return sorted(str(e) for (e,) in rows)


def suggest(explorer: Explorer, prefix: str, limit: int = 10) -> list[str]:
    """Subject labels of the gold graphs starting with `prefix` (case-insensitive, in NFC as the labels are, and as
    `search_key` folds them: "ΚΥ" finds Κύπρου, "ığ" Iğdır, which SPARQL's LCASE kept apart), shortest first."""
    key = search_key(clean_label(prefix))
    if not key:
        return []
    return sorted((label for folded, label in _subject_keys(explorer) if folded.startswith(key)),
                  key=lambda label: (len(label), label))[:int(limit)]


def _subject_keys(explorer: Explorer) -> list[tuple[str, str]]:
    """(`search_key`, label) of each subject a prefix is matched against, computed once: the subjects of the gold
    sets or cloze facts, else the labels of the gold graphs' subjects as the store held them at start-up."""
    keyed = getattr(explorer, "subject_keys", None)
    if keyed is None:
        if explorer.set_valued or explorer.cloze_facts:  # no graphs: the subjects of the gold sets or cloze facts
            labels = list(explorer.subjects)
        elif explorer.gold_graphs:
            allowed = ", ".join(f"<{graph_iri(g)}>" for g in explorer.gold_graphs)
            rows = explorer.store.select(
                f"SELECT DISTINCT ?l WHERE {{ GRAPH ?g {{ ?s ?p ?o . ?s rdfs:label ?l }} FILTER(?g IN ({allowed})) "
                "FILTER(?p != rdfs:label) }")
            labels = [str(label) for (label,) in rows]
        else:
            labels = []
        keyed = explorer.subject_keys = [(search_key(label), label) for label in labels]
    return keyed


INFERRED_QUERY = """
SELECT DISTINCT ?o ?name ?ol WHERE {{ GRAPH <{prov}> {{
  ?d <{axiom}> ?a ; <{conclusion}> ?st . ?a <{label}> ?name .
  ?st <{rdf_subject}> <{subject}> ; <{rdf_predicate}> <{relation}> ; <{rdf_object}> ?o }}
  OPTIONAL {{ GRAPH ?g {{ ?o <{label}> ?ol }} FILTER(STRSTARTS(STR(?g), "{graph_ns}gold")) }}
}}
"""


def inferred_column(explorer: Explorer, query: Query, gold: set[str]) -> dict:
    if explorer.set_valued:
        return _column("inferred", "inferred graph", "not applicable",
                       f"{explorer.corpus.name}'s relations are not the Wikidata properties the inferred graph holds")
    if explorer.cloze_facts:
        return _column("inferred", "inferred graph", "not applicable",
                       f"{explorer.corpus.name}'s facts are cloze sentences, in no gold graph: the inferred graph "
                       "derives nothing from them")
    if not explorer.has_inferred:
        return _column("inferred", "inferred graph", NOT_CONFIGURED,
                       _joined("no inferred graph in the store (build it with `kbc kb infer`)",
                               _store_changed(explorer)))
    if query.relation == "cloze":
        return _column("inferred", "inferred graph", "not applicable", "a cloze has no subject and relation")
    from kb.reasoning import AXIOM, CONCLUSION, fact_versions, find_closure, provenance_graph

    if not hasattr(explorer, "inferred_problem"):  # chosen once: a partial closure must not answer as complete
        # the closure of the most relations that covers the served ones (kbc kb infer over the corpus): a run's closure
        # of a few relations never hides it; the facts it was computed from beyond those served are the data's too
        def current(relations: list[str]) -> dict[str, str]:
            from eval.corpora import load_corpus

            whole = load_corpus(explorer.corpus.name, explorer.data_dir, cache_dir=explorer.cache)
            return fact_versions(whole.facts, relations)

        explorer.inferred_closure = closure = find_closure(explorer.store, explorer.gold_graphs, widest=True,
                                                           current=current)
        # the axioms file's digest is for the build's record, not for this note
        problem = closure.problem and re.sub(r", axioms .*? sha256:[0-9a-f]{64}", "", closure.problem)
        store = f" --store {explorer.cfg.store}" if explorer.cfg.store else ""
        explorer.inferred_problem = problem and (f"{problem}; build it for this corpus: kbc kb infer --corpus "
                                                 f"{explorer.corpus.name}{_data_dir_flag(explorer)}{store}")
    if explorer.inferred_problem:  # an expected state after a run over a few relations: a note, not an error
        return _column("inferred", "inferred graph", PARTIAL, _joined(explorer.inferred_problem,
                                                                      _store_changed(explorer)))
    if not hasattr(explorer, "inferred_note"):
        explorer.inferred_note = _coverage_note(explorer)

    found: dict[str, dict] = {}
    prov = graph_iri(provenance_graph(explorer.inferred_closure.graph))
    coverage = explorer.inferred_closure.coverage
    for iri in entity_iris(explorer, query.known.label, coverage.sources if coverage else ()):
        rows = explorer.store.select(INFERRED_QUERY.format(
            prov=prov, axiom=AXIOM, conclusion=CONCLUSION, label=RDFS.label,
            rdf_subject=RDF.subject, rdf_predicate=RDF.predicate, rdf_object=RDF.object, subject=iri,
            relation=relation_iri(query.relation), graph_ns=GRAPH_NS))
        for o, name, o_label in rows:
            label = str(o_label) if o_label is not None else entity_key(str(o))
            entry = found.setdefault(label, {**_answer(Answer(label, 1.0, entity_key(str(o))), gold), "axioms": []})
            if str(name) not in entry["axioms"]:
                entry["axioms"].append(str(name))
    answers = sorted(found.values(), key=lambda a: a["label"])
    message = _joined(explorer.inferred_note, "" if answers else "no derived object for this query",
                      _store_changed(explorer))
    return _column("inferred", "inferred graph", "ok", message, answers, gold_rank=set_rank(answers))


def _joined(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _store_changed(explorer: Explorer) -> str:
    """Said where another process published a newer store (`kbc kb infer`, a run) since the explorer read it: the
    column, and the coverage read with it, are the store as read then."""
    if not explorer.store.newer_published():
        return ""
    return (f"the store changed after the explorer read it ({explorer.store_read_at}): this column shows the inferred "
            "graph as it was then; restart kbc serve to read the newer one")


def _data_dir_flag(explorer: Explorer) -> str:
    """` --data-dir DIR` where the explorer serves other data than `kbc kb infer` reads by default, else ""."""
    from eval.corpora import resolve_run_data_dir
    from eval.errors import KbcError

    try:
        default = resolve_run_data_dir([explorer.corpus.name])
    except KbcError:
        default = None
    return "" if default == explorer.data_dir else f" --data-dir {explorer.data_dir}"


def _coverage_note(explorer: Explorer) -> str:
    """Which closure answers where several could, and what it lacks when it was built from fewer relations than the
    corpus has ("" when neither): objects the other relations would derive are missing, so "no derived object" is
    not "none exists"."""
    from eval.lama import relation_ids

    found = explorer.inferred_closure
    coverage = found.coverage
    which = ""
    if coverage is not None and found.candidates > 1:
        which = (f"{found.candidates} closures in the store hold these facts; this one ({found.graph}) was computed "
                 f"from {count_of(len(coverage.relations), 'relations')} with "
                 f"{coverage.axioms.rpartition(' ')[0]}")
    corpus = relation_ids(explorer.corpus.name, explorer.data_dir) or explorer.relations
    if coverage is None or len(coverage.relations) >= len(corpus):
        return which
    lacking = sorted(r for r in corpus if r in coverage.named and r not in coverage.relations)
    named = f"; its axioms also name {', '.join(lacking)}, whose facts it lacks" if lacking else ""
    return _joined(which, f"the inferred graph was built from {len(coverage.relations)} of the corpus's "
                          f"{count_of(len(corpus), 'relations')} ({', '.join(sorted(coverage.relations))}){named}: "
                          "objects the other relations derive are not in it "
                          f"(kbc kb infer --corpus {explorer.corpus.name} builds it from all)")


def _sentence(explorer: Explorer, subject: str, obj: str) -> str | None:
    """An aligned evidence sentence of the subject's facts that names the object (what extraction read)."""
    for fact in explorer.by_subject.get(subject, []):
        for ev in fact.evidences:
            if obj in ev.text:
                return window(ev.text, obj)
    return None


def predictor_columns(explorer: Explorer, column: Column, queries: list[Query], ks: list[int],
                      golds: list[set[str]]) -> list[dict]:
    """One predictor's column for each of several queries, asked in one `predict` call (one LM batch)."""
    side = column.kind
    if column.error:
        return [_column(side, column.name, "error", column.error, spec=column.spec) for _ in queries]
    out: list[dict | None] = [None] * len(queries)
    asked = []
    for i, query in enumerate(queries):
        if query.relation == "cloze" and side != "lm":
            out[i] = _column(side, column.name, "not applicable", "a KB side needs a subject and a relation",
                             spec=column.spec)
        elif query.relation == "cloze" and is_causal(column):  # its answers are the asked relation's candidates
            out[i] = _column(side, column.name, "not applicable", "a causal LM ranks the objects of a relation in its "
                             "sentence; a cloze names no relation (ask a subject and a relation)", spec=column.spec)
        elif unasked(query):
            out[i] = _column(side, column.name, "not applicable", unasked(query), spec=column.spec)
        else:
            asked.append(i)
    if not asked:
        return out
    depth = max(ks[i] for i in asked)
    if explorer.set_valued:  # a set is cut from every answer the predictor has, as `kbc run lmkbc` cuts it
        from bridge.run.runner import whole_space

        depth = max(depth, *(whole_space(column.predictor, queries[i].relation) for i in asked))
    started = time.perf_counter()
    try:
        preds = list(column.predictor.predict([queries[i] for i in asked], depth))
    except Exception as exc:  # one broken side must not take the page down
        if len(asked) > 1:  # one query of the batch may be the cause: ask each alone
            for i in asked:
                out[i] = predictor_columns(explorer, column, [queries[i]], [ks[i]], [golds[i]])[0]
            return out
        if not isinstance(exc, KbcError):
            log.exception("predictor %s failed on %d queries", column.name, len(asked))
        message = str(exc) if isinstance(exc, KbcError) else f"{type(exc).__name__}: {exc}"
        for i in asked:
            out[i] = _column(side, column.name, "error", message, spec=column.spec)
        return out
    seconds = round(time.perf_counter() - started, 4)
    causal = is_causal(column)
    for i, pred in zip(asked, preds):
        generated = generation_fields(pred.extra or {})
        if generated:  # a written answer has no score and no rank: the exact prompt and the raw text instead
            answers = [{**_answer(a, golds[i], pred.lowercased), "score": None} for a in pred.answers[:ks[i]]]
            out[i] = _column(side, column.name, "ok", "" if answers else "no answer", answers, spec=column.spec,
                             seconds=seconds, batch=len(asked), gold_rank=None, scores="none",
                             generated=generated, upper_bound=UPPER_BOUNDS.get(column.spec))
            if explorer.set_valued:
                out[i].update(set_fields(explorer, column, queries[i], pred))
            continue
        answers = [_answer(a, golds[i], pred.lowercased, prob=side == "lm", causal=causal)
                   for a in pred.answers[:ks[i]]]
        if column.spec in ("re-naive", "re-oracle"):
            for a in answers:
                a["confidence"] = a["score"]
                a["sentence"] = _sentence(explorer, queries[i].known.label, a["label"])
        read = retrieval_read(column, queries[i], pred, answers)
        out[i] = _column(side, column.name, "ok", "" if answers else "no answer", answers, spec=column.spec,
                         seconds=seconds, batch=len(asked), gold_rank=gold_rank_of(pred, golds[i]),
                         scores="log-probability" if causal else "probability" if side == "lm" else "score",
                         upper_bound=upper_bound(column, queries[i]), **read)
        if explorer.set_valued:
            out[i].update(set_fields(explorer, column, queries[i], pred))
    return out


def retrieval_read(column: Column, query: Query, pred, answers: list[dict]) -> dict:
    """For a predictor that keeps the paragraphs it read (`extra.retrieved`: retrieval), `{"read": ...}`: those
    paragraphs in the order read, with their BM25 scores, texts and the answers each gave marked, and on each answer
    the paragraph (`source`) and sentence it was read from; `{}` for any other predictor."""
    pids = (pred.extra or {}).get("retrieved")
    if not isinstance(pids, list):
        return {}
    retriever = getattr(column.predictor, "inner", column.predictor)  # a closed answer space wraps it
    hits = retriever.retrieve(query) if hasattr(retriever, "retrieve") else []
    found = from_hits(hits) if [h.paragraph.pid for h in hits] == pids else {}
    read = read_paragraphs(pids, found, [a["label"] for a in answers], query.known.label)
    for a in answers:
        source = read["sources"].get(a["label"])
        if source is not None:
            a["sentence"], a["source"] = source["sentence"], source["paragraph"]
    read["note"] = "" if found or not pids else "the paragraphs could not be read again: ids only"
    return {"read": read}


def set_fields(explorer: Explorer, column: Column, query: Query, pred) -> dict:
    """The set `kbc run lmkbc` answers the pair with: the predictor's `set=` rule over its ranking read as
    probabilities (`eval.set_answers.set_answer`; no rule: every answer), each object with its label, its id and
    whether the gold set holds it. `threshold-tuned` learns its thresholds from the train split, which a run asks
    first: no set here, and the note says why."""
    from eval.lmkbc import NUMERIC
    from eval.set_answers import set_answer
    from eval.set_metrics import as_gold
    from eval.set_rules import parse_set_rule

    rule = parse_set_rule(column.set_rule) if column.set_rule else None
    shown = {"set_rule": str(rule) if rule else "all answers"}
    if rule is not None and rule.kind == "threshold-tuned":
        return {**shown, "set": None, "set_note": "threshold-tuned picks each relation's threshold on the train "
                "split, which `kbc run lmkbc` asks first: the explorer shows the ranking only"}
    items = set_answer(pred, explorer.labels, rule, query.relation in NUMERIC)
    gold = {a.id for a in explorer.gold.predict([query], 0)[0].answers}
    named = {a.id: a.label for a in pred.answers if a.id}
    # an answer naming several entities is the gold one it names, as `kbc run lmkbc` scores and submits it
    return {**shown, "set": [{"label": explorer.object_labels.get(y) or named.get(x, x),
                              "id": y if x in named or y in explorer.object_labels or y in gold else None,
                              "gold": y in gold} for x, y in zip(items, as_gold(items, gold))]}


def upper_bound(column: Column, query: Query) -> str | None:
    """Why a column is an upper bound; for a retrieval oracle whose index holds none of the asked fact's own
    evidence, also that it read what the leak-free retrieval reads there."""
    why = UPPER_BOUNDS.get(column.spec)
    held = getattr(getattr(column.predictor, "index", None), "facts_held", None)
    if why is None or held is None or query.relation == "cloze" or held(query.own_facts):
        return why
    return (f"{why}; its index holds no evidence of this fact's own: here it reads what the leak-free retrieval "
            "reads, no upper bound")


def evidence_column(explorer: Explorer, query: Query, gold: set[str], columns: list[dict]) -> dict:
    if explorer.index is None:
        return _column("evidence", "retrieved evidence", NOT_CONFIGURED,
                       "no text index (start with --text-index lama or --text-index PATH)")
    from kb.text.cooccur import Cooccur, mention_of
    from kb.text.retrieval import retrieval_text

    hits = explorer.index.search(retrieval_text(query), EVIDENCE_K)
    objects = list(dict.fromkeys([*sorted(gold), *(c["answers"][0]["label"] for c in columns
                                                   if c["status"] == "ok" and c["answers"])]))[:8]
    phrases = {o: "object" for o in objects}
    if query.known.label:
        phrases[query.known.label] = "subject"
    own = query.own_facts
    paragraphs = [{"id": h.paragraph.pid, "title": h.paragraph.title, "score": round(h.score, 3),
                   "own": not own.isdisjoint(h.paragraph.facts),
                   "segments": marks(h.paragraph.text, phrases)} for h in hits]
    counts = []
    if query.known.label:
        cooccur = Cooccur(explorer.index)
        subject = mention_of(query.known)
        for o in objects:
            c = cooccur.pair(subject, mention_of(Entity(o)))
            counts.append({"subject": query.known.label, "object": o, "gold": o in gold, **c.to_dict()})
    return _column("evidence", "retrieved evidence", "ok", "" if hits else "no paragraph matches",
                   paragraphs=paragraphs, cooccurrence=counts)


def coherency_column(explorer: Explorer, query: Query, gold: set[str]) -> dict:
    name = explorer.cfg.coherency
    if not name:
        return _column("coherency", "coherency round trip", NOT_CONFIGURED,
                       "start with --coherency NAME to ask one predictor there and back")
    if query.relation == "cloze":
        return _column("coherency", name, "not applicable", "a cloze has no subject to ask back for")
    if unasked(query):
        return _column("coherency", name, "not applicable", unasked(query))
    column = next(c for c in explorer.columns if c.name == name)
    if column.error:
        return _column("coherency", name, "error", column.error)
    predictor = column.predictor
    (first,) = list(predictor.predict([query], 1))
    # a predictor answering by generation: each way's exact prompt and raw text, as its own column shows them
    there = {"generated": written} if (written := generation_fields(first.extra or {})) else {}
    if not first.answers:
        return _column("coherency", name, "ok", "no object answer to ask back from", **there)
    obj = first.answers[0]
    if "subject" not in getattr(predictor, "slots", ("object",)):
        return _column("coherency", name, "not applicable", f"{name} does not answer subject queries")
    back = Query(query.uid + "-back", query.fact_uid, query.corpus, query.relation, Entity(obj.label, obj.id),
                 "subject", query.template)
    (second,) = list(predictor.predict([back], 1))
    subject = second.answers[0].label if second.answers else None
    if written := generation_fields(second.extra or {}):
        there["generated_back"] = written
    return _column("coherency", name, "ok", "", object=_answer(obj, gold, first.lowercased),
                   subject_back=subject, asked_subject=query.known.label,
                   coherent=obj.label in gold and subject == query.known.label,
                   round_trip=subject == query.known.label, **there)


def answer(explorer: Explorer, ask: Ask) -> dict:
    """Every side's answers to one (checked) query."""
    return answer_many(explorer, [ask])[0]


def _own(side: str, name: str, make, *args) -> dict:
    """One query's column, or its own error column: a side failing on one query never reaches the others
    answered with it."""
    try:
        return make(*args)
    except Exception as exc:
        if not isinstance(exc, KbcError):
            log.exception("%s failed on one query", name)
        return _column(side, name, "error", str(exc) if isinstance(exc, KbcError) else type(exc).__name__)


def answer_many(explorer: Explorer, asks: list[Ask]) -> list[dict]:
    """Every side's answers to each of several (checked) queries; each predictor is asked once for all."""
    started = time.perf_counter()
    typed = [a.subject for a in asks]
    looked_up = [subject_label(explorer, a.subject) if a.subject else (a.subject, []) for a in asks]
    asks = [replace(a, subject=label) for a, (label, _) in zip(asks, looked_up)]
    queries = [make_query(ask, explorer) for ask in asks]
    firsts = [gold_column(explorer, q) for q in queries]
    golds = [gold for _, gold in firsts]
    # the gold objects as targets: predictors that rank every candidate report their exact rank
    queries = [replace(q, targets=tuple(sorted(g))) if q.relation != "cloze" else q for q, g in zip(queries, golds)]
    by_column = [predictor_columns(explorer, c, queries, [a.k for a in asks], golds) for c in explorer.columns]
    out = []
    for i, (ask, query) in enumerate(zip(asks, queries)):
        gold_col, gold = firsts[i]
        columns = [gold_col, _own("inferred", "inferred graph", inferred_column, explorer, query, gold),
                   *(cols[i] for cols in by_column)]
        relation = explorer.relations.get(query.relation)
        out.append({
            "query": {"subject": ask.subject or None, "relation": ask.relation or None, "cloze": ask.cloze or None,
                      "k": ask.k, "relation_label": relation.label if relation else None,
                      "template": query.template, "prompt": None if unasked(query) else query.text(MASK)},
            "subject": {"label": query.known.label, "id": query.known.id, "typed": typed[i] or None,
                        "in_corpus": query.known.label in explorer.subjects, "suggestions": looked_up[i][1],
                        "ids": [e.id for e in explorer.subjects.get(query.known.label, []) if e.id]},
            "gold": sorted(gold),
            "columns": columns,
            "evidence": _own("evidence", "retrieved evidence", evidence_column, explorer, query, gold, columns),
            "coherency": _own("coherency", explorer.cfg.coherency or "coherency round trip", coherency_column,
                              explorer, query, gold),
            "batch": len(asks),
        })
    seconds = round(time.perf_counter() - started, 4)
    for body in out:
        body["seconds"] = seconds
    return out
