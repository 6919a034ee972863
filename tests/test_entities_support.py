"""Shared, built-once artefacts for the entity tests: a wikipedia2vec model trained on the real
206-page sample dump (fast settings) and a tiny random BERT with the real bert-base-cased vocabulary.
Both are built at most once per test session (cached by path) in a temporary directory."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

DUMP = "wikipedia/enwiki-sample-206-pages.xml.bz2"
W2V_DIM = 32


@functools.cache
def _workdir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="kbc-entities-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def trained_w2v(shared_data: Path) -> Path:
    """wikipedia2vec on the sample dump: dim 32, 1 iteration, uniform negative tables (seconds)."""
    from lm.entities.train import TrainSettings, train

    settings = TrainSettings(dim=W2V_DIM, iterations=1, word_neg_power=0.0, entity_neg_power=0.0,
                             min_entity_count=1, pool_size=2)
    return train(shared_data / DUMP, _workdir() / "w2v" / "sample.pkl", settings)


@functools.cache
def tiny_bert(shared_data: Path, hidden: int = W2V_DIM) -> Path:
    """A 2-layer random BertForMaskedLM over the real cased vocabulary, saved like a checkpoint."""
    from lm_fixtures import tiny_model_dir

    return tiny_model_dir("bert-cased", _workdir() / f"h{hidden}", hidden_size=hidden, intermediate_size=2 * hidden,
                          initializer_range=0.02, max_position_embeddings=128)
