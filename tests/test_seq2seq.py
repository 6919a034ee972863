"""T5 span filling: a tiny random T5 with ByT5's byte tokenizer, the resolver, beams as answers, the runner."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_t5_dir

from eval.errors import KbcError
from eval.types import Entity, Query


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    return tiny_t5_dir(tmp_path_factory.mktemp("t5"))


@pytest.fixture(scope="module")
def t5(t5_dir):
    from lm.loading import load

    return load(str(t5_dir), "seq2seq")


def predictor(loaded, **kw):
    from lm.seq2seq import Seq2SeqSpanPredictor

    return Seq2SeqSpanPredictor("t5", loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, **kw)


def test_resolver_claims_seq2seq_models(t5_dir, tmp_path):
    from bridge.predictors.lm import make_causal, make_masked, make_seq2seq, resolve_model
    from lm.loading import kind_from_config

    assert resolve_model(str(t5_dir)) is make_seq2seq
    assert resolve_model("t5-base") is make_seq2seq and resolve_model("google/t5-large-ssm") is make_seq2seq
    assert resolve_model("bert-base-cased") is make_masked and resolve_model("gpt2") is make_causal
    # old T5 checkpoints name T5WithLMHeadModel, which reads like a causal LM's head
    assert kind_from_config({"architectures": ["T5WithLMHeadModel"], "model_type": "t5"}) == "seq2seq"
    assert kind_from_config({"architectures": ["BartForConditionalGeneration"], "model_type": "bart"}) == "seq2seq"


def test_spans_are_read_after_the_first_sentinel(t5):
    pred = predictor(t5)
    tok = t5.tokenizer
    ids = [0] + tok("<extra_id_0> Ulaanbaatar Province.<extra_id_1> x", add_special_tokens=False)["input_ids"] + [1]
    assert pred.span(ids) == "Ulaanbaatar Province"
    assert pred.span([0] + tok("New York</s>", add_special_tokens=False)["input_ids"]) == "New York"  # no sentinel
    assert pred.span([0, 1, 0, 0]) == ""
    q = Query("u", "f", "trex", "P19", Entity("Dante"), "subject", "[X] was born in [Y] .")
    assert pred.prompt(q) == "<extra_id_0> was born in Dante ."


def test_answers_are_the_distinct_beams_of_generate(t5):
    import torch

    pred = predictor(t5, beams=10, max_new_tokens=6)
    queries = [Query("a", "a", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] ."),
               Query("b", "b", "trex", "P19", Entity("Florence"), "subject", "[X] was born in [Y] ."),
               Query("c", "c", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] .")]
    got = pred.predict(queries, depth=100)
    assert pred.generate_calls == 1  # the repeated prompt runs once; the two others share a batch
    enc = t5.tokenizer(["Dante was born in <extra_id_0> ."], return_tensors="pt")
    with torch.inference_mode():
        ref = t5.model.generate(**enc, num_beams=10, num_return_sequences=10, max_new_tokens=6, do_sample=False,
                                output_scores=True, return_dict_in_generate=True)
    spans = [pred.span(row) for row in ref.sequences.tolist()]
    want = list(dict.fromkeys(s for s in spans if s))
    assert [a.label for a in got[0].answers] == want and got[2].answers == got[0].answers
    assert [round(a.score, 4) for a in got[0].answers] == [
        round(float(ref.sequences_scores[spans.index(label)]), 4) for label in want]
    assert len(got[0].extra["beams"]) == 10 and 1 <= len(got[0].answers) <= 10
    assert predictor(t5, beams=3).predict(queries[:1], 100)[0].extra["beams"].__len__() == 3
    assert len(pred.predict(queries[:1], 2)[0].answers) <= 2


def test_a_seq2seq_model_without_sentinels_is_one_line_error(tmp_path, t5_dir, lama_dir, capsys, monkeypatch):
    from lm.loading import load

    bare = tiny_t5_dir(tmp_path, extra_ids=0)
    with pytest.raises(KbcError, match="has no sentinel tokens"):
        predictor(load(str(bare), "seq2seq"))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", str(bare), "--relations", "P19",
                            "--limit", "1", "--data-dir", str(lama_dir), "--out", str(tmp_path / "out"),
                            "--store", str(tmp_path / "store"), "--quiet"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "no sentinel tokens" in errors[0] and "Traceback" not in err


def test_run_lama_matches_multi_token_spans_by_label(t5_dir, tmp_path, lama_dir, trex, monkeypatch):
    """The runner ranks by exact label: a beam writing the gold span ranks it first, multi-token or not."""
    import torch
    from transformers import T5ForConditionalGeneration

    from bridge.run.runner import RunConfig, run_lama

    gold = {f.subject.label: f.object.label for f in trex.facts if f.relation == "P1412"}

    def fake_generate(self, input_ids, attention_mask, num_return_sequences, **kw):
        tok = fake_generate.tokenizer
        rows, scores = [], []
        for ids in input_ids.tolist():
            subject = tok.decode(ids, skip_special_tokens=True).split(" used to communicate in")[0].strip()
            beams = [f"<extra_id_0> {gold[subject]}.<extra_id_1>", "<extra_id_0> Latin<extra_id_1>",
                     "<extra_id_0>Latin<extra_id_1>"] + ["<extra_id_0><extra_id_1>"] * (num_return_sequences - 3)
            rows += [[0] + tok(b, add_special_tokens=False)["input_ids"] + [1] for b in beams]
            scores += [-1.0 - k for k in range(num_return_sequences)]
        width = max(len(r) for r in rows)
        seqs = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        return SimpleNamespace(sequences=seqs, sequences_scores=torch.tensor(scores))

    from transformers import AutoTokenizer

    fake_generate.tokenizer = AutoTokenizer.from_pretrained(t5_dir)
    monkeypatch.setattr(T5ForConditionalGeneration, "generate", fake_generate)
    out = tmp_path / "run"
    run_lama(RunConfig(["trex"], [f"t5={t5_dir}"], out, str(lama_dir), relations=["P1412"], limit=5,
                       cache_dir=tmp_path / "cache", store=str(tmp_path / "store")), progress=False)
    records = [json.loads(x) for x in (out / "predictions" / "trex" / "t5" / "P1412.jsonl").read_text().splitlines()]
    assert len(records) == 5 and all(r["rank_raw"] == 1 for r in records)
    assert all([a[0] for a in r["answers"]] in ([r["gold"], "Latin"], [r["gold"]]) for r in records)
    assert all(r["prompt"] == f"{r['subject']} used to communicate in [MASK] ." for r in records)
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_configs"]["trex"]["t5"]["kind"] == "seq2seq-span"
    assert config["predictor_specs"]["t5"]["options"] == {}


def test_span_beams_and_length_need_no_answer_generate_but_sampling_does():
    """A seq2seq model's beams and max_new_tokens shape its ranked spans; a causal model's and the sampling options
    apply to generation only."""
    from bridge.predictors.lm import make_causal, make_seq2seq
    from bridge.run.options import NamedSpec, accepted, scope_options

    t5, gpt = NamedSpec("t5", "/m/t5"), NamedSpec("gpt", "/m/gpt")
    scope_options({"t5.beams": "4", "t5.max_new_tokens": "6"}, [t5], {"t5": accepted(make_seq2seq)})
    assert t5.options == {"beams": "4", "max_new_tokens": "6"}
    with pytest.raises(KbcError) as caught:
        scope_options({"beams": "4"}, [NamedSpec("t5", "/m/t5"), gpt],
                      {"t5": accepted(make_seq2seq), "gpt": accepted(make_causal)})
    assert str(caught.value) == "--set beams applies to answer=generate only; add --set gpt.answer=generate or drop it"
    with pytest.raises(KbcError) as caught:
        scope_options({"t5.top_p": "0.5"}, [NamedSpec("t5", "/m/t5")], {"t5": accepted(make_seq2seq)})
    assert str(caught.value) == ("--set t5.top_p applies to answer=generate only; add --set t5.answer=generate or "
                                 "drop it")
    gen = NamedSpec("gpt", "/m/gpt")
    scope_options({"gpt.answer": "generate", "gpt.beams": "4", "gpt.top_p": "0.5"}, [gen],
                  {"gpt": accepted(make_causal)})
    assert gen.options == {"answer": "generate", "beams": "4", "top_p": "0.5"}
