"""Numbers over few of what the runs scored, and what the report and leaderboard say beside them: runs of other
`--limit` samples share few facts (a warning in every format, on stderr and from the Python API), own-scope ranks
over other fact counts (a note), a report's `all` bars over other relations (the figure's title says so), tables in
the order of their figures, the tables as CSV, figures inside the page; the API's numeric columns, scope names and
per-fact gold ranks."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from cli_support import run_kbc, run_kbc_captured
from markupsafe import escape

import kbcompare
from bridge.run.leaderboard import board

RELATIONS = ["P19", "P36", "P1412"]


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory) -> dict[str, Path]:
    """s0, s0b: one sample (50 facts per relation, seed 0) run twice; s1: seed 1; two: every fact of P19 and P36."""
    root = tmp_path_factory.mktemp("few")
    sample = ["--limit", "50", "--bootstrap", "100"]
    made = {"s0": [*RELATIONS, *sample, "--seed", "0"], "s0b": [*RELATIONS, *sample, "--seed", "0"],
            "s1": [*RELATIONS, *sample, "--seed", "1"], "two": ["P19", "P36", "--bootstrap", "100"]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        for name, args in made.items():
            code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--predictors", "freq", "random",
                                             "--relations", *args, "--data-dir", str(lama_dir), "--quiet", "--out",
                                             str(root / name)])
            assert code == 0, (name, err)
    return {name: root / name for name in made}


def _uids(run: Path, relation: str) -> set[str]:
    path = run / "predictions" / "trex" / "freq" / f"{relation}.jsonl"
    return {json.loads(line)["uid"] for line in path.read_text(encoding="utf-8").splitlines()}


def _warning(runs: dict[str, Path], names: tuple[str, str], fix: str, a="s0", b="s1", keyword=False) -> str:
    shared = {rel: len(_uids(runs[a], rel) & _uids(runs[b], rel)) for rel in RELATIONS}
    n = sum(shared.values())
    low, high = min(shared.values()), max(shared.values())
    assert 2 * n < 150 and low < high
    return (f"only {n} of the 150 facts the smaller run scored are shared ({n / 150:.0%}; {low}-{high} per "
            f"relation): the runs scored different samples ({names[0]} `--limit 50 --seed 0`; {names[1]} `--limit 50 "
            f"--seed 1`); for numbers over each run's own facts use {fix}, or rerun them with the same "
            + ("seed=, or without limit=" if keyword else "--seed, or without --limit"))


def test_a_leaderboard_of_other_samples_warns_in_every_format(runs, tmp_path, capsys):
    s0, s1 = runs["s0"], runs["s1"]
    warned = "trex: " + _warning(runs, (str(s0), str(s1)), "`--scope own`")
    found = board([s0, s1])
    assert found.warnings == [warned]
    code, out, err = run_kbc(["leaderboard", str(s0), str(s1)], capsys)
    assert code == 0 and out.startswith(f"WARNING: {warned}\nnote: ") and err == f"warning: {warned}\n"
    code, out, err = run_kbc(["leaderboard", str(s0), str(s1), "--format", "json"], capsys)
    assert code == 0 and json.loads(out) == {"rows": found.rows, "notes": found.notes, "warnings": [warned]}
    assert err.splitlines()[-1] == f"warning: {warned}"
    code, out, err = run_kbc(["leaderboard", str(s0), str(s1), "--format", "csv"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[:1 + len(found.notes)] == [f"# warning: {warned}", *(f"# note: {n}" for n in
                                                                                    found.notes)]
    table = pd.read_csv(io.StringIO(out), comment="#")
    assert table["n_facts"].tolist() == [r["n_facts"] for r in found.rows]
    for fmt in ("json", "csv"):  # a board with its notes is still a board `--out` may overwrite
        written = Path(tmp_path / f"board.{fmt}")
        for _ in range(2):
            code, _, err = run_kbc(["leaderboard", str(s0), str(s1), "--format", fmt, "--out", str(written)], capsys)
            assert code == 0 and err.endswith(f"written: {written}\n"), err
    in_python = "trex: " + _warning(runs, (str(s0), str(s1)), 'scope="own"', keyword=True)
    with pytest.warns(kbcompare.FewSharedWarning) as caught:
        frame = kbcompare.leaderboard(s0, s1)
    assert [str(w.message) for w in caught] == [in_python]
    assert frame.attrs["notes"] == [f"warning: {in_python}", *found.notes]
    # one sample run twice shares every fact: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", kbcompare.FewSharedWarning)
        assert kbcompare.leaderboard(s0, runs["s0b"]).attrs["notes"] == board([s0, runs["s0b"]]).notes
    assert board([s0, runs["s0b"]]).warnings == []


def test_own_scope_over_other_fact_counts_says_so(runs):
    s0, two = runs["s0"], runs["two"]
    found = board([s0, two], scope="own")
    counts = sorted(r["n_facts"] for r in found.rows)
    assert counts[0] == 100 and counts[-1] > 1000
    assert found.notes[-1] == (f"trex: --scope own ranks each predictor over its own facts, {counts[0]} to "
                               f"{counts[-1]} of them: the values are not over the same facts; --scope shared ranks "
                               "them over the facts all answered")
    assert not any("--scope own ranks" in n for n in board([s0, runs["s0b"]], scope="own").notes)


def test_leaderboard_numbers_are_nullable_numeric_columns(runs):
    frame = kbcompare.leaderboard(runs["s0"], runs["s0b"])
    assert {c: str(frame[c].dtype) for c in ("value", "own_value", "own_n_facts", "parameters", "n_facts", "rank")} \
        == {"value": "Float64", "own_value": "Float64", "own_n_facts": "Int64", "parameters": "Int64",
            "n_facts": "Int64", "rank": "Int64"}
    assert frame["parameters"].isna().all() and frame["own_n_facts"].tolist() == [150] * 4


def _titles_and_ticks(monkeypatch) -> dict[str, list]:
    """Wraps the figures' `save`: per figure key, each axis's left title and its tick labels in reading order (top
    to bottom for a horizontal bar chart)."""
    from bridge.report import figures

    seen: dict[str, list] = {}
    original = figures.save

    def save(fig, out, key):
        fig.canvas.draw()
        axes = []
        for ax in fig.axes:
            ys = [(t.get_window_extent().y0, t.get_text()) for t in ax.get_yticklabels() if t.get_text()]
            axes.append({"title": ax.get_title(loc="left"),
                         "x": [t.get_text() for t in ax.get_xticklabels()],
                         "y": [text for _, text in sorted(ys, key=lambda p: -p[0])]})
        seen[key] = axes
        return original(fig, out, key)

    monkeypatch.setattr(figures, "save", save)
    return seen


def _csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_a_report_of_other_samples_warns_and_its_tables_follow_its_figures(runs, tmp_path, capsys, monkeypatch):
    seen = _titles_and_ticks(monkeypatch)
    out = tmp_path / "rep"
    code, _, err = run_kbc(["report", str(runs["s0"]), "--compare", str(runs["s1"]), "--out", str(out)], capsys)
    fix = "the Scores tables (each run over its own facts) or `kbc leaderboard --scope own`"
    warned = [f"trex, deltas s1:{p} − s0:{p}: " + _warning(runs, ("s0", "s1"), fix) for p in ("freq", "random")]
    assert code == 0 and err == "".join(f"warning: {w}\n" for w in warned)
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.index(f"> **Warning:** {warned[0]}") < md.index("\n## ")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.index('<p class="warning">Warning: trex, deltas s1:freq − s0:freq: only ') < page.index("<nav>")
    # the page carries its figures; the SVGs are linked beside it
    assert page.count('<img src="data:image/png;base64,') == page.count("<img ") > 0
    assert 'src="figures/' not in page
    # tables in the order of their figures: left to right, top to bottom
    relation_rows = _csv(out / "tables" / "by_relation_1.csv")
    assert [row[1].split()[0] for row in relation_rows[1:]] == [t.split()[0] for t in seen["p_at_1_relation"][0]["x"]]
    delta_rows = _csv(out / "tables" / "deltas_1.csv")
    assert delta_rows[0][:4] == ["corpus", "relation", "#facts", "s0:freq"]
    assert [row[1].split()[0] for row in delta_rows[1:]] == [
        t.split()[0] for t in seen["delta_s1_freq_vs_s0_freq"][0]["y"]]
    assert len(delta_rows) == 4
    # every table of the page as CSV, as the Markdown shows it
    assert md.index("| " + " | ".join(relation_rows[1]) + " |") > 0


def test_all_bars_over_other_relations_say_so_in_the_figure(runs, tmp_path, capsys, monkeypatch):
    seen = _titles_and_ticks(monkeypatch)
    out = tmp_path / "rep"
    code, _, err = run_kbc(["report", str(runs["s0"]), "--compare", str(runs["two"]), "--out", str(out)], capsys)
    assert code == 0, err
    assert seen["p_at_1_type"][0]["title"] == "trex\nall: each run over its own relations: s0 P19, P36, P1412; two " \
                                              "P19, P36"
    md = (out / "report.md").read_text(encoding="utf-8")
    assert ("P@1 (%) per type (macro over relations; `all`: each run over its own relations, which differ: trex: s0 "
            "P19, P36, P1412; two P19, P36), raw.") in md
    # one run: every relation, as before
    code, _, err = run_kbc(["report", str(runs["s0"]), "--out", str(tmp_path / "one")], capsys)
    assert code == 0 and seen["p_at_1_type"][0]["title"] == "trex"
    assert "`all`: over every relation), raw." in (tmp_path / "one" / "report.md").read_text(encoding="utf-8")


def test_a_bad_scope_or_setting_is_named_with_the_accepted_values(runs):
    run = kbcompare.load_run(runs["s0"])
    with pytest.raises(kbcompare.ConfigError) as caught:
        run.table("p@1", scope="both")
    assert str(caught.value) == "scope='both': use one of 'shared', 'own'"
    with pytest.raises(kbcompare.ConfigError) as caught:
        run.table(setting="filter")
    assert str(caught.value) == "setting='filter': use one of 'raw', 'filtered'"


def test_gold_rank_is_the_list_rank_else_the_exact_one():
    from kbcompare.runs import Run

    frame = pd.DataFrame({"predictor": ["bert"] * 4, "rank_raw": pd.array([1, None, None, 3], dtype="Int64"),
                          "rank_exact_raw": pd.array([None, 159, None, None], dtype="Int64"),
                          "correct_raw": [True, False, False, False]})
    facts = Run(SimpleNamespace(instances=frame)).facts
    assert facts["gold_rank_raw"].tolist() == [1, 159, pd.NA, 3]
    assert list(facts.columns) == ["predictor", "rank_raw", "rank_exact_raw", "gold_rank_raw", "correct_raw"]
    assert (facts["gold_rank_raw"] <= 1).fillna(False).mean() == facts["correct_raw"].mean() == 0.25
    assert "gold_rank_raw" not in frame  # the table read from disk is not changed


def test_a_run_started_from_python_never_warns_about_notebook_bars(monkeypatch, tmp_path):
    """A model library imported while a run starts (`tqdm.auto`) in a kernel without ipywidgets: no TqdmWarning."""
    import importlib
    import sys

    import tqdm.notebook

    from bridge.cli.run import run as run_group

    class Shell:
        pass

    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", SimpleNamespace())
    monkeypatch.setitem(sys.modules, "IPython", SimpleNamespace(get_ipython=Shell))
    monkeypatch.setattr(tqdm.notebook, "IProgress", None)
    for name in ("tqdm.auto", "tqdm.autonotebook"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    def invoke(ctx):
        importlib.import_module("tqdm.auto")
        raise kbcompare.ConfigError("stopped")

    monkeypatch.setattr(run_group.commands["lama"], "invoke", invoke)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(kbcompare.ConfigError):
            kbcompare.run("lama", predictors=["freq"], out=str(tmp_path / "r"))
    assert [str(w.message) for w in caught if "IProgress" in str(w.message)] == []
    assert "tqdm.auto" in sys.modules  # the import happened: only its warning is kept from the user


def test_a_comparison_across_runs_of_other_samples_warns(runs, capsys):
    """`kbc compare --b-run` and `kbcompare.compare(b_run=)` across two samples: the 2x2 table stands on the facts
    both answered, so the shared share is warned of as the leaderboard does; one sample run twice is not."""
    s0, s1 = runs["s0"], runs["s1"]
    said = "trex: " + _warning(runs, (str(s0), str(s1)), "`kbc compare` within each run")
    code, out, err = run_kbc(["compare", str(s0), "freq", "random", "--b-run", str(s1), "--bootstrap", "0"], capsys)
    assert code == 0, err
    assert out.splitlines()[1] == f"warning: {said}"
    code, out, err = run_kbc(["compare", str(s0), "freq", "random", "--b-run", str(s1), "--bootstrap", "0", "--json"],
                             capsys)
    assert json.loads(out)["warnings"] == [said]
    said = "trex: " + _warning(runs, (str(s0), str(s1)), "`kbcompare.compare` within each run", keyword=True)
    with pytest.warns(kbcompare.FewSharedWarning) as caught:
        frame = kbcompare.compare(s0, "freq", "random", b_run=s1, bootstrap=0)
    assert [str(w.message) for w in caught] == [said] and frame.attrs["notes"][0] == f"warning: {said}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = kbcompare.compare(s0, "freq", "random", b_run=runs["s0b"], bootstrap=0)
    assert not any(n.startswith("warning:") for n in frame.attrs["notes"])


def test_the_explorers_leaderboard_shows_the_few_shared_warning(runs, lama_dir, tmp_path):
    """The explorer's board of two samples says what `kbc leaderboard` says, with the runs by their browsed names."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=RELATIONS, predictors=["freq"],
                                             cache_dir=tmp_path / "cache"))
    try:
        with TestClient(create_app(explorer, Runs([runs["s0"], runs["s1"]]))) as c:
            body = c.get("/api/leaderboard").json()
            said = "trex: " + _warning(runs, ("s0", "s1"), 'scope="own"', keyword=True)
            assert body["warnings"] == [said]
            page = c.get("/leaderboard").text
            assert f'<p class="warning" id="board-warning-1"><b>warning:</b> {escape(said)}</p>' in page
    finally:
        explorer.close()
