"""`kbc data stats`: a BEAR folder read without `--corpus bear` says which flag reads it; counts in words."""

from __future__ import annotations

from cli_support import run_kbc


def test_bear_folder_without_corpus_names_the_flag(shared_data, monkeypatch, capsys):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    bear = shared_data / "bear"
    code, _, err = run_kbc(["data", "stats", "--data-dir", str(bear)], capsys)
    assert (code, err) == (2, f"error: {bear} holds no LAMA data (no relations.jsonl); it holds BEAR data: add "
                              "--corpus bear\n")
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(bear), "--corpus", "bear"], capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("# bear: 7731 facts, 60 relations, version ")


def test_one_relation_is_singular(lama_dir, capsys):
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(lama_dir), "--corpus", "squad"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "# squad: 305 facts, 1 relation, version 4fba0fb977f04a82"


def test_bear_summary_is_headed_bear(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P19", "--predictors", "freq",
                            "--limit", "5", "--data-dir", str(shared_data / "bear"), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    assert (out / "summary.md").read_text().splitlines()[0] == "# BEAR probe"
