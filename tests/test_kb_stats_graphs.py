"""`kbc kb stats` lists the graphs the store holds, and no graph it lacks."""

from __future__ import annotations

from cli_support import run_kbc


def test_stats_lists_no_extracted_graph_the_store_lacks(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    store = ["--store", str(tmp_path / "store")]
    code, _, err = run_kbc(["kb", "load", "--corpus", "google_re", "--data-dir", str(lama_dir), *store], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["kb", "stats", *store], capsys)
    assert code == 0, err
    graphs = [line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")]
    assert graphs == ["gold-google_re"]  # not `re-naive` and `re-oracle` with 0 facts, "built from -"
    code, _, err = run_kbc(["kb", "drop", "re-naive", *store], capsys)
    assert code == 2 and err.splitlines()[-1].startswith("error: no graph 're-naive' in the store at ")
