"""The masked LM that LAMA-UHN's person-name filter asks, built from a model path or `$KBC_UHN_MODEL`."""

from __future__ import annotations

import os

UHN_MODEL_ENV = "KBC_UHN_MODEL"


def uhn_name_ranker(model: str | None = None, device: str = "cpu", dtype: str = "float32", batch_size: int = 32):
    """The masked LM that LAMA-UHN's person-name filter asks (`eval.uhn.ScorerNameRanker`), or None.

    `model` (a local model directory or hub id), else `$KBC_UHN_MODEL`; with neither, None: the
    `-uhn` corpora then apply the string-match filter only.
    """
    model = model or os.environ.get(UHN_MODEL_ENV) or None
    if not model:
        return None
    from eval.uhn import ScorerNameRanker
    from lm.loading import load
    from lm.masked import MaskedLMScorer
    from lm.vocab import full_vocab, token_labels

    loaded = load(model, "masked", device, dtype)
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, dtype=dtype,
                            batch_size=batch_size)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    return ScorerNameRanker(scorer, full_vocab(labels), labels.uncased, model)
