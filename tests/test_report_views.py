"""`kbc report` pages a reader can use: relation names and types in the per-relation table, per-relation bars
wrapped into rows, BEAR named as such and never measured against a chance-level Freq, LM-KBC with a figure and
the set rules (thresholds) each predictor used."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)
from PIL import Image

from bridge.report import figures
from bridge.run.summaries import collect

GOLDEN = Path(__file__).parent / "golden"
BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"


def test_per_relation_table_names_each_relation_and_its_type(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "lama_run", run)
    collect(run)
    code, _, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    page = (run / "report" / "report.md").read_text(encoding="utf-8")
    want = {line for line in (run / "summary.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| trex | P19 place of birth | N-1 |")}
    assert len(want) == 1 and want <= set(page.splitlines())


def test_many_relations_wrap_into_rows_of_readable_width(tmp_path):
    panels = {"trex": {f"P{i}": {"freq": float(i), "bert": 1.0} for i in range(41)}}
    png, _ = figures.grouped_bars(panels, {}, "P@1 (%)", tmp_path, "bars")
    width, height = Image.open(png).size
    assert width <= 1200 and height > 900  # three rows of 14, 14 and 13 relations, not one 2,860 px strip
    few = {"trex": {f"P{i}": {"freq": 1.0} for i in range(5)}, "google_re": {"a": {"freq": 1.0}}}
    png, _ = figures.grouped_bars(few, {}, "P@1 (%)", tmp_path, "few")
    width, height = Image.open(png).size
    assert width > height  # a handful of groups stay side by side in one row
    assert [(t, c, len(g)) for t, c, g in figures._wrapped(panels)] == [
        ("trex (1 of 3)", "trex", 14), ("trex (2 of 3)", "trex", 14), ("trex (3 of 3)", "trex", 13)]


def test_a_group_without_a_predictors_value_says_n_a_where_a_zero_has_no_mark(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    drawn = []
    monkeypatch.setattr(figures, "save", lambda fig, out, key: drawn.append(fig) or [out / "a.png", out / "a.svg"])
    panels = {"lmkbc2024": {"awardWonBy": {"a:freq": 0.0, "b:freq": 5.0}, "personHasCityOfDeath": {"a:freq": 45.0}}}
    figures.grouped_bars(panels, {}, "macro F1 (%)", tmp_path, "bars")
    (ax,) = drawn[0].axes
    marks = [(round(t.get_position()[0], 2), t.get_text()) for t in ax.texts]
    assert marks == [(1.2, "n/a")]  # b:freq holds no personHasCityOfDeath; a:freq's 0 on awardWonBy is a value
    plt.close("all")


def test_delta_panels_have_one_x_axis_each(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    drawn = []
    monkeypatch.setattr(figures, "save", lambda fig, out, key: drawn.append(fig) or [out / "a.png", out / "a.svg"])
    panels = {"trex": [("P19", {"bert": -10.0}, 20.0), ("P36", {"bert": 5.0}, 0.0)]}
    figures.deltas(panels, "freq", {}, tmp_path, "d")
    axes = drawn[0].axes
    assert len(axes) == 2 and [ax.get_xlabel() for ax in axes] == ["P@1: bert − freq (points)",
                                                                    "object in subject (% of facts)"]
    assert all(ax.get_shared_x_axes().get_siblings(ax) == [ax] for ax in axes)  # no twin axis on a panel
    plt.close("all")


def test_bear_report_is_bear_and_draws_no_delta_against_chance_level_freq(tiny_models, tmp_path, monkeypatch,  # noqa: F811
                                                                          capsys):
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "bear"
    code, _, err = run_kbc(["run", "bear", "--relations", "P30", "P19", "P36", "--predictors", "freq", "random",
                            f"bert={tiny_models('bert-cased')}", "--limit", "3", "--data-dir", str(BEAR), "--out",
                            str(out), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    page = (out / "report" / "report.md").read_text(encoding="utf-8")
    assert f"Run `{out}`: experiment `bear`, corpora bear, predictors freq, random, bert" in page
    assert "(Freq is chance level on BEAR: its ranking there is the data file's order)" in page
    assert not list((out / "report" / "figures").glob("delta_*"))


def test_lmkbc_report_has_a_figure_and_the_set_rules(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "lmkbc"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "tuned=freq", "--set", "freq.set=top:1", "--set",
                            "tuned.set=threshold-tuned", "--relations", "personHasCityOfDeath",
                            "seriesHasNumberOfEpisodes", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    page = (out / "report" / "report.md").read_text(encoding="utf-8")
    chosen = {}
    for path in (out / "predictions" / "lmkbc2024" / "tuned").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            chosen[record["relation"]] = record["threshold"]
    assert chosen == {"personHasCityOfDeath": 0.03, "seriesHasNumberOfEpisodes": 0.04}
    assert "`freq`: set rule `top:1`." in page.splitlines()
    assert ("`tuned`: set rule `threshold-tuned`; thresholds tuned on train (best macro F1 per relation): "
            "personHasCityOfDeath 0.03, seriesHasNumberOfEpisodes 0.04.") in page.splitlines()
    assert (out / "report" / "figures" / "macro_f1_relation.png").is_file()
