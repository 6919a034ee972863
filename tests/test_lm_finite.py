"""Non-finite scores are an error naming the model (every input) or the fact (some inputs), never a rank.

A model whose weights hold NaN once gave every gold object rank 1 (MRR 1.0 with P@1 0) and wrote bare
`NaN` into prediction files. The models here are the tiny ones of `lm_fixtures` with one weight set to NaN:
a layer norm (every input) or one token's embedding row (only inputs holding that token).
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import lm_fixtures
import pytest
from lm_fixtures import tiny_t5_dir
from test_model_checks import run_lm

from eval.errors import KbcError
from eval.types import Entity, Query

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def poisoned(src: Path, dest: Path, kind: str, param: str, row: int | None = None) -> Path:
    """A copy of the model folder `src` whose parameter `param` (or one row of it) is NaN."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    auto = {"masked": AutoModelForMaskedLM, "causal": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}[kind]
    shutil.copytree(src, dest)
    model = auto.from_pretrained(src)
    with torch.no_grad():
        weight = model.get_parameter(param)
        (weight if row is None else weight[row]).fill_(float("nan"))
    model.save_pretrained(dest)
    return dest


def _query(uid: str, subject: str, template: str = "[X] was born in [Y] .") -> Query:
    return Query(uid, uid, "trex", "P19", Entity(subject), "object", template, targets=("Rome",))


def test_a_masked_lm_with_nan_weights_is_refused_in_one_line(tiny_models, tmp_path, lama_dir, capsys, monkeypatch):
    model = poisoned(tiny_models("bert-cased"), tmp_path / "nan-bert", "masked", "bert.embeddings.LayerNorm.weight")
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2
    assert errors == [f"error: {model}: the model gives non-finite scores (NaN or infinity) for every input it was "
                      "tried on; its weights hold NaN or infinity, or overflow in this dtype, so it cannot be scored "
                      "(check the checkpoint, or use --dtype float32)"]
    assert not list((tmp_path / "out").rglob("*.jsonl"))


def nan_at_token(embeddings, token_id: int) -> None:
    """Input embeddings of `token_id` become NaN (as a NaN row of an untied embedding matrix would)."""
    def hook(module, args, output):
        return output.masked_fill((args[0] == token_id).unsqueeze(-1), float("nan"))

    embeddings.register_forward_hook(hook)


def test_a_masked_lm_nan_on_one_prompt_names_the_fact(tiny_models):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, full_vocab, token_labels

    path = str(tiny_models("bert-cased"))
    loaded = load(path, "masked")
    nan_at_token(loaded.model.get_input_embeddings(), loaded.tokenizer.convert_tokens_to_ids("Dante"))
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, batch_size=1)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    pred = MaskedLMPredictor(path, scorer, AnswerSpace(labels, fixed=full_vocab(labels)))
    assert pred.predict([_query("f1", "Petrarch")], 5)[0].target_ranks["Rome"] > 1  # a prompt without Dante is fine
    with pytest.raises(KbcError) as exc:
        pred.predict([_query("f1", "Petrarch"), _query("f2", "Dante"), _query("f3", "Boccaccio")], 5)
    assert str(exc.value) == (f"{path}: non-finite score (NaN or infinity) for fact f2 (P19) (1 of 1 inputs scored "
                              "together); no rank can be given to it (check the checkpoint, or use --dtype float32)")


def test_a_causal_lm_with_nan_weights_is_refused_in_one_line(tiny_models, tmp_path, lama_dir, capsys, monkeypatch):
    model = poisoned(tiny_models("gpt2"), tmp_path / "nan-gpt2", "causal", "transformer.ln_f.weight")
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2
    assert errors == [f"error: {model}: the model gives non-finite scores (NaN or infinity) for every input it was "
                      "tried on; its weights hold NaN or infinity, or overflow in this dtype, so it cannot be scored "
                      "(check the checkpoint, or use --dtype float32)"]
    assert not list((tmp_path / "out").rglob("*.jsonl"))


def test_a_causal_lm_nan_on_one_sentence_names_the_fact(tiny_models):
    from lm.causal import CausalLMScorer, CausalTypedPredictor
    from lm.loading import load

    path = str(tiny_models("gpt2"))
    loaded = load(path, "causal")
    (token,) = loaded.tokenizer(" Dante", add_special_tokens=False)["input_ids"]
    nan_at_token(loaded.model.get_input_embeddings(), token)
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, batch_size=1)
    assert scorer.shared_prefix  # the check sentences hold no Dante: the model is usable
    scorer.shared_prefix = False  # one sentence per pass: no other sentence shares the NaN
    pred = CausalTypedPredictor(path, scorer, {"P19": ["Rome", "Paris"]}, "test")
    with pytest.raises(KbcError) as exc:
        pred.predict([_query("f1", "Petrarch"), _query("f2", "The poet Dante"), _query("f3", "Boccaccio")], 5)
    assert str(exc.value) == (f"{path}: non-finite score (NaN or infinity) for fact f2 (P19) (2 of 6 inputs scored "
                              "together); no rank can be given to it (check the checkpoint, or use --dtype float32)")


def test_a_seq2seq_lm_with_nan_weights_is_refused(tmp_path):
    from lm.loading import load
    from lm.seq2seq import Seq2SeqSpanPredictor

    model = poisoned(tiny_t5_dir(tmp_path), tmp_path / "nan-t5", "seq2seq", "encoder.final_layer_norm.weight")
    loaded = load(str(model), "seq2seq")
    pred = Seq2SeqSpanPredictor(str(model), loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, beams=2,
                                max_new_tokens=3)
    with pytest.raises(KbcError) as exc:
        pred.predict([_query("f1", "Dante"), _query("f2", "Petrarch")], 5)
    assert str(exc.value) == (f"{model}: the model gives non-finite scores (NaN or infinity) for every input it was "
                              "tried on; its weights hold NaN or infinity, or overflow in this dtype, so it cannot be "
                              "scored (check the checkpoint, or use --dtype float32)")
    with pytest.raises(KbcError) as exc:
        pred.predict([_query("f3", "Boccaccio")], 5)
    assert str(exc.value) == (f"{model}: non-finite score (NaN or infinity) for fact f3 (P19) (1 of 1 inputs scored "
                              "together); no rank can be given to it (check the checkpoint, or use --dtype float32)")


def test_records_are_never_written_with_bare_nan():
    from eval.jsonl import write_jsonl_line

    handle = io.StringIO()
    write_jsonl_line(handle, {"uid": "f1", "answers": [["Rome", -1.5]]})
    with pytest.raises(KbcError) as exc:
        write_jsonl_line(handle, {"uid": "f2", "answers": [["Rome", float("nan")]]})
    assert str(exc.value) == "cannot write a record holding NaN or infinity (uid 'f2'); it is not JSON"
    assert [json.loads(line) for line in handle.getvalue().splitlines()] == [{"uid": "f1", "answers": [["Rome", -1.5]]}]
