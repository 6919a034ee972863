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


def test_types_of_google_re_and_of_cloze_sentences(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    store = ["--data-dir", str(lama_dir), "--store", str(tmp_path / "store")]
    code, _, err = run_kbc(["kb", "load", "--corpus", "google_re", *store], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["kb", "types", "--corpus", "google_re", *store], capsys)
    # Google-RE's types are not relations.jsonl's, and place_of_birth holds 2,937 facts, not a sample of 1,000
    assert code == 0 and out.splitlines()[-1] == "0 of 3 relations disagree with the type google_re declares", err
    code, out, err = run_kbc(["kb", "types", "--corpus", "squad", *store], capsys)
    assert (code, out, err.splitlines()[-1]) == (2, "", "error: squad holds cloze sentences, not subject-relation-"
                                                        "object facts: they have no cardinality type; ask a corpus "
                                                        "of facts (trex, google_re)")
