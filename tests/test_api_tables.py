"""`Run.table()` of a run over two corpora with other groups: each corpus's groups, then `all` last, with the
values of summary.json."""

from __future__ import annotations

import json

import kbcompare


def test_a_two_corpus_table_ends_with_all(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    result = kbcompare.run(
        "lama",
        corpus=["trex", "google_re"],
        relations=["P19", "P1412", "place_of_birth"],
        limit=10,
        predictors=["freq"],
        data_dir=lama_dir,
        out=tmp_path / "run",
        bootstrap=20,
    )
    table = result.table()
    assert list(table.columns) == ["P19", "P1412", "place_of_birth", "all"]
    rows = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    for corpus in ("trex", "google_re"):
        want = {
            r["group"]: r["value"]
            for r in rows
            if r["corpus"] == corpus and r["metric"] == "p@1" and r["setting"] == "raw" and r["scope"] == "shared"
        }
        got = table.loc[(corpus, "freq")].dropna().to_dict()
        assert "all" in got and {g: want[g] for g in got} == got  # summary.json's cells, types left out
