"""A run a kbc version scored while it read the data files otherwise (`eval.lama.READING`), read by this one: its
scores are shown as they were, with one note naming its folder and the rerun that rescores it, on stderr, on the
explorer's run page and leaderboard rows, and as a Python warning; two runs of different readings compared side by
side are said to be so."""

from __future__ import annotations

import json
import warnings
from html import escape
from pathlib import Path

import pytest
from cli_support import run_kbc, run_kbc_captured

NOTED = "kbc version under data reading"


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory) -> dict[str, Path]:
    """`old`: scored under this kbc's reading; `new`: under the reading after it (as a later kbc would score it)."""
    root = tmp_path_factory.mktemp("reading")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        for name in ("old", "new"):
            if name == "new":
                from bridge.run import config
                from eval import lama

                m.setattr(lama, "READING", lama.READING + 1)
                m.setattr(config, "READING", lama.READING)
            code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--relations", "P19", "P1376",
                                             "--limit", "6", "--predictors", "freq", "gold", "--data-dir",
                                             str(lama_dir), "--out", str(root / name), "--quiet"])
            assert code == 0, err
    return {"old": root / "old", "new": root / "new", "cache": root / "cache"}


@pytest.fixture
def cached(runs, monkeypatch) -> dict[str, Path]:
    monkeypatch.setenv("KBC_CACHE", str(runs["cache"]))
    return runs


def _later(monkeypatch) -> None:
    """This kbc reads the data files with the reading after `old`'s: `old` is a run of an earlier version."""
    from eval import lama

    monkeypatch.setattr(lama, "READING", lama.READING + 1)


def _uid(run: Path) -> str:
    line = next((run / "predictions" / "trex" / "freq").glob("*.jsonl")).read_text().splitlines()[0]
    return json.loads(line)["uid"]


def _notes(err: str, run: Path) -> list[str]:
    return [line for line in err.splitlines() if NOTED in line and line.startswith(f"note: {run} ")]


def test_every_command_reading_a_run_of_an_earlier_reading_notes_it_once_and_shows_its_scores(cached, monkeypatch,
                                                                                             capsys):
    old, new = cached["old"], cached["new"]
    commands = [["compare", str(old), "freq", "gold"], ["show", str(old), "--uid", _uid(old)],
                ["leaderboard", str(old), str(new)], ["ls", str(old)], ["report", str(old), "--out",
                                                                          str(old.parent / "report")]]
    before = {}
    for argv in commands:
        code, out, err = run_kbc(argv, capsys)
        assert code == 0, err
        assert _notes(err, old) == [], argv  # this kbc's reading: nothing to say
        before[argv[0]] = out
    _later(monkeypatch)
    for argv in commands:
        code, out, err = run_kbc(argv, capsys)
        assert code == 0, err
        assert out == before[argv[0]], argv  # the scores are the ones it was scored with
        notes = _notes(err, old)
        assert len(notes) == 1, (argv, err)
        assert notes[0].startswith(f"note: {old} was scored by an earlier kbc version under data reading ")
        assert f"nothing is recomputed unless you ask; rerun the same `kbc run` command with --out {old}, into its " \
               "folder, to rescore it under this reading" in notes[0]
        assert _notes(err, new) == []  # a run of the reading this kbc has


def test_compare_across_runs_of_two_readings_says_so_beside_the_numbers(cached, monkeypatch, capsys):
    old, new = cached["old"], cached["new"]
    code, out, err = run_kbc(["compare", str(old), "freq", "gold", "--b-run", str(old)], capsys)
    assert code == 0 and "different readings" not in out
    _later(monkeypatch)
    apart = (f"{old} and {new} were scored under different readings of the data files (data reading 3 against data "
             "reading 4): a fact's labels may differ between them by the reading alone, so part of a difference may "
             f"be the reading's; rerun {old} into its folder to compare them under one reading")
    code, out, err = run_kbc(["compare", str(old), "freq", "gold", "--b-run", str(new)], capsys)
    assert code == 0, err
    assert f"note: {apart}" in out.splitlines()[:6]  # with the header naming A and B, above the table
    assert len(_notes(err, old)) == 1 and _notes(err, new) == []
    code, out, _ = run_kbc(["compare", str(old), "freq", "gold", "--b-run", str(new), "--json"], capsys)
    assert apart in json.loads(out)["notes"]


def test_the_python_api_warns_of_a_run_of_an_earlier_reading(cached, monkeypatch):
    import kbcompare

    old, new = cached["old"], cached["new"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = kbcompare.load_run(old).table()
    _later(monkeypatch)
    with pytest.warns(kbcompare.EarlierReadingWarning) as caught:
        again = kbcompare.load_run(old).table()
    [said] = [str(w.message) for w in caught]
    assert said.startswith(f"{old} was scored by an earlier kbc version under data reading 3")
    assert "nothing is recomputed unless you ask" in said and caught[0].filename == __file__
    assert again.equals(table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kbcompare.load_run(new)  # this kbc's reading
    with pytest.warns(kbcompare.EarlierReadingWarning) as caught:
        board = kbcompare.leaderboard(old, new)
    assert [str(w.message) for w in caught] == [said] and said in board.attrs["notes"]
    with pytest.warns(kbcompare.EarlierReadingWarning) as caught:
        frame = kbcompare.compare(old, "freq", "gold")
    assert [str(w.message) for w in caught] == [said] and said in frame.attrs["notes"]


def test_the_explorer_marks_a_run_of_an_earlier_reading_on_its_page_and_leaderboard_rows(cached, lama_dir, tmp_path,
                                                                                        monkeypatch):
    from fastapi.testclient import TestClient

    from bridge.run.reading import reading_note
    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    old, new = cached["old"], cached["new"]
    _later(monkeypatch)
    said = reading_note(old, json.loads((old / "config.json").read_text()))
    assert said is not None and said.startswith(f"{old} was scored by an earlier kbc version")
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=["freq"],
                                             cache_dir=tmp_path / "cache"))
    try:
        with TestClient(create_app(explorer, Runs([old, new]))) as c:
            assert c.get("/api/runs/old").json()["reading"] == said
            assert c.get("/api/runs/new").json()["reading"] is None
            assert f'<p class="note" id="earlier-reading">{escape(said)}</p>' in c.get("/runs/old").text
            assert 'id="earlier-reading"' not in c.get("/runs/new").text
            page = c.get("/leaderboard").text
            rows = [row for row in page.split("<tr>") if "<td>" in row]
            badge = f'<span class="badge reading" title="{escape(said)}">other data reading</span>'
            assert rows and all((badge in row) == ('href="/runs/old"' in row) for row in rows)
            assert any('href="/runs/old"' in row for row in rows)
            assert escape(said) in page.split('<table id="leaderboard">')[0]  # said above the table too
    finally:
        explorer.close()
