"""Run directories an earlier kbc version wrote, read by this one: files in the layout of then are read as this
version writes them, or refused with the fix; never shown short of what the summaries score."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bridge.run.freshness import rewrite_recorded
from bridge.run.instances import FILENAME, SET_COLUMNS


@pytest.fixture(scope="module")
def set_run(lama_dir, tmp_path_factory) -> tuple:
    """A `--answers set` run over two N-M relations, and its cache."""
    root = tmp_path_factory.mktemp("set_run")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        from cli_support import run_kbc_captured

        code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--relations", "P530", "P1303", "--limit",
                                         "4", "--predictors", "freq", "gold", "--answers", "set", "--data-dir",
                                         str(lama_dir), "--out", str(root / "run"), "--quiet"])
    assert code == 0, err
    return root / "run", root / "cache"


def _without_set_columns(run) -> None:
    """`instances.parquet` as kbc wrote it before the set columns were added, recorded as the run's own."""
    config = json.loads((run / "config.json").read_text())
    table = pd.read_parquet(run / FILENAME)
    assert rewrite_recorded(run, config, lambda: table.drop(columns=list(SET_COLUMNS)).to_parquet(run / FILENAME,
                                                                                                  index=False)) is None


def test_an_earlier_set_table_is_read_with_its_set_columns(set_run, tmp_path, monkeypatch):
    """The Python API's facts of an `--answers set` run whose table lacks the set columns: built again from the
    records, so each relation's mean set F1 is the summaries' again."""
    import shutil

    import kbcompare

    run = tmp_path / "run"
    shutil.copytree(set_run[0], run)
    monkeypatch.setenv("KBC_CACHE", str(set_run[1]))
    _without_set_columns(run)
    assert "set_f1" not in pd.read_parquet(run / FILENAME).columns
    loaded = kbcompare.load_run(run)
    facts = loaded.facts
    assert set(SET_COLUMNS) <= set(facts.columns)
    answered = facts[facts.dropped.isna()]
    means = (answered.groupby(["predictor", "relation"]).set_f1.mean() * 100).to_dict()
    summary = loaded.summary
    rows = summary[(summary.metric == "set-f1") & (summary.scope == "own") & (summary.setting == "raw")
                   & summary.group.isin(["P530", "P1303"])]
    assert len(rows) == 4
    for row in rows.itertuples():
        assert means[row.predictor, row.group] == pytest.approx(row.value, abs=1e-9)

