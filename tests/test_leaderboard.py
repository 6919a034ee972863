"""`kbc leaderboard`: predictors of several runs in one table, the numbers of each run's own summary."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import serve_support
from cli_support import board_csv, one_sample_note, run_kbc

from bridge.run.leaderboard import leaderboard_rows
from bridge.run.summaries import collect

GOLDEN = Path(__file__).parent / "golden"
serve_explorer = serve_support.serve_explorer


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    out = []
    for name in ("a", "b"):
        shutil.copytree(GOLDEN / "lama_run", tmp_path / name)
        out.append(tmp_path / name)
        collect(out[-1])
    return out[0], out[1]


def _totals(run: Path, scope: str, metric: str) -> dict[tuple[str, str], dict]:
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {(r["corpus"], r["predictor"]): r for r in rows
            if r["scope"] == scope and r["setting"] == "raw" and r["group"] == "all" and r["metric"] == metric}


@pytest.mark.parametrize("scope", ["own", "shared"])
def test_one_run_gives_its_summary_totals_and_intervals(runs, scope):
    a, _ = runs
    want = _totals(a, scope, "mrr")
    got = leaderboard_rows([a], metric="mrr", scope=scope)
    assert len(got) == len(want) == 6
    for row in got:
        ref = want[(row["corpus"], row["predictor"])]
        assert [row[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")] == \
            [ref[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")]


def test_two_runs_ranked_with_csv_and_json(runs, capsys):
    a, b = runs
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--format", "csv"], capsys)
    assert code == 0, err
    rows = board_csv(out)
    assert [(r["rank"], Path(r["run"]).name, r["predictor"], r["value"][:5]) for r in rows] == [
        ("1", "a", "gold", "97.91"), ("1", "b", "gold", "97.91"), ("3", "a", "freq", "33.18"),
        ("3", "b", "freq", "33.18"), ("5", "a", "bert", "0.0"), ("5", "b", "bert", "0.0")]
    assert {r["n_facts"] for r in rows} == {"45"}
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--scope", "own", "--format", "json"], capsys)
    assert code == 0, err
    got = json.loads(out)["rows"]
    assert [r["n_facts"] for r in got if r["corpus"] == "google_re"] == [24, 24, 23, 23, 24, 24]
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "google_re"], capsys)
    assert code == 0, err
    assert f"| 3 | {a} | freq | kb | freq | - | - | - | 8.71 ± 6.17 | [0.00, 21.97] | 23 |" in out


def test_json_is_spelt_as_other_commands_spell_it(runs, capsys):
    """`--json` (kbc compare, show, ls, kb types, index search) prints what `--format json` prints."""
    a, b = runs
    args = ["leaderboard", str(a), str(b), "--corpus", "trex"]
    code, by_format, err = run_kbc([*args, "--format", "json"], capsys)
    assert code == 0, err
    for flags in (["--json"], ["--json", "--format", "json"]):
        code, out, err = run_kbc([*args, *flags], capsys)
        assert code == 0 and out == by_format, (flags, err)
    code, out, err = run_kbc([*args, "--json", "--format", "csv"], capsys)
    assert code == 2 and err == "error: --json and --format csv ask for two formats; give one\n" and not out


def test_runs_that_measure_other_things_are_refused(runs, capsys):
    a, b = runs
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["data_versions"]["trex"]["P19"] = "0000000000000000"
    (b / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--format", "json"], capsys)
    assert code == 0 and {r["run"] for r in json.loads(out)["rows"]} == {str(a)}  # b is of other data: left out, named
    assert err.splitlines()[0] == (f"note: left out {b}: it and {a} differ in trex data versions (P19); runs of other "
                                   "data are never ranked together")
    for scope in ("shared", "own"):
        code, _, err = run_kbc(["leaderboard", str(a), "--metric", "p@5", "--scope", scope], capsys)
        assert (code, err) == (2, "error: --metric p@5: no metric of that name in these runs (did you mean p@1?); "
                                  "rank by --metric mrr, p@1 or p@10\n"), scope
    code, _, err = run_kbc(["leaderboard", str(a), str(a.parent)], capsys)
    assert code == 2 and "no config.json" in err


def test_rank_is_by_value_whatever_the_sort(runs, capsys):
    a, b = runs
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--metric", "mrr", "--sort",
                              "predictor", "--format", "json"], capsys)
    assert code == 0, err
    got = [(r["rank"], Path(r["run"]).name, r["predictor"], round(r["value"], 4)) for r in json.loads(out)["rows"]]
    assert got == [(5, "a", "bert", 0.0002), (5, "b", "bert", 0.0002), (3, "a", "freq", 0.435),
                   (3, "b", "freq", 0.435), (1, "a", "gold", 0.9896), (1, "b", "gold", 0.9896)]
    rows = leaderboard_rows([a], "trex", "mrr", scope="own", sort="run")
    assert [(r["rank"], r["predictor"]) for r in rows] == [(3, "bert"), (2, "freq"), (1, "gold")]


def test_own_scope_keeps_the_runs_bootstrap_setting(runs, capsys):
    a, b = runs
    collect(a, bootstrap=0)
    collect(b, bootstrap=0)
    for scope in ("own", "shared"):  # own: summary.json as written; shared: the runs' recorded 0 resamples
        rows = leaderboard_rows([a, b], "trex", scope=scope)
        assert [(r["predictor"], r["stderr"] is None, r["ci_low"], r["ci_high"]) for r in rows][:3] == [
            ("gold", False, None, None), ("gold", False, None, None), ("freq", False, None, None)], scope
    row = leaderboard_rows([a, b], "trex", scope="shared", bootstrap=200)[0]
    assert row["ci_low"] is not None and row["ci_low"] <= row["value"] <= row["ci_high"]
    collect(b, bootstrap=1000)  # runs that disagree: the default, 1000 resamples, seed 0
    shared = leaderboard_rows([a, b], "trex", scope="shared")
    want = _totals(b, "shared", "p@1")[("trex", "gold")]
    assert [(r["ci_low"], r["ci_high"]) for r in shared[:2]] == [(want["ci_low"], want["ci_high"])] * 2
    (a / "summary.json").unlink()
    code, _, err = run_kbc(["leaderboard", str(a), "--scope", "own"], capsys)
    # the golden run keeps no record digests, as an older kbc's: `kbc run` writes its scores into a new --out
    assert (code, err) == (2, f"error: {a}: its summary.json is missing; rerun the same `kbc run` command into a new "
                              "--out to rescore it\n")


def test_upper_bounds_are_marked_and_run_names_are_the_paths_given(runs, capsys):
    a, b = runs
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["predictor_specs"]["gold"]["spec"] = "re-oracle"
    (b / "config.json").write_text(json.dumps(config), encoding="utf-8")
    collect(b)  # as a run of re-oracle scores it
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex"], capsys)
    assert code == 0, err
    assert f"| 1 | {a} | gold | reference | gold | - | - | - | 97.92 ± 2.08 |" in out
    assert f"| 1 | {b} | gold † | kb | re-oracle | - | - | - | 97.92 ± 2.08 |" in out
    assert out.rstrip().endswith("† upper bound, not a baseline: it reads the gold evidence of each fact.")
    for fmt in ("csv", "json"):
        code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--format", fmt], capsys)
        assert code == 0, err
        rows = board_csv(out) if fmt == "csv" else json.loads(out)["rows"]
        flags = {(r["run"], r["predictor"]): str(r["upper_bound"]) for r in rows}
        assert flags == {(str(a), "gold"): "False", (str(b), "gold"): "True", (str(a), "freq"): "False",
                         (str(b), "freq"): "False", (str(a), "bert"): "False", (str(b), "bert"): "False"}, fmt


def test_the_explorer_marks_upper_bounds_as_the_cli_does(runs, serve_explorer, capsys):
    """`/api/leaderboard`'s `upper_bound` is the CLI's true/false; the page's badge still says why."""
    from fastapi.testclient import TestClient
    from markupsafe import escape

    from bridge.predictors.registry import UPPER_BOUNDS
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    a, b = runs
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["predictor_specs"]["gold"]["spec"] = "re-oracle"
    (b / "config.json").write_text(json.dumps(config), encoding="utf-8")
    collect(b)
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--corpus", "trex", "--format", "json"], capsys)
    assert code == 0, err
    cli = [{**r, "run": Path(r["run"]).name} for r in json.loads(out)["rows"]]
    with TestClient(create_app(serve_explorer, Runs([a, b]))) as c:
        served = c.get("/api/leaderboard", params={"corpus": "trex"}).json()["rows"]
        page = c.get("/leaderboard", params={"corpus": "trex"}).text
    assert served == cli
    assert {(r["run"], r["predictor"]): r["upper_bound"] for r in served} == {
        ("a", "gold"): False, ("b", "gold"): True, ("a", "freq"): False, ("b", "freq"): False, ("a", "bert"): False,
        ("b", "bert"): False}
    assert page.count('class="badge upper"') == 1
    assert f'title="upper bound, not a baseline: {escape(UPPER_BOUNDS["re-oracle"])}"' in page


