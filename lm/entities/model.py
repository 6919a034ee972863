"""A masked LM as E-BERT needs it (fast tokenizer, embedding matrix), and LAMA's candidate words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eval.errors import ConfigError

DTYPES = ("float32", "bfloat16")


@dataclass
class MaskedLM:
    name: str
    tokenizer: object
    model: object
    device: str
    fingerprint: str = ""

    @property
    def mask_id(self) -> int:
        return int(self.tokenizer.mask_token_id)

    def input_embeddings(self):
        """The word-piece embedding matrix E_B as a float32 NumPy array (no positions, no segments)."""
        return self.model.get_input_embeddings().weight.detach().float().cpu().numpy()


def load_masked_lm(name_or_path: str, device: str = "cpu", dtype: str = "float32") -> MaskedLM:
    """The LM engine's loader (`lm.loading.load`); E-BERT also needs a fast tokenizer (character offsets)."""
    from lm.loading import load

    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    loaded = load(name_or_path, "masked", device, dtype)
    tokenizer = loaded.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"{name_or_path}: E-BERT needs a fast tokenizer (character offsets of the subject)")
    if tokenizer.mask_token_id is None:
        raise ConfigError(f"{name_or_path}: the tokenizer has no mask token; E-BERT needs a masked LM")
    return MaskedLM(str(name_or_path), tokenizer, loaded.model, loaded.device, loaded.fingerprint)


def token_for_word(tokenizer, word: str) -> int | None:
    """The id of `word` as one whole token in running text, or None (BERT `Paris`, BPE `ĠParis`)."""
    ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        return None
    return int(ids[0])


def candidates(tokenizer, vocab_file: str | Path | None) -> tuple[list[int], list[str], int]:
    """Candidate answer tokens: LAMA's common vocabulary words that are single tokens of the model.

    Returns (token ids, labels, number of vocabulary words that are not single tokens). With no
    vocabulary file every whole-word token of the model is a candidate. The sets are the LM
    engine's (`lm.vocab`), so BERT and E-BERT rank the same candidates.
    """
    from lm.vocab import from_words, read_vocab_file, token_labels

    labels = token_labels(tokenizer)
    if vocab_file is None:
        pairs = sorted((i, w) for w, i in labels.words.items())
        return [i for i, _ in pairs], [w for _, w in pairs], 0
    words = list(dict.fromkeys(read_vocab_file(vocab_file)))
    chosen = from_words(labels, words, str(vocab_file))
    return list(chosen.ids), list(chosen.labels), len(words) - len(chosen)
