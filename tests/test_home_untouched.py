"""Where a run and its report write: with KBC_CACHE set, nothing into HOME (read-only on many clusters): matplotlib's
font list and settings folder live in kbc's cache, so a user's matplotlibrc there cannot change the figures."""

from __future__ import annotations

import os
import subprocess
import sys

DROPPED = ("MPLCONFIGDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")


def _kbc(argv: list[str], home, cache) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k not in DROPPED}, "HOME": str(home), "KBC_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "bridge.cli", *argv], capture_output=True, text=True, timeout=300,
                          env=env)


def test_run_and_report_leave_home_alone(lama_dir, tmp_path):
    home, cache, out = tmp_path / "home", tmp_path / "cache", tmp_path / "run"
    home.mkdir()
    done = _kbc(["-q", "run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "30", "--predictors",
                 "freq", "--data-dir", str(lama_dir), "--out", str(out)], home, cache)
    assert done.returncode == 0, done.stderr
    done = _kbc(["report", str(out), "--out", str(tmp_path / "report")], home, cache)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "report.html").is_file()
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert (cache / "matplotlib").is_dir()


def test_a_file_named_to_the_longest_name_is_written(tmp_path):
    """`kbc leaderboard --out` and a report's pages are written aside first: the aside name must fit as well."""
    from bridge.report.out_dir import write_text

    target = tmp_path / ("é" * 126 + "xyz")  # 255 bytes, the longest name the file system takes
    write_text(target, "| rank |\n")
    assert target.read_text(encoding="utf-8") == "| rank |\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_graph_store_home_cannot_hold_says_what_to_set(lama_dir, tmp_path, capsys, monkeypatch):
    """No KBC_CACHE and a read-only HOME (simulated: root writes anywhere): one line naming the fix."""
    from pathlib import Path

    from cli_support import run_kbc

    home, mkdir = tmp_path / "home", Path.mkdir

    def read_only_home(self, *args, **kwargs):
        if self.is_relative_to(home / ".cache" / "kbcompare" / "store"):
            raise PermissionError(13, "Permission denied", str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.delenv("KBC_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(Path, "mkdir", read_only_home)
    code, _, err = run_kbc(["-q", "run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "5",
                            "--predictors", "kb", "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.startswith("error")]
    assert line == (f"error: cannot make the graph store {home}/.cache/kbcompare/store (Permission denied); "
                    "set KBC_CACHE to a writable folder, or give --store DIR")
