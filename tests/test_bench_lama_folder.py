"""The benchmarks that read LAMA find it as their docstrings say (`--data-dir`, else $KBC_DATA, else
../shared/data/lama beside the repository), and a folder that is not there is one `error:` line at once, never a
traceback after minutes of work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {
    "entities": [
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
    ],
    "fact_stats": [],
    "reasoning": ["--no-owlrl", "--repeat", "1"],
    "text_index": [],
}


def _run(name: str, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), *SCRIPTS[name], *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_missing_lama_folder_is_one_error_line(name, tmp_path):
    missing = tmp_path / "lama"
    env = {k: v for k, v in os.environ.items() if k != "KBC_DATA"}
    for args, env_now in ((["--data-dir", str(missing)], env), ([], {**env, "KBC_DATA": str(missing)})):
        done = _run(name, args, tmp_path, env_now)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("error: ") and str(missing) in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_without_either_the_lama_folder_beside_the_repository_is_read():
    env = {k: v for k, v in os.environ.items() if k != "KBC_DATA"}
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from bench.lama_folder import default_lama; print(default_lama())"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == str(ROOT.parent / "shared" / "data" / "lama")
