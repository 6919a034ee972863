"""bench/gpu.py's statement stage: one pass line per timed run, none of the warm-up's."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def test_statement_stage_prints_each_pass_line_once(shared_data, monkeypatch, capsys):
    import torch

    sys.path.insert(0, str(ROOT))
    from bench import gpu, statement_scoring

    def run_ours(model, tokenizer, kind, cases, args):
        dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        print(f"  tokens run: {len(cases)} facts, {dtype}", file=sys.stderr)
        return 1.0, 1.0, [[0.0, 1.0] for _ in cases]

    monkeypatch.setattr(statement_scoring, "run_ours", run_ours)
    monkeypatch.setattr(statement_scoring, "run_lpq", lambda model, tokenizer, kind, cases, args: (2.0, 2.0, []))
    cfg = SimpleNamespace(bear=2, causal_batch=4, lpq_batches=[1])
    out: dict = {}
    gpu.statement_lines(out, cfg, shared_data, {"gpt2": (torch.nn.Linear(1, 1), None)}, "cpu", True)
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "tokens run" in line] == ["  tokens run: 2 facts, float32",
                                                              "  tokens run: 2 facts, bfloat16"]
    assert out["statement_gpt2_bf16_vs_fp32"] == 1.0


def test_statement_bench_builds_its_tiny_models_without_pytest():
    """`--size tiny` runs where only the `all` extra is installed: the tiny models need no pytest."""
    import subprocess

    code = ("import sys, runpy; sys.modules['pytest'] = None; "
            "bench = runpy.run_path('bench/statement_scoring.py'); "
            "model, ours, theirs = bench['build']('gpt2', 'tiny'); print(model.config.n_layer, model.config.n_embd)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, "pytest" in done.stderr) == (0, "2 32\n", False), done.stderr
