"""bench/file_digest.py as its docstring runs it, with a `--work` folder that does not exist yet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_new_work_folder_is_made(tmp_path):
    work = tmp_path / "not" / "yet"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "file_digest.py"), "--mb", "1", "--work", str(work)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    names = [line.split("=")[0] for line in done.stdout.splitlines()]
    assert names == [
        "size_mb",
        "first",
        "remembered_process",
        "remembered_cache",
        "after_edit",
        "first_over_remembered_cache",
    ]
    assert (work / "cache").is_dir() and not (work / "model.safetensors").exists()
