"""Standard errors and seeded bootstrap intervals of per-cell and grouped scores.

A cell (a relation, a question kind) scores the mean of its units' scores (a fact's P@1 hit in
percent, its reciprocal rank, ...). Per cell: stderr = sample standard deviation (ddof 1) / sqrt(n),
lm-eval-harness's `mean_stderr`; the interval resamples the cell's units with replacement. A macro
group (a mean over relations, each counting once): stderr = sqrt(sum of the cells' stderr^2) / R,
cells being independent samples; each bootstrap replicate resamples every cell's units within that
cell and takes the mean of the cell means. A pooled group (a mean over all its units, KMIR's `all`)
is treated as one cell of all its units. Intervals are 95% percentile intervals over the replicates.
Undefined (None) where a cell has fewer than two units (or clusters); in a macro group such a cell
counts as a constant (stderr 0, its mean in every replicate), so the group is undefined only when all
its cells are.

Units that are not independent (a fact asked with k prompts gives k units) are resampled as clusters:
a cell's value is still the mean over its units, but the interval draws whole clusters with
replacement and the stderr is the cluster-robust one, sqrt(C / (C - 1) * sum_c (S_c - m N_c)^2) / N
(C clusters, S_c and N_c a cluster's score sum and size, m the mean, N the units), which is the plain
one when every cluster holds one unit.

Resampling n units with replacement matters only through how often each distinct score is drawn,
so a cell of hits and misses draws the number of hits, Binomial(n, hits / n): the same distribution
as drawing n indices, at a fraction of the cost. Other cells draw indices.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eval.errors import ConfigError

DEFAULT_BOOTSTRAP = 1000
MAX_BOOTSTRAP = 100_000
LEVEL = 95.0
_CHUNK = 4_000_000  # index draws per batch


@dataclass(frozen=True)
class Interval:
    """Standard error and 95% bootstrap interval of one value (None where undefined)."""

    stderr: float | None
    ci_low: float | None
    ci_high: float | None

    def fields(self) -> dict[str, float | None]:
        return {"stderr": self.stderr, "ci_low": self.ci_low, "ci_high": self.ci_high}


UNDEFINED = Interval(None, None, None)


def rng_for(seed: int, key: str) -> np.random.Generator:
    """A generator of its own per summary cell set, so adding a predictor never moves another's interval."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def mean_stderr(values: np.ndarray) -> float | None:
    """Sample std (ddof 1) / sqrt(n); None below two values."""
    n = len(values)
    return float(np.std(values, ddof=1) / np.sqrt(n)) if n > 1 else None


def replicate_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """`n_boot` means of `values` resampled with replacement (same size)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    uniques, counts = np.unique(values, return_counts=True)
    if len(uniques) == 1:
        return np.full(n_boot, uniques[0])
    if len(uniques) == 2:  # hit or miss: how many of the n draws are the second score
        drawn = rng.binomial(n, counts[1] / n, size=n_boot)
        return (uniques[0] * (n - drawn) + uniques[1] * drawn) / n
    out = np.empty(n_boot)
    step = max(1, _CHUNK // n)
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        out[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return out


def _cluster_sums(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (in order of its label): the sum of its units' scores and its size."""
    _, inverse = np.unique(labels, return_inverse=True)
    return np.bincount(inverse, weights=values), np.bincount(inverse).astype(float)


def cluster_stderr(values: np.ndarray, labels: np.ndarray) -> float | None:
    """Cluster-robust stderr of the mean of `values` (units sharing a label are one draw); None below two
    clusters."""
    sums, sizes = _cluster_sums(np.asarray(values, dtype=float), np.asarray(labels))
    c = len(sums)
    if c < 2:
        return None
    mean = sums.sum() / sizes.sum()
    return float(np.sqrt(c / (c - 1) * np.sum((sums - mean * sizes) ** 2)) / sizes.sum())


