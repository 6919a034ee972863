"""`macro-f1` (LM-KBC's spelling) and `f1-macro` (FewRel's) name one metric: either asks for the one a run holds,
in `table()`, `kbcompare.leaderboard` and `kbc leaderboard --metric`; saved runs keep what they wrote."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_support import run_kbc

import kbcompare
from eval.errors import ConfigError
from eval.report import held_metric


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("aliases")
    mp = pytest.MonkeyPatch()
    mp.setenv("KBC_CACHE", str(root / "cache"))
    try:
        # named as ProbeCallback names the model it probes
        fewrel = kbcompare.run("fewrel", predictors={"model": "kb"}, relations=["P177", "P26"], limit=40,
                               data_dir=str(lama_dir), out=str(root / "fewrel"))
        lmkbc = kbcompare.run("lmkbc", predictors=["freq"], relations=["countryLandBordersCountry"], limit=20,
                              data_dir=str(lama_dir), out=str(root / "lmkbc"))
        yield fewrel, lmkbc
    finally:
        mp.undo()


def test_held_metric_picks_the_spelling_the_rows_hold():
    assert held_metric("macro-f1", {"f1-macro", "accuracy"}) == "f1-macro"
    assert held_metric("F1-Macro", {"macro-f1"}) == "macro-f1"
    assert held_metric("precision-macro", {"macro-p"}) == "macro-p"
    assert held_metric("macro-r", {"recall-macro"}) == "recall-macro"
    assert held_metric("macro-f1", {"macro-f1", "f1-macro"}) == "macro-f1"  # a spelling held is never swapped
    assert held_metric("p@1", {"macro-f1"}) == "p@1"


def test_saved_runs_keep_their_own_names(runs):
    fewrel, lmkbc = runs
    assert {"f1-macro", "precision-macro", "recall-macro"} <= set(fewrel.summary["metric"])
    assert not {"macro-f1", "macro-p", "macro-r"} & set(fewrel.summary["metric"])
    assert {"macro-f1", "macro-p", "macro-r"} <= set(lmkbc.summary["metric"])
    assert not {"f1-macro", "precision-macro", "recall-macro"} & set(lmkbc.summary["metric"])


@pytest.mark.parametrize("asked,held", [("macro-f1", "f1-macro"), ("macro-p", "precision-macro"),
                                        ("macro-r", "recall-macro")])
def test_table_takes_either_spelling_on_fewrel(runs, asked, held):
    fewrel, _ = runs
    alias = kbcompare.load_run(fewrel.run_dir).table(asked)
    own = fewrel.table(held)
    assert alias.columns.name == held
    pd.testing.assert_frame_equal(alias, own)
    rows = fewrel.summary
    total = rows[(rows["metric"] == held) & (rows["group"] == "all") & (rows["scope"] == "shared")
                 & (rows["setting"] == "raw")]
    assert alias.loc[("fewrel", "model"), "all"] == total["value"].item()


@pytest.mark.parametrize("asked,held", [("f1-macro", "macro-f1"), ("precision-macro", "macro-p"),
                                        ("recall-macro", "macro-r")])
def test_table_takes_either_spelling_on_lmkbc(runs, asked, held):
    _, lmkbc = runs
    alias = lmkbc.table(asked)
    assert alias.columns.name == held
    pd.testing.assert_frame_equal(alias, lmkbc.table(held))


def test_an_unknown_metric_still_names_those_held(runs):
    fewrel, _ = runs
    with pytest.raises(ConfigError, match="has no micro-f1 .*metrics: accuracy, coverage, f1-macro"):
        fewrel.table("micro-f1")


def test_leaderboard_takes_either_spelling(runs, capsys):
    fewrel, lmkbc = runs
    for run, asked, held in ((fewrel, "macro-f1", "f1-macro"), (lmkbc, "f1-macro", "macro-f1")):
        board = kbcompare.leaderboard(run, metric=asked)
        pd.testing.assert_frame_equal(board, kbcompare.leaderboard(run, metric=held))
        code, alias, err = run_kbc(["leaderboard", str(run.run_dir), "--metric", asked, "--format", "json"], capsys)
        assert code == 0, err
        code, own, err = run_kbc(["leaderboard", str(run.run_dir), "--metric", held, "--format", "json"], capsys)
        assert code == 0, err
        assert json.loads(alias) == json.loads(own)
        assert [r["value"] for r in json.loads(alias)["rows"]] == board["value"].tolist()


def test_probe_callback_takes_either_spelling(runs, tmp_path, monkeypatch):
    fewrel, _ = runs

    class Saved:
        def save_pretrained(self, path) -> None:
            path.mkdir(parents=True, exist_ok=True)

    monkeypatch.setattr("kbcompare.runs.run", lambda *args, **kwargs: fewrel)
    callback = kbcompare.ProbeCallback("fewrel", metrics=("macro-f1", "accuracy"), out=tmp_path / "probes",
                                       tokenizer=Saved())
    rows = fewrel.summary
    own = rows[(rows["predictor"] == "model") & (rows["scope"] == "own") & (rows["group"] == "all")
               & (rows["setting"] == "raw")].set_index("metric")["value"]
    assert callback.probe(Saved(), step=1) == {"probe/fewrel/f1-macro": own["f1-macro"],
                                               "probe/fewrel/accuracy": own["accuracy"]}
