"""Runs over different relation subsets of one corpus (one run per model) side by side: `kbc leaderboard` and
`kbc compare --b-run` score them over the relations every run holds, say what was left out, and list what each
predictor is."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import serve_support
from cli_support import board_csv, one_sample_note, run_kbc

from bridge.run.leaderboard import board

LIMIT = 6
browser = serve_support.browser
serve_explorer = serve_support.serve_explorer


@pytest.fixture(scope="module")
def two_runs(lama_dir, tmp_path_factory) -> tuple[Path, Path]:
    """Run a: T-REx P19 and P36 (freq, gold); run b: P36 and P101 (freq, random): P36 is all they share."""
    from bridge.cli import main

    root = tmp_path_factory.mktemp("shared-runs")
    out = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        for name, relations, predictors in (("a", ["P19", "P36"], ["freq", "gold"]),
                                            ("b", ["P36", "P101"], ["freq", "random"])):
            argv = ["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors", *predictors,
                    "--limit", str(LIMIT), "--data-dir", str(lama_dir), "--out", str(root / name), "--quiet"]
            try:
                main(argv)
            except SystemExit as exc:
                assert exc.code == 0, argv
            out.append(root / name)
    return out[0], out[1]


def _group(run: Path, predictor: str, group: str, metric: str = "p@1") -> dict:
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return next(r for r in rows if (r["predictor"], r["group"], r["metric"], r["scope"], r["setting"])
                == (predictor, group, metric, "own", "raw") and r["corpus"] == "trex" and not r.get("prompt"))


def test_leaderboard_scores_the_shared_relations_and_says_what_was_left_out(two_runs, capsys):
    a, b = two_runs
    found = board([a, b])
    assert found.notes == ["trex: scored over the 1 relation every run holds: P36",
                           f"trex: left out P19 of {a} (not held by every run)",
                           f"trex: left out P101 of {b} (not held by every run)",
                           one_sample_note(LIMIT, runs=2)]
    got = {(Path(r["run"]).name, r["predictor"]): r for r in found.rows}
    assert sorted(got) == [("a", "freq"), ("a", "gold"), ("b", "freq"), ("b", "random")]
    for (run, name), row in got.items():  # each value is that run's own P36 score: P36 alone is scored
        want = _group(a if run == "a" else b, name, "P36")
        assert (row["value"], row["n_facts"], want["n_facts"]) == (want["value"], LIMIT, LIMIT), (run, name)
    assert got["a", "gold"]["value"] == 100.0 and got["a", "freq"]["value"] == got["b", "freq"]["value"]
    assert [(r["side"], r["spec"], r["parameters"], r["dtype"], r["device"]) for r in
            (got["a", "gold"], got["b", "random"])] == [("reference", "gold", None, None, None),
                                                        ("baseline", "random", None, None, None)]
    code, out, err = run_kbc(["leaderboard", str(a), str(b)], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:5] == [f"note: {n}" for n in found.notes] + [""]
    assert lines[7] == ("| rank | run | predictor | side | spec | params | dtype | device | value ± stderr | 95% CI | "
                        "#facts |")
    assert any(line.startswith(f"| 1 | {a} | gold | reference | gold | - | - | - | 100.00 ") for line in lines)
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--format", "csv"], capsys)
    assert code == 0 and err.splitlines() == [f"note: {n}" for n in found.notes]
    notes = len(found.notes)  # the notes go first, as comment lines
    assert out.splitlines()[:notes] == [f"# note: {n}" for n in found.notes]
    assert out.splitlines()[notes].endswith(",own_value,own_n_facts,upper_bound,side,spec,parameters,dtype,device,"
                                        "bootstrap,bootstrap_seed")


def test_own_scope_over_different_relations_counts_only_the_shared_ones(two_runs):
    a, b = two_runs
    rows = board([a, b], scope="own").rows
    assert {(Path(r["run"]).name, r["predictor"]): (r["value"], r["n_facts"]) for r in rows} == {
        (run.name, name): (_group(run, name, "P36")["value"], LIMIT)
        for run, name in ((a, "freq"), (a, "gold"), (b, "freq"), (b, "random"))}


def test_a_run_of_other_data_is_left_out_and_named_and_no_corpus_is_refused(two_runs, tmp_path, capsys):
    a, b = two_runs
    code, _, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "google_re"], capsys)
    assert (code, err) == (2, f"error: no run holds google_re results ({a}: trex; {b}: trex)\n")
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["data_versions"]["trex"]["P36"] = "0000000000000000"
    c = tmp_path / "c"
    shutil.copytree(b, c)
    (c / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, out, err = run_kbc(["leaderboard", str(a), str(c), "--format", "json"], capsys)
    alone = board([a])
    assert (code, json.loads(out)["rows"]) == (0, alone.rows)  # the rest ranked as without the odd run, never beside it
    assert err == "".join(f"note: {n}\n" for n in [
        f"left out {c}: it and {a} differ in trex data versions (P36); runs of other data are never ranked together",
        *alone.notes])


def test_compare_across_runs_pairs_the_shared_relation(two_runs, capsys):
    a, b = two_runs
    code, out, err = run_kbc(["compare", str(a), "gold", "freq", "--b-run", str(b), "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["b_run"] == str(b) and result["notes"][0] == "trex: scored over the 1 relation every run holds: P36"
    trex = result["corpora"]["trex"]
    assert list(trex["relations"]) == ["P36"] and trex["overall"]["n"] == LIMIT
    assert trex["macro_p1_a"] == 100.0 and trex["macro_p1_b"] == _group(b, "freq", "P36")["value"]
    code, out, err = run_kbc(["compare", str(a), "freq", "freq", "--b-run", str(b)], capsys)
    assert code == 0, err
    # neither answered by generation: the rule says nothing of written answers
    assert out.splitlines()[:2] == [f"A = freq of {a}, B = freq of {b}, setting raw; a fact is right when the gold "
                                    "is ranked 1st",
                                    "note: trex: scored over the 1 relation every run holds: P36"]


def test_explorer_board_of_runs_over_different_relations(two_runs, serve_explorer, browser, tmp_path):
    """In Chromium: the board of both runs over P36 with its notes; unticking run b in the run picker gives run
    a's own board (P19 and P36, no note); the corpus picker lists the corpora of the runs."""
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    a, b = two_runs
    with serve_support.served(create_app(serve_explorer, Runs([a, b]))) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url + "/leaderboard")
        assert page.inner_text("#board-note-1") == "trex: scored over the 1 relation every run holds: P36"
        assert page.inner_text("#board-note-2") == "trex: left out P19 of a (not held by every run)"
        rows = page.locator("#leaderboard tr").all_inner_texts()[1:]
        assert [r.split("\t")[2:5] for r in rows][0] == ["a", "gold", "reference"]
        assert {tuple(r.split("\t")[2:5]) for r in rows} == {("a", "gold", "reference"), ("a", "freq", "kb"),
                                                              ("b", "freq", "kb"), ("b", "random", "baseline")}
        assert {r.split("\t")[12] for r in rows} == {str(LIMIT)}
        assert page.eval_on_selector_all("#corpus-picker option", "os => os.map(o => o.value)") == ["", "trex"]
        page.uncheck('#run-picker input[value="b"]')
        page.click("#board-submit")
        page.wait_for_url("**run=a**")
        assert page.locator("[id^=board-note]").all_inner_texts() == [one_sample_note(LIMIT)]
        rows = page.locator("#leaderboard tr").all_inner_texts()[1:]
        assert {tuple(r.split("\t")[2:4]) for r in rows} == {("a", "gold"), ("a", "freq")}
        assert {r.split("\t")[12] for r in rows} == {str(2 * LIMIT)}
        page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)
        assert (tmp_path / "leaderboard.png").stat().st_size > 10_000


