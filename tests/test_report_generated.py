"""Runs of predictors that write their answers by generation (`answer=generate`): the report, the explorer's run page
and `load_run(...).table()` show their exact match, abstention and unlinked rates, as summary.md does, alone and
beside ranking predictors, and say truly why a P@k view is empty."""

from __future__ import annotations

import json
import os

import pytest
import serve_support
from cli_support import one_sample_note, run_kbc
from lm_fixtures import tiny_model_dir, tiny_t5_dir

RELATIONS = ("place_of_birth", "place_of_death")
serve_explorer = serve_support.serve_explorer


def _run(lama_dir, root, out, predictors: list[str], generating: list[str]) -> None:
    from bridge.cli import main

    os.environ["KBC_CACHE"] = str(root / "cache")
    sets = [x for name in generating for x in ("--set", f"{name}.answer=generate", "--set", f"{name}.max_new_tokens=5")]
    argv = ["run", "lama", "--corpus", "google_re", "--relations", *RELATIONS, "--predictors", *predictors, *sets,
            "--limit", "4", "--data-dir", str(lama_dir), "--out", str(out), "--store", str(root / "store"),
            "--quiet", "--bootstrap", "50"]
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), exc


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory):
    """Two runs of google_re (two relations, 4 facts each): `written` of two generating models (gpt2 and t5),
    `mixed` of freq beside the generating gpt2."""
    root = tmp_path_factory.mktemp("generated")
    before = os.environ.get("KBC_CACHE")
    gpt, t5 = tiny_model_dir("gpt2", root / "models"), tiny_t5_dir(root / "models")
    _run(lama_dir, root, root / "written", [f"gpt={gpt}", f"t5={t5}"], ["gpt", "t5"])
    _run(lama_dir, root, root / "mixed", ["freq", f"gpt={gpt}"], ["gpt"])
    if before is None:
        os.environ.pop("KBC_CACHE", None)
    else:
        os.environ["KBC_CACHE"] = before
    return root


def _rows(run) -> dict[tuple, dict]:
    rows = json.loads((run / "summary.json").read_text())
    return {(r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]): r for r in rows}


def _cell(row: dict, digits: int = 2) -> str:
    return f"{row['value']:.{digits}f} ± {row['stderr']:.{digits}f}"


def _section(md: str, title: str) -> str:
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 1)
    return md[start:] if end < 0 else md[start:end]


def test_report_of_generating_predictors_shows_their_exact_match_and_true_reasons(runs, capsys):
    run = runs / "written"
    rows = _rows(run)
    code, _, err = run_kbc(["report", str(run), "--out", str(runs / "rep-written")], capsys)
    assert code == 0, err
    md = (runs / "rep-written" / "report.md").read_text()
    scores = _section(md, "Scores (shared facts, then own facts)")
    assert "Skipped" not in scores
    assert ("google_re: P@k and MRR are not applicable to gpt, t5 (answers written by generation, no ranking); see "
            "exact match, abstention and unlinked rates.") in scores
    for metric, title in (("em", "Exact match (%)"), ("abstain", "Abstentions (%), generated answers"),
                          ("unlinked", "Answers linked to no entity (%), generated answers")):
        assert f"*{title}, setting raw*" in scores
        for p in ("gpt", "t5"):
            total = rows[(p, "shared", "raw", "all", metric)]
            per = [_cell(rows[(p, "shared", "raw", rel, metric)]) for rel in ("place_of_birth", "place_of_death")]
            block = scores.split(f"*{title}, setting raw*")[1].split("\n*")[0]
            assert (f"| google_re | {p} | open | 8 | {' | '.join(per)} | {_cell(total)} | "
                    f"[{total['ci_low']:.2f}, {total['ci_high']:.2f}] |") in block.splitlines()
    assert _section(md, "Mean P@k curves").splitlines()[2] == (
        "> Skipped: every predictor of this run wrote its answers by generation (no ranking), so there is no P@k "
        "curve; their exact match is in the Scores section.")
    by_rel = _section(md, "Exact match by relation")
    for rel in ("place_of_birth", "place_of_death"):
        cells = [_cell(rows[(p, "shared", "raw", rel, "em")]) for p in ("gpt", "t5")]
        assert any(x.startswith(f"| google_re | {rel} ") and x.endswith(f"| {' | '.join(cells)} |")
                   for x in by_rel.splitlines())
    assert "no raw rows" not in md and "rerun the run's command" not in md
    # summary.md's per-relation table is of the metric the run has
    assert "## Exact match (%) per relation, shared facts" in (run / "summary.md").read_text()


