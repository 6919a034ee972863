"""`kbc run lama --answers set`: a threshold rule on count scores refused before any work; a name whose first
attempt wrote no record is not held to that attempt's settings."""

from __future__ import annotations

import json

from cli_support import run_kbc


def _run(lama_dir, out, rule, capsys):
    return run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P47", "--predictors", "freq", "--set",
                    f"freq.set={rule}", "--answers", "set", "--limit", "5", "--data-dir", str(lama_dir), "--out",
                    str(out), "--quiet"], capsys)


def test_threshold_on_freq_counts_refused_up_front(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = _run(lama_dir, out, "threshold:0.1", capsys)
    assert (code, err.splitlines()[-1]) == (2, "error: --set freq.set=threshold:0.1: Freq scores objects by their "
                                               "counts in the relation, not probabilities, so no threshold applies; "
                                               "use freq.set=top:K (e.g. top:1)")
    assert not (out / "config.json").exists() and not (out / "predictions").exists()
    code, _, err = _run(lama_dir, out, "top:1", capsys)
    assert code == 0, err


def test_a_name_without_records_takes_new_settings(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    assert _run(lama_dir, out, "top:2", capsys)[0] == 0
    code, _, err = _run(lama_dir, out, "top:1", capsys)  # records written: the name keeps its settings
    assert code == 2 and "predictor 'freq' was run with" in err
    (out / "predictions" / "trex" / "freq" / "P47.jsonl").write_text("")  # as a first attempt that failed leaves it
    code, _, err = _run(lama_dir, out, "top:1", capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_specs"]["freq"]["options"] == {"set": "top:1"}
    rows = json.loads((out / "summary.json").read_text())
    assert sorted({r["metric"] for r in rows if r["metric"].startswith("set-")}) == ["set-f1", "set-p", "set-r"]
