"""`kb-inferred` answers with every object it holds, whatever `--depth`: all are tied at score 1, so a cut at the
depth in label order would drop a gold that ranks 1 among its equals.

The inferred graph holds well over 100 wholes that carbon is part of (P527 "has part" read backwards); steel, the
T-REx gold of carbon P361, comes after the first 100 by label.
"""

from __future__ import annotations

import json

from cli_support import run_kbc


def _carbon(out) -> dict:
    records = [json.loads(line) for line in (out / "predictions/trex/kb-inferred/P361.jsonl").open()]
    return next(r for r in records if r["subject"] == "carbon")


def test_kb_answers_are_never_cut_inside_their_tie(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P361", "P527", "--predictors", "kb-inferred",
            "--store", str(tmp_path / "store"), "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    record = _carbon(out)
    assert (record["gold"], record["gold_id"], record["rank_raw"], record["rank_filtered"]) == (
        "steel", "Q11427", 1, 1)
    rows = json.loads((out / "summary.json").read_text())
    assert next(r["value"] for r in rows if (r["predictor"], r["scope"], r["setting"], r["group"], r["metric"])
                == ("kb-inferred", "own", "raw", "P361", "p@1")) == 100.0
    # records of an earlier version, cut at the depth: a rerun into their directory is refused, never mixed
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_specs"]["kb-inferred"]["answers"] == "every held object"
    config["predictor_specs"]["kb-inferred"].pop("answers")
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {out}: predictor 'kb-inferred' has answers there from an earlier kbc version, which cut the objects "
        "held for a query at the top 100 by label, so a gold past them was a miss although all are tied; use another "
        "--out to score it with every held object")
