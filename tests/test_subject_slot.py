"""The subject slot ("[MASK] was born in Florence .") for every predictor that can answer it."""

from __future__ import annotations

import lm_fixtures
import pytest

from bridge.predictors.registry import PredictorContext
from eval.lama import Corpus
from eval.queries import make_queries
from eval.types import Entity, Fact, Query, Relation

tiny_models = lm_fixtures.tiny_models

DANTE, HOMER, VIRGIL = Entity("Dante", "Q1"), Entity("Homer", "Q2"), Entity("Virgil", "Q3")
FLORENCE, ROME, PARIS = Entity("Florence", "Q10"), Entity("Rome", "Q11"), Entity("Paris", "Q12")
P19 = Relation("P19", "place of birth", "[X] was born in [Y] .", "N-1")
FACTS = [Fact("a", "toy", "P19", DANTE, FLORENCE), Fact("b", "toy", "P19", HOMER, ROME),
         Fact("c", "toy", "P19", VIRGIL, FLORENCE), Fact("d", "toy", "P19", DANTE, PARIS),
         Fact("e", "toy", "P19", HOMER, FLORENCE)]
CORPUS = Corpus("toy", {"P19": P19}, FACTS)


def ask(known: Entity, slot: str, uid: str = "q") -> Query:
    return Query(uid, uid, "toy", "P19", known, slot, P19.template)


def labels(prediction) -> list[str]:
    return [a.label for a in prediction.answers]


def test_queries_for_the_subject_slot():
    pairs = make_queries(CORPUS, slot="subject")["P19"]
    assert [q.text("[MASK]") for q, _ in pairs[:2]] == ["[MASK] was born in Florence .", "[MASK] was born in Rome ."]


def test_freq_ranks_the_relations_subjects():
    from kb.freq import FreqPredictor

    freq = FreqPredictor(FACTS)
    sub, obj = freq.predict([ask(FLORENCE, "subject"), ask(DANTE, "object")], 10)
    assert [(a.label, a.score, a.id) for a in sub.answers] == [("Dante", 2.0, "Q1"), ("Homer", 2.0, "Q2"),
                                                               ("Virgil", 1.0, "Q3")]  # ties: first seen
    assert labels(obj) == ["Florence", "Rome", "Paris"]
    assert freq.answer_space_size("P19", "subject") == 3 and freq.slots == ("object", "subject")


def test_freq_drops_squad_questions_but_keeps_conceptnet_relations():
    """SQuAD's questions share one placeholder relation; ConceptNet's clozes have relations (LAMA gives Freq there)."""
    from kb.freq import NO_RELATION, FreqPredictor

    squad = Fact("s", "squad", "squad", Entity("Squad"), Entity("y"), cloze="[Y] is here")
    concept = Fact("c", "conceptnet", "IsA", Entity("cat"), Entity("animal"), cloze="A cat is an [Y] .")
    freq = FreqPredictor([*FACTS, squad, concept])
    for slot in freq.slots:
        assert freq.filter_facts([*FACTS, squad, concept], slot) == ([*FACTS, concept], {NO_RELATION: 1})
    assert freq.filter_facts(FACTS) == (FACTS, {})


def test_gold_reads_the_runners_graphs(tmp_path):
    from bridge.predictors.kb import make_gold
    from bridge.run.runner import _valid_objects
    from eval.lama import relation_versions
    from kb.gold import NO_GRAPH, NO_KB, NO_SUBJECT
    from kb.store import GraphStore

    with GraphStore.open(None) as store:
        ctx = PredictorContext(CORPUS, store, tmp_path, tmp_path)
        gold = make_gold("gold", ctx)
        assert gold.graphs == {"P19": "gold-toy-P19"}
        # the graph of the relation's data version, already loaded: nothing is written again
        assert store.sync_corpus("toy-P19", relation_versions(CORPUS)["P19"], FACTS) == ("gold-toy-P19", False)
        # the runner's filter, computed from the facts, is what that graph answers
        assert _valid_objects(CORPUS) == {"P19": store.valid_objects("P19", "gold-toy-P19")}
        assert _valid_objects(CORPUS)["P19"]["Q1"] == {"Florence", "Paris"}
        got = gold.predict([ask(FLORENCE, "subject"), ask(DANTE, "object"), ask(PARIS, "subject"),
                            ask(Entity("Florence"), "subject"), ask(Entity("Oslo", "Q99"), "subject"),
                            ask(Entity("Florence"), "object")], 10)
        assert [[(a.label, a.score, a.id) for a in p.answers] for p in got[:2]] == [
            [("Dante", 1.0, "Q1"), ("Homer", 1.0, "Q2"), ("Virgil", 1.0, "Q3")],
            [("Florence", 1.0, "Q10"), ("Paris", 1.0, "Q12")]]
        assert labels(got[2]) == ["Dante"]
        assert labels(got[3]) == ["Dante", "Homer", "Virgil"]  # an id-less answer fed back: by label
        assert labels(got[4]) == [] and labels(got[5]) == []
        assert labels(gold.predict([ask(FLORENCE, "subject")], 2)[0]) == ["Dante", "Homer"]
        assert gold.describe()["slots"] == ["object", "subject"]
        cloze = Fact("s", "squad", "squad", Entity("x"), Entity("y"), cloze="[Y] is here")
        squad = make_gold("gold", PredictorContext(Corpus("squad", {"squad": P19}, [cloze]), store, tmp_path,
                                                   tmp_path))
        assert squad.filter_facts([cloze]) == ([], {NO_SUBJECT: 1})
        # ConceptNet's clozes have subjects, but no gold graph holds them: dropped all the same, for that reason
        concept = Fact("c", "conceptnet", "IsA", Entity("cat"), Entity("animal"), cloze="A cat is an [Y] .")
        assert squad.filter_facts([concept, cloze]) == ([], {NO_KB: 1, NO_SUBJECT: 1})
        unloaded = Fact("u", "trex", "P36", Entity("x", "Q1"), Entity("y", "Q2"))
        assert gold.filter_facts([unloaded]) == ([], {NO_GRAPH: 1})


