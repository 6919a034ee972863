"""Fine-tuning relation classifiers on a FewRel slice (3 relations x 20 sentences) with a tiny random BERT over
the real cased vocabulary: learning, resuming, the saved model, the frozen embeddings, the AVG ensemble, bf16
autocast on the CPU, checkpoints written while the next epoch trains."""

from __future__ import annotations

import errno
import math
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from fewrel_fixtures import fewrel_slice
from lm_fixtures import tiny_model_dir

from eval.classification import macro_scores
from eval.errors import DataError
from eval.fewrel import load_split
from lm.relation_classifier import Batcher, TrainSettings, load_classifier, predict_proba, train_classifier
from lm.relation_inputs import RelationInputBuilder

QUICK = TrainSettings(lr=1e-3, batch_size=8, epochs=2, seed=0)


@pytest.fixture(scope="module")
def setup(shared_data, tmp_path_factory):
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("fewrel")
    parts = load_split(fewrel_slice(shared_data, root))
    model = tiny_model_dir("bert-cased", root)
    tokenizer = AutoTokenizer.from_pretrained(model)
    builder = RelationInputBuilder(tokenizer)
    data = {k: (builder.build(v, "bert"), [s.relation for s in v]) for k, v in parts.items()}
    return root, str(model), tokenizer, data, ["P177", "P364", "P2094"]


def _train(setup, folder, settings=QUICK, **kw):
    root, model, tokenizer, data, classes = setup
    return train_classifier(root / folder, model, tokenizer, {"form": "bert"}, classes, data["train"], data["dev"],
                            None, settings, progress=False, **kw)


def _probs(trained, inputs):
    return predict_proba(trained.encoder, trained.head, trained.batcher(), inputs)


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(setup):
    whole = _train(setup, "whole")
    first = _train(setup, "resumed", stop_after=1)
    assert first.info["finished"] is False and [h["epoch"] for h in first.info["history"]] == [1]
    resumed = _train(setup, "resumed")
    assert resumed.info["history"] == whole.info["history"] and resumed.info["best"] == whole.info["best"]
    for a, b in zip(whole.head.state_dict().values(), resumed.head.state_dict().values()):
        assert torch.equal(a, b)
    test = setup[3]["test"][0]
    assert np.array_equal(_probs(whole, test), _probs(resumed, test))
    saved = load_classifier(setup[0] / "whole")  # the selected model, as a user reloads it
    assert saved.classes == ["P177", "P364", "P2094"]
    assert np.allclose(_probs(saved, test), _probs(whole, test), atol=1e-6)
    assert not (setup[0] / "whole" / "checkpoint.pt").exists()


def test_a_resumed_training_says_which_epoch_it_resumes_from(setup, capsys):
    _train(setup, "says-resume", stop_after=1)
    assert "resuming" not in capsys.readouterr().err
    _train(setup, "says-resume")
    assert capsys.readouterr().err == "says-resume: resuming from epoch 2/2 (checkpoint.pt holds epochs 1-1)\n"


def test_a_saved_classifier_predicts_sentences_as_the_docs_show(setup, shared_data, tmp_path, capsys):
    _train(setup, "for-docs")
    folder = fewrel_slice(shared_data, tmp_path)
    sentences = load_split(folder)["test"]
    saved = load_classifier(setup[0] / "for-docs")
    probs = saved.predict_proba(sentences)
    assert probs.shape == (len(sentences), 3)
    assert np.allclose(probs, _probs(saved, setup[3]["test"][0]), atol=1e-6)
    assert np.allclose(probs.sum(1), 1.0, atol=1e-5)
    doc = (Path(__file__).parents[1] / "docs" / "fewrel.md").read_text(encoding="utf-8")
    example = doc.split("```python\n")[1].split("```")[0]
    capsys.readouterr()
    exec(example.replace("runs/fewrel/models/bert-8a1c18e1a4", str(setup[0] / "for-docs"))
         .replace("../shared/data/fewrel", str(folder)), {})
    shown = [saved.classes[i] for i in probs[:4].argmax(1)]
    assert capsys.readouterr().out == f"{shown}\n"


def test_after_epoch_sees_each_epochs_dev_row_and_a_true_answer_stops_there_as_stop_after_does(setup):
    rows = []
    first = _train(setup, "hooked", after_epoch=lambda row: rows.append(row) or True)
    assert first.info["finished"] is False and rows == first.info["history"] and [r["epoch"] for r in rows] == [1]
    resumed = _train(setup, "hooked", after_epoch=lambda row: rows.append(row) or False)
    assert [r["epoch"] for r in rows] == [1, 2]
    assert resumed.info["finished"] is True and resumed.info["history"] == _train(setup, "whole").info["history"]


