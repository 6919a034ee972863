"""A model folder is named in `--predictors` by any path: one with spaces (or `=`) works as any other.

`NAME=SPEC` splits at the first `=` only, and a `NAME=SPEC` argument (or an existing folder) is one
predictor, whatever its path holds; other arguments may still list several predictors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lm_fixtures
from cli_support import run_kbc

from bridge.run.options import parse_predictors, predictor_items
from bridge.run.results import TOP_SAVED

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests
# no result cache: every run loads the model from its folder
RUN = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_death", "--limit", "3", "--set", "cache=off",
       "--quiet"]


def test_predictor_items_keep_a_named_path_whole(tmp_path):
    folder = tmp_path / "my models" / "tiny bert"
    folder.mkdir(parents=True)
    assert predictor_items([f"bert={folder}", "freq gold", "freq", str(folder), "gold bert=/m/b"]) == [
        f"bert={folder}", "freq", "gold", str(folder), "bert=/m/b"]
    specs = parse_predictors(["bert=/models/a=b c", str(folder)])
    assert [(s.name, s.spec) for s in specs] == [("bert", "/models/a=b c"), ("tiny-bert", str(folder))]

def _answers(run: Path) -> list[list]:
    lines = (run / "predictions" / "google_re" / "bert" / "place_of_death.jsonl").read_text().splitlines()
    return [json.loads(line)["answers"] for line in lines]


def test_a_model_folder_with_a_space_answers_as_the_same_folder_without(tiny_models, lama_dir, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    plain = tmp_path / "models" / "bert"
    spaced = tmp_path / "my models" / "bert"
    shutil.copytree(tiny_models("bert-cased"), plain)
    shutil.copytree(tiny_models("bert-cased"), spaced)
    (tmp_path / "run.toml").write_text(f'predictors = ["{spaced}"]\n')  # unnamed: named for its last folder
    ways = {
        "plain": ["--predictors", f"bert={plain}"],
        "named": ["--predictors", f"bert={spaced}"],  # bert="/…/my models/bert" or bert=/…/my\ models/bert
        "run file": ["--config", str(tmp_path / "run.toml")],
    }
    answers = {}
    for way, argv in ways.items():
        out = tmp_path / way
        code, _, err = run_kbc([*RUN, *argv, "--data-dir", str(lama_dir), "--out", str(out)], capsys)
        assert code == 0, (way, err)
        config = json.loads((out / "config.json").read_text())
        assert config["predictor_specs"]["bert"]["spec"] == str(plain if way == "plain" else spaced), way
        answers[way] = _answers(out)
    assert len(answers["plain"]) == 3 and all(len(a) == TOP_SAVED for a in answers["plain"])
    assert all(found == answers["plain"] for found in answers.values())
