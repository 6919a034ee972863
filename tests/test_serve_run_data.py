"""`kbc serve --run RUN` without --data-dir reads the data folder the run recorded, not ./data/lama or $KBC_DATA."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc


def _small_lama(lama_dir: Path, root: Path) -> Path:
    """P19 and P20, their first 30 facts each."""
    (root / "TREx").mkdir(parents=True)
    listed = [json.loads(line) for line in (lama_dir / "relations.jsonl").read_text(encoding="utf-8").splitlines()]
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in listed
                                                  if r["relation"] in ("P19", "P20")), encoding="utf-8")
    for rel in ("P19", "P20"):
        lines = (lama_dir / "TREx" / f"{rel}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:30]
        (root / "TREx" / f"{rel}.jsonl").write_text("".join(lines), encoding="utf-8")
    return root


@pytest.fixture
def made_elsewhere(lama_dir, tmp_path, capsys, monkeypatch):
    """A run made from a data folder of its own, then served from a folder with no ./data/lama and no $KBC_DATA."""
    import uvicorn

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = _small_lama(lama_dir, tmp_path / "mine" / "lama")
    run = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data),
                            "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    monkeypatch.delenv("KBC_DATA", raising=False)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: setattr(self, "started", True))
    return data, run


def test_serve_reads_the_data_folder_the_run_recorded(made_elsewhere, capsys):
    data, run = made_elsewhere
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run), "--predictors", "freq"], capsys)
    assert code == 0, err
    assert "kbc serve: trex, 2 relations, 1 predictor" in err, err


def test_serve_refuses_a_recorded_data_folder_that_is_gone_or_changed(made_elsewhere, capsys):
    data, run = made_elsewhere
    moved = data.parent.with_name("moved")
    data.parent.rename(moved)
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: run run was made from data in {data}"), err
    assert "which is gone; pass --data-dir" in lines[0], err
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run), "--data-dir", str(moved / "lama")], capsys)
    assert code == 0, err  # named by hand, the run is browsed beside the data given
    moved.rename(data.parent)
    facts = data / "TREx" / "P19.jsonl"
    facts.write_text("".join(facts.read_text(encoding="utf-8").splitlines(keepends=True)[:20]), encoding="utf-8")
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "run run was made from other trex data" in lines[0], err
    assert f"pass --data-dir {data} to browse it beside that data anyway" in lines[0], err


def test_serve_names_data_dir_where_the_recorded_folder_lost_a_corpus_file(made_elsewhere, capsys):
    data, run = made_elsewhere
    shutil.rmtree(data / "TREx")  # the folder stays, the corpus it held is gone
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "TREx" in lines[0] and f"the data folder the --run directories recorded, {data}" in lines[0], err
    assert "pass --data-dir" in lines[0], err


def test_serve_names_the_corpus_of_runs_that_asked_another(made_elsewhere, capsys):
    """Runs of trex served with --corpus google_re: no folder is recorded for it, and ./data/lama is not there; the
    line names the --corpus whose recorded folder would be read."""
    data, run = made_elsewhere
    code, _, err = run_kbc(["serve", "--port", "0", "--run", str(run), "--corpus", "google_re"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert lines[0].endswith("; the --run directories asked trex, not google_re: pass --corpus trex to read the data "
                             "folder they recorded"), err
