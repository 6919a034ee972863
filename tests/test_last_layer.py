"""The last encoder layer run only at the scored rows gives the plain forward's numbers, and other architectures
fall back to the plain forward.

The trimmed path (`lm.masked`: keys and values over every token, queries, attention output, feed-forward and head
at the scored row only) is compared with the model's own forward on the tiny BERT and RoBERTa fixtures, on padded
batches of masked copies, down to 1e-5; statement scores (PLL) through both paths agree as closely.
"""

from __future__ import annotations

import pytest
import torch
from lm_fixtures import build_model, tokenizer_for

from lm.masked import MaskedLMScorer
from lm.statement import MaskedStatementScorer, Statement

TEXTS = ("Dante was born in Florence .", "The capital of the old kingdom of Naples is Naples , they say .",
         "Paris", "Marie Curie worked in physics and chemistry at the University of Paris .")


def _scorer(kind: str) -> tuple[MaskedLMScorer, object]:
    tokenizer = tokenizer_for(kind)
    model = build_model(kind, tokenizer).eval()
    return MaskedLMScorer(model, tokenizer, fingerprint=f"tiny-{kind}"), model


def _padded_copies(tokenizer, mask_id: int):
    """Every text with one of its tokens masked, several copies per text, right-padded to one length."""
    enc = tokenizer(list(TEXTS), return_tensors="pt", padding=True)
    ids, attention, pos = [], [], []
    for row in range(len(TEXTS)):
        length = int(enc["attention_mask"][row].sum())
        for p in range(1, length - 1):
            copy = enc["input_ids"][row].clone()
            copy[p] = mask_id
            ids.append(copy)
            attention.append(enc["attention_mask"][row])
            pos.append(p)
    return torch.stack(ids), torch.stack(attention), torch.tensor(pos)


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_trimmed_last_layer_equals_the_plain_forward_on_padded_copies(kind):
    scorer, model = _scorer(kind)
    assert scorer.path == "last-layer+head-at-mask"
    ids, attention, pos = _padded_copies(scorer.tokenizer, scorer.mask_id)
    assert len(ids) == 36 and int(attention.sum(dim=1).min()) < ids.shape[1]  # padded rows among them
    rows = torch.arange(len(ids))
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=attention, output_hidden_states=True)
        plain_hidden = out.hidden_states[-1][rows, pos]
        plain = torch.log_softmax(out.logits[rows, pos].float(), dim=-1)
        hidden = scorer._mask_hidden(ids, attention, pos)
        trimmed = torch.log_softmax(scorer._mask_logits(ids, attention, pos), dim=-1)
    assert hidden.shape == plain_hidden.shape == (36, 32)
    assert float((hidden - plain_hidden).abs().max()) <= 1e-5
    assert float((trimmed - plain).abs().max()) <= 1e-5


@pytest.mark.parametrize("kind", ["bert-cased", "roberta"])
def test_statement_scores_through_the_trimmed_layer_equal_the_plain_forward(kind):
    scorer, _ = _scorer(kind)
    statements = [Statement(t, (0, 0)) for t in TEXTS]
    trimmed = MaskedStatementScorer(scorer, "within_word_l2r").token_scores(statements)
    scorer.encoder = scorer.transform = scorer.trunk = scorer.last_layer = None  # the model's own forward
    plain = MaskedStatementScorer(scorer, "within_word_l2r").token_scores(statements)
    assert [len(r) for r in trimmed] == [len(r) for r in plain]
    assert sum(len(r) for r in trimmed) == 36
    assert max(abs(a - b) for r, s in zip(trimmed, plain) for a, b in zip(r, s)) <= 1e-5


def test_other_architectures_fall_back_to_the_plain_last_layer():
    """DistilBERT's layers are not BERT's (`transformer.layer`, no `encoder`): its head still runs at the mask only,
    but its last layer runs whole, and the scores equal the model's own."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    tokenizer = tokenizer_for("bert-cased")
    torch.manual_seed(0)
    model = DistilBertForMaskedLM(DistilBertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                                   dim=32, n_layers=2, n_heads=2, hidden_dim=48,
                                                   initializer_range=0.2)).eval()
    scorer = MaskedLMScorer(model, tokenizer, fingerprint="tiny-distilbert")
    assert scorer.path == "encoder+head-at-mask" and scorer.trunk is None and scorer.last_layer is None
    ids, attention, pos = _padded_copies(tokenizer, scorer.mask_id)
    rows = torch.arange(len(ids))
    with torch.inference_mode():
        plain = torch.log_softmax(model(input_ids=ids, attention_mask=attention).logits[rows, pos].float(), dim=-1)
        got = torch.log_softmax(scorer._mask_logits(ids, attention, pos), dim=-1)
    assert float((got - plain).abs().max()) <= 1e-5
