"""What asking a model by generation cost, kept as the run goes: an attempt killed mid-run (as by SIGKILL: no
handler, no `finally`) still counts every request it sent, so that the report's usage table of the resumed run
says what the server was asked, and the queries answered are the run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_model_dir
from served_support import Scripted, completion

from bridge.predictors.generation import RUN_TOTALS
from bridge.run.usage_log import FOLDER

# `kbc ARGV` ended as a SIGKILL ends it once K responses are in the response cache: the attempt's records,
# config.json and usage file are left as they stood (the K-th answer is cached, its chunk's records are not written)
KILLED_AFTER = """
import os, sys
from lm.response_cache import ResponseCache
put, left = ResponseCache.put, [int(sys.argv[1])]
def put_then_die(self, *args, **kwargs):
    put(self, *args, **kwargs)
    left[0] -= 1
    if not left[0]:
        os._exit(9)
ResponseCache.put = put_then_die
from bridge.cli import main
main(sys.argv[2:])
"""

RELATIONS = ["date_of_birth", "place_of_birth"]  # a chunk each: the kill comes in the second


def killed_run(argv: list[str], responses: int, cache: Path) -> None:
    env = {**os.environ, "KBC_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", KILLED_AFTER, str(responses), *argv], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 9, done.stderr


def usage_row(report: Path) -> dict[str, str]:
    lines = report.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| predictor | corpus | queries answered"))
    head = [c.strip() for c in lines[at].strip("|").split("|")]
    row = [c.strip() for c in lines[at + 2].strip("|").split("|")]
    return dict(zip(head, row))


def usage_caption(report: Path) -> str:
    return next(line for line in report.read_text().splitlines() if line.startswith("*Queries, requests and tokens"))


def recorded(out: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (out / "predictions" / "google_re").rglob("*.jsonl"))


def test_a_served_run_killed_twice_counts_every_request_the_server_received(lama_dir, tmp_path, capsys,
                                                                            monkeypatch):
    server = Scripted(lambda path, body, n: (200, completion("Paris", "chat")))
    try:
        out = tmp_path / "run"
        argv = ["run", "lama", "--corpus", "google_re", "--relations", *RELATIONS, "--predictors",
                f"llm={server.url}", "--set", "llm.model=tiny", "--set", "llm.concurrency=1", "--limit", "6",
                "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "20"]
        killed_run(argv, 8, tmp_path / "cache")  # the first relation recorded, two of the second answered
        killed_run(argv, 2, tmp_path / "cache")  # and two more (after the check of the run's first answer)
        assert recorded(out) == 6
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
        code, _, err = run_kbc(argv, capsys)
        assert code == 0, err
        code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
        assert code == 0, err
    finally:
        server.close()
    row = usage_row(tmp_path / "report" / "report.md")
    assert row["requests sent (local: generations)"] == str(len(server.bodies))
    assert row["queries answered"] == str(recorded(out)) == "12"
    assert "killed" not in usage_caption(tmp_path / "report" / "report.md")
    # a usage file damaged before its last line is refused, naming the line
    path = out / FOLDER / "1.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"sent": 1', b'"sent": one', 1))
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "again")], capsys)
    assert code == 2 and err.splitlines()[-1].startswith(f"error: {path}:1: not a line of counts this run wrote")
    assert "Traceback" not in err


def test_a_local_generating_run_killed_mid_chunk_counts_each_query_once(lama_dir, tmp_path, capsys, monkeypatch):
    model = tiny_model_dir("gpt2", tmp_path / "gpt2")
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "google_re", "--relations", *RELATIONS, "--predictors", f"llm={model}",
            "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=3", "--batch-size", "1", "--limit",
            "4", "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "20"]
    killed_run(argv, 6, tmp_path / "cache")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    row = usage_row(tmp_path / "report" / "report.md")
    prompts = {json.loads(line)["prompt"] for p in (out / "predictions").rglob("*.jsonl")
               for line in p.read_text().splitlines()}
    assert row["queries answered"] == str(recorded(out)) == "8"
    assert row["requests sent (local: generations)"] == str(len(prompts))
    # what an attempt of an earlier version added to config.json as it ended is counted too
    config = json.loads((out / "config.json").read_text())
    config["usage"] = {"google_re": {"llm": {"asked": 2, "sent": 5}}}
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "both")], capsys)
    assert code == 0, err
    both = usage_row(tmp_path / "both" / "report.md")
    assert (both["queries answered"], both["requests sent (local: generations)"]) == ("10", str(len(prompts) + 5))


def _run_with_usage(tmp_path: Path, lines: bytes) -> Path:
    out = tmp_path / "run"
    (out / FOLDER).mkdir(parents=True)
    (out / FOLDER / "1.jsonl").write_bytes(lines)
    return out


GOOD = b'{"corpus": "google_re", "predictor": "llm", "sent": 3, "asked": 3}\n'


def test_a_line_torn_by_a_kill_is_left_out_and_a_garbled_one_refused(tmp_path):
    from bridge.run.usage_log import read_usage
    from eval.errors import DataError

    out = _run_with_usage(tmp_path, GOOD * 2 + b'{"corpus": "google_re", "pred')
    assert read_usage(out) == {"google_re": {"llm": {**dict.fromkeys(RUN_TOTALS, 0), "sent": 6, "asked": 6}}}
    for bad in (b'{"corpus": "google_re", "pred\n' + GOOD,
                GOOD + b'{"corpus": "google_re", "predictor": "llm", "sent": "3"}\n', GOOD + b"\xff\n",
                GOOD + b'{"corpus": "x", "predictor": "y", "sent": 1, "oops": 2}\n'):
        (out / FOLDER / "1.jsonl").write_bytes(bad)
        with pytest.raises(DataError, match=r"1\.jsonl:[12]: not a line of counts this run wrote"):
            read_usage(out)
