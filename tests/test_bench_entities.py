"""bench/entities.py with a LAMA folder that is not there: one `error:` line at once, before the index part."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_lama_folder_is_one_error_line(tmp_path):
    missing = tmp_path / "lama"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "entities.py"),
            "--n",
            "200",
            "--components",
            "4",
            "--queries",
            "2",
            "--nlist",
            "2",
            "--nprobe",
            "1",
            "--lm-queries",
            "1",
            "--data-dir",
            str(missing),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("error: ") and str(missing) in done.stderr and "Traceback" not in done.stderr