def test_a_delta_of_two_generating_predictors_is_on_exact_match(runs, capsys):
    run = runs / "written"
    rows = _rows(run)
    code, _, err = run_kbc(["report", str(run), "--out", str(runs / "rep-delta"), "--delta", "gpt", "t5"], capsys)
    assert code == 0, err
    deltas = _section((runs / "rep-delta" / "report.md").read_text(), "Per-relation deltas")
    assert "*Exact match deltas against gpt*" in deltas
    for rel, label in (("place_of_birth", "birth-place"), ("place_of_death", "death-place")):  # named as elsewhere
        a, b = rows[("gpt", "shared", "raw", rel, "em")]["value"], rows[("t5", "shared", "raw", rel, "em")]["value"]
        assert f"| google_re | {rel} {label} | 4 | {a:.2f} | {b - a:+.2f} |" in deltas


def test_report_of_a_mixed_run_shows_the_generating_predictors_exact_match_and_says_why_no_delta(runs, capsys):
    run = runs / "mixed"
    rows = _rows(run)
    code, _, err = run_kbc(["report", str(run), "--out", str(runs / "rep-mixed")], capsys)
    assert code == 0, err
    md = (runs / "rep-mixed" / "report.md").read_text()
    scores = _section(md, "Scores (shared facts, then own facts)")
    em = rows[("gpt", "shared", "raw", "all", "em")]
    assert f"| {_cell(em)} | [{em['ci_low']:.2f}, {em['ci_high']:.2f}] |" in scores.split("*Exact match (%)")[1]
    by_rel = _section(md, "P@1 by relation")
    assert ("gpt wrote its answers by generation (no ranking, so no P@1): its exact match per relation is in the "
            "table below, and in the Scores section.") in by_rel
    assert "*Exact match (%) per relation, shared facts*" in by_rel
    deltas = _section(md, "Per-relation deltas")
    assert "> Skipped: no metric scores both sides of a delta." in deltas
    assert ("No delta of gpt against freq: gpt writes its answers by generation (Exact match), freq ranks its "
            "answers (P@1); no metric scores both, and a difference of two measures is no delta.") in deltas
    assert "share no corpus" not in deltas
    assert "No curve for gpt: answers written by generation, no ranking" in _section(md, "Mean P@k curves")


def test_table_defaults_to_a_metric_the_run_has(runs):
    import kbcompare

    rows = _rows(runs / "written")
    table = kbcompare.load_run(runs / "written").table()
    assert table.columns.name == "em" and list(table.columns) == ["place_of_birth", "place_of_death", "all"]
    assert table.loc[("google_re", "t5")].tolist() == [
        rows[("t5", "shared", "raw", g, "em")]["value"] for g in ("place_of_birth", "place_of_death", "all")]
    assert table.attrs["notes"] == []
    mixed = kbcompare.load_run(runs / "mixed")
    p1 = mixed.table()
    assert p1.columns.name == "p@1" and list(p1.index) == [("google_re", "freq")]
    assert p1.attrs["notes"] == ["google_re: no p@1 (raw) row for gpt (answers written by generation, no ranking: "
                                 "table(metric='em') gives their exact match)"]
    assert mixed.table("em").attrs["notes"] == ["google_re: no em (raw) row for freq (metrics: mrr, p@1, p@10)"]


def test_the_run_page_shows_exact_match_and_says_why_p_at_1_is_dash(runs):
    from bridge.serve.runs import Runs, overview

    browsed = Runs([runs / "written", runs / "mixed"])
    written, own = overview(browsed.get("written")), _rows(runs / "written")
    assert (written["metric"], written["extra_metrics"]) == ("em", ["abstain", "unlinked"])
    for row in written["table"]:
        p = row["predictor"]
        assert row["em"]["all"] == own[(p, "own", "raw", "all", "em")]["value"] and row["facts"] == 8
        assert row["unlinked"] == own[(p, "own", "raw", "all", "unlinked")]["value"]
        assert row["shared"]["value"] == own[(p, "shared", "raw", "all", "em")]["value"]
    assert written["notes"] == ["google_re: P@k and MRR are not applicable to gpt, t5 (answers written by "
                                "generation, no ranking); see exact match, abstention and unlinked rates."]
    mixed, own = overview(browsed.get("mixed")), _rows(runs / "mixed")
    assert (mixed["metric"], mixed["extra_metrics"]) == ("p@1", ["p@10", "mrr", "em", "abstain", "unlinked"])
    gpt = next(r for r in mixed["table"] if r["predictor"] == "gpt")
    assert (gpt["em"], gpt["facts"], gpt["p@1"]["all"]) == (own[("gpt", "own", "raw", "all", "em")]["value"], 8, None)
    assert mixed["notes"] == ["`-` under P@1, P@10, MRR for gpt: google_re: P@k and MRR are not applicable to gpt "
                              "(answers written by generation, no ranking); see exact match, abstention and unlinked "
                              "rates."]
    assert mixed["written"] == ["gpt"] and mixed["written_table"] == [
        {"corpus": "google_re", "relation": rel, "em": {"gpt": own[("gpt", "own", "raw", rel, "em")]["value"]}}
        for rel in sorted(RELATIONS)]