def test_the_embeddings_stay_fixed_and_the_encoder_learns(setup):
    from lm.relation_classifier import load_encoder

    trained = _train(setup, "frozen")
    before = load_encoder(setup[1])
    assert torch.equal(before.embeddings.word_embeddings.weight, trained.encoder.embeddings.word_embeddings.weight)
    assert torch.equal(before.embeddings.position_embeddings.weight,
                       trained.encoder.embeddings.position_embeddings.weight)
    q = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(before.state_dict()[q], trained.encoder.state_dict()[q])


def test_a_folder_of_another_training_or_with_replaced_weights_is_refused(setup):
    from eval.errors import ConfigError, DataError

    _train(setup, "other")
    with pytest.raises(ConfigError, match="trained otherwise .*settings"):
        _train(setup, "other", TrainSettings(lr=5e-4, batch_size=8, epochs=2))
    head = setup[0] / "other" / "head.pt"
    state = torch.load(head)
    torch.save({k: v + 1 for k, v in state.items()}, head)
    with pytest.raises(DataError, match="the saved weights changed since training selected them"):
        _train(setup, "other")


@pytest.mark.heavy
def test_dev_f1_beats_the_majority_class(setup):
    trained = _train(setup, "learn", TrainSettings(lr=2e-3, batch_size=8, epochs=6, seed=0))
    dev_inputs, dev_gold = setup[3]["dev"]
    pred = [trained.classes[i] for i in _probs(trained, dev_inputs).argmax(1)]
    majority = macro_scores(dev_gold, [dev_gold[0]] * len(dev_gold), trained.classes)["f1"]
    assert majority == pytest.approx(100 / 6)
    assert macro_scores(dev_gold, pred, trained.classes)["f1"] > majority
    assert trained.info["best"]["f1"] == pytest.approx(max(h["f1"] for h in trained.info["history"]), abs=1e-4)


def test_entity_slots_read_the_mapped_vector_and_other_positions_their_word_pieces(setup):
    from lm.relation_classifier import load_encoder
    from lm.relation_inputs import RelationInput

    encoder = load_encoder(setup[1])
    mapped = np.random.default_rng(0).normal(size=(4, encoder.config.hidden_size)).astype(np.float32)
    batcher = Batcher(encoder, mapped, 0, "cpu")
    plain = RelationInput((101, 7, 8, 102))
    spliced = RelationInput((101, 100, 8, 9, 102), ((1, 3),))
    att, embeds = batcher([plain, spliced])
    words = encoder.get_input_embeddings().weight
    assert att.tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
    assert torch.equal(embeds[1, 1], torch.from_numpy(mapped[3]))
    assert torch.equal(embeds[1, 2], words[8]) and torch.equal(embeds[0, 1], words[7])
    assert torch.equal(embeds[0, 4], words[0])  # padding



def test_training_pads_each_part_once_and_takes_every_batch_from_it(setup, monkeypatch):
    """The train and dev inputs are padded into device tensors once per call, not once per step or epoch; a batch
    taken from them is the batch padded on its own."""
    import lm.relation_classifier as rc

    padded, real = [], rc.pad_rows
    monkeypatch.setattr(rc, "pad_rows", lambda rows, pad_id: padded.append(len(rows)) or real(rows, pad_id))
    _train(setup, "padded-once")
    data = setup[3]
    assert padded == [len(data["train"][0]), len(data["dev"][0])] == [48, 6]
    encoder = rc.load_encoder(setup[1])
    batcher = Batcher(encoder, None, 0, "cpu")
    inputs = data["train"][0]
    whole = batcher.collate(inputs)
    rows = np.array([5, 0, 17])
    att, embeds = batcher.take(whole, batcher.index(rows), int(whole.lengths[rows].max()))
    alone_att, alone_embeds = batcher([inputs[i] for i in rows])
    assert torch.equal(att, alone_att) and torch.equal(embeds, alone_embeds)
    assert att.shape[1] == max(len(inputs[i].ids) for i in rows) < whole.ids.shape[1]

BF16 = TrainSettings(lr=3e-3, batch_size=8, epochs=2, seed=0, dtype="bfloat16")


