"""--dtype bfloat16/float16 on a CPU without instructions for them warns once, decided by the CPU's flags; `kbc run`
takes either."""

from __future__ import annotations

import json
import logging

import pytest
from cli_support import run_kbc
from lm_fixtures import kbc_log, tiny_models  # noqa: F401

from lm import precision
from lm.loading import load

NO_BF16 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n\n"
WITH_BF16 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n\n"
WITH_AMX = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx512f amx_bf16 amx_tile amx_fp16\n\n"


@pytest.fixture
def cpuinfo(tmp_path, monkeypatch):
    """Point the capability source at a written cpuinfo; forget earlier warnings."""
    monkeypatch.setattr(precision, "_warned", set())

    def write(text: str | None):
        path = tmp_path / "cpuinfo"
        if text is not None:
            path.write_text(text)
        monkeypatch.setattr(precision, "CPUINFO", path)
        return path
    return write


def warnings_in(records: list[tuple[int, str]]) -> list[str]:
    return [message for level, message in records if level == logging.WARNING]


def test_flags_decide_not_the_vendor(cpuinfo):
    cpuinfo(NO_BF16)
    assert precision.cpu_has_fast("bfloat16") is False
    assert precision.cpu_has_fast("float16") is False
    assert precision.cpu_has_fast("float32") is True
    cpuinfo(WITH_BF16)
    assert precision.cpu_has_fast("bf16") is True
    assert precision.cpu_has_fast("float16") is False
    cpuinfo(WITH_AMX)
    assert precision.cpu_has_fast("bfloat16") is True
    assert precision.cpu_has_fast("fp16") is True


def test_warns_once_per_dtype_on_cpu_only(cpuinfo, kbc_log):  # noqa: F811
    cpuinfo(NO_BF16)
    assert precision.warn_if_slow("bfloat16", "cpu") is True
    assert precision.warn_if_slow("bf16", "cpu") is False  # the same dtype by another name
    assert precision.warn_if_slow("float32", "cpu") is False
    assert precision.warn_if_slow("float16", "cuda") is False
    assert precision.warn_if_slow("float16", "cpu") is True
    first, second = warnings_in(kbc_log)
    assert first.startswith("--dtype bfloat16 on a CPU without avx512_bf16 or amx_bf16 instructions")
    assert second == ("--dtype float16 on a CPU without avx512_fp16 or amx_fp16 instructions: torch emulates float16 "
                      "matrix products there, which run slower than float32's; a model of real size spends most of "
                      "its time in them and is likely faster with --dtype float32 (a tiny model's time goes mostly to "
                      "other work)")


def test_no_warning_where_the_cpu_has_the_instructions(cpuinfo, kbc_log):  # noqa: F811
    cpuinfo(WITH_BF16)
    assert precision.warn_if_slow("bfloat16", "cpu") is False
    assert warnings_in(kbc_log) == []


def test_unreadable_flags_ask_torch(cpuinfo, monkeypatch):
    cpuinfo(None)  # no such file
    monkeypatch.setattr(precision, "torch_says_fast", lambda dtype: dtype == "bfloat16")
    assert precision.cpu_flags() is None
    assert precision.cpu_has_fast("bfloat16") is True
    assert precision.cpu_has_fast("float16") is False


def test_loading_twice_in_bfloat16_warns_once(cpuinfo, kbc_log, tiny_models):  # noqa: F811
    cpuinfo(NO_BF16)
    path = str(tiny_models("bert-cased"))
    load(path, "masked", "cpu", "bfloat16")
    load(path, "masked", "cpu", "bfloat16")
    load(path, "masked", "cpu", "float32")
    assert len(warnings_in(kbc_log)) == 1


def test_run_in_float16_warns_once_and_records_it(cpuinfo, tiny_models, lama_dir, tmp_path, monkeypatch,  # noqa: F811
                                                  capsys):
    cpuinfo(NO_BF16)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = str(tiny_models("bert-cased"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--predictors",
                            f"bert={path}", f"bert16={path}", "--dtype", "float16", "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 0, err
    assert err.count("--dtype float16 on a CPU without avx512_fp16 or amx_fp16 instructions") == 1
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    described = [c for by_corpus in config["predictor_configs"].values() for c in by_corpus.values()]
    assert [c["dtype"] for c in described] == ["float16", "float16"]
