"""A run file's options and `--set`: both apply, `--set` winning key by key."""

from __future__ import annotations

import json

import lm_fixtures
from cli_support import run_kbc

tiny_models = lm_fixtures.tiny_models


def _options(out) -> dict:
    specs = json.loads((out / "config.json").read_text())["predictor_specs"]
    return {name: spec["options"] for name, spec in specs.items()}


def test_set_adds_to_the_run_files_options_and_wins_key_by_key(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = tiny_models("bert-cased")
    run_file = tmp_path / "run.toml"
    run_file.write_text(f'corpus = "google_re"\nrelations = "place_of_death"\nlimit = 2\ndata_dir = "{lama_dir}"\n'
                        f'[predictors]\nfreq = "freq"\nb = {{ spec = "{bert}", candidates = "common" }}\n'
                        f'c = {{ spec = "{bert}", candidates = "common" }}\n')
    base = ["run", "lama", "--config", str(run_file), "--quiet"]
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "file")], capsys)
    assert code == 0, err
    assert _options(tmp_path / "file") == {"freq": {}, "b": {"candidates": "common"}, "c": {"candidates": "common"}}
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "both"), "--set", "c.candidates=relation"], capsys)
    assert code == 0, err
    assert _options(tmp_path / "both") == {"freq": {}, "b": {"candidates": "common"}, "c": {"candidates": "relation"}}
    # predictors named on the command line leave the file's predictor tables, and their options, behind
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "flags"), "--predictors", "freq", f"b={bert}"], capsys)
    assert code == 0, err
    assert _options(tmp_path / "flags") == {"freq": {}, "b": {}}
    # a bad value the command line overrides is not checked; one it keeps is named by the file and its key
    run_file.write_text(run_file.read_text().replace('candidates = "common" }\nc', 'candidates = "commn" }\nc'))
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "bad")], capsys)
    assert code == 2 and f"--config {run_file}: predictors.b.candidates=commn" in err, err
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "fixed"), "--set", "b.candidates=full"], capsys)
    assert code == 0, err
    assert _options(tmp_path / "fixed")["b"] == {"candidates": "full"}


def test_a_run_files_home_folder_is_expanded(lama_dir, tmp_path, capsys, monkeypatch):
    """No shell expands `~` in a file: `out = "~/runs/x"` is the home folder's, not a folder named `~` here."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run_file = tmp_path / "run.toml"
    run_file.write_text(f'corpus = "google_re"\nrelations = "place_of_death"\nlimit = 2\ndata_dir = "{lama_dir}"\n'
                        'out = "~/runs/x"\n[predictors]\nfreq = "freq"\n')
    code, out, err = run_kbc(["run", "lama", "--config", str(run_file), "--quiet"], capsys)
    assert code == 0, err
    assert (tmp_path / "home" / "runs" / "x" / "summary.json").is_file()
    assert not (tmp_path / "~").exists()
    assert f"written: {tmp_path / 'home' / 'runs' / 'x'}/summary.md" in out
