"""Many texts tokenized in one call to a fast tokenizer's backend.

`tokenizer(texts)` converts every encoding into Python lists and dicts one text at a time, which costs more
than the tokenization itself (tens of microseconds a text: on a GPU, more than the model's time for it). The
backend's own encodings hold the same ids, special-token masks, word ids and character offsets. The backend
keeps the truncation and padding of the wrapper's last call that set them; where any is set, the wrapper is
asked instead, so the ids never depend on an earlier call.
"""

from __future__ import annotations

from collections.abc import Sequence


def encodings(tokenizer, texts: Sequence[str], add_special_tokens: bool) -> list:
    """`tokenizers.Encoding` of each text (a fast tokenizer's): ids, special_tokens_mask, word_ids, char_to_token."""
    backend = tokenizer.backend_tokenizer
    if backend.truncation is None and backend.padding is None:
        return backend.encode_batch(list(texts), add_special_tokens=add_special_tokens)
    return tokenizer(list(texts), add_special_tokens=add_special_tokens).encodings


def token_ids(tokenizer, texts: Sequence[str], add_special_tokens: bool = False) -> list[list[int]]:
    """Token ids of each text, as `tokenizer(texts)["input_ids"]` gives them."""
    if not texts:
        return []
    if getattr(tokenizer, "is_fast", False):
        backend = tokenizer.backend_tokenizer
        fast = getattr(backend, "encode_batch_fast", None)  # ids without character offsets (tokenizers >= 0.21)
        if fast is not None and backend.truncation is None and backend.padding is None:
            return [e.ids for e in fast(list(texts), add_special_tokens=add_special_tokens)]
        return [e.ids for e in encodings(tokenizer, texts, add_special_tokens)]
    return tokenizer(list(texts), add_special_tokens=add_special_tokens, return_attention_mask=False)["input_ids"]


BERT_PARTS = ["BertNormalizer", "BertPreTokenizer", "WordPiece", "TemplateProcessing"]  # what `WordIds` takes
MEMO_LIMIT = 1 << 20  # words kept by `WordIds` before its memo starts again: a server's runs add words without end


class WordIds:
    """`token_ids` of BERT-style tokenizers, each distinct space-separated word asked of the backend once.

    A WordPiece tokenizer with BERT's normalizer and pre-tokenizer cuts text at whitespace before anything joins
    characters, so a text's ids are its words' ids one after the other between the special tokens. Prompts share
    most of their words (the template's): a run asks the backend for each new word once, in one call per batch.
    Texts holding any whitespace but the ASCII space, or a control or format character (which BERT's normalizer
    drops, joining what Python's `str.split` would cut), go to the backend whole; so does everything while the
    backend holds a truncation or padding setting. `of` gives None for other tokenizers."""

    def __init__(self, tokenizer, prefix: list[int], suffix: list[int]) -> None:
        self.tokenizer = tokenizer
        self.backend = tokenizer.backend_tokenizer
        self.prefix, self.suffix = prefix, suffix
        self.memo: dict[str, list[int]] = {}

    @classmethod
    def of(cls, tokenizer) -> WordIds | None:
        """A `WordIds` for a fast BERT-style tokenizer whose added tokens hold no space and match as written
        (no stripping of the spaces around them, no whole-word rule); None otherwise."""
        backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
        if backend is None or backend.truncation is not None or backend.padding is not None:
            return None
        parts = (backend.normalizer, backend.pre_tokenizer, backend.model, backend.post_processor)
        if [type(p).__name__ for p in parts] != BERT_PARTS:
            return None
        for token in backend.get_added_tokens_decoder().values():
            if token.lstrip or token.rstrip or token.single_word or any(c.isspace() for c in token.content):
                return None
        bare = backend.encode("a", add_special_tokens=False).ids
        whole = backend.encode("a", add_special_tokens=True).ids
        empty = backend.encode("", add_special_tokens=True).ids
        at = next((i for i in range(len(whole)) if whole[i:i + len(bare)] == bare), None)
        if not bare or at is None or whole[:at] + whole[at + len(bare):] != empty:
            return None  # the special tokens do not simply surround the text
        return cls(tokenizer, whole[:at], whole[at + len(bare):])

    def __call__(self, texts: Sequence[str], add_special_tokens: bool = False) -> list[list[int]]:
        """Token ids of each text, as `token_ids(tokenizer, texts, add_special_tokens)` gives them."""
        if self.backend.truncation is not None or self.backend.padding is not None:
            return token_ids(self.tokenizer, texts, add_special_tokens)
        memo = self.memo
        plain = [t.isprintable() for t in texts]  # only the ASCII space separates its words
        new = list(dict.fromkeys(w for t, ok in zip(texts, plain) if ok for w in t.split() if w not in memo))
        if len(memo) + len(new) > MEMO_LIMIT:
            memo.clear()
            new = list(dict.fromkeys(w for t, ok in zip(texts, plain) if ok for w in t.split()))
        if new:
            memo.update(zip(new, token_ids(self.tokenizer, new)))
        odd = [t for t, ok in zip(texts, plain) if not ok]
        whole = iter(token_ids(self.tokenizer, odd, add_special_tokens) if odd else ())
        prefix, suffix = (self.prefix, self.suffix) if add_special_tokens else ([], [])
        out: list[list[int]] = []
        for text, ok in zip(texts, plain):
            if not ok:
                out.append(next(whole))
                continue
            row = prefix.copy()
            for word in text.split():
                row += memo[word]
            row += suffix
            out.append(row)
        return out
