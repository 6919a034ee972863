"""A metric is chosen by its name in any case: `P@1` and `MRR` as every table prints them, `p@1` as summaries
store them (`kbc leaderboard --metric`, `kbcompare.leaderboard`, `Run.table`, the training callback's metrics)."""

from __future__ import annotations

import pandas as pd
import pytest
from cli_support import one_sample_note, run_kbc

import kbcompare


@pytest.fixture(scope="module")
def run_dir(lama_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("metric-names") / "run"
    result = kbcompare.run("lama", corpus="trex", relations=["P19"], predictors={"freq": "freq", "gold": "gold"},
                           limit=20, bootstrap=50, data_dir=str(lama_dir), out=out)
    return result.run_dir


@pytest.mark.parametrize(("typed", "stored"), [("P@1", "p@1"), ("MRR", "mrr"), (" P@10 ", "p@10")])
def test_leaderboard_takes_a_metric_in_any_case(run_dir, capsys, typed, stored):
    code, expected, err = run_kbc(["leaderboard", str(run_dir), "--metric", stored, "--format", "csv"], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["leaderboard", str(run_dir), "--metric", typed, "--format", "csv"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == f"# note: {one_sample_note(20)}"
    assert out == expected and f",{stored}," in out.splitlines()[2]
    assert kbcompare.leaderboard(run_dir, metric=typed).equals(kbcompare.leaderboard(run_dir, metric=stored))


def test_a_run_table_takes_a_metric_in_any_case(run_dir):
    run = kbcompare.load_run(run_dir)
    upper, lower = run.table("P@1"), run.table("p@1")
    pd.testing.assert_frame_equal(upper, lower)
    assert upper.columns.name == "p@1" and upper.loc[("trex", "gold"), "all"] == 100.0
