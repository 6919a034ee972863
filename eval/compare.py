"""Paired, fact-by-fact comparison of two predictors: who gets which facts right, and is it chance?

Two predictors that differ by a point of macro P@1 may still disagree on hundreds of facts; a
summary table cannot tell these cases apart. Here every fact both answered is one pair of
outcomes (right/wrong for A, right/wrong for B), which gives:
- the 2x2 counts (both right, only A, only B, neither) per relation and pooled;
- McNemar's exact test: under "A and B are equally good", each discordant fact is a fair coin,
  so the p-value is the two-sided exact binomial test of `only_a` out of `only_a + only_b`;
- a percentile bootstrap interval for the macro P@1 difference A - B (in points), resampling
  facts within each relation, so the interval matches how the summaries average (each relation
  counts once).
Pure functions over outcomes; reading runs is the caller's business.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from eval.errors import ConfigError

CATEGORIES = ("both", "only_a", "only_b", "neither")
MAX_BOOTSTRAP = 1_000_000  # resamples: the interval is stable long before; memory grows with the count


@dataclass(frozen=True, slots=True)
class Pair:
    """One fact both predictors answered: its relation, uid and whether each got it right."""

    relation: str
    uid: str
    a: bool
    b: bool

    @property
    def category(self) -> str:
        if self.a and self.b:
            return "both"
        if self.a:
            return "only_a"
        if self.b:
            return "only_b"
        return "neither"


@dataclass(frozen=True, slots=True)
class Counts:
    """The 2x2 table of paired outcomes and what follows from it."""

    both: int = 0
    only_a: int = 0
    only_b: int = 0
    neither: int = 0

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def p1_a(self) -> float:
        """P@1 of A on these facts, in percent."""
        return 100.0 * (self.both + self.only_a) / self.n if self.n else 0.0

    @property
    def p1_b(self) -> float:
        return 100.0 * (self.both + self.only_b) / self.n if self.n else 0.0

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.only_a, self.only_b)

    def to_dict(self) -> dict:
        return {**asdict(self), "n": self.n, "p1_a": self.p1_a, "p1_b": self.p1_b, "p_value": self.p_value}


def count(pairs: Iterable[Pair]) -> Counts:
    tally = dict.fromkeys(CATEGORIES, 0)
    for pair in pairs:
        tally[pair.category] += 1
    return Counts(**tally)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs against p = 1/2.

    With no discordant pair the predictors never disagree, and the p-value is 1.
    """
    n = only_a + only_b
    if n == 0:
        return 1.0
    from scipy.stats import binomtest  # a second of imports, paid only where a p-value is asked

    return float(binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)


def macro_difference(by_relation: Mapping[str, Counts]) -> float:
    """Macro P@1 of A minus that of B, in points: each relation counts once, as in the summaries."""
    if not by_relation:
        return 0.0
    return sum(c.p1_a - c.p1_b for c in by_relation.values()) / len(by_relation)


def bootstrap_difference(
    by_relation: Mapping[str, Counts], n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `macro_difference`, resampling facts within each relation.

    A fact's contribution to the difference is +1 (only A right), -1 (only B right) or 0, so a
    resample of a relation's n facts is fully described by how many of each it draws: a
    multinomial draw with the observed proportions, which is the same distribution as drawing
    the facts one by one, at a cost independent of n. None when there is nothing to resample.
    """
    if n_boot > MAX_BOOTSTRAP:
        raise ConfigError(f"{n_boot:,} bootstrap resamples: at most {MAX_BOOTSTRAP:,}")
    rels = [c for c in by_relation.values() if c.n]
    if n_boot <= 0 or not rels:
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for c in rels:
        if c.only_a == c.only_b == 0:
            continue  # A and B agree on every fact: the relation adds 0 to every resample
        probs = np.array([c.only_a, c.only_b, c.both + c.neither], dtype=float) / c.n
        draws = rng.multinomial(c.n, probs, size=n_boot)
        total += 100.0 * (draws[:, 0] - draws[:, 1]) / c.n
    total /= len(by_relation)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(total, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass
class Comparison:
    """Everything `kbc compare` reports for one corpus."""

    by_relation: dict[str, Counts]
    overall: Counts
    macro_p1_a: float
    macro_p1_b: float
    difference: float
    ci: tuple[float, float] | None
    n_boot: int
    seed: int
    level: float = 0.95
    lists: dict[str, list[str]] = field(default_factory=dict)
    total: str = "macro"  # how the total, its difference and interval average: "macro" over groups, or "pooled"

    def to_dict(self) -> dict:
        return {
            "relations": {rel: c.to_dict() for rel, c in self.by_relation.items()},
            "overall": self.overall.to_dict(),
            "total": self.total,
            "macro_p1_a": self.macro_p1_a,
            "macro_p1_b": self.macro_p1_b,
            "difference": self.difference,
            "ci": list(self.ci) if self.ci else None,
            "ci_level": self.level,
            "bootstrap": self.n_boot,
            "seed": self.seed,
        }


def compare(pairs: Sequence[Pair], n_boot: int = 1000, seed: int = 0, level: float = 0.95,
            pooled: bool = False) -> Comparison:
    """Counts per relation (sorted) and pooled, pooled McNemar, P@1s and the bootstrap interval.

    The totals (`macro_p1_a/b`, `difference`, `ci`) are macro over relations, as LAMA's summaries; with
    `pooled`, over every pair at once (resampled as one group), as summaries that average over units.
    """
    grouped: dict[str, list[Pair]] = {}
    for pair in pairs:
        grouped.setdefault(pair.relation, []).append(pair)
    by_relation = {rel: count(grouped[rel]) for rel in sorted(grouped)}
    totals = {"all": count(pairs)} if pooled else by_relation
    macro_a = sum(c.p1_a for c in totals.values()) / len(totals) if totals else 0.0
    macro_b = sum(c.p1_b for c in totals.values()) / len(totals) if totals else 0.0
    lists = {cat: [p.uid for p in pairs if p.category == cat] for cat in CATEGORIES}
    return Comparison(
        by_relation=by_relation,
        overall=count(pairs),
        macro_p1_a=macro_a,
        macro_p1_b=macro_b,
        difference=macro_difference(totals),
        ci=bootstrap_difference(totals, n_boot, seed, level),
        n_boot=n_boot,
        seed=seed,
        level=level,
        lists=lists,
        total="pooled" if pooled else "macro",
    )
