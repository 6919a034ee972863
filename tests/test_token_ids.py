"""Token ids read from a fast tokenizer's backend are the wrapper's, whatever an earlier call left set there."""

from __future__ import annotations

import pytest
from lm_fixtures import tokenizer_for

from lm.token_ids import encodings, token_ids

TEXTS = ["Paris is the capital of France .", "Ἀθῆναι was born in Saint-Denis, Réunion.", "  two  spaces",
         "<|endoftext|> [SEP] <mask> [MASK] marks", "", "de Gaulle served as the head of government for Kosovo."]


@pytest.mark.parametrize("kind", ["bert-cased", "roberta", "gpt2"])
def test_backend_ids_are_the_wrappers(kind):
    tokenizer = tokenizer_for(kind)
    for special in (False, True):
        want = tokenizer(TEXTS, add_special_tokens=special)
        assert token_ids(tokenizer, TEXTS, special) == want["input_ids"]
        got = encodings(tokenizer, TEXTS, special)
        assert [e.special_tokens_mask for e in got] == [e.special_tokens_mask for e in want.encodings]
        assert [e.word_ids for e in got] == [e.word_ids for e in want.encodings]
    assert token_ids(tokenizer, []) == []


def test_an_earlier_truncating_or_padding_call_changes_nothing():
    """The wrapper leaves its truncation and padding set on the backend after the call that asked for them."""
    tokenizer = tokenizer_for("bert-cased")
    want = tokenizer(TEXTS, add_special_tokens=True)["input_ids"]
    tokenizer(TEXTS, truncation=True, max_length=4)
    assert tokenizer.backend_tokenizer.truncation is not None
    assert token_ids(tokenizer, TEXTS, True) == want
    assert [e.ids for e in encodings(tokenizer, TEXTS, True)] == want
    tokenizer(TEXTS, padding="max_length", max_length=40)
    assert tokenizer.backend_tokenizer.padding is not None
    assert token_ids(tokenizer, TEXTS, True) == want