def test_bf16_autocast_trains_on_the_cpu_agrees_with_float32_and_resumes(setup):
    """`dtype="bfloat16"` runs the forward passes under bf16 autocast on the CPU as on a GPU. The agreement count
    depends neither on the CPU nor on the thread count: each float32 prediction leads its runner-up by more than
    0.15 in probability (0.209 measured; at the selected epoch the tiny model gives every sentence the same class),
    while bf16 moves a probability by under 0.004 (measured with AVX-512-bf16, AVX2 and plain kernels, on one thread
    and two, which differ from each other by as much); the test checks both bounds before it counts."""
    half = _train(setup, "bf16", BF16)
    full = _train(setup, "bf16-fp32", replace(BF16, dtype="float32"))
    assert half.dtype == "bfloat16" and full.dtype == "float32"
    assert load_classifier(setup[0] / "bf16").dtype == "bfloat16"  # a reloaded model predicts as it was selected
    losses = [h["loss"] for h in half.info["history"]]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert max(abs(a - b["loss"]) for a, b in zip(losses, full.info["history"])) < 0.01
    data = setup[3]
    inputs = [x for part in ("train", "dev", "test") for x in data[part][0]]
    p16, p32 = _probs(half, inputs), _probs(full, inputs)
    assert not np.array_equal(p16, p32)  # autocast took effect
    top = np.sort(p32, axis=1)
    assert (top[:, -1] - top[:, -2]).min() > 0.15 and np.abs(p16 - p32).max() < 0.01
    assert len(inputs) == 60 and int((p16.argmax(1) == p32.argmax(1)).sum()) == 60
    _train(setup, "bf16-resumed", BF16, stop_after=1)
    resumed = _train(setup, "bf16-resumed", BF16)
    assert resumed.info["history"] == half.info["history"] and resumed.info["best"] == half.info["best"]
    for module in ("encoder", "head"):
        whole, again = getattr(half, module).state_dict(), getattr(resumed, module).state_dict()
        assert all(torch.equal(whole[k], again[k]) for k in whole)
    assert np.array_equal(_probs(resumed, inputs), p16)


def test_a_loss_that_is_no_longer_finite_stops_training_with_the_fix(setup):
    from eval.errors import DataError

    with pytest.raises(DataError, match=r"the training loss is nan at epoch 1, step 2 \(learning rate 1e\+30, "
                                        r"bfloat16\); lower --set lr= or train in float32$"):
        _train(setup, "diverged", TrainSettings(lr=1e30, batch_size=8, epochs=1, dtype="bfloat16"))
    assert not (setup[0] / "diverged" / "checkpoint.pt").exists()


# Checkpoints are written by a background thread while the next epoch trains (lm/background_save.py). The tests
# below hold epoch 1's write until epoch 2 has trained (its losses were read), so the write and the training
# overlap for certain: on a loop that writes before going on, the held write waits in vain and fails the test.

def _epoch_2_trained(monkeypatch, interrupt: BaseException | None = None) -> threading.Event:
    """An event set once epoch 2's losses are read (then `interrupt`, if given, is raised there)."""
    import lm.relation_classifier as rc

    reached, reads, real = threading.Event(), [], rc._read_losses

    def read(*args):
        reads.append(args)
        values = real(*args)
        if len(reads) == 2:
            reached.set()
            if interrupt is not None:
                raise interrupt
        return values

    monkeypatch.setattr(rc, "_read_losses", read)
    return reached


def _held_saves(monkeypatch, until: threading.Event, after=lambda obj, path: None, delay: float = 0.0) -> None:
    """`torch.save` that writes once `until` is set (`delay` seconds later), then calls `after`."""
    real = torch.save

    def save(obj, f, *args, **kw):
        assert until.wait(60), "the write did not run while the next epoch trained"
        time.sleep(delay)
        real(obj, f, *args, **kw)
        after(obj, Path(f))

    monkeypatch.setattr(torch, "save", save)


def test_the_checkpoint_written_while_epoch_2_trains_holds_epoch_1s_state(setup, monkeypatch):
    one, whole = _train(setup, "epoch-one", stop_after=1), _train(setup, "whole")
    kept = {}

    def keep(obj, path):
        if path.name == "checkpoint.pt.tmp":
            kept[obj["epoch"]] = torch.load(path, weights_only=False)

    _held_saves(monkeypatch, _epoch_2_trained(monkeypatch), keep)
    both = _train(setup, "epoch-two")
    assert both.info["finished"] is True and both.info["history"] == whole.info["history"]
    state, later = kept[1], kept[2]
    assert state["epoch"] == 1 and state["history"] == one.info["history"] and state["best"] == one.info["best"]
    for module in ("encoder", "head"):
        live = getattr(one, module).state_dict()
        assert list(state[module]) == list(live) and all(torch.equal(state[module][k], live[k]) for k in live)
        # epoch 2 changed them while epoch 1's checkpoint was written: a write of the live tensors would differ
        assert not all(torch.equal(state[module][k], later[module][k]) for k in live)


