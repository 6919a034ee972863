"""Seq2seq statement scores equal the decoder's own loss on each statement, run one by one."""

from __future__ import annotations

import pytest
from lm_fixtures import tiny_t5_dir

from lm.statement import Seq2SeqStatementScorer, fill


def test_seq2seq_statement_scores_match_the_models_loss(tmp_path):
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    path = tiny_t5_dir(tmp_path)
    model = T5ForConditionalGeneration.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    answers = ["Asia", "Europe", "North America"]
    statements = [fill("[X] is located in [Y].", "Mount Tai", a) for a in answers]
    scorer = Seq2SeqStatementScorer(model, tokenizer, batch_size=2)
    got_sum = scorer.score(statements, "sum")
    got_mean = scorer.score(statements, "mean")
    source = tokenizer([""], return_tensors="pt")["input_ids"]
    for s, total, mean in zip(statements, got_sum, got_mean):
        labels = torch.tensor([tokenizer(s.text, add_special_tokens=False)["input_ids"]])
        with torch.inference_mode():
            loss = float(model(input_ids=source, labels=labels).loss)  # mean negative log-likelihood per token
        assert total == pytest.approx(-loss * labels.shape[1], abs=1e-4)
        assert mean == pytest.approx(-loss, abs=1e-5)
    assert len(set(got_sum)) == len(answers)