def test_default_metric_is_the_experiments_headline(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "kmir"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
                            "--questions-per-relation", "4", "--predictors", "freq", "kb", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    code, text, err = run_kbc(["leaderboard", str(out), "--scope", "own", "--format", "json"], capsys)
    assert code == 0, err
    # KMIR counts questions: kb answered all 52 it was asked, freq 16 (36 ranked none of the choices)
    rows = json.loads(text)["rows"]
    assert [(r["rank"], r["predictor"], r["metric"], round(r["value"], 2), r["n_facts"]) for r in rows] == [
        (1, "kb", "f1", 84.62, 52), (2, "freq", "f1", 12.5, 16)]
    answered = {name: sum("dropped" not in json.loads(line) for path in (out / "predictions" / "trex" / name).glob(
        "*.jsonl") for line in path.read_text().splitlines()) for name in ("kb", "freq")}
    assert answered == {"kb": 52, "freq": 16}
    summary = {(r["predictor"], r["scope"], r["metric"]): r["n_facts"] for r in json.loads(
        (out / "summary.json").read_text()) if r["group"] == "all"}
    assert [summary[(p, "own", m)] for p in ("kb", "freq") for m in ("f1", "em", "answered", "robust_all")] == \
        [52, 52, 52, 11, 16, 16, 16, 11]  # robustness shares are shares of Q-sets
    assert "| trex | kb | open | 52 |" in (out / "summary.md").read_text()
    code, text, err = run_kbc(["leaderboard", str(out), "--format", "csv"], capsys)
    assert code == 0, err
    assert [(r["predictor"], r["n_facts"], r["own_n_facts"]) for r in board_csv(text)] == \
        [("kb", "16", "52"), ("freq", "16", "16")]
    code, text, err = run_kbc(["leaderboard", str(out)], capsys)
    assert code == 0, err
    lines = text.splitlines()
    assert lines[1] == (f"note: trex: the shared scope keeps less than half of what {out}/kb (16 of 52) answered; "
                        "their own-scope values are shown beside")
    assert lines[2] == f"note: {one_sample_note(6)}"
    assert lines[6].endswith("| 95% CI | #questions | own scope (#questions) |")
    assert lines[8].endswith("| 87.50 ± 8.54 | [68.75, 100.00] | 16 | 84.62 (52) |")
    from bridge.serve.runs import Runs
    from bridge.serve.runs import leaderboard as explorer_board

    shown = explorer_board(Runs([out]), scope="own")  # the explorer's `?scope=own`
    assert ([(r["predictor"], r["n_facts"]) for r in shown["rows"]], shown["unit"]) == \
        ([("kb", 52), ("freq", 16)], "questions")
    for scope in ("shared", "own"):  # KMIR scores the raw setting only: the fix is the setting, not the metric
        code, _, err = run_kbc(["leaderboard", str(out), "--setting", "filtered", "--scope", scope], capsys)
        assert code == 2 and err.strip() == ("error: --setting filtered: `kbc run kmir` scores the raw setting only; "
                                             "use --setting raw")


def test_runs_asked_other_questions_name_the_flag_that_differs(runs, capsys):
    a, b = runs
    config = json.loads((b / "config.json").read_text(encoding="utf-8"))
    config["settings"]["answers"] = "set"  # as `kbc run lama --answers set` records it
    (b / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--format", "json"], capsys)
    assert code == 0, err
    assert {r["run"] for r in json.loads(out)["rows"]} == {str(a)}  # b was asked other questions: left out, named
    assert err.splitlines()[0] == (f"note: left out {b}: it and {a} differ in question settings (--answers set vs not "
                                   "given); runs asked other questions are never ranked together")


def test_kmir_runs_of_other_question_settings_are_left_out_alike_everywhere(lama_dir, tmp_path, serve_explorer,
                                                                            capsys, monkeypatch):
    """Two KMIR runs of other `--questions-per-relation`: the CLI, the API and the explorer's default page rank the
    first run's predictors and say the other was left out, and why."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs
    from kbcompare import leaderboard

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    made = []
    for per_relation in ("4", "2"):
        out = tmp_path / f"kmir{per_relation}"
        code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
                                "--questions-per-relation", per_relation, "--predictors", "freq", "kb",
                                "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
        assert code == 0, err
        made.append(out)
    a, b = made
    note = (f"left out {b}: it and {a} differ in question settings (--questions-per-relation 2 vs 4); runs asked "
            "other questions are never ranked together")
    code, out, err = run_kbc(["leaderboard", str(a), str(b), "--format", "json"], capsys)
    assert code == 0, err
    cli = json.loads(out)["rows"]
    assert [(r["run"], r["predictor"], round(r["value"], 2), r["n_facts"]) for r in cli] == [
        (str(a), "kb", 87.5, 16), (str(a), "freq", 12.5, 16)]
    notes = [line.removeprefix("note: ") for line in err.splitlines() if line.startswith("note: ")]
    # then the shared scope's own notes, as for one run, and the sample the run left asked
    assert notes[0] == note and len(notes) == 4 and notes[3] == one_sample_note(6)
    frame = leaderboard(a, b)
    assert [(r["run"], r["predictor"], r["value"], r["n_facts"]) for r in frame.to_dict("records")] == \
        [(r["run"], r["predictor"], r["value"], r["n_facts"]) for r in cli]
    assert frame.attrs["notes"] == notes
    with TestClient(create_app(serve_explorer, Runs([a, b]))) as c:
        page = c.get("/leaderboard")
        served = c.get("/api/leaderboard").json()
    assert page.status_code == 200
    named = [n.replace(str(a), "kmir4").replace(str(b), "kmir2") for n in notes]
    assert served["notes"] == named and f">{named[0]}</p>" in page.text
    assert served["rows"] == [{**r, "run": "kmir4"} for r in cli]
    # the second run alone, or first, ranks its own questions
    code, out, err = run_kbc(["leaderboard", str(b), str(a), "--format", "json"], capsys)
    assert code == 0, err
    assert {r["run"] for r in json.loads(out)["rows"]} == {str(b)}


def _copy_run(runs, dest: Path) -> Path:
    shutil.copytree(runs[0], dest, symlinks=True)
    return dest


def test_cells_from_run_names_are_escaped(runs, tmp_path, monkeypatch, capsys):
    """Run folder names reach CSV and Markdown as text: never a spreadsheet formula, an extra column or HTML."""
    names = ["=1+2", "@cmd", '=HYPERLINK("x","y")', "-2+3", "a|b", "<img src=x onerror=alert(1)>",
             "new\nline"]
    for name in names:
        _copy_run(runs, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_kbc(["leaderboard", "--corpus", "trex", "--format", "csv", "--scope", "own", "--", *names],
                             capsys)
    assert code == 0, err
    rows = board_csv(out)
    assert sorted({r["run"] for r in rows}) == sorted(["'=1+2", "'@cmd", "'=HYPERLINK(\"x\",\"y\")", "'-2+3",
                                                       "a|b", "<img src=x onerror=alert(1)>", "new\nline"])
    code, out, err = run_kbc(["leaderboard", "--corpus", "trex", "--scope", "own", "--", *names], capsys)
    assert code == 0, err
    table = [line for line in out.splitlines() if line.startswith("| ") and "| gold | reference |" in line]
    assert len(table) == len(names)  # one line per run: no row split by a newline
    assert sorted(line.split(" | ")[1] for line in table) == sorted(
        ["=1+2", "@cmd", '=HYPERLINK("x","y")', "-2+3", "a\\|b", "&lt;img src=x onerror=alert(1)&gt;",
         "new line"])
    assert "<img" not in out


def test_csv_cells_keep_numbers_and_markdown_cells_read_back():
    from eval.cells import csv_cell, md_cells, md_row, tsv_cell

    assert [csv_cell(v) for v in ("-2.5", "-1e-3", "+3", "-", "-x", "\tx", "\rx", "x=1", -2.5, 3)] == \
        ["-2.5", "-1e-3", "+3", "-", "'-x", "'\tx", "'\rx", "x=1", -2.5, 3]
    assert tsv_cell("=a\tb\nc") == "'=a b c"
    cells = ["a|b", "x\\|y", "<i>&</i>", "two\nlines", "12.5"]
    row = md_row(cells)
    assert row == "| a\\|b | x\\\\\\|y | &lt;i&gt;&amp;&lt;/i&gt; | two lines | 12.5 |"
    assert md_cells(row) == ["a|b", "x\\|y", "<i>&</i>", "two lines", "12.5"]


def test_a_summary_not_scored_from_the_runs_files_is_refused(runs, capsys):
    """summary.json edited, a string stderr, a prediction file cut after the run: the digests its scoring recorded
    no longer match, so no board is made from them (either scope)."""
    a, b = runs
    path = a / "summary.json"
    original = path.read_text(encoding="utf-8")
    rows = json.loads(original)
    for edit in ({"value": 99.9}, {"stderr": "0.5"}):
        edited = [{**r, **edit} if r["predictor"] == "freq" and r["group"] == "all" else r for r in rows]
        path.write_text(json.dumps(edited, indent=1, ensure_ascii=False), encoding="utf-8")
        code, _, err = run_kbc(["leaderboard", str(a), str(b), "--scope", "own"], capsys)
        assert (code, err) == (2, f"error: {a}: its summary.json is not the one its scoring wrote (edited or "
                                  "replaced); rerun the same `kbc run` command into a new --out to rescore it\n"), edit
    path.write_text(original, encoding="utf-8")
    assert run_kbc(["leaderboard", str(a), str(b), "--scope", "own"], capsys)[0] == 0
    cut = b / "predictions" / "trex" / "freq" / "P19.jsonl"
    cut.write_text("".join(cut.read_text(encoding="utf-8").splitlines(keepends=True)[:-3]), encoding="utf-8")
    for scope in ("shared", "own"):
        code, _, err = run_kbc(["leaderboard", str(a), str(b), "--scope", scope], capsys)
        assert (code, err) == (2, f"error: {b}: its prediction files changed since its summaries were written: "
                                  "predictions/trex/freq/P19.jsonl (cut or edited); rerun the same `kbc run` command "
                                  "into a new --out to rescore it\n"), scope
    collect(b)  # rescored: the board reads the run again, over the facts left
    rows = leaderboard_rows([a, b], "trex", "p@1", scope="own")
    assert {(Path(r["run"]).name, r["predictor"]): r["n_facts"] for r in rows if r["predictor"] == "freq"} == \
        {("a", "freq"): 48, ("b", "freq"): 45}
    config = json.loads((a / "config.json").read_text(encoding="utf-8"))
    config["relation_types"]["trex"]["P19"] = "1-1"
    (a / "config.json").write_text(json.dumps(config), encoding="utf-8")
    code, _, err = run_kbc(["leaderboard", str(a), "--scope", "own"], capsys)
    assert (code, err) == (2, f"error: {a}: its config.json changed since its summaries were written; rerun the same "
                              "`kbc run` command into a new --out to rescore it\n")


def test_out_never_overwrites_a_run_or_a_foreign_file(runs, tmp_path, capsys):
    a, b = runs
    summary = (a / "summary.json").read_bytes()
    code, _, err = run_kbc(["leaderboard", str(a), "--out", str(a / "summary.json")], capsys)
    assert (code, err) == (2, f"error: --out {a / 'summary.json'} is inside the run directory {a.resolve()}; write the "
                              "leaderboard elsewhere\n")
    assert (a / "summary.json").read_bytes() == summary
    code, _, err = run_kbc(["leaderboard", str(a), "--out", str(a / "board.md")], capsys)
    assert code == 2 and not (a / "board.md").exists()
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    code, _, err = run_kbc(["leaderboard", str(a), "--out", str(notes)], capsys)
    assert (code, err) == (2, f"error: --out {notes} exists and is not a leaderboard; `kbc leaderboard` overwrites "
                              "only its own outputs: name a new file\n")
    assert notes.read_text() == "mine\n"
    for fmt in ("md", "csv", "json"):  # a board written before is overwritten, in any format
        board = tmp_path / f"board.{fmt}"
        for _ in range(2):
            code, _, err = run_kbc(["leaderboard", str(a), str(b), "--format", fmt, "--out", str(board)], capsys)
            assert code == 0, (fmt, err)
    fields = "rank,run,predictor,corpus,setting,scope,metric,value,stderr,ci_low,ci_high,n_facts,upper_bound"
    before = ("rank,run,predictor,corpus,setting,scope,metric,value,stderr,ci_low,ci_high,n_facts,own_value,"
              "own_n_facts,upper_bound,side,spec,parameters,dtype,device")
    earlier = {"md": "trex, p@1 (raw, shared facts)\n\n| rank | run | predictor | value ± stderr | 95% CI | #facts |\n",
               "csv": fields + "\n", "json": json.dumps([dict.fromkeys(fields.split(","))]),
               "before.csv": before + "\n", "before.json": json.dumps([dict.fromkeys(before.split(","))])}
    for name, text in earlier.items():  # one written before the model (or relations) columns is the command's own
        board, fmt = tmp_path / f"earlier.{name}", name.rpartition(".")[2]
        board.write_text(text, encoding="utf-8")
        code, _, err = run_kbc(["leaderboard", str(a), "--format", fmt, "--out", str(board)], capsys)
        assert code == 0 and board.read_text(encoding="utf-8") != text, (fmt, err)


def test_one_run_under_several_spellings_is_listed_once(runs, tmp_path, capsys):
    a, _ = runs
    link = tmp_path / "link"
    link.symlink_to(a)
    code, out, err = run_kbc(["leaderboard", str(a), f"{a}/../{a.name}/", str(link), "--corpus", "trex",
                              "--format", "json"], capsys)
    assert code == 0, err
    assert [(r["run"], r["predictor"]) for r in json.loads(out)["rows"]] == [(str(a), "gold"), (str(a), "freq"),
                                                                      (str(a), "bert")]


def test_relation_labels_from_data_stay_one_markdown_cell(runs):
    """A label holding `|`, HTML and a line break: summary.md keeps one row per relation, and the report reads
    the same label back from it."""
    from bridge.report.page import tables_from_markdown

    a, _ = runs
    config = json.loads((a / "config.json").read_text(encoding="utf-8"))
    config["relation_labels"]["google_re"]["place_of_death"] = "died|in <b>x</b>\nthere"
    (a / "config.json").write_text(json.dumps(config), encoding="utf-8")
    collect(a)
    md = (a / "summary.md").read_text(encoding="utf-8")
    assert "<b>" not in md and "place_of_death died\\|in &lt;b&gt;x&lt;/b&gt; there" in md
    assert not any(line.startswith("there") for line in md.splitlines())
    tables = tables_from_markdown(md)
    assert tables and all(len(row) == len(t.head) for t in tables for row in t.rows)
    label = "place_of_death died|in <b>x</b> there"
    per_relation = [row for t in tables for row in t.rows if row[:2] == ["google_re", label]]
    assert len(per_relation) == 1


def test_a_generating_predictor_beside_a_ranking_one_is_named_not_ranked(lama_dir, tmp_path, capsys, monkeypatch):
    """A run of Freq (ranks) and a tiny GPT-2 asked by generate (writes): each metric ranks the predictors that
    have it, in every format and the explorer, and a note says who is left out and which metric ranks it."""
    from lm_fixtures import tiny_model_dir

    from bridge.serve.runs import Runs
    from bridge.serve.runs import leaderboard as explorer_board

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model = tiny_model_dir("gpt2", tmp_path)
    out = tmp_path / "gen"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors",
                            "freq", f"gen={model}", "--set", "gen.answer=generate", "--set", "gen.max_new_tokens=5",
                            "--limit", "6", "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap",
                            "50"], capsys)
    assert code == 0, err
    summary = {(r["predictor"], r["scope"], r["metric"]): r for r in json.loads((out / "summary.json").read_text())
               if r["group"] == "all" and r["setting"] == "raw"}
    gen_note = (f"google_re: {out}/gen left out: generates answers, has no p@1 (raw); rank by --metric em to "
                "compare it")
    freq_note = f"google_re: {out}/freq left out: ranks answers, has no em (raw); rank by --metric p@1 to compare it"
    for scope in ("shared", "own"):
        code, text, err = run_kbc(["leaderboard", str(out), "--scope", scope], capsys)
        assert code == 0, err
        assert text.splitlines()[:4] == [f"note: {gen_note}", f"note: {one_sample_note(6)}", "",
                                         f"google_re, p@1 (raw, {scope} facts)"]
        code, text, err = run_kbc(["leaderboard", str(out), "--scope", scope, "--metric", "em", "--format", "json"],
                                  capsys)
        assert code == 0, err
        assert err == f"note: {freq_note}\nnote: {one_sample_note(6)}\n"
        rows = json.loads(text)["rows"]
        want = summary[("gen", scope, "em")]
        assert [(r["rank"], r["predictor"], r["value"], r["stderr"], r["n_facts"]) for r in rows] == \
            [(1, "gen", want["value"], want["stderr"], 6)]
    code, text, err = run_kbc(["leaderboard", str(out), "--format", "csv"], capsys)
    assert code == 0, err
    rows = board_csv(text)
    assert [(r["predictor"], r["metric"], r["n_facts"]) for r in rows] == [("freq", "p@1", "6")]
    assert float(rows[0]["value"]) == summary[("freq", "shared", "p@1")]["value"]
    board = explorer_board(Runs([out]))
    # the explorer names its own `metric=` field
    assert [r["predictor"] for r in board["rows"]] == ["freq"] and board["notes"] == [
        gen_note.replace(str(out), "gen").replace("--metric em", "metric='em'"), one_sample_note(6)]
    code, _, err = run_kbc(["leaderboard", str(out), "--metric", "p@100"], capsys)
    assert (code, err) == (2, "error: --metric p@100: no metric of that name in these runs (did you mean p@10?); "
                              "rank by --metric abstain, em, mrr, p@1, p@10 or unlinked\n")


def test_each_unit_the_notes_count_is_named_as_one_where_an_error_names_one():
    """The refusals say "no predictor answered a <unit>": a prompt set's queries read as one query, not "querie"."""
    from bridge.run.leaderboard import PROMPTED_UNIT_NAMES, UNIT_NAMES, one_unit

    named = {unit: one_unit(unit) for unit in ["facts", *UNIT_NAMES.values(), *PROMPTED_UNIT_NAMES.values()]}
    assert named == {"facts": "fact", "round trips": "round trip", "questions": "question", "pairs": "pair",
                     "sentences": "sentence", "(fact, prompt) queries": "(fact, prompt) query",
                     "(fact, round, prompt) round trips": "(fact, round, prompt) round trip"}


def test_corpora_come_in_the_order_the_run_asked_them(runs, capsys):
    """summary.md, `kbc run` and `kbc compare` show T-REx before Google-RE, as `--corpus trex google_re` asked them;
    the board listed them by name, Google-RE first."""
    code, text, err = run_kbc(["leaderboard", str(runs[0]), str(runs[1]), "--format", "json"], capsys)
    assert code == 0, err
    corpora = list(dict.fromkeys(r["corpus"] for r in json.loads(text)["rows"]))
    assert corpora == json.loads((runs[0] / "config.json").read_text())["corpora"] == ["trex", "google_re"]