@pytest.mark.parametrize("name", ["best.pt", "checkpoint.pt"])
def test_a_checkpoint_write_that_fails_ends_training_with_one_line_naming_the_file(setup, monkeypatch, name):
    real = torch.save

    def save(obj, f, *args, **kw):
        if Path(f).name == name + ".tmp":
            Path(f).write_bytes(b"part")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(obj, f, *args, **kw)

    monkeypatch.setattr(torch, "save", save)
    folder = setup[0] / f"full-disk-{name}"
    with pytest.raises(DataError) as failed:
        _train(setup, folder.name)
    assert str(failed.value) == (f"{folder / name}: could not be written (No space left on device); the folder keeps "
                                 "the epoch before: free space or fix its permissions and rerun to resume")
    # best.pt failing: epoch 1's checkpoint.pt is not written either (it would name a best epoch not on disk)
    assert sorted(p.name for p in folder.iterdir()) == ([] if name == "best.pt" else ["best.pt", "best.pt.sha256"])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), DataError("the training loss is nan at epoch 2")])
def test_an_exception_in_epoch_2_returns_only_once_epoch_1s_checkpoint_is_on_disk(setup, monkeypatch, interrupt):
    folder = setup[0] / f"stopped-{type(interrupt).__name__}"
    with monkeypatch.context() as patch:
        _held_saves(patch, _epoch_2_trained(patch, interrupt), delay=0.5)  # written 0.5 s after the exception
        with pytest.raises(type(interrupt)):
            _train(setup, folder.name)
    assert sorted(p.name for p in folder.iterdir()) == ["best.pt", "best.pt.sha256", "checkpoint.pt",
                                                        "checkpoint.pt.sha256"]
    state = torch.load(folder / "checkpoint.pt", weights_only=False)
    assert state["epoch"] == 1 and [h["epoch"] for h in state["history"]] == [1]
    resumed, whole = _train(setup, folder.name), _train(setup, "whole")
    assert resumed.info["history"] == whole.info["history"] and resumed.info["best"] == whole.info["best"]
    for module in ("encoder", "head"):
        a, b = getattr(whole, module).state_dict(), getattr(resumed, module).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_write_that_fails_while_another_exception_ends_training_is_noted_on_it(setup, monkeypatch):
    def save(obj, f, *args, **kw):
        assert reached.wait(60)
        raise PermissionError(errno.EACCES, "Permission denied")

    reached = _epoch_2_trained(monkeypatch, KeyboardInterrupt())
    monkeypatch.setattr(torch, "save", save)
    folder = setup[0] / "stopped-unwritable"
    with pytest.raises(KeyboardInterrupt) as stopped:
        _train(setup, folder.name)
    assert stopped.value.__notes__ == [f"{folder / 'best.pt'}: could not be written (Permission denied); the folder "
                                       "keeps the epoch before: free space or fix its permissions and rerun to resume"]
    assert list(folder.iterdir()) == []
    with pytest.raises(DataError):  # the same failure, with nothing else going on, is the error itself
        _train(setup, folder.name)


def test_a_host_copy_is_unchanged_by_later_steps_and_keeps_shared_tensors_and_state_dict_metadata():
    from lm.background_save import host_copy

    layer = torch.nn.Linear(3, 2)
    live = {"model": layer.state_dict(), "tied": [layer.weight, layer.weight], "step": (torch.tensor(4.0), 7)}
    spare: dict = {}
    copied = host_copy(live, spare)
    before = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.add_(1.0)
        live["step"][0].add_(1)
    assert torch.equal(copied["model"]["weight"], before) and torch.equal(copied["tied"][0], before)
    assert copied["tied"][0] is copied["tied"][1] and copied["step"][0].item() == 4.0 and copied["step"][1] == 7
    assert copied["model"]._metadata == live["model"]._metadata and type(copied["model"]) is type(live["model"])
    assert sorted(len(v) for v in spare.values()) == [1, 1, 1]  # weight (shared), bias, step
    again = host_copy(live, spare)  # fills the first copy's tensors: no new host memory
    assert again["model"]["weight"] is copied["model"]["weight"] and again["step"][0] is copied["step"][0]
    assert torch.equal(again["tied"][1], before + 1) and again["step"][0].item() == 5.0