def test_a_shared_scope_under_half_shows_the_own_scope_beside(two_runs, tmp_path, monkeypatch, capsys):
    """Run c asks 20 P36 facts, run a 6: the facts both hold are under half of c's, so the board says so and
    gives each predictor's own value (its run's P36 score) beside."""
    a, _ = two_runs
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    c = tmp_path / "c"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P36", "--predictors", "freq",
                            "--limit", "20", "--data-dir", os.environ["KBC_DATA"], "--out", str(c), "--quiet"], capsys)
    assert code == 0, err
    found = board([a, c])
    shared = LIMIT  # a sample of 20 of a relation holds the sample of 6 of the same seed
    assert {r["n_facts"] for r in found.rows} == {shared}
    assert found.notes[-2:] == [f"trex: {shared} of 20 facts answered by every predictor ranked on p@1 ({a}/freq, "
                                f"{a}/gold, {c}/freq); the rest are left out of the shared scope",
                                f"trex: the shared scope keeps less than half of what {c}/freq ({shared} of 20) "
                                "answered; their own-scope values are shown beside"]
    own = {(Path(r["run"]).name, r["predictor"]): (r["own_value"], r["own_n_facts"]) for r in found.rows}
    assert own[("c", "freq")] == (_group(c, "freq", "P36")["value"], 20)
    assert own[("a", "gold")] == (100.0, LIMIT)
    code, out, err = run_kbc(["leaderboard", str(a), str(c)], capsys)
    assert code == 0, err
    head = next(line for line in out.splitlines() if line.startswith("| rank |"))
    assert head.endswith("| #facts | own scope (#facts) |")
    assert any(line.startswith(f"| 1 | {a} | gold |") and line.endswith(f"| {shared} | 100.00 ({LIMIT}) |")
               for line in out.splitlines())


