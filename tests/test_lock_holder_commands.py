"""A lock's holder is named by its command as `kbc ARGS` however kbc was started, the same way whether its command
line is read from /proc (another process) or from sys.argv (this one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eval.lock_holders import command_of, kbc_command
from kb.writer_lock import command_line

WAIT = "print('up', flush=True); import sys; sys.stdin.read()"


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(WAIT, encoding="utf-8")
    return path


@pytest.mark.parametrize("form", ["-m bridge.cli", ".venv/bin/kbc", "bridge/cli/__main__.py"])
@pytest.mark.skipif(not Path("/proc/self/cmdline").is_file(), reason="needs /proc/PID/cmdline (Linux)")
def test_another_process_running_kbc_is_named_as_kbc(form, tmp_path):
    """A stand-in for kbc, started as kbc is (its files in `tmp_path`), read from /proc."""
    if form == "-m bridge.cli":
        for folder in ("bridge", "bridge/cli"):
            (tmp_path / folder).mkdir(exist_ok=True)
            (tmp_path / folder / "__init__.py").write_text("", encoding="utf-8")
        _file(tmp_path / "bridge" / "cli" / "__main__.py")
        argv = [sys.executable, "-m", "bridge.cli"]
    else:
        argv = [sys.executable, str(_file(tmp_path / form))]
    child = subprocess.Popen([*argv, "run", "lama", "--out", "runs/a b"], cwd=tmp_path, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "up\n"  # the stand-in runs, not the real command
        assert command_of(child.pid) == "kbc run lama --out runs/a b"
    finally:
        child.communicate("")


@pytest.mark.parametrize(("argv", "command"), [
    (["/usr/bin/python3", "-m", "bridge.cli", "run", "lama"], "kbc run lama"),
    (["/w/.venv/bin/python", "/w/.venv/bin/kbc", "run", "lama"], "kbc run lama"),
    (["python", "/w/bridge/cli/__main__.py", "report", "runs/a"], "kbc report runs/a"),
    (["/w/.venv/bin/kbc", "serve"], "kbc serve"),
    (["python", "-m", "pytest", "-q"], "python -m pytest -q"),
    (["python", "/srv/ipykernel_launcher.py", "-f", "k.json"], "python /srv/ipykernel_launcher.py -f k.json"),
])
def test_a_command_line_is_named_as_kbc_where_it_runs_kbc(argv, command):
    assert kbc_command(argv) == command


@pytest.mark.parametrize(("argv", "command"), [
    (["/w/bridge/cli/__main__.py", "run", "lama"], "kbc run lama"),  # `python -m bridge.cli run lama`
    ([".venv/bin/kbc", "run", "lama"], "kbc run lama"),
    (["/w/bridge/cli/__main__.py", "report", "runs/a"], "kbc report runs/a"),  # `python .../bridge/cli/__main__.py`
])
def test_this_process_running_kbc_is_named_as_kbc(argv, command):
    """sys.argv's forms of the same three ways to start kbc."""
    assert command_line(argv) == command