def test_generated_answer_rates_are_percent_in_lm_kbc_as_in_lama():
    from eval.generated_scores import pooled_rate_rows
    from eval.report import METRIC_NAMES

    records = [{"relation": "r", "abstained": True, "parsed": [], "unlinked": []},
               {"relation": "r", "abstained": False, "parsed": ["a", "b"], "unlinked": ["b"]},
               {"relation": "s", "abstained": False, "parsed": ["c"], "unlinked": ["c"]},
               {"relation": "s", "abstained": False, "parsed": ["d"], "unlinked": []}]
    got = {(r["group"], r["metric"]): r["value"] for r in pooled_rate_rows(records)}
    assert got == {("r", "abstain"): 50.0, ("s", "abstain"): 0.0, ("all", "abstain"): 25.0,
                   ("r", "unlinked"): 25.0, ("s", "unlinked"): 50.0, ("all", "unlinked"): 37.5}
    assert (METRIC_NAMES["abstain"], METRIC_NAMES["unlinked"]) == (
        "Abstentions (%), generated answers", "Answers linked to no entity (%), generated answers")


def test_an_lm_kbc_run_scored_with_fraction_rates_is_read_in_percent(tmp_path):
    """Rate rows without a unit (scored when LM-KBC's rates were fractions) are read in percent; its other scores
    stay fractions."""
    from eval.generated_scores import rates_in_percent

    old = {"metric": "unlinked", "group": "all", "value": 0.5, "stderr": 0.25, "ci_low": 0.0, "ci_high": None}
    new = {"metric": "abstain", "group": "all", "value": 12.5, "stderr": None, "unit": "%"}
    f1 = {"metric": "macro-f1", "group": "all", "value": 0.5, "stderr": 0.25}
    assert rates_in_percent([old, new, f1], "lama") == [old, new, f1]  # LAMA's rates were percent from the start
    assert rates_in_percent([old, new, f1], "lmkbc") == [
        {"metric": "unlinked", "group": "all", "value": 50.0, "stderr": 25.0, "ci_low": 0.0, "ci_high": None,
         "unit": "%"}, new, f1]


def test_a_served_model_that_writes_every_gold_scores_100_beside_freq(lama_dir, google_re, tmp_path, capsys,
                                                                     monkeypatch, serve_explorer):
    """A server that answers every fact's gold (and abstains on none): exact match 100, abstentions 0, beside
    Freq's P@1, in the report, the run page and `table('em')`."""
    from served_support import Scripted, completion

    import kbcompare
    from bridge.serve.runs import Runs, overview

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gold = {f.subject.label: f.object.label for f in google_re.facts if f.relation == "place_of_birth"}

    def script(path, body, n):
        subject = body["messages"][-1]["content"].removeprefix("Fill in the blank: ").split(" was born in")[0]
        return 200, completion(f"{gold[subject]}.", "chat")

    server = Scripted(script)
    try:
        out = tmp_path / "run"
        code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth",
                                "--predictors", "freq", f"llm={server.url}", "--set", "llm.model=tiny", "--limit", "6",
                                "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "50"], capsys)
        assert code == 0, err
    finally:
        server.close()
    em = _rows(out)[("llm", "shared", "raw", "all", "em")]
    assert (em["value"], em["stderr"], em["n_facts"]) == (100.0, 0.0, 6)
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    scores = _section((tmp_path / "report" / "report.md").read_text(), "Scores (shared facts, then own facts)")
    assert scores.split("*Exact match (%), setting raw*")[1].split("\n*")[0].strip().splitlines()[2] == (
        "| google_re | llm | open | 6 | 100.00 ± 0.00 | 100.00 ± 0.00 | [100.00, 100.00] |")
    assert scores.split("*Abstentions (%), generated answers, setting raw*")[1].strip().splitlines()[2] == (
        "| google_re | llm | open | 6 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |")
    row = next(r for r in overview(Runs([out]).get("run"))["table"] if r["predictor"] == "llm")
    assert (row["em"], row["abstain"], row["facts"], row["p@1"]["all"]) == (100.0, 0.0, 6, None)
    assert kbcompare.load_run(out).table("em").loc[("google_re", "llm")].tolist() == [100.0, 100.0]
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app

    with TestClient(create_app(serve_explorer, Runs([out]))) as c:
        page = c.get("/runs/run").text
    assert "<th>EM <small>own</small></th>" in page and "<td>100.00</td><td>0.00</td>" in page
    assert ('<table id="per-relation-em"><tr><th>corpus</th><th>relation</th><th>llm</th></tr>\n'
            "<tr><td>google_re</td><td>place_of_birth</td><td>100.00</td></tr>") in page


