"""The FAISS entity index against a NumPy brute-force search."""

from __future__ import annotations

import numpy as np
import pytest

from eval.errors import ConfigError, DataError
from lm.entities.faiss_index import EntityIndex, IndexSpec, brute_force


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(20, 32))
    vectors = (centers[rng.integers(0, 20, 3000)] + 0.3 * rng.normal(size=(3000, 32))).astype(np.float32)
    queries = (centers[rng.integers(0, 20, 25)] + 0.3 * rng.normal(size=(25, 32))).astype(np.float32)
    return vectors, queries


def test_brute_force_is_a_full_sort():
    rng = np.random.default_rng(1)
    v, q = rng.normal(size=(50, 4)), rng.normal(size=(3, 4))
    scores, rows = brute_force(v, q, 7)
    full = np.argsort(-(q @ v.T), axis=1)[:, :7]
    assert np.array_equal(rows, full)
    assert np.allclose(scores, np.take_along_axis(q @ v.T, full, 1), atol=1e-5)


def test_flat_equals_brute_force(data):
    vectors, queries = data
    index = EntityIndex.build(vectors)
    scores, rows = index.search(queries, 10)
    ref_scores, ref_rows = brute_force(vectors, queries, 10)
    assert np.array_equal(rows, ref_rows)
    assert np.allclose(scores, ref_scores, atol=1e-4)
    assert index.size == 3000


def test_ivf_scanning_every_cell_is_exact(data):
    vectors, queries = data
    index = EntityIndex.build(vectors, IndexSpec("ivf", nlist=16, nprobe=16))
    _, rows = index.search(queries, 10)
    assert np.array_equal(rows, brute_force(vectors, queries, 10)[1])


def test_ivf_and_hnsw_recall(data):
    vectors, queries = data
    ref = brute_force(vectors, queries, 10)[1]
    for spec in (IndexSpec("ivf", nlist=40, nprobe=8), IndexSpec("hnsw", m=16, ef_search=64)):
        rows = EntityIndex.build(vectors, spec).search(queries, 10)[1]
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(rows, ref)])
        assert recall >= 0.9, (spec.kind, recall)


def test_save_load_and_errors(data, tmp_path):
    vectors, queries = data
    index = EntityIndex.build(vectors[:100])
    index.save(tmp_path / "e.faiss")
    back = EntityIndex.load(tmp_path / "e.faiss")
    assert np.array_equal(back.search(queries, 5)[1], index.search(queries, 5)[1])
    assert index.search(queries[:1], 500)[1].shape == (1, 100)  # k is capped at the index size
    with pytest.raises(DataError, match="no such FAISS index"):
        EntityIndex.load(tmp_path / "missing.faiss")
    with pytest.raises(ConfigError, match="unknown index kind"):
        IndexSpec("lsh")
    with pytest.raises(DataError, match="non-empty"):
        EntityIndex.build(np.zeros((0, 4), np.float32))
