"""Standard errors and seeded bootstrap intervals of per-cell and grouped scores.

A cell (a relation, a question kind) scores the mean of its units' scores (a fact's P@1 hit in
percent, its reciprocal rank, ...). Per cell: stderr = sample standard deviation (ddof 1) / sqrt(n),
lm-eval-harness's `mean_stderr`; the interval resamples the cell's units with replacement. A macro
group (a mean over relations, each counting once): stderr = sqrt(sum of the cells' stderr^2) / R,
cells being independent samples; each bootstrap replicate resamples every cell's units within that
cell and takes the mean of the cell means. A pooled group (a mean over all its units, KMIR's `all`)
is treated as one cell of all its units. Intervals are 95% percentile intervals over the replicates.
Undefined (None) where a cell has fewer than two units.

Resampling n units with replacement matters only through how often each distinct score is drawn,
so a cell of hits and misses draws the number of hits, Binomial(n, hits / n): the same distribution
as drawing n indices, at a fraction of the cost. Other cells draw indices.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
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


def _percentiles(replicates: np.ndarray) -> tuple[float, float]:
    tail = (100.0 - LEVEL) / 2
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def intervals(cells: Mapping[str, np.ndarray], macro: Mapping[str, Sequence[str]] | None = None,
              pooled: Mapping[str, Sequence[str]] | None = None, n_boot: int = DEFAULT_BOOTSTRAP,
              rng: np.random.Generator | None = None) -> dict[str, Interval]:
    """Intervals of every cell, of each `macro` group (mean of its cells' means) and each `pooled` group.

    `n_boot` 0 gives standard errors only. Cells are drawn in the order given.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    out: dict[str, Interval] = {}
    reps: dict[str, np.ndarray] = {}
    errs: dict[str, float | None] = {}
    for name, values in cells.items():
        values = np.asarray(values, dtype=float)
        errs[name] = mean_stderr(values)
        if errs[name] is None:
            out[name] = UNDEFINED
            continue
        if n_boot:
            reps[name] = replicate_means(values, n_boot, rng)
            out[name] = Interval(errs[name], *_percentiles(reps[name]))
        else:
            out[name] = Interval(errs[name], None, None)
    for group, members in (macro or {}).items():
        members = list(members)
        if not members or any(errs.get(m) is None for m in members):
            out[group] = UNDEFINED
            continue
        stderr = float(np.sqrt(sum(errs[m] ** 2 for m in members)) / len(members))
        ci = _percentiles(np.mean([reps[m] for m in members], axis=0)) if n_boot else (None, None)
        out[group] = Interval(stderr, *ci)
    for group, members in (pooled or {}).items():
        values = np.concatenate([np.asarray(cells[m], dtype=float) for m in members]) if members else np.zeros(0)
        stderr = mean_stderr(values)
        if stderr is None:
            out[group] = UNDEFINED
            continue
        ci = _percentiles(replicate_means(values, n_boot, rng)) if n_boot else (None, None)
        out[group] = Interval(stderr, *ci)
    return out


def check_bootstrap(n: int) -> int:
    """A bootstrap size from the user: 0 (off) up to MAX_BOOTSTRAP."""
    if not 0 <= n <= MAX_BOOTSTRAP:
        raise ConfigError(f"--bootstrap {n}: use 0 (no intervals) up to {MAX_BOOTSTRAP:,} resamples")
    return n
