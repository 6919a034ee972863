"""Labels that the terminal's encoding cannot hold (a Latin-1 locale, "Kyōto") are printed escaped, never a
traceback: text stays readable and `--json` stays valid JSON of the same labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from records_support import seal_records
from test_compare import make_run

SUBJECT = "Kyōto 🏯 Zürich"  # past Latin-1, past U+FFFF, inside Latin-1


@pytest.fixture
def labelled_run(tmp_path):
    run = make_run(tmp_path)
    for path in (run / "predictions").rglob("P19.jsonl"):
        path.write_text(path.read_text(encoding="utf-8").replace("subject p19-7", SUBJECT), encoding="utf-8")
    seal_records(run)
    return run


def _kbc_on_latin1(argv: list[str]) -> tuple[int, bytes, bytes]:
    """(status, stdout, stderr) of `kbc ARGV` whose streams are Latin-1, as under such a locale."""
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-m", "bridge.cli", *argv], capture_output=True, env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_show_prints_labels_its_encoding_lacks(labelled_run):
    code, out, err = _kbc_on_latin1(["show", str(labelled_run), "--uid", "p19-7"])
    assert code == 0, err.decode("latin-1")
    lines = out.decode("latin-1").splitlines()
    assert lines[1] == "  subject:     Ky\\u014dto \\ud83c\\udfef Zürich (Q97)"


def test_show_json_stays_the_same_value(labelled_run):
    code, out, err = _kbc_on_latin1(["show", str(labelled_run), "--uid", "p19-7", "--json"])
    assert code == 0, err.decode("latin-1")
    (fact,) = json.loads(out.decode("latin-1"))["facts"]
    assert fact["subject"] == SUBJECT
