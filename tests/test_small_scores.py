"""A score that is not zero but rounds to zero (a tiny random BERT's MRR, 0.00023 ± 0.000076) is shown with the
digits that make it not a zero in every text view: `0.000 ± 0.000 [0.000, 0.000]` reads as the zero-width interval
of a predictor that scored every fact alike. Every other value keeps its fixed decimals.

`tests/golden/lama_run` holds such a BERT; its run config records no data reading, so `kbc report` notes on its page
too that an earlier version scored it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import run_kbc

from bridge.run.summaries import collect
from eval.lama import READING

GOLDEN = Path(__file__).parent / "golden"
BERT_MRR = "0.00023 ± 0.000076"  # the golden BERT's MRR over T-REx, shared facts, and its standard error
BERT_CI = "[0.00012, 0.00039]"


@pytest.mark.parametrize(("value", "places", "shown"), [
    (0.00027, 3, "0.00027"), (6.7e-05, 3, "0.000067"), (0.004, 2, "0.0040"), (-0.0001, 3, "-0.00010"),
    (2.7e-12, 3, "2.7e-12"),  # far below: e-notation, not a dozen zeros
    (0.0, 3, "0.000"), (0.0, 2, "0.00"), (0.1234, 3, "0.123"), (22.03, 2, "22.03"), (0.0005, 3, "0.001"),
    (100.0, 2, "100.00"), (-0.5, 2, "-0.50")])
def test_a_value_rounding_to_zero_keeps_two_significant_digits_and_others_their_decimals(value, places, shown):
    from eval.cells import fixed

    assert fixed(value, places) == shown


@pytest.fixture
def run(tmp_path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(GOLDEN / "lama_run", out)
    collect(out)
    return out


def _bert_mrr_lines(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith("| trex | bert |") and BERT_MRR in line]
    assert lines
    return lines


def test_summary_md_and_report_tables_show_a_small_mrr_as_not_zero(run, tmp_path, capsys):
    summary = (run / "summary.md").read_text(encoding="utf-8")
    assert all(BERT_CI in line for line in _bert_mrr_lines(summary))
    assert "0.000 ± 0.000" not in summary and "[0.000, 0.000]" not in summary
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    page = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert all(BERT_CI in line for line in _bert_mrr_lines(page))
    assert "0.000 ± 0.000" not in page and "[0.000, 0.000]" not in page
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert f"{BERT_MRR}</td>" in html and f"{BERT_CI}</td>" in html


def test_leaderboard_shows_a_small_mrr_as_not_zero(run, capsys):
    code, out, err = run_kbc(["leaderboard", str(run), "--corpus", "trex", "--metric", "mrr"], capsys)
    assert code == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("| ") and " bert " in line]
    assert f"| {BERT_MRR} | {BERT_CI} |" in line


def test_explorer_run_page_and_leaderboard_show_a_small_mrr_as_not_zero(run):
    from types import SimpleNamespace

    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    live = SimpleNamespace(corpus=SimpleNamespace(name="trex", facts=[]), relations={}, data_dir=".",
                           close=lambda: None)  # asks no relation of the run: the run's pages alone are read
    with TestClient(create_app(live, Runs([run]))) as client:
        page = client.get("/runs/run").text
        board = client.get("/leaderboard", params={"metric": "mrr", "corpus": "trex"}).text
    (row,) = [r for r in page.split("<tr>") if r.startswith("<td>trex</td><td>bert</td>")]
    assert "<td>0.00023</td>" in row
    (row,) = [r for r in board.split("<tr>") if "<td>bert" in r]
    assert "<td>0.00023</td><td>0.000076</td><td>[0.00012, 0.00039]</td>" in row


def test_compare_shows_a_small_p_at_1_and_difference_as_not_zero():
    """One fact of 25,000 right: P@1 0.004%, which two decimals print as 0.00, the P@1 of a predictor right on none."""
    from bridge.cli.compare import _table
    from eval.compare import Comparison, Counts

    c = Counts(only_a=1, neither=24999)
    res = Comparison(by_relation={"P19": c}, overall=c, macro_p1_a=c.p1_a, macro_p1_b=0.0, difference=c.p1_a,
                     ci=(0.0, 0.012), n_boot=10, seed=0)
    lines = _table("trex", "a", "b", res, {"answered_by_a_only": 0, "answered_by_b_only": 0})
    assert [line.split()[-3:] for line in lines if line.startswith(("P19 ", "all "))] == [["0.0040", "0.00", "1"]] * 2
    assert "macro over relations: +0.0040 points, 95% CI [+0.00, +0.01]" in "\n".join(lines)


def test_report_page_carries_the_earlier_reading_note_once_per_run(run, tmp_path, capsys):
    from bridge.run.directory import open_run
    from bridge.run.reading import reading_note

    note = reading_note(run, open_run(run).config)
    assert note is not None  # the golden run records no data reading
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    assert f"note: {note}" in err
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert md.count(f"> **Note:** {note}") == 1
    assert md.index("**Note:**") < md.index("\n## ")  # above the first section
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert html.count('<p class="note">Note: ') == 1 and html.index('class="note"') < html.index("<nav>")
    other = tmp_path / "other"
    shutil.copytree(run, other)
    code, _, err = run_kbc(["report", str(run), "--compare", str(other), "--out", str(tmp_path / "both")], capsys)
    assert code == 0, err
    md = (tmp_path / "both" / "report.md").read_text(encoding="utf-8")
    assert md.count("> **Note:** ") == 2 and f"> **Note:** {note}" in md
    assert f"> **Note:** {reading_note(other, open_run(other).config)}" in md
    current = tmp_path / "current"
    shutil.copytree(run, current)
    config = json.loads((current / "config.json").read_text(encoding="utf-8"))
    (current / "config.json").write_text(json.dumps({**config, "data_reading": READING}), encoding="utf-8")
    collect(current)  # as this kbc scores it
    code, _, err = run_kbc(["report", str(current), "--out", str(tmp_path / "current-report")], capsys)
    assert code == 0, err
    assert "**Note:**" not in (tmp_path / "current-report" / "report.md").read_text(encoding="utf-8")