def test_extracted_kb_answers_subjects_by_sparql():
    from kb.extraction.kb_build import write_graph
    from kb.extraction.linking import ScoredTriple
    from kb.extraction.predictor import ExtractedKBPredictor
    from kb.store import GraphStore

    triples = [ScoredTriple(DANTE, "P19", FLORENCE, 0.9), ScoredTriple(VIRGIL, "P19", FLORENCE, 0.95),
               ScoredTriple(HOMER, "P19", ROME, 0.5), ScoredTriple(DANTE, "P19", ROME, 0.3)]
    with GraphStore.open(None) as store:
        write_graph(store, "re-test", triples, progress=False)
        kb = ExtractedKBPredictor("re", store, "re-test")
        got = kb.predict([ask(FLORENCE, "subject"), ask(ROME, "subject"), ask(Entity("Rome"), "subject"),
                          ask(DANTE, "object"), ask(PARIS, "subject")], 10)
    assert [[(a.label, a.score) for a in p.answers] for p in got] == [
        [("Virgil", 0.95), ("Dante", 0.9)], [("Homer", 0.5), ("Dante", 0.3)],
        [("Homer", 0.5), ("Dante", 0.3)], [("Florence", 0.9), ("Rome", 0.3)], []]
    assert got[0].answers[0].id == "Q3" and kb.slots == ("object", "subject")


def test_masked_lm_puts_the_mask_at_the_subject(tiny_models, tmp_path, lama_dir):
    import torch

    from bridge.predictors.lm import make_masked
    from lm.vocab import NOT_SINGLE_TOKEN

    path = str(tiny_models("bert-cased"))
    facts = FACTS + [Fact("f", "toy", "P19", Entity("Ulaanbaatar Province"), PARIS)]
    corpus = Corpus("toy", {"P19": P19}, facts)
    ctx = PredictorContext(corpus, None, tmp_path, lama_dir, options={"candidates": "relation", "cache": "off"})
    pred = make_masked(path, ctx)
    kept, dropped = pred.filter_facts(facts, slot="subject")
    assert kept == FACTS and dropped == {NOT_SINGLE_TOKEN.replace("object", "subject"): 1}
    assert pred.filter_facts(facts)[0] == facts  # every object is one token
    assert pred.answer_space_size("P19", "subject") == 3 and pred.answer_space_size("P19") == 3
    q = Query("q", "e", "toy", "P19", FLORENCE, "subject", P19.template, targets=("Homer",))
    (p,) = pred.predict([q], 10)
    assert sorted(labels(p)) == ["Dante", "Homer", "Virgil"]
    tok, model = pred.scorer.tokenizer, pred.scorer.model
    enc = tok("[MASK] was born in Florence .", return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits[0, 1]  # [CLS] [MASK] ...
    logp = torch.log_softmax(logits.float(), dim=-1)
    for a in p.answers:
        assert abs(a.score - float(logp[tok.convert_tokens_to_ids(a.label)])) < 1e-4
    assert p.target_ranks == {"Homer": labels(p).index("Homer") + 1}
    assert "gold_logprob" in p.extra  # the subject's own log-prob, learnt from filter_facts(slot="subject")
    # a fixed vocabulary (common, full, file) serves both slots
    from lm.masked import MaskedLMPredictor

    assert MaskedLMPredictor("m", pred.scorer, pred.space).spaces["subject"] is pred.space


def test_causal_factory_ranks_subjects_with_extended_templates(tiny_models, tmp_path, shared_data):
    from bridge.predictors.lm import make_causal

    ctx = PredictorContext(CORPUS, None, tmp_path, shared_data / "lama",
                           options={"cache": "off", "prompt": "extended"})
    pred = make_causal(str(tiny_models("gpt2")), ctx)
    assert pred.by_slot["subject"] == {"P19": ["Dante", "Homer", "Virgil"]}
    assert pred.sentence(ask(FLORENCE, "subject"), "Dante") == "Florence is the birth place of Dante"
    (p,) = pred.predict([ask(FLORENCE, "subject")], 10)
    assert sorted(labels(p)) == ["Dante", "Homer", "Virgil"]
    kept, dropped = pred.filter_facts([Fact("z", "toy", "P19", Entity("Ovid"), FLORENCE)], slot="subject")
    assert kept == [] and dropped == {"subject is not in the candidate set": 1}
    assert pred.describe()["prompt"] == "extended" and pred.describe()["lama_templates"] == []


def test_predictors_say_which_slots_they_answer():
    from eval.coherency import unsupported_slot
    from kb.text.retrieval import RetrievalPredictor

    assert unsupported_slot(RetrievalPredictor, "subject") == "predictor does not answer the subject slot"
    assert unsupported_slot(RetrievalPredictor, "object") is None


@pytest.mark.parametrize("module, cls", [("kb.freq", "FreqPredictor"), ("kb.gold", "GoldKBPredictor"),
                                         ("kb.extraction.predictor", "ExtractedKBPredictor"),
                                         ("lm.masked", "MaskedLMPredictor"), ("lm.causal", "CausalTypedPredictor"),
                                         ("lm.seq2seq", "Seq2SeqSpanPredictor")])
def test_slot_declarations(module, cls):
    import importlib

    assert getattr(importlib.import_module(module), cls).slots == ("object", "subject")
