"""Mapped entity vectors in a FAISS inner-product index, with nearest-entity search.

`flat` is exact (the default; fine up to a few hundred thousand entities on one machine).
`ivf` clusters the vectors into `nlist` cells and scans `nprobe` of them per query; `hnsw` is a
graph index. Both trade a little recall for speed at millions of entities (measure it with
`bench/entities.py`). Scores are inner products, the same quantity a masked LM's output layer uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval.errors import ConfigError, DataError

KINDS = ("flat", "ivf", "hnsw")


@dataclass
class IndexSpec:
    kind: str = "flat"
    nlist: int | None = None  # ivf: cells; default ~ 4 sqrt(n)
    nprobe: int = 16  # ivf: cells scanned per query
    m: int = 32  # hnsw: links per node
    ef_search: int = 128  # hnsw: search breadth
    train_size: int = 100_000  # ivf: vectors sampled for k-means

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown index kind {self.kind!r}; choose one of {', '.join(KINDS)}")


class EntityIndex:
    """Entity rows -> vectors, searched by inner product; `search` returns (scores, rows), -1 = none."""

    def __init__(self, index, spec: IndexSpec) -> None:
        self.index = index
        self.spec = spec

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def build(cls, vectors: np.ndarray, spec: IndexSpec | None = None, seed: int = 0) -> EntityIndex:
        import faiss

        spec = spec or IndexSpec()
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if x.ndim != 2 or not len(x):
            raise DataError(f"an entity index needs a non-empty (n, d) matrix, got shape {x.shape}")
        n, d = x.shape
        if spec.kind == "flat":
            index = faiss.IndexFlatIP(d)
        elif spec.kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, spec.m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = spec.ef_search
        else:
            nlist = spec.nlist or max(1, min(n // 39, int(4 * math.sqrt(n))))
            quantizer = faiss.IndexFlatIP(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(seed)
            sample = x if n <= spec.train_size else x[np.sort(rng.choice(n, spec.train_size, replace=False))]
            index.cp.seed = seed
            index.train(sample)
            index.nprobe = min(spec.nprobe, nlist)
        index.add(x)
        return cls(index, spec)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, self.size)
        return self.index.search(q, k)

    def save(self, path: str | Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path))

    @classmethod
    def load(cls, path: str | Path, spec: IndexSpec | None = None) -> EntityIndex:
        import faiss

        if not Path(path).exists():
            raise DataError(f"{path}: no such FAISS index")
        return cls(faiss.read_index(str(path)), spec or IndexSpec())


def brute_force(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k by inner product in NumPy (the reference the index is tested against)."""
    scores = np.atleast_2d(queries).astype(np.float32) @ np.asarray(vectors, np.float32).T
    k = min(k, scores.shape[1])
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, 1), axis=1, kind="stable")
    rows = np.take_along_axis(top, order, 1)
    return np.take_along_axis(scores, rows, 1), rows