def test_a_column_of_dashes_says_why_and_a_thin_shared_scope_gives_own_totals():
    """`eval.report.table` (summary.md, `kbc run`'s headline, the report): a group no unit of which every
    predictor answered is explained below the shared table, and own totals follow when shared keeps under half."""
    from eval.report import table

    def row(p, scope, group, value, n):
        return {"corpus": "trex", "predictor": p, "setting": "raw", "scope": scope, "group": group, "metric": "f1",
                "value": value, "n_facts": n, "stderr": None}

    rows = [row("kb", "own", "statement_checking", 100.0, 50), row("kb", "own", "triple_completion", 80.0, 10),
            row("kb", "own", "all", 96.0, 60), row("freq", "own", "triple_completion", 20.0, 10),
            row("freq", "own", "all", 20.0, 10), row("kb", "shared", "triple_completion", 80.0, 10),
            row("kb", "shared", "all", 80.0, 10), row("freq", "shared", "triple_completion", 20.0, 10),
            row("freq", "shared", "all", 20.0, 10)]
    lines = table(rows, "f1", scope="shared").splitlines()
    assert lines[2:] == [
        "| trex | kb | - | 10 | - | 80.00 | 80.00 | - |", "| trex | freq | - | 10 | - | 20.00 | 20.00 | - |", "",
        "- `-` under statement_checking for every predictor: no unit of it was answered by every predictor (freq "
        "answered none; kb did: see the own-facts table).",
        "- The shared facts keep 10 of the 60 asked (less than half); own-facts Totals (#facts): kb 96.00 (60), "
        "freq 20.00 (10)."]
    assert "\n- " not in table(rows, "f1", scope="own")


def test_run_page_links_to_the_live_view_only_the_relations_it_asks(two_runs, serve_explorer):
    """Run b holds P36 and P101; the live view asks T-REx P19 and P36: a P101 subject is text, never a link that
    answers "unknown relation"."""
    import re

    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    _, b = two_runs
    with TestClient(create_app(serve_explorer, Runs([b]))) as c:
        page = c.get("/runs/b", params={"per_page": 50}).text
    rows = re.findall(r'<tr data-relation="(P\d+)"><td>P\d+</td>\s*<td>(<a href="/\?[^"]+">|<span)', page)
    assert sorted({(rel, cell.startswith("<a")) for rel, cell in rows}) == [("P101", False), ("P36", True)]
    assert len(rows) == 2 * LIMIT