def cluster_replicate_means(values: np.ndarray, labels: np.ndarray, n_boot: int,
                            rng: np.random.Generator) -> np.ndarray:
    """`n_boot` means over the units of clusters resampled with replacement (as many clusters as there are)."""
    return cluster_sum_replicates(*_cluster_sums(np.asarray(values, dtype=float), np.asarray(labels)), n_boot, rng)


def cluster_sum_replicates(sums: np.ndarray, sizes: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """`cluster_replicate_means` from each cluster's score sum and size: draws as many clusters as there are, with
    replacement, and divides the drawn sums by the drawn sizes."""
    sums, sizes = np.asarray(sums, dtype=float), np.asarray(sizes, dtype=float)
    c = len(sums)
    out = np.empty(n_boot)
    step = max(1, _CHUNK // c)
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        drawn = rng.integers(0, c, size=(stop - start, c))
        out[start:stop] = sums[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)
    return out


def _percentiles(replicates: np.ndarray) -> tuple[float, float]:
    tail = (100.0 - LEVEL) / 2
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def intervals(cells: Mapping[str, np.ndarray], macro: Mapping[str, Sequence[str]] | None = None,
              pooled: Mapping[str, Sequence[str]] | None = None, n_boot: int = DEFAULT_BOOTSTRAP,
              rng: np.random.Generator | Callable[[str], np.random.Generator] | None = None,
              clusters: Mapping[str, np.ndarray] | None = None) -> dict[str, Interval]:
    """Intervals of every cell, of each `macro` group (mean of its cells' means) and each `pooled` group.

    `n_boot` 0 gives standard errors only. `rng` is one generator (cells drawn in the order given) or a
    function giving each cell and pooled group its own, so equal scores get equal intervals whatever else
    is drawn. `clusters` gives a cell's units labels: units sharing one are drawn together.
    """
    shared = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(0)
    rng_of: Callable[[str], np.random.Generator] = rng if callable(rng) else (lambda _name: shared)
    out: dict[str, Interval] = {}
    reps: dict[str, np.ndarray] = {}
    errs: dict[str, float | None] = {}
    clusters = clusters or {}
    for name, values in cells.items():
        values = np.asarray(values, dtype=float)
        labels = clusters.get(name)
        grouped = labels is not None and len(np.unique(labels)) < len(values)
        errs[name] = cluster_stderr(values, labels) if grouped else mean_stderr(values)
        if errs[name] is None:
            out[name] = UNDEFINED
            if len(values):  # a macro group still varies with its other cells: this one is a constant there
                reps[name] = np.full(n_boot, float(values.mean()))
            continue
        if n_boot:
            reps[name] = (cluster_replicate_means(values, labels, n_boot, rng_of(name)) if grouped
                          else replicate_means(values, n_boot, rng_of(name)))
            out[name] = Interval(errs[name], *_percentiles(reps[name]))
        else:
            out[name] = Interval(errs[name], None, None)
    for group, members in (macro or {}).items():
        members = list(members)
        if not any(errs.get(m) is not None for m in members):
            out[group] = UNDEFINED
            continue
        stderr = float(np.sqrt(sum((errs[m] or 0.0) ** 2 for m in members)) / len(members))
        ci = _percentiles(np.mean([reps[m] for m in members], axis=0)) if n_boot else (None, None)
        out[group] = Interval(stderr, *ci)
    for group, members in (pooled or {}).items():
        values = np.concatenate([np.asarray(cells[m], dtype=float) for m in members]) if members else np.zeros(0)
        stderr = mean_stderr(values)
        if stderr is None:
            out[group] = UNDEFINED
            continue
        ci = _percentiles(replicate_means(values, n_boot, rng_of(group))) if n_boot else (None, None)
        out[group] = Interval(stderr, *ci)
    return out


def check_bootstrap(n: int) -> int:
    """A bootstrap size from the user: 0 (off) up to MAX_BOOTSTRAP."""
    if not 0 <= n <= MAX_BOOTSTRAP:
        raise ConfigError(f"--bootstrap {n}: use 0 (no intervals) up to {MAX_BOOTSTRAP:,} resamples")
    return n
