"""`kbcompare.ProbeCallback`: a probe every N steps of a `transformers` Trainer, logged as the trainer logs."""

from __future__ import annotations

import lm_fixtures
import pytest

import kbcompare


def _mrr(result) -> float:
    rows = result.summary
    found = rows[(rows["corpus"] == "trex") & (rows["predictor"] == "model") & (rows["setting"] == "raw")
                 & (rows["scope"] == "own") & (rows["group"] == "all") & (rows["metric"] == "mrr")]
    assert len(found) == 1
    return float(found["value"].iloc[0])


@pytest.mark.heavy
def test_probe_scores_reach_the_log_history_and_equal_a_probe_of_the_same_weights(lama_dir, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainingArguments

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    tiny = lm_fixtures.tiny_model_dir("bert-cased", tmp_path)
    model = AutoModelForMaskedLM.from_pretrained(tiny)
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    texts = ["Dante Alighieri was born in Florence .", "Paris is the capital of France .",
             "Albert Einstein was born in Ulm .", "Rome is the capital of Italy ."]
    encoded = tokenizer(texts, padding=True)
    data = [{"input_ids": ids, "attention_mask": mask, "labels": list(ids)}
            for ids, mask in zip(encoded["input_ids"], encoded["attention_mask"])]
    probe = {"corpus": "trex", "relations": ["P19"], "limit": 20, "data_dir": str(lama_dir)}
    attached = kbcompare.ProbeCallback("lama", every_n_steps=1, out=tmp_path / "probes", metrics=("p@1", "mrr"),
                                       **probe)
    plain = kbcompare.ProbeCallback("lama", every_n_steps=2, out=tmp_path / "plain", prefix="plain",
                                    metrics=("mrr",), **probe)
    args = TrainingArguments(output_dir=str(tmp_path / "train"), max_steps=2, per_device_train_batch_size=2,
                             learning_rate=0.05, report_to=[], logging_steps=1, save_strategy="no", use_cpu=True,
                             seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer, callbacks=[plain])
    attached.attach(trainer)
    trainer.train()

    final = tmp_path / "final"
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    direct = _mrr(kbcompare.run("lama", predictors={"model": str(final)}, out=tmp_path / "direct", **probe))
    logged = [e for e in trainer.state.log_history if "probe/trex/mrr" in e]
    assert [e["step"] for e in logged] == [1, 2]
    assert all("epoch" in e for e in logged)  # logged by `trainer.log`, as the trainer's own entries are
    assert logged[1]["probe/trex/mrr"] == direct
    assert logged[0]["probe/trex/mrr"] != direct  # step 1 probed the weights of step 1
    assert sorted(k for k in logged[0] if k.startswith("probe/")) == ["probe/trex/mrr", "probe/trex/p@1"]
    assert [e for e in trainer.state.log_history if "plain/trex/mrr" in e] == [{"plain/trex/mrr": direct, "step": 2}]
    assert attached.history[1] == {"probe/trex/mrr": direct, "probe/trex/p@1": logged[1]["probe/trex/p@1"], "step": 2}
    assert sorted(p.name for p in (tmp_path / "probes").iterdir()) == ["step-1", "step-2"]
    assert not (tmp_path / "probes" / "step-1" / "model").exists()  # checkpoints are removed once probed
    assert _mrr(kbcompare.load_run(tmp_path / "probes" / "step-2" / "run")) == direct


def test_probe_callback_refusals(tmp_path):
    with pytest.raises(kbcompare.ConfigError, match=r"^every_n_steps=0: expected an integer of at least 1$"):
        kbcompare.ProbeCallback(every_n_steps=0)
    with pytest.raises(kbcompare.ConfigError, match=r"^ProbeCallback probes the model being trained; drop predictors="):
        kbcompare.ProbeCallback(predictors=["freq"])
    (tmp_path / "step-3").mkdir()
    callback = kbcompare.ProbeCallback(out=tmp_path)
    with pytest.raises(kbcompare.ConfigError, match=r"step-3 exists: a probe writes each step into a folder of "):
        callback.probe(object(), object(), 3)
    with pytest.raises(kbcompare.ConfigError, match=r"^ProbeCallback needs the model and its tokenizer"):
        callback.probe(object(), None, 4)
