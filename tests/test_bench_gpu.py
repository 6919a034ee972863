"""bench/gpu.py runs end to end on a CPU with tiny models (`--smoke`) and prints its one-line summary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE_KEYS = {
    "device", "masked_tokenise_s", "masked_raw_fp32_qps", "masked_raw_bf16_qps", "masked_fp32_qps", "masked_fp32_path",
    "masked_bf16_qps",
    "masked_bf16_path", "masked_fp16_qps", "masked_fp16_path", "masked_bf16_vs_fp32", "trex_fp32_s",
    "trex_fp32_staged_s", "fp32_vs_cpu_max_abs", "fp32_vs_cpu_top10_same", "fp32_vs_cpu_ranks_same",
    "causal_raw_fp32_sps", "causal_fp32_sps", "causal_fp32_path", "causal_raw_bf16_sps", "causal_bf16_sps",
    "causal_bf16_path", "statement_bert_bf16_vs_fp32", "statement_bert_vs_lpq", "statement_gpt2_bf16_vs_fp32",
    "statement_gpt2_vs_lpq", "top1_agreement_bf16", "fewrel_epoch_s", "fewrel_epochs", "fewrel_10ep_s",
    "fewrel_all_10", "total_s",
}


@pytest.mark.heavy
def test_smoke_run_prints_every_line_of_the_summary(capsys):
    sys.path.insert(0, str(ROOT))
    from bench import gpu

    summary = gpu.main(["--device", "cpu", "--smoke"])
    *_, note, last = capsys.readouterr().out.strip().splitlines()
    assert note == ("note: --smoke runs tiny models on a few queries: its rates and ratios (bf16_vs_fp32, vs_lpq, "
                    "...) check that the code runs, not speed")
    printed = dict(item.split("=", 1) for item in last.split(" "))
    assert set(printed) == set(summary) == SMOKE_KEYS
    assert printed["device"] == "cpu"
    assert printed["masked_fp32_path"] == printed["masked_bf16_path"] == "last-layer+head-at-mask"
    assert printed["causal_fp32_path"] == printed["causal_bf16_path"] == "shared-prefix"
    assert float(printed["statement_bert_vs_lpq"]) > 0 and float(printed["statement_gpt2_vs_lpq"]) > 0
    assert 0.0 <= float(printed["top1_agreement_bf16"]) <= 1.0
    # the CPU against itself: the same engine twice (batches of 8 and 64) gives the same answers
    assert printed["fp32_vs_cpu_top10_same"] == printed["fp32_vs_cpu_ranks_same"] == "1.0"
    assert float(printed["fp32_vs_cpu_max_abs"]) < 1e-4
    # the smoke run trains its two epochs over a slice, so the 10 epochs over the split are a projection
    assert printed["fewrel_epochs"] == "2" and printed["fewrel_all_10"] == "no"
    assert float(printed["fewrel_10ep_s"]) > float(printed["fewrel_epoch_s"]) > 0
    assert all(float(printed[k]) > 0 for k in SMOKE_KEYS if k.endswith(("_qps", "_sps", "_s")))


@pytest.mark.heavy
def test_only_measures_the_stages_it_names(capsys):
    """`--only statement` reruns that line alone: its keys and the device's, nothing of the other stages."""
    sys.path.insert(0, str(ROOT))
    from bench import gpu

    summary = gpu.main(["--device", "cpu", "--smoke", "--only", "statement"])
    assert set(summary) == {"device", "statement_bert_bf16_vs_fp32", "statement_bert_vs_lpq",
                            "statement_gpt2_bf16_vs_fp32", "statement_gpt2_vs_lpq", "total_s"}
    printed = capsys.readouterr().out
    assert "[stage masked" not in printed
    assert printed.strip().splitlines()[-2].startswith("note: --smoke runs tiny models")


def test_a_quick_stage_is_printed_as_the_time_it_took_never_zero():
    sys.path.insert(0, str(ROOT))
    from bench.gpu import shown_seconds

    assert [shown_seconds(s) for s in (0.00004, 0.000412, 0.1, 6.63, 144.94)] == [4e-05, 0.00041, 0.1, 6.6, 144.9]
