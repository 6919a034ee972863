"""The comparison of two runs' records: what float32 reduction order may change passes, anything else fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from record_compare import ABS, REL, assert_same_record, assert_same_run, close

tiny_models = lm_fixtures.tiny_models


def test_close_is_the_derived_bound():
    assert close(-6.597882, -6.597883)  # one thread against two, bert-base-cased's vocabulary
    assert close(-13.0, -13.0 - ABS - 13.0 * REL)
    assert not close(-13.0, -13.0 - 1.01 * (ABS + 13.0 * REL))
    assert not close(-6.597882, -6.598)
    assert not close(0.0, 2.1e-6)


def _record(answers, **extra):
    return {"uid": "u1", "answers": answers, "rank_exact_raw": 4, "extra": {"gold_logprob": -7.5, **extra}}


# two answers 2e-6 apart, as AVX2 and AVX-512 ordered them
TIED = [["athletics", -7.578059, None], ["parcel", -7.614841, None], ["lightning", -7.614843, None],
        ["Petty", -7.657249, "Q1"]]
SWAPPED = [["athletics", -7.57806, None], ["lightning", -7.614842, None], ["parcel", -7.614842, None],
           ["Petty", -7.657249, "Q1"]]


def test_near_ties_may_swap_and_nothing_else():
    assert_same_record(_record(TIED), _record(SWAPPED), "r")
    cut = TIED[:2]
    assert_same_record(_record(cut), _record([TIED[0], TIED[2]]), "r")  # the other of the tie at the cut
    wrong = [
        _record([TIED[1], TIED[0], *TIED[2:]]),  # 0.037 apart: no tie
        _record([["athletics", -7.578059, "Q2"], *TIED[1:]]),  # another id
        _record([["athletic", -7.578059, None], *TIED[1:]]),  # another label
        _record([*TIED[:3], ["Pitt", -7.6571, "Q1"]]),  # at the cut, one not tied with the last
        _record(TIED[:3]),  # fewer answers
        _record([TIED[0], TIED[1], TIED[1], TIED[3]]),  # one of a tie twice
        _record(TIED, gold_logprob=-7.51),  # a score beyond the tolerance
        {**_record(TIED), "rank_exact_raw": 5},  # ranks are exact
        {**_record(TIED), "rank_exact_raw": 4.0},  # an int is not a float
        {**_record(TIED), "other_valid": ["x"]},  # another field
    ]
    for i, other in enumerate(wrong):
        with pytest.raises(AssertionError):
            assert_same_record(_record(TIED), other, f"case {i}")


def _run(root: Path, lines: list[dict], dropped: list) -> Path:
    (root / "predictions" / "trex" / "bert").mkdir(parents=True)
    (root / "predictions" / "trex" / "bert" / "P36.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (root / "dropped.json").write_text(json.dumps(dropped))
    return root


def test_whole_runs(tmp_path):
    mine = _run(tmp_path / "a", [_record(TIED), _record(TIED[:1])], [])
    assert assert_same_run(mine, _run(tmp_path / "b", [_record(SWAPPED), _record(TIED[:1])], [])) == 2
    for name, lines, dropped in (("short", [_record(TIED)], []), ("dropped", [_record(TIED)] * 2, [{"n": 1}])):
        with pytest.raises(AssertionError):
            assert_same_run(mine, _run(tmp_path / name, lines, dropped))


@pytest.mark.heavy
def test_one_thread_of_plain_code_agrees_with_this_machine(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """The tolerance holds on the CPU running the suite: a masked and a causal LM's records made here (in this
    process, as the suite's other runs are made, on a thread per core) agree with those made on one thread without
    SIMD (`ATEN_CPU_CAPABILITY=default`, which a process reads as torch starts), the farthest layout any x86-64
    has."""
    import torch

    argv = ["run", "lama", "--corpus", "trex", "--relations", "P101", "P264", "P140", "--limit", "4", "--predictors",
            f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}", "--data-dir", str(lama_dir), "--quiet"]
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache-here"))
    before = torch.get_num_threads()
    torch.set_num_threads(max(2, len(os.sched_getaffinity(0))))  # the suite's workers share the cores: not here
    try:
        code, _, err = run_kbc([*argv, "--out", str(tmp_path / "here")], capsys)
    finally:
        torch.set_num_threads(before)
    assert code == 0, err
    plain = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "KBC_CACHE": str(tmp_path / "cache-plain")}
    done = subprocess.run([sys.executable, "-m", "bridge.cli", *argv, "--out", str(tmp_path / "plain")],
                          capture_output=True, text=True, timeout=600, env={**os.environ, **plain})
    assert done.returncode == 0, done.stderr
    assert assert_same_run(tmp_path / "here", tmp_path / "plain", ranks=False) == 2 * 3 * 4
