"""A named pipe where a data file belongs is one `error:` line naming it: opening a pipe for reading waits for a
writer, so a run would otherwise hang, not fail. A writer thread stands by so that a loader that does open the pipe
reads it empty instead of waiting for ever."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc


def _bear(shared: Path, tmp: Path) -> Path:
    root = tmp / "bear"
    (root / "BEAR").mkdir(parents=True)
    meta = json.loads((shared / "bear" / "BEAR" / "metadata_relations.json").read_text())
    (root / "BEAR" / "metadata_relations.json").write_text(json.dumps({"P103": meta["P103"]}))
    lines = (shared / "bear" / "BEAR" / "P103.jsonl").read_text().splitlines()[:5]
    (root / "BEAR" / "P103.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _lmkbc(shared: Path, tmp: Path) -> Path:
    root = tmp / "lmkbc"
    shutil.copytree(shared / "lmkbc2024" / "prompt_templates", root / "prompt_templates")
    for split in ("train", "val"):
        lines = (shared / "lmkbc2024" / f"{split}.jsonl").read_text().splitlines()[:5]
        (root / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _google_re(shared: Path, tmp: Path) -> Path:
    root = tmp / "lama"
    (root / "Google_RE").mkdir(parents=True)
    shutil.copy(shared / "lama" / "relations.jsonl", root)
    for path in (shared / "lama" / "Google_RE").glob("*.jsonl"):
        (root / "Google_RE" / path.name).write_text("\n".join(path.read_text().splitlines()[:3]) + "\n")
    return root


def _prompts(tmp: Path) -> Path:
    path = tmp / "prompts.jsonl"
    path.write_text(json.dumps({"relation": "P19", "template": "[X] was born in [Y] ."}) + "\n")
    return path


CASES = {
    "bear relation file": lambda s, t: (["run", "bear", "--data-dir", str(_bear(s, t))], _bear_file(t, "P103.jsonl")),
    "bear metadata": lambda s, t: (["run", "bear", "--data-dir", str(_bear(s, t))],
                                   _bear_file(t, "metadata_relations.json")),
    "google_re file": lambda s, t: (["run", "lama", "--corpus", "google_re", "--data-dir", str(_google_re(s, t))],
                                    t / "lama" / "Google_RE" / "place_of_birth_test.jsonl"),
    "lmkbc split": lambda s, t: (["run", "lmkbc", "--data-dir", str(_lmkbc(s, t))], t / "lmkbc" / "val.jsonl"),
    "prompt file": lambda s, t: (["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3", "--data-dir",
                                  str(s / "lama"), "--prompts", str(_prompts(t))], t / "prompts.jsonl"),
}


def _bear_file(tmp: Path, name: str) -> Path:
    return tmp / "bear" / "BEAR" / name


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_named_pipe_for_a_data_file_is_named(case, shared_data, tmp_path, capsys, pipe_writer):
    argv, target = CASES[case](shared_data, tmp_path)
    target.unlink()
    os.mkfifo(target)
    opened = pipe_writer(target)
    code, _, err = run_kbc([*argv, "--predictors", "freq", "--out", str(tmp_path / "out"), "--quiet"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert target not in opened  # without a writer, that open would have hung the run
    assert lines[-1].startswith(f"error: {target}: ") and "not a regular file" in lines[-1], err


def test_a_named_pipe_is_not_hashed(tmp_path, pipe_writer):
    """Model and vocabulary files are identified by their digest: a pipe given as one is named, not read."""
    from eval.errors import DataError
    from eval.file_digests import file_sha256

    pipe = tmp_path / "vocab.txt"
    os.mkfifo(pipe)
    opened = pipe_writer(pipe)
    with pytest.raises(DataError, match=r"vocab\.txt: not a regular file \(a named pipe, socket or device\)"):
        file_sha256(pipe)
    assert pipe not in opened


def _run_with_pipe(shared: Path, tmp: Path, capsys, name: str) -> tuple[Path, Path]:
    """A finished Freq run whose file `name` (relative to the run folder) is then a named pipe."""
    out = tmp / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3", "--data-dir",
                            str(shared / "lama"), "--predictors", "freq", "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    (out / name).unlink()
    os.mkfifo(out / name)
    return out, out / name


@pytest.mark.parametrize(("name", "argv"), [
    ("predictions/trex/freq/P19.jsonl", ["compare", "{out}", "freq", "freq"]),
    ("config.json", ["show", "{out}", "--uid", "any"]),
])
def test_a_named_pipe_in_a_run_folder_is_named(shared_data, tmp_path, capsys, pipe_writer, name, argv):
    """A file kbc wrote itself, replaced by a pipe: the reading command names it instead of waiting for a writer."""
    out, target = _run_with_pipe(shared_data, tmp_path, capsys, name)
    opened = pipe_writer(target)
    code, _, err = run_kbc([arg.format(out=out) for arg in argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert target not in opened  # without a writer, that open would have hung the command
    assert lines[-1].startswith(f"error: {target}: ") and "not a regular file" in lines[-1], err
