"""bench/lm_throughput.py times its matmul line in the layout the model's layers use."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_matmul_line_times_f_linear_with_the_weight_stored_out_by_in(monkeypatch):
    """`nn.Linear` runs `F.linear(x, weight[out, in])`; a plain `a @ b` with a [768 x 3072] matrix takes another
    path, several times slower in bfloat16 on a CPU without bfloat16 instructions, so it must not be what is timed."""
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT))
    from bench import lm_throughput

    shapes = []
    real = F.linear

    def counted(x, weight, *args):
        shapes.append((tuple(x.shape), tuple(weight.shape), x.dtype))
        return real(x, weight, *args)

    monkeypatch.setattr(F, "linear", counted)
    assert lm_throughput.matmul_rate(torch.bfloat16, seconds=0.01) > 0
    assert len(shapes) >= 6  # five warm-up products, then the timed ones
    assert set(shapes) == {((512, 768), (3072, 768), torch.bfloat16)}
    assert lm_throughput.MATMUL == "F.linear([512 x 768], weight [3072 x 768])"
