"""Shared, built-once artefacts for the entity tests: a wikipedia2vec model trained on the real
206-page sample dump (fast settings) and a tiny random BERT with the real bert-base-cased vocabulary.
Both are built once per test run, in a folder the run's worker processes share."""

from __future__ import annotations

import atexit
import bz2
import fcntl
import functools
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DUMP = "wikipedia/enwiki-sample-206-pages.xml.bz2"
W2V_DIM = 32


_SHARED: list[Path] = []  # a folder every worker process of this test run shares (set by conftest)


def share_builds_in(root: Path) -> None:
    """Build into `root`, which the other worker processes of the run see too: each artefact is built once."""
    _SHARED[:] = [root]


@functools.cache
def _workdir() -> Path:
    if _SHARED:
        path = _SHARED[0] / "kbc-entities"
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix="kbc-entities-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@contextmanager
def _one_builder(name: str) -> Iterator[None]:
    """While one process builds `name`, the others wait, then find it built."""
    with (_workdir() / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@functools.cache
def trained_w2v(shared_data: Path) -> Path:
    """wikipedia2vec on the sample dump: dim 32, 1 iteration, uniform negative tables (seconds)."""
    from lm.entities.train import TrainSettings, train

    settings = TrainSettings(dim=W2V_DIM, iterations=1, word_neg_power=0.0, entity_neg_power=0.0,
                             min_entity_count=1, pool_size=2)
    with _one_builder("w2v"):
        return train(shared_data / DUMP, _workdir() / "w2v" / "sample.pkl", settings)


@functools.cache
def tiny_bert(shared_data: Path, hidden: int = W2V_DIM) -> Path:
    """A 2-layer random BertForMaskedLM over the real cased vocabulary, saved like a checkpoint."""
    from lm_fixtures import tiny_model_dir

    with _one_builder(f"h{hidden}"):
        return tiny_model_dir("bert-cased", _workdir() / f"h{hidden}", hidden_size=hidden,
                              intermediate_size=2 * hidden, initializer_range=0.02, max_position_embeddings=128)


def first_pages(dump: Path, n: int, out: Path) -> Path:
    """The dump's first `n` pages as a dump of their own."""
    text = bz2.decompress(dump.read_bytes()).decode("utf-8")
    head, _, rest = text.partition("<page>")
    pages = rest.split("<page>")[:n]
    body = "<page>" + "<page>".join(pages)
    body = body[:body.rindex("</page>") + len("</page>")]
    out.write_bytes(bz2.compress(f"{head}{body}\n</mediawiki>\n".encode()))
    return out

