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


# words whose ids could depend on their neighbours if the text were cut wrongly: accents (NFD in the uncased
# normalizer), a combining mark after a space, CJK (padded with spaces by the normalizer), Greek final sigma
# (lower-cased in context), a word past WordPiece's 100 characters, masks inside words, and the whitespace and
# control characters Python's `str.split` and BERT's normalizer read differently
ODD_TEXTS = ["Zoë Ἀθῆναι ΟΔΥΣΣΕΥΣ ΣΑΣ was [MASK] .", "x[MASK]y and [MASK]. and ([MASK])", "e \u0301 \u0301x",
             "東京都 was born in [MASK] .", "a" * 150 + " is [MASK] .", "tab\tand\nnewline [MASK]",
             "nbsp\u00a0here [MASK]", "unit\x1cseparator [MASK]", "zero\u200bwidth [MASK]", "soft\u00adhyphen [MASK]",
             "  [MASK]  two   spaces  ", "", " ", "[CLS] [SEP] [PAD] [UNK] [mask] [MASK]", "line\u2028sep [MASK]"]


@pytest.mark.parametrize("kind", ["bert-cased", "bert-uncased"])
def test_word_ids_are_the_backends(kind, trex):
    """Ids assembled word by word equal the backend's for T-REx prompts (every fourth of each relation) and for
    texts made to tell them apart, with and without special tokens, on a cold memo and a warm one."""
    from lm.token_ids import WordIds

    tokenizer = tokenizer_for(kind)
    from eval.queries import make_queries

    texts = [q.text("[MASK]") for pairs in make_queries(trex).values() for q, _ in pairs[::4]]
    texts += [t + " " + o for t, o in zip(TEXTS + ODD_TEXTS, reversed(TEXTS + ODD_TEXTS))] + TEXTS + ODD_TEXTS
    words = WordIds.of(tokenizer)
    assert words is not None
    for special in (True, False, True):
        assert words(texts, special) == token_ids(tokenizer, texts, special)
    assert words([]) == []


def test_word_ids_refuse_tokenizers_that_join_words():
    """Byte-level BPE keeps the space inside the next word's token; a mask that strips the space before it
    reaches across words: neither is assembled word by word."""
    from tokenizers import AddedToken

    from lm.token_ids import WordIds

    assert WordIds.of(tokenizer_for("roberta")) is None
    assert WordIds.of(tokenizer_for("gpt2")) is None
    tokenizer = tokenizer_for("bert-cased")
    tokenizer.add_special_tokens({"mask_token": AddedToken("[MASK]", lstrip=True)})
    assert WordIds.of(tokenizer) is None


def test_word_ids_follow_a_truncation_left_on_the_backend():
    from lm.token_ids import WordIds

    tokenizer = tokenizer_for("bert-cased")
    words = WordIds.of(tokenizer)
    want = token_ids(tokenizer, TEXTS, True)
    tokenizer(TEXTS, truncation=True, max_length=4)
    assert words(TEXTS, True) == want


def test_word_ids_start_again_past_their_memo_limit(monkeypatch):
    """A memo that would grow past its limit is emptied first; the call still gives every text's ids."""
    import lm.token_ids
    from lm.token_ids import WordIds

    monkeypatch.setattr(lm.token_ids, "MEMO_LIMIT", 8)
    tokenizer = tokenizer_for("bert-cased")
    words = WordIds.of(tokenizer)
    texts = TEXTS + ODD_TEXTS
    for _ in range(2):
        assert words(texts, True) == token_ids(tokenizer, texts, True)
        assert len(words.memo) <= max(8, len({w for t in texts if t.isprintable() for w in t.split()}))
