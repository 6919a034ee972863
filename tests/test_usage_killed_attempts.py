"""The report's usage table of a run resumed after a kill: an attempt of an earlier version (or under Ray) added what
it asked, sent and answered when it ended, so one killed first (SIGKILL, a power cut: config.json's runs log records
no end for it) added nothing, and the table says whose counts leave it out rather than show them as the whole run's
(`test_usage_log`: attempts now keep their counts as they go)."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return tiny_model_dir("gpt2", tmp_path_factory.mktemp("gpt2"))


def _usage_caption(md: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("*Queries, requests and tokens"))


def test_counts_that_leave_out_a_killed_attempt_say_so(gpt2_dir, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors",
            f"llm={gpt2_dir}", "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=5", "--limit", "3",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "20"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "whole")], capsys)
    assert code == 0, err
    assert "killed" not in _usage_caption((tmp_path / "whole" / "report.md").read_text())

    # what a SIGKILL left in the runs log of an earlier version, which kept no usage file: an attempt that started
    # and recorded no end (nor its usage)
    config = json.loads((out / "config.json").read_text())
    killed = {k: v for k, v in config["runs"][0].items() if k not in ("finished", "failed", "error", "usage_log")}
    config["runs"].insert(0, killed)
    (out / "config.json").write_text(json.dumps(config, indent=1))
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "after")], capsys)
    assert code == 0, err
    caption = _usage_caption((tmp_path / "after" / "report.md").read_text())
    assert "Attempts killed before they could add their counts" in caption and caption.endswith(": llm 1*")
