"""A command parses each prediction file at most once, however many steps (resume, scores, instances) read it."""

from __future__ import annotations

from collections import Counter

from cli_support import run_kbc

import bridge.run.results


def test_a_rerun_parses_every_prediction_line_once(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "trex", "google_re", "--relations", "P30", "P1376", "date_of_birth",
            "--limit", "20", "--predictors", "freq", "gold", "--data-dir", str(lama_dir), "--out", str(out),
            "--store", str(tmp_path / "store"), "--quiet"]
    assert run_kbc(argv, capsys)[0] == 0
    parsed: Counter = Counter()
    real = bridge.run.results.parse_record

    def counting(path, lineno, raw):
        parsed[(str(path), lineno)] += 1
        return real(path, lineno, raw)

    monkeypatch.setattr(bridge.run.results, "parse_record", counting)
    monkeypatch.setattr(bridge.run.results, "_PARSED", {})  # a new command: nothing parsed yet
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert not parsed  # nothing to ask and the summaries current: the records are not read at all
    (out / ".kbc-summaries").unlink()  # summaries to rebuild: every record is read, once
    monkeypatch.setattr(bridge.run.results, "_PARSED", {})
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    files = sorted((out / "predictions").rglob("*.jsonl"))
    lines = {(str(f), n) for f in files for n in range(1, len(f.read_bytes().splitlines()) + 1)}
    assert len(files) == 2 * 3 and len(lines) == 2 * (20 + 20 + 20)
    assert set(parsed) == lines and set(parsed.values()) == {1}
