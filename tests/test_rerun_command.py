"""A reader that asks for a run to be made again prints the `kbc run` command to type: the one the run's config.json
records (`runs[].argv`), shell-quoted, writing to the folder as the reader named it; that command restores the run."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest
from cli_support import run_kbc

KBC = "/opt/my env/bin/kbc"  # where the user's `kbc` lies: a space, to be quoted


@pytest.fixture(scope="module")
def typed(lama_dir, tmp_path_factory) -> tuple[Path, list[str]]:
    """A run of freq over 5 Google-RE facts, made by a `kbc` command (its argv recorded), and that argv."""
    root = tmp_path_factory.mktemp("typed")
    argv = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_death", "--predictors", "freq",
            "--limit", "5", "--store", str(root / "store"), "--data-dir", str(lama_dir), "--out", str(root / "run"),
            "--quiet"]
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        m.setattr(sys, "argv", [KBC, *argv])
        from cli_support import run_kbc_captured

        code, out, err = run_kbc_captured(argv)
    assert code == 0, err
    return root / "run", argv


@pytest.mark.parametrize("lost,why,then", [
    ("summary.json", "its summary.json is missing", "rescore it"),
    ("instances.parquet", "its instances.parquet is missing", "rescore it"),
])
def test_the_rerun_line_prints_the_recorded_command(typed, lost, why, then, tmp_path, capsys, monkeypatch):
    intact, argv = typed
    moved = tmp_path / "moved"  # a copy under another name: the command must write there, not to the original
    shutil.copytree(intact, moved)
    (moved / lost).unlink()
    command = shlex.join([KBC, *argv[:-3], "--out", str(moved), "--quiet"])
    assert command.startswith("'/opt/my env/bin/kbc' run lama --corpus google_re --relations place_of_death ")
    code, out, err = run_kbc(["leaderboard", str(moved)], capsys)
    assert (code, out, err) == (2, "", f"error: {moved}: {why}; rerun `{command}` to {then}\n")
    monkeypatch.setenv("KBC_CACHE", str(intact.parent / "cache"))
    assert run_kbc(shlex.split(command)[1:], capsys)[0] == 0  # the command printed, as typed, restores the run
    assert (moved / lost).exists()
    board = [run_kbc(["leaderboard", str(run), "--format", "csv"], capsys) for run in (moved, intact)]
    assert board[0][0] == board[1][0] == 0
    assert board[0][1].replace(str(moved), "RUN") == board[1][1].replace(str(intact), "RUN")


def test_a_run_made_otherwise_is_rerun_by_the_same_command():
    """A run made through the Python API (no `kbc` argv recorded) has no command to print."""
    from bridge.run.attempts import rerun_hint

    config = {"runs": [{"argv": ["/usr/bin/python", "script.py"], "corpora": ["trex"], "predictors": ["freq"],
                        "finished": "2026-01-01T00:00:00+00:00"}]}
    assert rerun_hint(config, Path("runs/x")) == "rerun the same `kbc run` command"
    assert rerun_hint({}, Path("runs/x")) == "rerun the same `kbc run` command"
    config["runs"][0]["argv"] = ["kbc", "run", "lama", "--out=runs/old dir", "--predictors", "freq"]
    assert rerun_hint(config, Path("runs/a b")) == "rerun `kbc run lama '--out=runs/a b' --predictors freq`"


def test_the_command_names_the_kbc_running_now(monkeypatch):
    """A run an earlier installation made (its `kbc` elsewhere, perhaps gone) is finished by the `kbc` reading it."""
    from bridge.run.attempts import rerun_hint

    config = {"runs": [{"argv": ["/old env/bin/kbc", "run", "lama", "--predictors", "freq", "--out", "runs/x"],
                        "corpora": ["trex"], "predictors": ["freq"]}]}
    monkeypatch.setattr(sys, "argv", ["/new/bin/kbc", "leaderboard", "runs/x"])
    assert rerun_hint(config, Path("runs/x")) == "rerun `/new/bin/kbc run lama --predictors freq --out runs/x`"
    monkeypatch.setattr(sys, "argv", ["/usr/bin/python", "notebook.py"])  # not a `kbc`: the one recorded
    assert rerun_hint(config, Path("runs/x")) == "rerun `'/old env/bin/kbc' run lama --predictors freq --out runs/x`"


def test_a_run_an_older_kbc_kept_without_digests_is_rerun_into_a_new_out(tmp_path, monkeypatch):
    """Records written before record digests: `kbc run` adds nothing to them, so the command printed writes to a
    new --out (which reads the scores of language models back from the LM result cache)."""
    from bridge.run.attempts import rerun_hint

    run = tmp_path / "old run"
    (run / "predictions" / "trex" / "freq").mkdir(parents=True)
    (run / "predictions" / "trex" / "freq" / "P19.jsonl").write_text('{"uid": "a"}\n')
    config = {"runs": [{"argv": ["kbc", "run", "lama", "--predictors", "freq", "--out", str(run)],
                        "corpora": ["trex"], "predictors": ["freq"]}]}
    monkeypatch.setattr(sys, "argv", ["/usr/bin/python", "notebook.py"])
    new = shlex.quote(str(tmp_path / "old run-2"))
    assert rerun_hint(config, run) == (f"rerun `kbc run lama --predictors freq --out {new}` (a new --out: kbc run "
                                       "does not add to records an older kbc kept without digests)")
    (run / ".kbc-records").mkdir()  # a run that keeps them is finished where it lies
    assert rerun_hint(config, run) == f"rerun `kbc run lama --predictors freq --out {shlex.quote(str(run))}`"
