"""`--compat lama` end to end: label deduplication recorded, MRR cut-off stated, no mixing with default runs."""

from __future__ import annotations

import json

from cli_support import run_kbc


def test_compat_lama_run(lama_dir, trex, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P176", "P19", "--predictors", "freq",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, _, err = run_kbc(argv + ["--compat", "lama"], capsys)
    assert code == 0, err
    # one line whose counts add up: read = kept + dropped + removed
    n176, n19 = (sum(f.relation == r for f in trex.facts) for r in ("P176", "P19"))
    assert (f"trex: 2 relations, read {n176 + n19}, kept {n176 + n19 - 9}, dropped 0, removed 9 with the labels of an "
            "earlier fact (--compat lama: P176 9)\n") in err
    assert "--compat lama removed" not in err
    config = json.loads((out / "config.json").read_text())
    assert config["compat_removed"] == {"trex": {"P176": 9}}
    assert config["settings"] == {"compat": "lama", "prompts": "lama", "context": "none"}
    rows = json.loads((out / "summary.json").read_text())
    n = {r["group"]: r["n_facts"] for r in rows if r["metric"] == "p@1" and r["scope"] == "own"}
    assert n["P176"] == sum(f.relation == "P176" for f in trex.facts) - 9
    assert n["P19"] == sum(f.relation == "P19" for f in trex.facts)
    assert "MRR counts ranks within the top 10,000" in (out / "summary.md").read_text()
    code, _, err = run_kbc(argv, capsys)  # the default rules into the same directory: refused
    assert code == 2 and "use another --out or the same settings" in err
