"""The registry's `bert` (model=PATH) takes every option of a masked LM given by path, and answers alike."""

from __future__ import annotations

import json

from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)


def test_kbc_ls_bert_lists_the_statement_and_set_options(capsys):
    code, out, _ = run_kbc(["ls", "bert"], capsys)
    keys = [line.split("=")[0].strip() for line in out.splitlines() if line.startswith("  --set")]
    assert code == 0
    assert keys == ["--set bert.model", "--set bert.candidates", "--set bert.vocab_file", "--set bert.normalize",
                    "--set bert.max_length", "--set bert.cache", "--set bert.scoring", "--set bert.pll",
                    "--set bert.reduction", "--set bert.set"]


def test_registry_bert_scores_statements_as_the_path_given_model(tiny_models, lama_dir, tmp_path, monkeypatch,  # noqa: F811
                                                                 capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model, out = tiny_models("bert-uncased"), tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P36", "--predictors", "bert",
                            f"path={model}", "--set", f"bert.model={model}", "--set", "scoring=statement", "--set",
                            "pll=original", "--limit", "3", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    specs = json.loads((out / "config.json").read_text())["predictor_specs"]
    assert specs["bert"]["options"]["scoring"] == specs["path"]["options"]["scoring"] == "statement"
    assert specs["bert"]["options"]["pll"] == "original"

    def records(name):
        lines = (out / "predictions" / "trex" / name / "P36.jsonl").read_text().splitlines()
        return {r["uid"]: (r["answers"], r["rank_exact_raw"]) for r in map(json.loads, lines)}

    got = records("bert")
    assert len(got) == 3 and all(len(answers) == 10 for answers, _ in got.values())  # no fact dropped
    assert got == records("path")
