"""Summaries of a fixed run directory, value for value.

`tests/golden/lama_run` holds the prediction files of Freq, the gold KB and a tiny masked LM over
T-REx and Google-RE relations (with dropped facts, so `own` and `shared` differ); `lama_expected`
holds the summaries scored from them. Any change to how summaries are computed must give these
numbers exactly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from bridge.run.summaries import collect

GOLDEN = Path(__file__).parent / "golden"


def _rebuilt(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "lama_run", run)
    collect(run)
    return run


def test_summary_curves_dropped_and_markdown_are_pinned(tmp_path):
    run = _rebuilt(tmp_path)
    for name in ("summary.json", "curves.json", "dropped.json"):
        got = json.loads((run / name).read_text(encoding="utf-8"))
        want = json.loads((GOLDEN / "lama_expected" / name).read_text(encoding="utf-8"))
        assert len(got) == len(want), name
        for i, (g, w) in enumerate(zip(got, want)):
            assert g == w, f"{name} row {i}: {g} != {w}"
    assert (run / "summary.md").read_text(encoding="utf-8") == \
        (GOLDEN / "lama_expected" / "summary.md").read_text(encoding="utf-8")
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    shared = {r["n_facts"] for r in summary if r["scope"] == "shared" and r["group"] == "all"
              and r["corpus"] == "trex" and r["metric"] == "p@1"}
    assert shared == {45}  # 48 asked, 3 dropped by one predictor or another
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["predictor_configs"]["trex"]["bert"]["dropped_facts"] == {
        "P19": {"object is not one token": 2}, "P30": {"subject has no vector": 1}}


def test_instances_table_is_pinned(tmp_path):
    run = _rebuilt(tmp_path)
    frame = pd.read_parquet(run / "instances.parquet")
    want = json.loads((GOLDEN / "lama_expected" / "instances.json").read_text(encoding="utf-8"))
    kinds = ["string"] * 10 + ["Int64"] * 4 + ["boolean"] * 2 + ["string"] * 5 + ["boolean"]
    assert [str(t) for t in frame.dtypes] == kinds
    assert json.loads(frame.to_json(orient="records")) == want
