"""Candidate sets and single-token filtering on the real tokenizers (no model weights needed)."""

from __future__ import annotations

from collections import Counter

import pytest
from lm_fixtures import tokenizer_for

from eval.errors import DataError
from lm.vocab import (
    NOT_CANDIDATE,
    NOT_SINGLE_TOKEN,
    AnswerSpace,
    common_vocab_path,
    drop_reason,
    from_words,
    full_vocab,
    read_vocab_file,
    token_labels,
)


@pytest.fixture(scope="module")
def bert_cased():
    return token_labels(tokenizer_for("bert-cased"))


@pytest.fixture(scope="module")
def roberta():
    return token_labels(tokenizer_for("roberta"))


def _filter(corpus, cands, labels):
    reasons = Counter(drop_reason(f.object.label, cands, labels) for f in corpus.facts)
    per_rel = Counter(f.relation for f in corpus.facts if drop_reason(f.object.label, cands, labels))
    return reasons, per_rel


def test_bert_base_cased_common_vocab_keeps_lama_facts(bert_cased, trex, google_re, lama_dir):
    """Survivors for bert-base-cased + the common vocabulary: all facts of the 28 original T-REx files and of
    Google-RE; 26 facts of the reconstructed T-REx relations have objects that are several word pieces."""
    common = from_words(bert_cased, read_vocab_file(common_vocab_path(lama_dir, False)), "common")
    assert len(common) == 21018  # every common-vocabulary word is one bert-base-cased token
    reasons, per_rel = _filter(trex, common, bert_cased)
    assert len(trex.facts) == 34039
    assert reasons == {None: 34013, NOT_SINGLE_TOKEN: 26}
    assert per_rel == {"P30": 16, "P279": 3, "P1376": 2, "P131": 2, "P47": 1, "P276": 1, "P361": 1}
    reasons, per_rel = _filter(google_re, common, bert_cased)
    assert reasons == {None: 5527} and not per_rel


def test_bert_base_uncased_lowercased_vocab(trex, lama_dir):
    labels = token_labels(tokenizer_for("bert-uncased"))
    assert labels.uncased
    common = from_words(labels, read_vocab_file(common_vocab_path(lama_dir, True)), "common")
    assert len(common) == 16842
    reasons, _ = _filter(trex, common, labels)
    # the staged lowercased vocabulary lacks frequent objects ("midfielder", "nbc", "microsoft")
    assert reasons == {None: 24068, NOT_CANDIDATE: 9945, NOT_SINGLE_TOKEN: 26}
    assert drop_reason("Paris", common, labels) is None  # compared lower-cased, as LAMA does for uncased models


def test_roberta_words_are_word_initial_tokens(roberta, trex, lama_dir):
    tok = tokenizer_for("roberta")
    assert roberta.words["Paris"] == tok.convert_tokens_to_ids("ĠParis")
    assert roberta.labels[tok.convert_tokens_to_ids("Paris")] == "_Paris_"  # word-internal piece: never gold
    common = from_words(roberta, read_vocab_file(common_vocab_path(lama_dir, False)), "common")
    assert len(common) == 18137
    reasons, _ = _filter(trex, common, roberta)
    assert reasons == {None: 29521, NOT_SINGLE_TOKEN: 4518}


def test_labels_of_wordpiece_vocab(bert_cased):
    tok = tokenizer_for("bert-cased")
    assert bert_cased.labels[tok.convert_tokens_to_ids("Paris")] == "Paris"
    assert "##s" not in bert_cased.words and bert_cased.labels[tok.convert_tokens_to_ids("##s")] == "##s"
    assert "[MASK]" not in bert_cased.words
    full = full_vocab(bert_cased)
    assert len(full) == 28996 and full.ids == tuple(range(28996))
    assert len(set(full.labels)) == len(full.labels)


def test_from_words_keeps_single_tokens_in_order(bert_cased):
    cands = from_words(bert_cased, ["Rome", "Paris", "Rome", "Wolfgang Amadeus", "Quetzalcoatlus", "##s"], "x")
    assert cands.labels == ("Rome", "Paris")
    assert drop_reason("Paris", cands, bert_cased) is None
    assert drop_reason("London", cands, bert_cased) == NOT_CANDIDATE
    assert drop_reason("Quetzalcoatlus", cands, bert_cased) == NOT_SINGLE_TOKEN
    with pytest.raises(DataError, match="no word that is a single token"):
        from_words(bert_cased, ["Quetzalcoatlus"], "y")


def test_vocab_file_errors(tmp_path, lama_dir):
    with pytest.raises(DataError, match="does not exist"):
        read_vocab_file(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DataError, match="is empty"):
        read_vocab_file(tmp_path / "empty.txt")
    with pytest.raises(DataError, match="common vocabulary"):
        common_vocab_path(tmp_path, False)
    assert common_vocab_path(lama_dir, False) == lama_dir / "common_vocab_cased.txt"
    assert common_vocab_path(lama_dir, True) == lama_dir / "common_vocab_lowercased.txt"


def test_per_relation_answer_space(bert_cased):
    space = AnswerSpace(bert_cased, per_relation={"P36": ["Rome", "Paris", "Rome", "Quetzalcoatlus"], "P1": []})
    assert space.for_relation("P36").labels == ("Rome", "Paris")
    assert len(space.for_relation("P1")) == 0
    assert space.mode == "relation"
    with pytest.raises(ValueError):
        AnswerSpace(bert_cased)
