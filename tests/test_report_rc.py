"""A report's figures are the same whatever matplotlibrc the folder it is made in holds (matplotlib reads
`./matplotlibrc` first): they depend on the run alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli_support import run_kbc

RC = "font.size: 30\naxes.facecolor: red\nlines.linewidth: 7\naxes.spines.top: True\nsvg.hashsalt: other\n"


def _figures(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "figures").iterdir())}


def test_a_matplotlibrc_in_the_working_folder_changes_no_figure(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P101", "--predictors", "freq",
                            "gold", "--limit", "8", "--data-dir", str(lama_dir), "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    env = {**os.environ, "KBC_CACHE": str(tmp_path / "cache")}
    env.pop("MATPLOTLIBRC", None)
    drawn = {}
    for where, rc in (("plain", None), ("styled", RC)):
        (tmp_path / where).mkdir()
        if rc is not None:
            (tmp_path / where / "matplotlibrc").write_text(rc, encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "bridge.cli", "report", str(run), "--out",
                               str(tmp_path / f"report-{where}")], cwd=tmp_path / where, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        drawn[where] = _figures(tmp_path / f"report-{where}")
    assert drawn["plain"] and {n for n in drawn["plain"] if n.endswith(".svg")}
    assert drawn["styled"] == drawn["plain"]
