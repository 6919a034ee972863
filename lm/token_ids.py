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
