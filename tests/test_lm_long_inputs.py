"""Inputs longer than a causal LM's positions: the context is cut from its end to fit (as masked LMs cut
theirs), and a template that cannot fit on its own is refused in one line naming it; never an IndexError."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from lm_fixtures import tokenizer_for

from eval.errors import DataError
from eval.types import Entity, Query

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def _query(context: str | None = None, template: str = "[X] was born in [Y] .") -> Query:
    return Query("f1", "f1", "trex", "P19", Entity("Dante"), "object", template, context=context, targets=("Rome",))


@pytest.fixture(scope="module")
def gpt2(tiny_models):
    from lm.loading import load

    return load(str(tiny_models("gpt2")), "causal")  # 256 positions


@pytest.mark.parametrize("shared_prefix", [True, False])
def test_a_long_context_is_cut_from_its_end_to_fit(gpt2, shared_prefix):
    from lm.causal import CausalLMScorer, CausalTypedPredictor

    scorer = CausalLMScorer(gpt2.model, gpt2.tokenizer, fingerprint="tiny", shared_prefix=shared_prefix)
    assert scorer.max_positions == 256
    pred = CausalTypedPredictor("gpt2", scorer, {"P19": ["Rome", "Ulaanbaatar Province"]}, "test")
    query = _query(" ".join(f"w{i}" for i in range(400)))
    sentences = pred.sentences(query)
    assert [len(row) for row in scorer.encode(sentences)] == [249, 254]  # BOS + cut context + prompt, <= 256
    kept = sentences[1].removesuffix(" Dante was born in Ulaanbaatar Province .")
    assert kept == " ".join(f"w{i}" for i in range(121))  # the context's beginning: its end is cut
    assert sentences[0] == f"{kept} Dante was born in Rome ."
    got = pred.predict([query], 5)[0]
    whole = dict(zip(["Rome", "Ulaanbaatar Province"], [s for s, _ in scorer.loglik(sentences)]))
    assert [a.label for a in got.answers] == sorted(whole, key=lambda label: -whole[label])
    assert [a.score for a in got.answers] == pytest.approx([whole[a.label] for a in got.answers], rel=1e-6)
    assert pred.sentences(_query("a short context")) == ["a short context Dante was born in Rome .",
                                                         "a short context Dante was born in Ulaanbaatar Province ."]


def test_a_template_longer_than_the_positions_is_refused(gpt2):
    from lm.causal import CausalLMScorer, CausalTypedPredictor

    scorer = CausalLMScorer(gpt2.model, gpt2.tokenizer, fingerprint="tiny", name="/models/tiny-gpt2")
    pred = CausalTypedPredictor("/models/tiny-gpt2", scorer, {"P19": ["Rome"]}, "test")
    template = "[X] " + "very " * 1100 + "[Y] ."
    with pytest.raises(DataError) as exc:
        pred.predict([_query("some context", template)], 5)
    assert str(exc.value) == ("/models/tiny-gpt2: template '[X] very very very very very very very very very very "
                              "very v'... (5,509 characters) of P19 cannot fit the model's 256 positions: with 'Dante' "
                              "and candidate 'Rome' it is 1,105 tokens; shorten the template")


def short_gpt2(root: Path, positions: int = 24) -> Path:
    """A tiny GPT-2 with only `positions` positions, saved with the real tokenizer."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    out = root / f"gpt2-{positions}"
    tokenizer = tokenizer_for("gpt2")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=positions,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    GPT2LMHeadModel(config).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _run(model: Path, tmp_path: Path, data: Path, capsys, monkeypatch, *extra: str) -> tuple[int, list[str]]:
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--predictors",
                            f"lm={model}", *extra, "--data-dir", str(data), "--out", str(tmp_path / "out"),
                            "--store", str(tmp_path / "store"), "--quiet"], capsys)
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.startswith("error:")]


def test_run_with_gold_context_on_a_short_causal_lm(tmp_path, lama_dir, capsys, monkeypatch):
    model = short_gpt2(tmp_path)
    code, errors = _run(model, tmp_path, lama_dir, capsys, monkeypatch, "--context", "gold")
    assert (code, errors) == (0, [])
    records = [json.loads(line) for line in (tmp_path / "out" / "predictions" / "trex" / "lm" / "P19.jsonl").open()]
    assert len(records) == 5 and all(isinstance(r["rank_exact_raw"], int) for r in records)


def test_run_with_a_template_longer_than_the_positions(tmp_path, lama_dir, capsys, monkeypatch):
    model = short_gpt2(tmp_path)
    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    shutil.copy(lama_dir / "TREx" / "P19.jsonl", data / "TREx" / "P19.jsonl")
    row = {"relation": "P19", "template": "[X] was born , as everybody who knows him will tell you , in [Y] .",
           "label": "place of birth", "type": "N-1"}
    (data / "relations.jsonl").write_text(json.dumps(row) + "\n")
    code, errors = _run(model, tmp_path, data, capsys, monkeypatch)
    assert code == 2 and len(errors) == 1
    assert errors[0].startswith(f"error: {model}: template '[X] was born , as everybody who knows him will tell you , "
                                "in [Y] .' of P19 cannot fit the model's 24 positions: with ")
