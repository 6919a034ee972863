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


def test_infer_with_the_default_axioms_over_google_re_says_they_are_t_rex_s(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["kb", "infer", "--corpus", "google_re", "--data-dir", str(lama_dir), "--store",
                            str(tmp_path / "store")], capsys)
    assert (code, err) == (2, "error: kb infer on google_re: the default axioms (kb/axioms.ttl, over T-REx's "
                              "relations) name P190, P47, P530, P131, P279, P361, P19, P527, P36, P1376, P103, P1412, "
                              "P17, P20, which google_re does not hold; pass --axioms FILE with axioms over "
                              "google_re's relations, or ask trex\n")