def test_the_leaderboard_of_a_run_where_every_predictor_generates_ranks_exact_match(runs, capsys):
    """As `table()` and the report: no P@1 anywhere, so the board ranks exact match; a P@1 asked for names the
    metrics that would rank."""
    import kbcompare

    run = runs / "written"
    rows = _rows(run)
    code, out, err = run_kbc(["leaderboard", str(run), "--format", "json"], capsys)
    assert (code, err) == (0, f"note: {one_sample_note(4)}\n")
    got = [(r["predictor"], r["metric"], r["value"], r["stderr"], r["n_facts"]) for r in json.loads(out)["rows"]]
    want = [(p, "em", row["value"], row["stderr"], 8) for p in ("gpt", "t5")
            for row in [rows[(p, "shared", "raw", "all", "em")]]]
    assert sorted(got) == sorted(want)
    frame = kbcompare.leaderboard(run)
    assert set(frame["metric"]) == {"em"} and sorted(frame["predictor"]) == ["gpt", "t5"]
    from bridge.serve.runs import Runs
    from bridge.serve.runs import leaderboard as explorer_board

    found = explorer_board(Runs([run]))
    assert found["metric"] == "em" and sorted(r["predictor"] for r in found["rows"]) == ["gpt", "t5"]
    code, out, err = run_kbc(["leaderboard", str(run), "--metric", "p@1"], capsys)
    assert (code, out) == (2, "")
    assert err == ("error: --metric p@1: no metric of that name in these runs; rank by --metric abstain, em or "
                   "unlinked\n")


def test_the_em_board_names_the_predictors_that_define_its_shared_facts(runs, lama_dir, capsys, monkeypatch):
    """mixed asks 4 facts per relation, more 8 (holding those 4): the shared scope of exact match is set by the two
    generating predictors, and the note names them, not Freq (which has no exact match)."""
    monkeypatch.setenv("KBC_CACHE", str(runs / "cache"))
    more = runs / "more"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", *RELATIONS, "--predictors",
                            f"gpt={tiny_model_dir('gpt2', runs / 'models')}", "--set", "gpt.answer=generate", "--set",
                            "gpt.max_new_tokens=5", "--limit", "8", "--data-dir", str(lama_dir), "--out", str(more),
                            "--store", str(runs / "store"), "--quiet", "--bootstrap", "50"], capsys)
    assert code == 0, err
    mixed = runs / "mixed"
    code, _, err = run_kbc(["leaderboard", str(mixed), str(more), "--metric", "em", "--format", "json"], capsys)
    assert code == 0, err
    assert err.splitlines() == [
        f"note: samples, not every fact: {mixed} `--limit 4 --seed 0`; {more} `--limit 8 --seed 0` (at most --limit "
        "facts per relation, drawn with --seed)",
        f"note: google_re: {mixed}/freq left out: ranks answers, has no em (raw); rank by --metric p@1 to compare it",
        f"note: google_re: 8 of 16 facts answered by every predictor ranked on em ({mixed}/gpt, {more}/gpt); the rest "
        "are left out of the shared scope"]


def test_a_compared_report_says_open_and_whose_shared_facts(runs, capsys):
    """Two runs side by side: a generating predictor's answer space is `open` as in each run's own report, and the
    Scores heading says its shared facts are each run's own (those the leaderboard of both would differ)."""
    out = runs / "rep-compared"
    code, _, err = run_kbc(["report", str(runs / "written"), "--compare", str(runs / "mixed"), "--out", str(out)],
                           capsys)
    assert code == 0, err
    md = (out / "report.md").read_text()
    assert "## Scores (shared facts)" not in md
    scores = _section(md, "Scores (shared facts within each run, then own facts)")
    em = scores.split("*Exact match (%), setting raw*")[1].split("\n*")[0]
    assert [line.split(" | ")[1:3] for line in em.strip().splitlines()[2:5]] == [
        ["written:gpt", "open"], ["written:t5", "open"], ["mixed:gpt", "open"]]
    assert ("Each run's rows are over its own shared facts, as its summary scored them; `kbc leaderboard` ranks the "
            "predictors of both runs on the facts they all answered.") in scores


@pytest.mark.parametrize(("run", "delta", "heading"), [
    ("written", ["--delta", "gpt", "t5"], "## Per-relation deltas of t5 against gpt — E-BERT Fig. 2"),
    ("mixed", [], "## Per-relation deltas against the best KB predictor (freq) — E-BERT Fig. 2")])
def test_the_delta_heading_names_the_baseline(runs, capsys, run, delta, heading):
    out = runs / f"rep-delta-{run}"
    code, _, err = run_kbc(["report", str(runs / run), *delta, "--out", str(out)], capsys)
    assert code == 0, err
    assert [line for line in (out / "report.md").read_text().splitlines()
            if line.startswith("## Per-relation deltas")] == [heading]
