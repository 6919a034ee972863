"""Comparing the prediction records of two runs whose LM scores came from different float32 reduction orders.

Another torch thread count (Ray actors with one thread each against a two-thread local run), another instruction
set (AVX-512, AVX2 or plain code: `ATEN_CPU_CAPABILITY`) or another CPU groups the same float32 sums differently
(torch's CPU matmuls and one-query attention split their work by thread count and SIMD width), so a score may
differ in its last bits. Everything else in a record (uids, prompts, answers, ids, counts) is compared exactly,
but for answers whose scores are within the tolerance of each other: float32 cannot order such a
near-tie, and AVX2 and AVX-512 did order one pair 2e-6 apart differently (`assert_same_answers`).

The tolerance, for two recorded scores a and b (`close`):

    |a - b| <= ABS + REL * max(|a|, |b|)

- ABS = 1e-6: records keep six decimals, and two values that differ by d round to values that differ by up to
  d + 1e-6.
- REL = 64 * eps32 (eps32 = 2**-23; REL is about 7.6e-6): a score is a float32 log-probability (a causal LM's is
  a sum of them, all of one sign, so relative bounds add up). Its path holds four kinds of reduction whose grouping
  may change: the hidden-size dot products, the attention sums over the sequence, the layer-norm means and the
  log-sum-exp over the vocabulary, each of at most 2**16 terms (GPT-2's 50,257 tokens are the longest). A blocked
  or pairwise float32 sum of n terms errs by at most log2(n) * eps32 relative to its magnitude, 16 * eps32 here,
  so the four move a score by at most 64 * eps32 of its size.

Measured on the tiny test models (2 layers, hidden size 32) over 328 LAMA queries of BERT and RoBERTa and 180 of
GPT-2, against two threads with AVX-512: one thread differs by at most 2.7 eps32 (relative, six-decimal rounding
included), three threads not at all, AVX2 by 3.4 eps32 and plain code by 3.8 eps32; GPT-2's sentence scores move
only with the instruction set (1 eps32). No rank moved. Ranks are compared exactly between runs of one thread
layout on one machine (the Ray tests run their local side on one thread, as each actor): the same sums in the
same order give the same bits. Across thread counts or instruction sets they are left out (`ranks=False`): a few
golds of the Ray tests' queries have another candidate within 4e-7 (relative) of their score, which float32 may
rank either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EPS32 = 2.0 ** -23
REL = 64 * EPS32
ABS = 1e-6


@contextmanager
def actor_threads() -> Iterator[None]:
    """Runs in this process with a Ray actor's one torch thread: the same float32 sums in the same order, so the
    records are the same to the last bit and exact ranks can be compared (other thread counts agree within
    `close`, and a gold's exact rank may move past a candidate that close)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def close(a: float, b: float) -> bool:
    """Two scores of the same record agree within what float32 reduction order and six-decimal rounding allow."""
    return abs(a - b) <= ABS + REL * max(abs(a), abs(b)) + 1e-12  # 1e-12: the decimals' binary representation


def records(out: Path) -> dict[str, list[dict]]:
    """Every prediction file of a run directory, by its path under the run: its records in file order."""
    return {str(p.relative_to(out)): [json.loads(line) for line in p.read_text().splitlines()]
            for p in sorted((out / "predictions").rglob("*.jsonl"))}


def assert_same_answers(a: list, b: list, where: str) -> None:
    """Two ranked answer lists (`[label, score, id]` rows): the same answers in the same order, scores `close`,
    except that answers whose scores are all `close` to each other (a near-tie float32 cannot order) may come in
    another order, and one of them may stand in for another at the cut."""
    def name(row: list) -> str:
        return json.dumps(row[:1] + row[2:])

    assert len(a) == len(b) and len(set(map(name, a))) == len(set(map(name, b))), f"{where}: {a!r} != {b!r}"
    for i, (x, y) in enumerate(zip(a, b)):
        assert_same_record(x[1], y[1], f"{where}[{i}][1]")
        if name(x) == name(y):
            continue
        j = next((j for j, z in enumerate(a) if name(z) == name(y)), len(a) - 1)  # else cut off
        tie = a[min(i, j):max(i, j) + 1]
        assert all(close(z[1], x[1]) for z in tie) and close(y[1], x[1]), f"{where}[{i}]: {x!r} != {y!r}"


def assert_same_record(a, b, where: str, ranks: bool = True) -> None:
    """`a` and `b` equal field by field: floats `close`, ranked answers as `assert_same_answers` says, everything
    else exactly; ranks (`rank_*` fields) too, or not at all with `ranks=False` (runs of different thread counts
    or instruction sets, where a gold may have another candidate within the tolerance)."""
    if isinstance(a, dict) and isinstance(b, dict):
        skip = {k for k in a if not ranks and k.startswith("rank_")}
        if isinstance(a.get("answers"), list):
            assert isinstance(b.get("answers"), list), f"{where}.answers: {b.get('answers')!r}"
            assert_same_answers(a["answers"], b["answers"], f"{where}.answers")
            skip.add("answers")
        a, b = ({k: v for k, v in r.items() if k not in skip} for r in (a, b))
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, float) and isinstance(b, float) and close(a, b), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
        for key in a:
            assert_same_record(a[key], b[key], f"{where}.{key}", ranks)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_record(x, y, f"{where}[{i}]", ranks)
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def assert_same_run(local: Path, other: Path, ranks: bool = True) -> int:
    """The same prediction files with the same records (`assert_same_record`) and the same `dropped.json`; returns
    the number of records compared."""
    mine, theirs = records(local), records(other)
    assert list(mine) == list(theirs)
    for path, lines in mine.items():
        assert_same_record(lines, theirs[path], path, ranks)
    assert json.loads((local / "dropped.json").read_text()) == json.loads((other / "dropped.json").read_text())
    return sum(len(lines) for lines in mine.values())
