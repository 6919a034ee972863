"""A run's progress bar over queries, honest about what it still has to compute.

Answers read back from a result cache come at once, thousands a second where a model computes a few: counted as
progress, they would make the rate and the time left look far better than the work left is (a resume or a run into
a new `--out` whose first answers the cache holds). They leave the bar's total instead and are shown beside it, so
its count, rate and time left are those of the answers computed. A stage the cache answered whole has nothing to
count: its bar says so in words, not as tqdm's count of a bar without a total (`0sentence [00:00, ?sentence/s]`),
and so does a stage left with nothing to ask (every query dropped or unanswerable).
"""

from __future__ import annotations

import sys

from tqdm import tqdm


class QueryBar:
    """tqdm over a stage's queries (or the sentences they score): `computed(n)` moves it, `from_cache(n)` takes n
    from its total."""

    def __init__(self, total: int, desc: str, disable: bool, bar=tqdm, unit: str = "query") -> None:
        self.bar = bar(total=total, desc=desc, unit=unit, disable=disable, file=sys.stderr)
        self.cached = 0
        self.unit = unit
        if total <= 0:  # no count, rate nor time left to show: one line saying so
            self.bar.bar_format = "{desc}: nothing to ask"

    def computed(self, n: int) -> None:
        if n > 0:
            self.bar.update(n)

    def from_cache(self, n: int) -> None:
        if n <= 0:
            return
        self.cached += n
        self.bar.total = max(self.bar.total - n, 0)
        said = f"{self.cached:,} {plural(self.unit, self.cached)} from the cache"
        if not self.bar.total:  # nothing left to compute: no count, rate nor time left to show
            self.bar.bar_format = "{desc}: " + f"{self.cached:,} {plural(self.unit, self.cached)}, all from the cache"
        self.bar.set_postfix_str(said)

    def close(self) -> None:
        self.bar.close()


def plural(unit: str, n: int) -> str:
    """`unit` (query, sentence, statement) as `n` of it reads."""
    if n == 1:
        return unit
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def cached_part(written: int, hits: int, misses: int) -> int:
    """How many of a chunk's `written` queries a result cache answered, from its hits and misses while the chunk
    was answered (a cache keyed per sentence or statement counts those: the share is carried over to queries)."""
    looked = hits + misses
    return round(written * hits / looked) if looked > 0 and written > 0 else 0
