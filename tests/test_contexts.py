"""Evidence contexts: gold evidence with the object hidden, retrieved paragraphs, and how masked and
causal LMs read a context with the prompt."""

from __future__ import annotations

import lm_fixtures
import pytest

from eval.contexts import (
    PLACEHOLDER,
    gold_context,
    hide,
    leaks,
    retrieved_context,
    with_gold_contexts,
    with_retrieved_contexts,
)
from eval.errors import ConfigError
from eval.types import Entity, Evidence, Fact, Query

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests
TEMPLATE = "[X] was born in [Y] ."


def _query(label: str, uid: str = "f1", context: str | None = None) -> Query:
    return Query(uid, uid, "trex", "P19", Entity(label), "object", TEMPLATE, context)


def test_hiding_rules():
    text = "Paris, PARIS and paris; Parisian art. Comparison of Paris's parks."
    assert hide(text, ["Paris"]) == "___, ___ and ___; ___ian art. Comparison of ___'s parks."
    # short strings only as whole words: "art" in "party" and "C" in "Cobol" stay
    assert hide("C and C++ on art in a party, Cobol", ["C", "art"]) == "___ and ___++ on ___ in a party, Cobol"
    assert hide("the United States of America and United States", ["United States of America", "United States"]) \
        == "the ___ and ___"
    assert not leaks("___ian", "Paris") and leaks("in paris.", "Paris") and not leaks("Cobol", "C")


def test_gold_context_hides_the_object():
    fact = Fact("f1", "trex", "P19", Entity("Allan Peiper"), Entity("Alexandra"), (
        Evidence("Allan Peiper (born in Alexandra, Victoria, Australia) rode for Alexandra.",
                 "Allan Peiper (born in [MASK], Australia) rode for Alexandra.", "Allan Peiper", "Alexandra, Victoria"),
        Evidence("Peiper grew up in ALEXANDRA.", None),
        Evidence("Allan Peiper (born in Alexandra, Victoria, Australia) rode for Alexandra.",
                 "Allan Peiper (born in [MASK], Australia) rode for Alexandra.", "Allan Peiper", "Alexandra, Victoria"),
    ))
    assert gold_context(fact) == "Allan Peiper (born in ___, Australia) rode for ___."
    assert gold_context(fact, k=None) == ("Allan Peiper (born in ___, Australia) rode for ___. "
                                          "Peiper grew up in ___.")  # duplicates once
    assert gold_context(fact, placeholder="<blank>").count("<blank>") == 2
    assert gold_context(Fact("f2", "trex", "P19", Entity("A"), Entity("B"))) is None
    got = with_gold_contexts([_query("Allan Peiper"), _query("Nobody", "f9")], {"f1": fact})
    assert [q.context for q in got.queries] == [gold_context(fact), None] and got.missing == 1


def test_no_gold_object_survives_in_any_gold_context(trex, google_re):
    seen = 0
    for corpus in (trex, google_re):
        for fact in corpus.facts:
            context = gold_context(fact, k=None)
            if context is None:
                continue
            seen += 1
            assert not leaks(context, fact.object.label), (fact.uid, fact.object.label, context[:300])
            assert "[MASK]" not in context and PLACEHOLDER in context, (fact.uid, context[:300])
    assert seen == 24_895 + 5_527  # every T-REx fact with evidence, every Google-RE fact


class FakeHit:
    def __init__(self, score, text, facts):
        self.score = score
        self.paragraph = type("P", (), {"text": text, "facts": facts})()


class FakeIndex:
    def __init__(self):
        self.asked = []

    def search(self, text, k=10):
        self.asked.append((text, k))
        hits = [FakeHit(3.0, "Dante was born in Florence.", ("f1",)), FakeHit(2.0, "Dante lived in Rome.", ()),
                FakeHit(1.0, "Florence is in Italy.", ())]
        return hits[:k]


def test_retrieved_context():
    index = FakeIndex()
    q = _query("Dante")
    assert retrieved_context(index, q, k=2) == "Dante was born in Florence. Dante lived in Rome."
    assert index.asked == [("Dante was born in .", 2)]
    assert retrieved_context(index, q, k=2, exclude_gold=True) == "Dante lived in Rome. Florence is in Italy."
    got = with_retrieved_contexts([q], index, k=1)
    assert got.queries[0].context == "Dante was born in Florence." and got.missing == 0
    with pytest.raises(ConfigError, match=r"need a text index: build one with `kbc index build`"):
        retrieved_context(None, q)


def test_retrieved_context_from_a_tantivy_index(tmp_path):
    from kb.text.index import build_index
    from kb.text.paragraphs import Paragraph

    rows = [("Dante was born in Florence", ("f1",)), ("Petrarch was born in Arezzo", ())]
    index = build_index([Paragraph(f"p#{i}", "p", i, t, (), f) for i, (t, f) in enumerate(rows)], "tantivy",
                        tmp_path / "ix")
    assert retrieved_context(index, _query("Dante"), k=1) == "Dante was born in Florence"
    assert retrieved_context(index, _query("Dante"), k=1, exclude_gold=True) == "Petrarch was born in Arezzo"


