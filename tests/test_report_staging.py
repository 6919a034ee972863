"""A report killed while drawing (SIGKILL: its clean-up never runs) leaves its staging folder in the report folder;
the next report there removes it, and never the folder of a report drawing there now."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run_kbc

from bridge.report import out_dir
from bridge.report.out_dir import staging
from eval.lock_holders import started_at

HOLD = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); "
        "print('held', flush=True); sys.stdin.read()")


@pytest.fixture
def reported(lama_dir, tmp_path, capsys, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq",
                            "--limit", "8", "--data-dir", str(lama_dir), "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    return run, tmp_path / "report"


def _gone_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _left(folder: Path) -> Path:
    (folder / "figures").mkdir(parents=True)
    (folder / "figures" / "p_at_k.png").write_bytes(b"half drawn")
    return folder


def test_the_next_report_removes_the_staging_folder_a_killed_report_left(reported, capsys):
    run, out = reported
    killed = _left(out / f".kbc-report-staging.{_gone_pid()}")
    other = _left(out / ".kbc-report-staging.mine")  # not named as a report names its own
    code, _, err = run_kbc(["report", str(run), "--out", str(out)], capsys)
    assert code == 0, err
    assert not killed.exists() and other.is_dir()


def test_the_staging_folder_of_a_report_drawing_now_stays(reported, capsys):
    """Its lock held (a process of another machine sharing the folder: its id names no process here), or its process
    running (a kbc from before the lock)."""
    run, out = reported
    locked = _left(out / f".kbc-report-staging.{_gone_pid()}")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(locked)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        running = _left(out / f".kbc-report-staging.{holder.pid}")
        code, _, err = run_kbc(["report", str(run), "--out", str(out)], capsys)
        assert code == 0, err
        assert (locked / "figures" / "p_at_k.png").is_file() and (running / "figures" / "p_at_k.png").is_file()
    finally:
        holder.communicate("")
    code, _, err = run_kbc(["report", str(run), "--out", str(out)], capsys)
    assert code == 0, err
    assert not locked.exists() and not running.exists()


def _other() -> subprocess.Popen:
    """A running process that is no report."""
    return subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)


@pytest.mark.skipif(started_at(os.getpid()) is None, reason="needs /proc/PID/stat (Linux)")
def test_a_killed_report_s_folder_goes_though_its_process_id_now_names_another_process(tmp_path):
    other = _other()
    try:
        start = started_at(other.pid)
        assert start is not None
        dead = _left(tmp_path / f".kbc-report-staging.{other.pid}.{start - 1}")  # its id given to `other` since
        mine_before = _left(tmp_path / f".kbc-report-staging.{os.getpid()}.{started_at(os.getpid()) - 1}")
        live = _left(tmp_path / f".kbc-report-staging.{other.pid}.{start}")  # not yet locked: made, then locked
        with staging(tmp_path) as stage:
            assert stage.name == f".kbc-report-staging.{os.getpid()}.{started_at(os.getpid())}"
        assert not dead.exists() and not mine_before.exists()
        assert (live / "figures" / "p_at_k.png").is_file()
    finally:
        other.communicate(b"")
    with staging(tmp_path):
        pass
    assert not live.exists()


def test_without_proc_a_folder_is_named_by_process_id_and_kept_while_that_process_runs(tmp_path, monkeypatch):
    """Where no /proc tells a process's start (macOS), the id alone, and a running process keeps its folder."""
    monkeypatch.setattr(out_dir, "started_at", lambda pid: None)
    other = _other()
    try:
        gone = _gone_pid()
        dead = [_left(tmp_path / f".kbc-report-staging.{gone}"), _left(tmp_path / f".kbc-report-staging.{gone}.7")]
        running = [_left(tmp_path / f".kbc-report-staging.{other.pid}"),
                   _left(tmp_path / f".kbc-report-staging.{other.pid}.7")]
        with staging(tmp_path) as stage:
            assert stage.name == f".kbc-report-staging.{os.getpid()}"
        assert not any(f.exists() for f in dead) and all(f.is_dir() for f in running)
    finally:
        other.communicate(b"")
