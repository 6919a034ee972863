"""Paired, fact-by-fact comparison of two predictors: who gets which facts right, and is it chance?

Two predictors that differ by a point of macro P@1 may still disagree on hundreds of facts; a
summary table cannot tell these cases apart. Here every query both answered is one pair of
outcomes (right/wrong for A, right/wrong for B), which gives:
- the 2x2 counts (both right, only A, only B, neither) per relation and pooled;
- a paired exact test. Where each fact is one query, McNemar's: under "A and B are equally good",
  each discordant fact is a fair coin, so the p-value is the two-sided exact binomial test of
  `only_a` out of `only_a + only_b`. Where a prompt set asks a fact k ways, its k outcomes are one
  draw, not k: the exact sign-flip test of the per-fact differences (A's right queries minus B's),
  which under the same hypothesis are each as likely negated, the statistic being their sum; with
  one query a fact it is McNemar's test;
- a percentile bootstrap interval for the macro P@1 difference A - B (in points), resampling
  facts within each relation (a fact's queries together, as the summaries' intervals), so the
  interval matches how the summaries average (each relation counts once).
Scores of a unit between 0 and 1 (LM-KBC's F1 of a subject-relation pair, `ScoredPair`) compare the same way:
A is ahead on a pair where its score is higher, the test is the exact sign test over the pairs where A and B
differ (McNemar's where every score is 0 or 1), and the interval resamples pairs, averaged over every pair as
the challenge's all-relations row.
Pure functions over outcomes; reading runs is the caller's business.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from eval.errors import ConfigError
from eval.uncertainty import cluster_sum_replicates

CATEGORIES = ("both", "only_a", "only_b", "neither")
MAX_BOOTSTRAP = 1_000_000  # resamples: the interval is stable long before; memory grows with the count


@dataclass(frozen=True, slots=True)
class Pair:
    """One query both predictors answered: its relation, uid, whether each got it right, and the fact it asks
    (`fact` empty: the uid's own; the queries of one fact under a prompt set share it)."""

    relation: str
    uid: str
    a: bool
    b: bool
    fact: str = ""

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
    """The 2x2 table of paired outcomes (queries) and what follows from it.

    `per_fact`: each fact's (A's right queries minus B's, its queries), where some fact is asked with several
    prompts; empty where each fact is one query."""

    both: int = 0
    only_a: int = 0
    only_b: int = 0
    neither: int = 0
    per_fact: tuple[tuple[int, int], ...] = ()

    @property
    def queries(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def n(self) -> int:
        """The facts: the independent draws the test and the interval count."""
        return len(self.per_fact) if self.per_fact else self.queries

    @property
    def p1_a(self) -> float:
        """P@1 of A on these queries, in percent (a fact's prompts each count, as the summaries')."""
        return 100.0 * (self.both + self.only_a) / self.queries if self.queries else 0.0

    @property
    def p1_b(self) -> float:
        return 100.0 * (self.both + self.only_b) / self.queries if self.queries else 0.0

    @property
    def p_value(self) -> float:
        if self.per_fact:
            return sign_flip_exact([d for d, _ in self.per_fact])
        return mcnemar_exact(self.only_a, self.only_b)

    def to_dict(self) -> dict:
        return {"both": self.both, "only_a": self.only_a, "only_b": self.only_b, "neither": self.neither,
                "n": self.n, "queries": self.queries, "p1_a": self.p1_a, "p1_b": self.p1_b, "p_value": self.p_value}


def count(pairs: Iterable[Pair]) -> Counts:
    """The 2x2 counts of `pairs`, with each fact's difference where some fact is asked more than once."""
    tally = dict.fromkeys(CATEGORIES, 0)
    facts: dict[str, list[int]] = {}
    for pair in pairs:
        tally[pair.category] += 1
        fact = facts.setdefault(pair.fact or pair.uid, [0, 0])
        fact[0] += int(pair.a) - int(pair.b)
        fact[1] += 1
    clustered = len(facts) < sum(tally.values())
    return Counts(**tally, per_fact=tuple((d, k) for d, k in facts.values()) if clustered else ())


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of the discordant pairs against p = 1/2.

    With no discordant pair the predictors never disagree, and the p-value is 1.
    """
    n = only_a + only_b
    if n == 0:
        return 1.0
    from scipy.stats import binomtest  # a second of imports, paid only where a p-value is asked

    return float(binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)


def sign_flip_exact(differences: Sequence[int]) -> float:
    """Two-sided exact sign-flip p-value of the sum of integer per-fact differences: P(|T| >= |observed sum|),
    T the sum with each difference's sign drawn fairly and independently (A and B exchangeable within a fact).

    The sum is t = 2U - S, U = sum of |d| over the facts drawn positive and S = sum of |d|; U's distribution is
    built one distinct |d| at a time (v times a Binomial(m_v, 1/2), m_v facts of that size), exactly, by sums
    of non-negative terms, so small p-values keep their precision. With all |d| = 1 it is McNemar's test.
    """
    sizes = [abs(int(d)) for d in differences if d]
    observed = abs(sum(int(d) for d in differences))
    if not sizes or observed == 0:
        return 1.0
    from scipy.stats import binom

    total = sum(sizes)
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    reach = 0  # the largest U with positive probability so far
    for v, m in sorted(Counter(sizes).items()):
        pmf = binom.pmf(np.arange(m + 1), m, 0.5)
        out = np.zeros_like(dist)
        for residue in range(v):  # U values of one residue mod v shift among themselves: a dense convolution each
            lane = dist[residue:reach + 1:v]
            if len(lane):
                shifted = np.convolve(lane, pmf)
                out[residue:residue + v * len(shifted):v] = shifted
        dist, reach = out, reach + v * m
    # |2U - S| >= observed  <=>  U >= (S + observed) / 2  or  U <= (S - observed) / 2
    high = np.ceil((total + observed) / 2)
    low = np.floor((total - observed) / 2)
    u = np.arange(total + 1)
    return float(min(1.0, dist[u >= high].sum() + dist[u <= low].sum()))


def macro_difference(by_relation: Mapping[str, Counts]) -> float:
    """Macro P@1 of A minus that of B, in points: each relation counts once, as in the summaries."""
    if not by_relation:
        return 0.0
    return sum(c.p1_a - c.p1_b for c in by_relation.values()) / len(by_relation)


def bootstrap_difference(
    by_relation: Mapping[str, Counts], n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of `macro_difference`, resampling facts within each relation.

    Where each fact is one query, its contribution to the difference is +1 (only A right), -1 (only B
    right) or 0, so a resample of a relation's n facts is fully described by how many of each it draws:
    a multinomial draw with the observed proportions, which is the same distribution as drawing the
    facts one by one, at a cost independent of n. Where a fact is asked with several prompts, whole
    facts are drawn (`eval.uncertainty.cluster_sum_replicates`, as the summaries' intervals) and a
    resample's difference is its facts' summed differences over their summed queries. None when there
    is nothing to resample: no resamples asked, or no relation of two facts or more (a relation of one fact
    is a constant, as the summaries' cells of one fact, whose totals then have no interval either).
    """
    if n_boot > MAX_BOOTSTRAP:
        raise ConfigError(f"{n_boot:,} bootstrap resamples: at most {MAX_BOOTSTRAP:,}")
    rels = [c for c in by_relation.values() if c.queries]
    if n_boot <= 0 or not any(c.n > 1 for c in rels):
        return None
    rng = np.random.default_rng(seed)
    total = np.zeros(n_boot)
    for c in rels:
        if c.only_a == c.only_b == 0:
            continue  # A and B agree on every fact: the relation adds 0 to every resample
        if c.per_fact:
            diffs, sizes = (np.array(column, dtype=float) for column in zip(*c.per_fact))
            total += 100.0 * cluster_sum_replicates(diffs, sizes, n_boot, rng)
            continue
        probs = np.array([c.only_a, c.only_b, c.both + c.neither], dtype=float) / c.n
        draws = rng.multinomial(c.n, probs, size=n_boot)
        total += 100.0 * (draws[:, 0] - draws[:, 1]) / c.n
    total /= len(by_relation)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(total, [tail, 1.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True, slots=True)
class ScoredPair:
    """One unit both predictors answered, with each one's score in [0, 1] (LM-KBC: the pair's F1)."""

    relation: str
    uid: str
    a: float
    b: float

    @property
    def category(self) -> str:
        """`only_a`/`only_b`: that one scores higher; `both`: equal and above 0; `neither`: both 0."""
        if self.a > self.b:
            return "only_a"
        if self.b > self.a:
            return "only_b"
        return "both" if self.a > 0 else "neither"


@dataclass(frozen=True, slots=True)
class ScoreCounts:
    """`Counts` of scored pairs: how many A leads, B leads, they tie above 0 or both score 0 (counted once, by
    `of`), their mean scores (times `scale`: 1 keeps the fractions the summaries print, 100 gives percent), and the
    exact sign test of the leads."""

    both: int
    only_a: int
    only_b: int
    neither: int
    sum_a: float
    sum_b: float
    per_fact: tuple = ()  # each unit is one draw
    scale: float = 100.0

    @classmethod
    def of(cls, scores: Sequence[tuple[float, float]], scale: float = 100.0) -> ScoreCounts:
        tally = Counter(ScoredPair("", "", a, b).category for a, b in scores)
        return cls(*(tally[c] for c in CATEGORIES), sum(a for a, _ in scores), sum(b for _, b in scores),
                   scale=scale)

    @property
    def n(self) -> int:
        return self.both + self.only_a + self.only_b + self.neither

    queries = n

    @property
    def p1_a(self) -> float:
        return self.scale * self.sum_a / self.n if self.n else 0.0

    @property
    def p1_b(self) -> float:
        return self.scale * self.sum_b / self.n if self.n else 0.0

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.only_a, self.only_b)

    def to_dict(self) -> dict:
        return Counts.to_dict(self)  # the same keys, read from these properties


def bootstrap_mean_difference(differences: np.ndarray, n_boot: int, seed: int, level: float = 0.95
                              ) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of paired differences, resampling units (in chunks, so that a
    million resamples of many units keep memory small)."""
    if n_boot > MAX_BOOTSTRAP:
        raise ConfigError(f"{n_boot:,} bootstrap resamples: at most {MAX_BOOTSTRAP:,}")
    if n_boot <= 0 or len(differences) < 2:
        return None  # one unit is a constant: no interval, as the summaries give a cell of one fact
    rng = np.random.default_rng(seed)
    n = len(differences)
    chunk = max(1, 2_000_000 // n)
    means = np.concatenate([differences[rng.integers(0, n, size=(min(chunk, n_boot - start), n))].mean(axis=1)
                            for start in range(0, n_boot, chunk)])
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def compare_scores(pairs: Sequence[ScoredPair], n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                   scale: float = 100.0) -> Comparison:
    """`compare` for scores in [0, 1]: per relation and over every pair, the total (and its difference and
    interval) the mean over every pair, as LM-KBC's all-relations row; all times `scale` (1: fractions, as LM-KBC's
    summaries print F1; 100: percent and points)."""
    grouped: dict[str, list[tuple[float, float]]] = {}
    for pair in pairs:
        grouped.setdefault(pair.relation, []).append((pair.a, pair.b))
    overall = ScoreCounts.of([(p.a, p.b) for p in pairs], scale)
    differences = np.array([scale * (p.a - p.b) for p in pairs])
    return Comparison(
        by_relation={rel: ScoreCounts.of(grouped[rel], scale) for rel in sorted(grouped)},
        overall=overall,
        macro_p1_a=overall.p1_a,
        macro_p1_b=overall.p1_b,
        difference=overall.p1_a - overall.p1_b,
        ci=bootstrap_mean_difference(differences, n_boot, seed, level),
        n_boot=n_boot,
        seed=seed,
        level=level,
        lists={cat: [p.uid for p in pairs if p.category == cat] for cat in CATEGORIES},
        total="pooled",
        paired_test="sign",
        scale=scale,
    )


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
    paired_test: str = ""  # the test where it is neither of `test`'s two: "sign" (scores in [0, 1])
    scale: float = 100.0  # the shares and difference are percent and points (100), or fractions (1)

    @property
    def clustered(self) -> bool:
        """Some fact is asked with several prompts: counts are of queries, draws and the test of facts."""
        return bool(self.overall.per_fact)

    @property
    def test(self) -> str:
        """The paired test behind every p-value: "mcnemar" (each fact one query), "sign-flip" (per fact) or "sign"
        (scored pairs)."""
        return self.paired_test or ("sign-flip" if self.clustered else "mcnemar")

    def to_dict(self) -> dict:
        return {
            "relations": {rel: c.to_dict() for rel, c in self.by_relation.items()},
            "overall": self.overall.to_dict(),
            "test": self.test,
            "total": self.total,
            "macro_p1_a": self.macro_p1_a,
            "macro_p1_b": self.macro_p1_b,
            "difference": self.difference,
            "ci": list(self.ci) if self.ci else None,
            "ci_level": self.level,
            "bootstrap": self.n_boot,
            "seed": self.seed,
            "scale": "percent" if self.scale == 100.0 else "fraction",
        }


def compare(pairs: Sequence[Pair], n_boot: int = 1000, seed: int = 0, level: float = 0.95,
            pooled: bool = False) -> Comparison:
    """Counts per relation (sorted) and pooled, the paired test's p-values, P@1s and the bootstrap interval.

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
