"""Mistyped corpus names and `--set` keys are refused with the closest right name."""

from __future__ import annotations

import pytest
from cli_support import run_kbc

from bridge.run.config import RunConfig, restrict_relations
from bridge.run.runner import check_relations
from eval.errors import ConfigError
from eval.lama import Corpus

CHOICES = ("'trex', 'google_re', 'squad', 'conceptnet', 'trex-uhn', 'google_re-uhn', 'bear', 'bear-big', 'lmkbc2024', "
           "'negated-trex', 'negated-google_re', 'negated-conceptnet', 'negated-squad', 'fewrel'")


def _error(argv: list[str], capsys) -> str:
    code, out, err = run_kbc(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    return err.strip()


def test_unknown_corpus_of_a_run(tmp_path, capsys):
    err = _error(["run", "lama", "--corpus", "trexx", "--predictors", "freq", "--out", str(tmp_path / "run")], capsys)
    assert err == (f"error: Invalid value for '--corpus': 'trexx' is not one of {CHOICES} (did you mean 'trex'?). "
                   "(see `kbc run lama --help`)")


def test_unknown_corpus_of_data_stats(capsys):
    err = _error(["data", "stats", "--corpus", "google-re"], capsys)
    assert err == (f"error: Invalid value for '--corpus': 'google-re' is not one of {CHOICES} (did you mean "
                   "'google_re'?). (see `kbc data stats --help`)")


def test_nothing_close_gives_no_guess(tmp_path, capsys):
    err = _error(["run", "lama", "--corpus", "wikidata", "--predictors", "freq", "--out", str(tmp_path)], capsys)
    assert err == (f"error: Invalid value for '--corpus': 'wikidata' is not one of {CHOICES}. "
                   "(see `kbc run lama --help`)")


def test_unknown_corpus_of_a_run_file(tmp_path, lama_dir, capsys):
    run_file = tmp_path / "run.toml"
    run_file.write_text(f'corpus = ["trexx"]\npredictors = ["freq"]\nout = "{tmp_path / "run"}"\n', encoding="utf-8")
    err = _error(["run", "lama", "--config", str(run_file), "--data-dir", str(lama_dir)], capsys)
    assert err == ("error: unknown corpus 'trexx' (did you mean 'trex'?); choose from "
                   + CHOICES.replace("'", ""))


@pytest.mark.parametrize(("key", "message"), [
    ("freq.dept", "--set freq.dept: predictor freq (freq) does not take 'dept'; did you mean the run flag --depth? "
                  "it takes: set"),
    ("dept", "--set dept: no predictor of this run takes this option; did you mean the run flag --depth? "
             "accepted: set (see `kbc ls NAME`)"),
    ("freq.batch_size", "--set freq.batch_size: predictor freq (freq) does not take 'batch_size'; did you mean the "
                        "run flag --batch-size? it takes: set"),
    ("freq.sett", "--set freq.sett: predictor freq (freq) does not take 'sett'; did you mean freq.set? it takes: set"),
])
def test_unknown_predictor_option(tmp_path, lama_dir, capsys, key, message):
    err = _error(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--set", f"{key}=3",
                  "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], capsys)
    assert err == f"error: {message}"
    assert not (tmp_path / "run").exists()


def test_relations_are_checked_by_the_public_restriction(lama_dir, tmp_path):
    cfg = RunConfig(corpora=["trex", "google_re"], predictors=["freq"], out=tmp_path, relations=["P199"])
    with pytest.raises(ConfigError, match=r"^--relations P199: no chosen corpus \(trex, google_re\) has this "
                                          r"relation \(did you mean 'P19'\?\)$"):
        check_relations(cfg, lama_dir)
    outline = Corpus("google_re", {"place_of_birth": None, "date_of_birth": None}, [])
    assert list(restrict_relations(outline, ["date_of_birth"], {"google_re": outline}).relations) == ["date_of_birth"]
