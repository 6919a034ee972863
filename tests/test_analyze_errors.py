"""Bad input to `kbc analyze`: one `error:` line, exit status 2."""

from __future__ import annotations

import json
import shutil

from analyze_support import run_kbc, small_run  # noqa: F401


def _one_error(code: int, err: str) -> str:
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_run_dir_without_predictions(tmp_path, capsys):
    run = tmp_path / "empty-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"corpora": ["trex"], "predictors": ["freq"]}))
    line = _one_error(*run_kbc(["analyze", "correlation", str(run)], capsys)[::2])
    assert "no predictions" in line
    line = _one_error(*run_kbc(["analyze", "stats", str(tmp_path)], capsys)[::2])
    assert "config.json" in line


def test_missing_text_index_says_how_to_build_it(small_run, tmp_path, capsys):  # noqa: F811
    missing = tmp_path / "no-index"
    line = _one_error(*run_kbc(["analyze", "stats", str(small_run.run), "--index", str(missing)], capsys)[::2])
    assert f"kbc index build --out {missing}" in line


def test_unknown_statistic(small_run, capsys):  # noqa: F811
    line = _one_error(*run_kbc(["analyze", "correlation", str(small_run.run), "--statistic", "popularity",
                                "--index", str(small_run.index)], capsys)[::2])
    assert "unknown statistic 'popularity'" in line and "cooc_sentences" in line


def test_compare_with_a_run_over_other_corpora(small_run, tmp_path, capsys):  # noqa: F811
    other = tmp_path / "other"
    shutil.copytree(small_run.run, other)
    config = json.loads((other / "config.json").read_text())
    config["corpora"] = ["trex"]
    (other / "config.json").write_text(json.dumps(config))
    line = _one_error(*run_kbc(["analyze", "correlation", str(small_run.run), "--compare", str(other),
                                "--index", str(small_run.index), "--quiet"], capsys)[::2])
    assert "--compare" in line and "corpora" in line