def test_each_epoch_logs_its_dev_score_and_the_end_names_the_kept_epoch(setup, capsys):
    root, model, tokenizer, data, classes = setup
    trained = train_classifier(root / "logged", model, tokenizer, {"form": "bert"}, classes, data["train"],
                               data["dev"], None, QUICK, progress=True)
    history, best = trained.info["history"], trained.info["best"]
    lines = [line for line in capsys.readouterr().err.splitlines() if "epoch" in line and "%" not in line]
    assert lines == [*(f"logged epoch {h['epoch']}/2: loss {h['loss']:.4f}, dev macro F1 {h['f1']:.2f}"
                       for h in history),
                     f"logged: kept epoch {best['epoch']}/2 (dev macro F1 {best['f1']:.2f})"]
    _train(setup, "silent")
    assert "dev macro F1" not in capsys.readouterr().err


def test_a_truncated_checkpoint_or_head_is_one_line_naming_the_file(setup):
    """A checkpoint cut short (a copy stopped midway, a full disk outside kbc's writes) is refused with the fix, not
    a torch traceback; so is a finished model's damaged head."""
    folder = setup[0] / "truncated"
    _train(setup, folder.name, stop_after=1)
    ckpt = folder / "checkpoint.pt"
    ckpt.write_bytes(ckpt.read_bytes()[:100_000])
    with pytest.raises(DataError) as failed:
        _train(setup, folder.name)
    text = str(failed.value)
    assert text.startswith(f"{ckpt}: not a readable saved state (") and "\n" not in text
    assert text.endswith("); delete it to train that model again from its first epoch")
    ckpt.unlink()
    _train(setup, folder.name)
    assert sorted(p.name for p in folder.iterdir()) == ["classifier.json", "encoder", "head.pt"]
    head = folder / "head.pt"
    head.write_bytes(head.read_bytes()[:100])
    with pytest.raises(DataError) as failed:
        load_classifier(folder)
    text = str(failed.value)
    assert text.startswith(f"{head}: not a readable saved state (")
    assert text.endswith(f"); delete {folder} to train that model again")


def test_a_load_error_is_cut_at_its_first_sentence():
    """torch's load errors run on for paragraphs: the one line keeps the first sentence whole, never a cut word."""
    from lm.relation_classifier import first_sentence

    long = ("Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
            "only if you trust the source of the checkpoint. (1) In PyTorch 2.6, we changed the default value.")
    assert first_sentence(long) == "Weights only load failed"
    assert first_sentence("PytorchStreamReader failed reading zip archive:\n failed finding central directory") == \
        "PytorchStreamReader failed reading zip archive: failed finding central directory"
    cut = first_sentence("x" * 150 + " " + "y" * 100)
    assert cut == "x" * 150 + " " + "y" * 48 + "…" and len(cut) == 200


def test_a_checkpoint_changed_in_a_weight_is_refused_not_trained_on(setup):
    """A bit flipped in a saved weight (a bad disk, a copy, an edit) still loads: training would go on from it and
    keep a model an uninterrupted run never had. The SHA-256 kept beside each checkpoint refuses it in one line."""
    import zipfile

    folder = setup[0] / "flipped"
    _train(setup, folder.name, stop_after=1)
    ckpt = folder / "checkpoint.pt"
    with zipfile.ZipFile(ckpt) as archive:
        largest = max(archive.infolist(), key=lambda i: i.file_size)
    data = bytearray(ckpt.read_bytes())
    start = largest.header_offset + 30 + int.from_bytes(data[largest.header_offset + 26:largest.header_offset + 28],
                                                         "little") \
        + int.from_bytes(data[largest.header_offset + 28:largest.header_offset + 30], "little")
    data[start + largest.file_size // 2] ^= 0x40
    ckpt.write_bytes(bytes(data))
    torch.load(ckpt, weights_only=False)  # still a readable state
    with pytest.raises(DataError) as failed:
        _train(setup, folder.name)
    assert str(failed.value) == (f"{ckpt}: changed since it was written (its SHA-256 is not the one kept in "
                                 "checkpoint.pt.sha256); delete it to train that model again from its first epoch")
