"""`kbc kb infer` takes the relations an axiom may name as the `kb-inferred` predictor does: the corpus's and every
relation `relations.jsonl` lists, so a data copy lacking some LAMA relation reasons over the ones it holds."""

from __future__ import annotations

import shutil

from cli_support import run_kbc


def test_infer_over_a_copy_without_some_axiom_relations(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    (data / "TREx").mkdir(parents=True)
    shutil.copy(lama_dir / "relations.jsonl", data / "relations.jsonl")
    shutil.copy(lama_dir / "TREx_reconstructed" / "P47.jsonl", data / "TREx" / "P47.jsonl")
    argv = ["--data-dir", str(data), "--store", str(tmp_path / "store")]
    code, out, err = run_kbc(["kb", "infer", *argv], capsys)
    assert code == 0, err
    counts = {line.split()[-2]: int(line.split()[-1]) for line in out.splitlines() if ":P" in line}
    assert counts["symmetric:P47"] == 722 and counts["symmetric:P190"] == 0
    assert "722 distinct new facts" in out
    code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "kb-inferred", "--quiet",
                              "--out", str(tmp_path / "run"), *argv], capsys)
    assert code == 0, err
