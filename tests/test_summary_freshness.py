"""Summaries read back when nothing they come from changed, scored again whenever something did."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc

import bridge.run.summaries as summaries
from bridge.run.directory import RunDir
from bridge.run.freshness import STAMP
from bridge.run.summaries import collect

GOLDEN = Path(__file__).parent / "golden"
OUTPUTS = ("summary.json", "summary.md", "curves.json", "dropped.json", "instances.parquet")


def _copy(tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(GOLDEN / "lama_run", run)
    return run


def _outputs(run: Path) -> dict[str, bytes]:
    return {name: (run / name).read_bytes() for name in OUTPUTS}


def _p1(rows: list[dict], predictor: str) -> float:
    return next(r["value"] for r in rows if r["corpus"] == "trex" and r["predictor"] == predictor
                and r["scope"] == "own" and r["setting"] == "raw" and r["group"] == "all" and r["metric"] == "p@1")


@pytest.fixture
def no_scoring(monkeypatch):
    """Make any scoring fail: what passes with it read the summaries back."""
    def refuse(*args, **kwargs):
        raise AssertionError("scored again")

    return lambda: monkeypatch.setattr(summaries, "scored_rows", refuse)


def test_nothing_changed_reads_the_summaries_back(tmp_path, no_scoring):
    run = _copy(tmp_path)
    rows = collect(run)
    written = _outputs(run)
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    config["runs"].append({"argv": ["kbc", "run", "lama"], "started": "2030-01-01T00:00:00+00:00", "limit": 12,
                           "seed": 0})  # the log of a rerun of the same sample
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    no_scoring()
    again = collect(run)
    assert again == rows
    assert json.dumps(again) == json.dumps(rows)  # the same values of the same types
    assert (_p1(again, "freq"), _p1(again, "gold"), _p1(again, "bert")) == (33.333333333333336, 97.91666666666667, 0.0)
    assert _outputs(run) == written


def test_a_rerun_of_another_sample_scores_again(tmp_path):
    """The run log is no input of the scores, but summary.md states its samples: a log that now states another
    (a rerun of every fact that asked nothing new) writes them again, saying so."""
    run = _copy(tmp_path)
    collect(run)
    assert "Sample: at most 12 facts per relation" in (run / "summary.md").read_text(encoding="utf-8")
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    config["runs"].append({"argv": ["kbc", "run", "lama"], "started": "2030-01-01T00:00:00+00:00"})
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    collect(run)
    text = (run / "summary.md").read_text(encoding="utf-8")
    assert "Sample: at most" not in text and "no `--limit` (every fact)" in text
    assert json.loads((run / STAMP).read_text(encoding="utf-8"))["samples"] == [[12, 0], [None, None]]


def test_a_changed_prediction_file_is_scored_again(tmp_path):
    run = _copy(tmp_path)
    before = collect(run)
    path = run / "predictions" / "trex" / "bert" / "P19.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "dropped" not in json.loads(line))
    record = json.loads(lines[at])
    assert record["rank_raw"] != 1
    record["rank_raw"] = 1
    lines[at] = json.dumps(record) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    fresh = _copy(tmp_path, "fresh")  # the same edit, scored from scratch
    (fresh / path.relative_to(run)).write_text("".join(lines), encoding="utf-8")
    after = collect(run)
    assert after == collect(fresh)
    assert _p1(after, "bert") != _p1(before, "bert")
    assert (run / "summary.md").read_bytes() == (fresh / "summary.md").read_bytes()


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_an_output_changed_since_is_written_again(tmp_path, change, no_scoring):
    run = _copy(tmp_path)
    collect(run)
    written = _outputs(run)
    if change == "edited":
        (run / "summary.md").write_text("edited by hand\n", encoding="utf-8")
    else:
        (run / "instances.parquet").unlink()
    collect(run)
    assert _outputs(run) == written
    no_scoring()
    collect(run)  # and now they are fresh again


def test_other_scoring_arguments_score_again(tmp_path):
    run = _copy(tmp_path)
    with_intervals = collect(run)
    without = collect(run, bootstrap=0)
    assert {r["ci_low"] for r in without} == {None} != {r["ci_low"] for r in with_intervals}
    assert json.loads((run / "config.json").read_text(encoding="utf-8"))["summary"] == {"bootstrap": 0, "seed": 0}


def test_a_stamp_without_its_outputs_is_no_proof(tmp_path):
    run = _copy(tmp_path)
    collect(run)
    stamp = json.loads((run / STAMP).read_text(encoding="utf-8"))
    assert set(stamp) == {"inputs", "files", "predictions", "prediction_files", "code", "outputs",
                          "output_files", "samples"}
    (run / STAMP).write_text("not json", encoding="utf-8")
    fresh = _copy(tmp_path, "fresh")
    assert collect(run) == collect(fresh)


def _compare_json(run: Path, capsys, *args: str) -> str:
    code, out, err = run_kbc(["compare", str(run), "freq", "bert", "--json", *args], capsys)
    assert code == 0, err
    return out


@pytest.mark.parametrize("setting", ["raw", "filtered"])
def test_compare_reads_the_fresh_per_fact_table(tmp_path, capsys, monkeypatch, setting):
    run = _copy(tmp_path)
    collect(run)
    from_records = _compare_json(_copy(tmp_path, "unscored"), capsys, "--setting", setting)  # no table there

    def refuse(*args, **kwargs):
        raise AssertionError("read the prediction records")

    with monkeypatch.context() as m:
        m.setattr(RunDir, "by_uid", refuse)
        from_table = _compare_json(run, capsys, "--setting", setting)
    unscored = json.loads(from_records.replace(str(tmp_path / "unscored"), "RUN"))
    assert [line.split(": compared as it stands")[0] for line in unscored.pop("incomplete")] == [
        "RUN: it lacks summary.json"]  # the run never scored is said to be unfinished; its numbers are the same
    assert json.loads(from_table.replace(str(run), "RUN")) == unscored
    counts = json.loads(from_table)["corpora"]["trex"]["overall"]
    assert (counts["both"], counts["only_a"], counts["only_b"], counts["neither"], counts["n"]) == \
        (0, 15, 0, 30, 45)


def test_compare_refuses_records_changed_since_the_table_until_rescored(tmp_path, capsys):
    run = _copy(tmp_path)
    collect(run)
    path = run / "predictions" / "trex" / "bert" / "P19.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "dropped" not in json.loads(line))
    record = json.loads(lines[at])
    record["rank_raw"] = 1
    lines[at] = json.dumps(record) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    code, out, err = run_kbc(["compare", str(run), "freq", "bert", "--json"], capsys)
    assert (code, out, err.splitlines()[-1]) == (2, "", f"error: {run}: its prediction files changed since its "
                                                 "summaries were written: predictions/trex/bert/P19.jsonl "
                                                 "(cut or edited); rerun the same `kbc run` command into a new "
                                                 "--out to rescore it")  # the golden run keeps no record digests
    collect(run)  # as the rerun the message names scores them
    counts = json.loads(_compare_json(run, capsys))["corpora"]["trex"]["overall"]
    assert (counts["both"], counts["only_a"], counts["only_b"], counts["neither"]) == (0, 15, 1, 29)