def test_compare_lists_relations_in_number_order_with_labels(two_runs, capsys):
    _, b = two_runs
    code, out, err = run_kbc(["compare", str(b), "freq", "random"], capsys)
    assert code == 0, err
    rows = [line.split("  ")[0] for line in out.splitlines() if line.startswith(("P36", "P101"))]
    assert rows == ["P36 capital", "P101 field of work"]  # 36 < 101, not "P101" < "P36"


def test_data_stats_lists_relations_in_number_order_with_labels(lama_dir, capsys):
    import re

    from eval.report import relation_order

    code, out, err = run_kbc(["data", "stats", "--corpus", "trex", "--data-dir", str(lama_dir)], capsys)
    assert code == 0, err
    ids = re.findall(r"^  trex/(P\d+) ", out, flags=re.M)
    assert len(ids) == 41 and ids == relation_order(ids) and ids.index("P19") < ids.index("P101")
    assert "  trex/P19 place of birth (TREx/P19.jsonl): read 944, kept 944, dropped 0" in out.splitlines()


def test_csv_cells_carry_no_float_noise():
    from eval.cells import csv_cell, parameters_text

    assert csv_cell(28.37499999999996) == 28.375 and csv_cell(100 / 3) == 33.3333333333
    assert csv_cell(-0.1 - 0.2) == -0.3 and csv_cell(7) == 7 and csv_cell("=1") == "'=1"
    assert [parameters_text(n) for n in (None, 950, 4_386, 109_514_298, 1_300_000_000)] == [
        "-", "950", "4.39K", "110M", "1.3B"]


