"""Run directories an earlier kbc version wrote, read by this one: files in the layout of then are read as this
version writes them, or refused with the fix; never shown short of what the summaries score."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from lm_fixtures import kbc_log  # noqa: F401  (pytest finds the fixture by name)

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



def test_a_run_of_an_earlier_reading_is_not_told_its_data_files_changed(tmp_path, monkeypatch, capsys):
    """Own data an earlier kbc read otherwise (a label's trailing space kept, a repeated uuid not numbered): the same
    files give other facts now, so resuming its run is refused, saying the reading may be what changed; a run this
    version wrote and whose files were edited is told the files changed."""
    from cli_support import run_kbc

    data = tmp_path / "data"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(json.dumps({"relation": "X1", "template": "[X] likes [Y] ."}) + "\n")
    facts = data / "TREx" / "X1.jsonl"
    facts.write_text("".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n"
                             for s, o in (("Alice", "tea"), ("Bob", "coffee "), ("Carol", "coffee"))))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data), "--out", str(out),
            "--quiet"]
    assert run_kbc(argv, capsys)[0] == 0
    config = json.loads((out / "config.json").read_text())
    earlier = dict(config, data_versions={"trex": {"X1": "0123456789abcdef"}})  # its facts as that version read them
    earlier.pop("data_reading", None)
    (out / "config.json").write_text(json.dumps(earlier))
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds trex results of other data for X1 (the data files changed, or this kbc reads them "
           "otherwise than the earlier version that wrote it: labels lose surrounding spaces and directional marks, a "
           "uuid given twice is numbered); use another --out")
    (out / "config.json").write_text(json.dumps(config))
    facts.write_text(facts.read_text() + json.dumps({"sub_label": "Dan", "obj_label": "tea"}) + "\n")
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.splitlines()[-1]) == (
        2, f"error: {out} holds trex results of other data for X1 (the data files changed); use another --out")


def test_a_snapshot_of_an_earlier_schema_is_parsed_again_saying_so(tmp_path, kbc_log):  # noqa: F811
    """A parsed-corpus snapshot an earlier version wrote: its facts may be of another reading, so the data is
    parsed again, the snapshot rewritten in this schema, and one line says why."""
    import logging

    from eval.corpora import load_corpus
    from eval.snapshot import SCHEMA, forget_recent

    data = tmp_path / "data"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(json.dumps({"relation": "X1", "template": "[X] likes [Y] ."}) + "\n")
    (data / "TREx" / "X1.jsonl").write_text(json.dumps({"sub_label": "Alice", "obj_label": "tea"}) + "\n")
    cache = tmp_path / "cache"
    load_corpus("trex", data, cache_dir=cache)
    [snapshot] = (cache / "snapshots").glob("trex-*.json")
    head, _, body = snapshot.read_bytes().partition(b"\n")
    header = json.loads(head)
    snapshot.write_bytes(json.dumps(dict(header, schema=SCHEMA - 1)).encode() + b"\n" + body)
    forget_recent()
    kbc_log.clear()
    assert [f.subject.label for f in load_corpus("trex", data, cache_dir=cache).facts] == ["Alice"]
    said = [m for level, m in kbc_log if level == logging.INFO and str(snapshot) in m]
    assert said == [f"{snapshot}: a snapshot an earlier kbc version wrote (schema {SCHEMA - 1}, now {SCHEMA}: the "
                    "data files are read otherwise since); parsing the data again"]
    assert json.loads(snapshot.read_bytes().partition(b"\n")[0])["schema"] == SCHEMA


def test_group_accuracy_an_earlier_version_scored_without_stderr_is_named():
    """The across-prompts table of a summary an earlier version wrote (group accuracy without its stderr), alone or
    beside a run this one scored: a note names the cells without ± and how to rescore them."""
    from eval.report import prompt_table

    def row(predictor: str, metric: str, value: float, stderr: float | None, group: str = "all", n: int = 30) -> dict:
        return {"corpus": "trex", "predictor": predictor, "metric": metric, "group": group, "scope": "shared",
                "setting": "raw", "value": value, "n_facts": n, "stderr": stderr}

    now = [row("B:freq", "consistency", 100.0, None), row("B:freq", "group_accuracy", 1.67, 1.67),
           row("B:freq", "group_accuracy", 1.67, 1.67, "P19", 30)]
    assert "- group accuracy" not in prompt_table(now)
    # relations of one fact each: no stderr from this version either, and no note
    single = [row("C:freq", "group_accuracy", 50.0, None, "all", 2),
              row("C:freq", "group_accuracy", 0.0, None, "P19", 1),
              row("C:freq", "group_accuracy", 100.0, None, "P36", 1)]
    assert "- group accuracy" not in prompt_table(single)
    both = [row("A:freq", "consistency", 100.0, None), row("A:freq", "group_accuracy", 1.67, None),
            row("A:freq", "group_accuracy", 1.67, None, "P19", 30), *now]
    table = prompt_table(both)
    assert "| A:freq | 100.00 | 1.67 |" in table and "| B:freq | 100.00 | 1.67 ± 1.67 |" in table
    assert table.splitlines()[-1] == ("- group accuracy with no standard error (A:freq): scored by an earlier kbc "
                                      "version, which gave it none; rerun the run's `kbc run` command into it to "
                                      "rescore it")
