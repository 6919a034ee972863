"""`kbc leaderboard`: predictors of several runs in one table, the numbers of each run's own summary."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc

from bridge.run.leaderboard import leaderboard_rows
from bridge.run.summaries import collect

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    out = []
    for name in ("a", "b"):
        shutil.copytree(GOLDEN / "lama_run", tmp_path / name)
        out.append(tmp_path / name)
    collect(out[0])
    return out[0], out[1]


def _totals(run: Path, scope: str, metric: str) -> dict[tuple[str, str], dict]:
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {(r["corpus"], r["predictor"]): r for r in rows
            if r["scope"] == scope and r["setting"] == "raw" and r["group"] == "all" and r["metric"] == metric}


@pytest.mark.parametrize("scope", ["own", "shared"])
def test_one_run_gives_its_summary_totals_and_intervals(runs, scope):
    a, _ = runs
    want = _totals(a, scope, "mrr")
    got = leaderboard_rows([a], metric="mrr", scope=scope)
    assert len(got) == len(want) == 6
    for row in got:
        ref = want[(row["corpus"], row["predictor"])]
        assert [row[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")] == \
            [ref[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")]


def test_two_runs_ranked_with_csv_and_json(runs, capsys):
    a, b = runs
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--format", "csv"], capsys)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["rank"], Path(r["run"]).name, r["predictor"], r["value"][:5]) for r in rows] == [
        ("1", "a", "gold", "97.91"), ("2", "b", "gold", "97.91"), ("3", "a", "freq", "33.18"),
        ("4", "b", "freq", "33.18"), ("5", "a", "bert", "0.0"), ("6", "b", "bert", "0.0")]
    assert {r["n_facts"] for r in rows} == {"45"}
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--scope", "own", "--format", "json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    assert [r["n_facts"] for r in got if r["corpus"] == "google_re"] == [24, 24, 23, 23, 24, 24]
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "google_re"], capsys)
    assert code == 0, err
    assert "| 3 | a | freq | 8.71 ± 6.17 | [0.00, 21.97] | 23 |" in out


def test_runs_that_measure_other_things_are_refused(runs, capsys):
    a, b = runs
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["data_versions"]["trex"]["P19"] = "0000000000000000"
    (b / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, _, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex"], capsys)
    assert code == 2 and err.startswith("error:") and "trex data versions" in err and "Traceback" not in err
    code, _, err = run_kbc(["leaderboard", str(a), "--metric", "p@5"], capsys)
    assert code == 2 and "no p@5 (raw) total" in err and "p@1" in err
    code, _, err = run_kbc(["leaderboard", str(a), str(a.parent)], capsys)
    assert code == 2 and "no config.json" in err