def test_run_page_says_when_the_shared_scope_keeps_under_half(serve_explorer, lama_dir, tmp_path, monkeypatch,
                                                              capsys):
    """Freq asked 20 P36 facts, the gold KB 6 of them (a rerun with a smaller --limit): the run page says the
    shared facts are 6 of 20 beside its own columns."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "thin"
    for predictor, limit in (("freq", 20), ("gold", LIMIT)):
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P36", "--predictors", predictor,
                                "--limit", str(limit), "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                               capsys)
        assert code == 0, err
    with TestClient(create_app(serve_explorer, Runs([out]))) as c:
        body = c.get("/api/runs/thin").json()
        page = c.get("/runs/thin").text
    note = f"trex: the shared facts are {LIMIT} of the 20 a predictor answered (less than half): read the own " \
           "columns beside them"
    assert body["notes"] == [note] and f'<p class="note" id="scope-note-1">{note}</p>' in page


def test_a_column_every_predictor_answered_apart_is_explained_as_such():
    from eval.report import unshared_note

    assert unshared_note("entity_distinction", [], ["freq", "gold"]) == (
        "`-` under entity_distinction for every predictor: no unit of it was answered by every predictor (each "
        "predictor answered other units of it: see the own-facts table).")
    assert unshared_note("x", ["freq"], []) == (
        "`-` under x for every predictor: no unit of it was answered by every predictor (freq answered none).")


def test_every_written_row_says_which_relations_it_is_scored_over(two_runs, serve_explorer, capsys):
    """CSV, JSON, `kbcompare.leaderboard` and the explorer's `/api/leaderboard` give each row the relations its
    value covers (those every run holds; a run alone, its own) and the same `upper_bound`, with the same numbers."""

    from fastapi.testclient import TestClient

    import kbcompare
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    a, b = two_runs
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--format", "csv"], capsys)
    assert code == 0, err
    rows = board_csv(out)
    assert list(rows[0])[11:14] == ["n_facts", "relations", "own_value"]
    assert list(rows[0])[-2:] == ["bootstrap", "bootstrap_seed"] and {r["bootstrap"] for r in rows} == {"1000"}
    want = {(Path(r["run"]).name, r["predictor"], r["value"], r["n_facts"], r["relations"], r["upper_bound"])
            for r in rows}
    assert want == {(run.name, name, str(_group(run, name, "P36")["value"]), str(LIMIT), "P36", "False")
                    for run, name in ((a, "freq"), (a, "gold"), (b, "freq"), (b, "random"))}
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--format", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)["rows"]
    assert [(r["relations"], r["upper_bound"]) for r in listed] == [("P36", False)] * 4
    frame = kbcompare.leaderboard(a, b)
    assert list(frame["relations"]) == ["P36"] * 4 and list(frame["value"]) == [r["value"] for r in listed]
    with TestClient(create_app(serve_explorer, Runs([a, b]))) as c:
        served = c.get("/api/leaderboard").json()["rows"]
        alone = c.get("/api/leaderboard", params={"run": "a"}).json()["rows"]
    assert [{k: v for k, v in r.items() if k != "run"} for r in served] == [
        {k: v for k, v in r.items() if k != "run"} for r in listed]
    assert [(r["predictor"], r["relations"], r["n_facts"], r["upper_bound"]) for r in alone] == [
        ("gold", "P19 P36", 2 * LIMIT, False), ("freq", "P19 P36", 2 * LIMIT, False)]
    code, out, err = run_kbc(["leaderboard", str(a), "--format", "csv", "--scope", "own"], capsys)
    assert code == 0 and {r["relations"] for r in board_csv(out)} == {"P19 P36"}


def test_report_of_runs_over_different_relations_labels_each_and_says_what_each_total_covers(two_runs, tmp_path,
                                                                                              capsys):
    """`kbc report a --compare b` and the reverse: every relation with its label, count and type from whichever
    run holds it, and under each table of Totals the relations each run's Total is over."""
    a, b = two_runs
    for first, second, order, note in (
            (a, b, "P36 capital (n=6) | P19 place of birth (n=6) | P101 field of work (n=6)",
             "trex: the runs hold different relations, so each run's Total is over its own: a over P19, P36; b over "
             "P36, P101 (`kbc leaderboard` scores both runs over P36, the relation they share)."),
            (b, a, "P36 capital (n=6) | P19 place of birth (n=6) | P101 field of work (n=6)",
             "trex: the runs hold different relations, so each run's Total is over its own: b over P36, P101; a over "
             "P19, P36 (`kbc leaderboard` scores both runs over P36, the relation they share).")):
        out = tmp_path / f"{first.name}-{second.name}"
        code, _, err = run_kbc(["report", str(first), "--compare", str(second), "--out", str(out)], capsys)
        assert code == 0, err
        lines = (out / "report.md").read_text(encoding="utf-8").splitlines()
        heads = [line for line in lines if line.startswith("| corpus | predictor | answer space (mean) |")]
        # P@1, P@10, MRR over the shared facts, then over the own facts
        assert heads == [f"| corpus | predictor | answer space (mean) | #facts | {order} | Total | Total 95% CI |"] * 6
        assert lines.count(f"- {note}") == 8  # the six score tables, the P@k curves, the per-type table
        rows = {line.split(" | ")[1]: line.split(" | ")[2] for line in lines if line.startswith("| trex | P")}
        assert rows == {"P36 capital": "1-1", "P19 place of birth": "N-1", "P101 field of work": "N-M"}
    code, _, err = run_kbc(["report", str(a), "--compare", str(a), "--out", str(tmp_path / "same")], capsys)
    assert code == 0, err
    assert "each run's Total is over its own" not in (tmp_path / "same" / "report.md").read_text(encoding="utf-8")


def test_compare_across_runs_without_a_shared_relation_names_the_command(two_runs, lama_dir, tmp_path, capsys):
    """`kbc compare --b-run` over runs that share no relation is refused in its own name, not the leaderboard's."""
    a, _ = two_runs
    c = tmp_path / "c"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P101", "--predictors", "freq",
                            "--limit", str(LIMIT), "--data-dir", str(lama_dir), "--out", str(c), "--quiet"], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["compare", str(a), "freq", "freq", "--b-run", str(c)], capsys)
    assert code != 0 and out == ""
    assert err.strip() == (f"error: trex: no relation is held by every run ({a}: P19, P36; {c}: P101); "
                           "`kbc compare --b-run` compares runs over the relations they share")
    code, _, err = run_kbc(["leaderboard", str(a), str(c)], capsys)
    assert code != 0 and "; a leaderboard compares runs over the relations they share" in err
