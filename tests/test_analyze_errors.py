"""Bad input to `kbc analyze`: one `error:` line, exit status 2."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from analyze_support import call_kbc, check_pristine, copy_run, run_kbc, small_run  # noqa: F401


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


def test_truncated_instances_table(small_run, tmp_path, capsys):  # noqa: F811
    run = copy_run(small_run, tmp_path)
    table = run / "instances.parquet"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    line = _one_error(*run_kbc(["analyze", "correlation", str(run), "--index", str(small_run.index), "--quiet"],
                               capsys)[::2])
    assert f"{table}: unreadable" in line and "delete it" in line


@pytest.fixture(scope="module")
def coherency_run(lama_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("coherency")
    argv = ["run", "coherency", "--corpus", "trex", "google_re", "--relations", "P463", "place_of_death", "--limit",
            "3", "--predictors", "freq", "--store", str(root / "store"), "--data-dir", str(lama_dir), "--out",
            str(root / "run"), "--quiet"]
    code, out = call_kbc(argv)
    assert code == 0, out
    return root / "run"


def test_correlation_and_compare_refuse_runs_of_other_experiments(small_run, coherency_run, capsys):  # noqa: F811
    line = _one_error(*run_kbc(["analyze", "correlation", str(coherency_run), "--index", str(small_run.index),
                                "--quiet"], capsys)[::2])
    assert f"{coherency_run} is a `kbc run coherency` run" in line and "`kbc run lama`" in line
    line = _one_error(*run_kbc(["analyze", "correlation", str(small_run.run), "--compare", str(coherency_run),
                                "--index", str(small_run.index), "--quiet"], capsys)[::2])
    assert f"--compare {coherency_run} is a `kbc run coherency` run" in line


def _as_scored(run, config: dict) -> None:
    """Write `config` as the run's config.json and record it as the config its summaries were scored from (with
    the scoring arguments recorded before), as a run that wrote this config would have: a config edited after
    scoring is refused by every reader, which is not what these tests are about."""
    from bridge.run.freshness import _scored_args, _stamp, files_digest, inputs_digest, write_stamp

    args = _scored_args(json.loads((run / "config.json").read_text()), _stamp(run))
    assert args is not None
    (run / "config.json").write_text(json.dumps(config))
    files = files_digest(run)
    write_stamp(run, inputs_digest(config, args, files), files)


def test_stats_of_an_unfinished_run(small_run, tmp_path, capsys):  # noqa: F811
    """A run stopped before it built a predictor for a corpus: LPFP comes from what the run recorded in
    another corpus; a predictor it never recorded is named as unfinished, not as one without log-probabilities."""
    run = copy_run(small_run, tmp_path)
    config = json.loads((run / "config.json").read_text())
    del config["predictor_configs"]["google_re"]
    _as_scored(run, config)
    code, out, err = run_kbc(["analyze", "stats", str(run), "--index", str(small_run.index), "--quiet"], capsys)
    assert code == 0, err
    assert "LPFP is null" not in err
    table = pd.read_parquet(run / "instances.parquet")
    bert = table[(table["predictor"] == "bert") & (table["corpus"] == "google_re") & table["dropped"].isna()]
    first = [json.loads(a)[0][1] for a in bert["answers"]]
    assert len(bert) > 0 and bert["lpfp"].tolist() == pytest.approx(first)
    del config["predictor_configs"]
    _as_scored(run, config)
    code, out, err = run_kbc(["analyze", "stats", str(run), "--index", str(small_run.index), "--quiet"], capsys)
    assert code == 0, err
    assert "note: LPFP is null for bert, freq, retrieval: the run has not finished" in err
    assert "none scores answers by log-probability" not in err


def test_the_shared_run_is_left_as_built(small_run):  # noqa: F811
    """Run after the tests above: none wrote into the run every analysis test shares."""
    check_pristine(small_run)
