"""Fine-tuning relation classifiers on a FewRel slice (3 relations x 20 sentences) with a tiny random BERT over
the real cased vocabulary: learning, resuming, the saved model, the frozen embeddings, the AVG ensemble."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fewrel_fixtures import fewrel_slice
from lm_fixtures import tiny_model_dir

from eval.classification import macro_scores
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
    batcher = Batcher(trained.encoder, None, int(trained.tokenizer.pad_token_id), "cpu")
    return predict_proba(trained.encoder, trained.head, batcher, inputs)


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