def _masked(path, max_length=None, compat=None):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, full_vocab, token_labels

    loaded = load(str(path), "masked", "cpu", "float32")
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, max_length=max_length,
                            compat=compat)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    return MaskedLMPredictor(str(path), scorer, AnswerSpace(labels, fixed=full_vocab(labels))), loaded.tokenizer


def test_masked_lm_reads_context_sep_prompt_and_cuts_only_the_context(tiny_models):
    pred, tok = _masked(tiny_models("bert-cased"), max_length=64)
    prompt = "Dante Alighieri was born in [MASK] ."
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    short = _query("Dante Alighieri", context="He was born in ___ in 1265.")
    (ids,) = pred.scorer.encode([pred.model_input(short)])
    assert ids == tok("He was born in ___ in 1265.", prompt)["input_ids"]  # [CLS] c [SEP] p [SEP]
    assert ids.count(tok.sep_token_id) == 2
    long = _query("Dante Alighieri", context="Florence is a city in Tuscany and a very old one . " * 40)
    (ids,) = pred.scorer.encode([pred.model_input(long)])
    assert len(ids) == 64 and ids[-len(p_ids) - 2:] == [tok.sep_token_id, *p_ids, tok.sep_token_id]
    assert ids[0] == tok.cls_token_id and ids.count(tok.mask_token_id) == 1
    (p,) = pred.predict([long], 3)
    assert p.extra["n_tokens"] == 64 and len(p.answers) == 3
    plain = pred.predict([_query("Dante Alighieri")], 3)[0]
    assert plain.extra["n_tokens"] == len(p_ids) + 2 and plain.answers != p.answers
    # a mask token inside the context never becomes a second mask
    (ids,) = pred.scorer.encode([("a [MASK] in the text", prompt)])
    assert ids.count(tok.mask_token_id) == 1
    # LAMA's tokenization (--compat lama) builds the same pair
    lama, _ = _masked(tiny_models("bert-cased"), max_length=64, compat="lama")
    (ids,) = lama.scorer.encode([lama.model_input(long)])
    assert len(ids) == 64 and ids[-len(p_ids) - 2:] == [tok.sep_token_id, *p_ids, tok.sep_token_id]


def test_roberta_reads_its_own_pair_format(tiny_models):
    pred, tok = _masked(tiny_models("roberta"))
    q = _query("Dante", context="Florence.")
    (ids,) = pred.scorer.encode([pred.model_input(q)])
    c = tok("Florence.", add_special_tokens=False)["input_ids"]
    p = tok("Dante was born in <mask> .", add_special_tokens=False)["input_ids"]
    assert ids == [tok.cls_token_id, *c, tok.sep_token_id, tok.sep_token_id, *p, tok.sep_token_id]


def test_causal_lm_reads_the_context_first(tiny_models):
    from lm.causal import CausalLMScorer, CausalTypedPredictor
    from lm.loading import load

    loaded = load(str(tiny_models("gpt2")), "causal", "cpu", "float32")
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint="tiny")
    pred = CausalTypedPredictor("gpt2", scorer, {"P19": ["Florence", "Rome"]}, "test")
    q = _query("Dante", context="He was born in ___.")
    assert pred.sentence(q, "Rome") == "He was born in ___. Dante was born in Rome ."
    assert pred.sentence(_query("Dante"), "Rome") == "Dante was born in Rome ."
    (p,) = pred.predict([q], 2)
    assert sorted(a.label for a in p.answers) == ["Florence", "Rome"]


class OwnFirstIndex:
    """An index whose first 40 hits are the fact's own paragraphs, then 10 others."""

    def __init__(self):
        self.asked = []

    def search(self, text, k=10):
        self.asked.append(k)
        hits = [FakeHit(100.0 - i, f"own {i}", ("f1",)) for i in range(40)]
        hits += [FakeHit(50.0 - i, f"other {i}", ()) for i in range(10)]
        return hits[:k]


def test_retrieved_paragraphs_fetch_more_until_k_beside_the_facts_own():
    from eval.contexts import retrieved_paragraphs

    index = OwnFirstIndex()
    assert retrieved_paragraphs(index, _query("Dante"), 5, exclude_gold=True) == [f"other {i}" for i in range(5)]
    assert index.asked == [25, 100]  # 3K+10 held only own paragraphs
    index.asked.clear()
    assert retrieved_paragraphs(index, _query("Dante"), 20, exclude_gold=True) == [f"other {i}" for i in range(10)]
    assert index.asked == [70]  # the index has no more: 10 paragraphs, fewer than K
