"""Predictors a leaderboard leaves out (no value of the metric, as a generating one has no P@1; or nothing
answered) are named with why and restrict no one's facts: adding their run to a board moves no number of the
predictors it ranks, in `kbc leaderboard`, `kbcompare.leaderboard` and the explorer's `/api/leaderboard` alike;
a board with nothing to rank is one `error:` line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import serve_support
from cli_support import board_comments, board_csv, one_sample_note, run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (pytest finds the fixture by name)

RELATION = "P463"  # member of: 225 facts, so the samples of 30 of seeds 0 and 1 share 3
LIMIT = 30
SHARED = 3
VOCAB_REASON = "object is not in the candidate vocabulary"
serve_explorer = serve_support.serve_explorer


@pytest.fixture(scope="module")
def runs(lama_dir, tiny_models, tmp_path_factory) -> dict[str, Path]:  # noqa: F811
    """rank: Freq and a tiny BERT (the seed-0 sample); gen: a tiny GPT-2 writing its answers (the seed-1 sample,
    3 facts shared with rank); silent: a tiny BERT whose only candidate (`table`) is no P463 object."""
    from bridge.cli import main

    root = tmp_path_factory.mktemp("left-out")
    vocab = root / "vocab.txt"
    vocab.write_text("table\n", encoding="utf-8")
    bert = tiny_models("bert-cased")
    made = {"rank": ["--limit", str(LIMIT), "--predictors", "freq", f"bert={bert}"],
            "gen": ["--limit", str(LIMIT), "--seed", "1", "--predictors", f"gen={tiny_models('gpt2')}", "--set",
                    "gen.answer=generate", "--set", "gen.max_new_tokens=3"],
            "silent": ["--limit", "3", "--predictors", f"bert={bert}", "--set", f"bert.vocab_file={vocab}"]}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        for name, args in made.items():
            argv = ["run", "lama", "--corpus", "trex", "--relations", RELATION, *args, "--bootstrap", "50",
                    "--data-dir", str(lama_dir), "--out", str(root / name), "--quiet"]
            try:
                main(argv)
            except SystemExit as exc:
                assert exc.code == 0, argv
    return {name: root / name for name in made}


def _json_board(run_dirs: list[Path], capsys, *args: str) -> tuple[list[dict], list[str]]:
    code, out, err = run_kbc(["leaderboard", *map(str, run_dirs), "--format", "json", *args], capsys)
    assert code == 0, err
    return json.loads(out)["rows"], err.splitlines()


def _shared_totals(run: Path, metric: str) -> dict[str, tuple]:
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {r["predictor"]: (r["value"], r["stderr"], r["ci_low"], r["ci_high"], r["n_facts"]) for r in rows
            if (r["scope"], r["setting"], r["group"], r["metric"]) == ("shared", "raw", "all", metric)
            and not r.get("prompt")}


def _left_out(run: Path, name: str, what: str, metric: str, other: str, flag: str = "--metric ") -> str:
    """The note on a predictor left out; `flag`: how the caller names the metric (`metric=` in the API and the
    explorer, which quote the value)."""
    shown = f"{flag}{other!r}" if flag.endswith("=") else f"{flag}{other}"
    return f"trex: {run}/{name} left out: {what}, has no {metric} (raw); rank by {shown} to compare it"


def _samples(*drawn: tuple[Path | str, int, int]) -> str:
    """The note on runs of other samples: each run's `--limit` and `--seed`, in the order named."""
    listed = "; ".join(f"{run} `--limit {limit} --seed {seed}`" for run, limit, seed in drawn)
    return f"samples, not every fact: {listed} (at most --limit facts per relation, drawn with --seed)"


def test_a_generating_run_beside_a_ranking_one_moves_no_number(runs, capsys):
    rank, gen = runs["rank"], runs["gen"]
    alone, notes = _json_board([rank], capsys)
    assert notes == [f"note: {one_sample_note(LIMIT)}"]
    want = _shared_totals(rank, "p@1")  # the board of one run is its shared-scope summary
    assert {r["predictor"]: (r["value"], r["stderr"], r["ci_low"], r["ci_high"], r["n_facts"]) for r in alone} == want
    assert [(r["rank"], r["predictor"], round(r["value"], 2), r["n_facts"]) for r in alone] == [
        (1, "freq", 46.67, LIMIT), (2, "bert", 0.0, LIMIT)]
    gen_note = _left_out(gen, "gen", "generates answers", "p@1", "em")
    drawn = {rank: (rank, LIMIT, 0), gen: (gen, LIMIT, 1)}
    for order in ([rank, gen], [gen, rank]):
        rows, notes = _json_board(order, capsys)
        assert (rows, notes) == (alone, [f"note: {_samples(*(drawn[r] for r in order))}", f"note: {gen_note}"])
    code, table, err = run_kbc(["leaderboard", str(rank)], capsys)
    one = f"note: {one_sample_note(LIMIT)}\n\n"
    assert (code, err) == (0, "") and table.startswith(one)
    assert run_kbc(["leaderboard", str(rank), str(gen)], capsys) == (
        0, f"note: {_samples(drawn[rank], drawn[gen])}\nnote: {gen_note}\n\n" + table.removeprefix(one), "")

    written, notes = _json_board([gen], capsys, "--metric", "em")
    assert [(r["predictor"], r["value"], r["n_facts"]) for r in written] == [("gen", 0.0, LIMIT)]
    rows, notes = _json_board([gen, rank], capsys, "--metric", "em")
    assert rows == written
    assert notes == [f"note: {_samples(drawn[gen], drawn[rank])}"] + [
        f"note: {_left_out(rank, name, 'ranks answers', 'em', 'p@1')}" for name in ("freq", "bert")]


def test_the_api_and_the_explorer_rank_as_the_command_does(runs, serve_explorer):
    from fastapi.testclient import TestClient

    import kbcompare
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    rank, gen = runs["rank"], runs["gen"]
    alone = kbcompare.leaderboard(rank)
    both = kbcompare.leaderboard(rank, gen)
    assert both.to_dict("records") == alone.to_dict("records")
    assert [(r["predictor"], round(r["value"], 2), r["n_facts"]) for r in both.to_dict("records")] == [
        ("freq", 46.67, LIMIT), ("bert", 0.0, LIMIT)]
    # the API names its own `metric=` parameter
    assert both.attrs["notes"] == [_samples((rank, LIMIT, 0), (gen, LIMIT, 1)),
                                   _left_out(gen, "gen", "generates answers", "p@1", "em", "metric=")]

    with TestClient(create_app(serve_explorer, Runs([rank]))) as c:
        own = c.get("/api/leaderboard").json()
    with TestClient(create_app(serve_explorer, Runs([rank, gen]))) as c:
        body = c.get("/api/leaderboard").json()
        assert body["rows"] == own["rows"] and own["rows"][0]["n_facts"] == LIMIT
        assert body["notes"] == [_samples(("rank", LIMIT, 0), ("gen", LIMIT, 1)),
                                 _left_out("gen", "gen", "generates answers", "p@1", "em", "metric=")]
        page = c.get("/leaderboard")
        assert page.status_code == 200 and "46.67" in page.text
        assert "the facts every ranked predictor of every run answered" in page.text
        em = c.get("/api/leaderboard", params={"metric": "em", "run": ["gen", "rank"]}).json()
        assert [(r["predictor"], r["n_facts"]) for r in em["rows"]] == [("gen", LIMIT)]
        alone_em = c.get("/api/leaderboard", params={"metric": "em", "run": ["gen"]}).json()
        assert em["rows"] == alone_em["rows"]


def test_a_predictor_that_answered_nothing_is_named_and_restricts_nothing(runs, capsys, serve_explorer):
    from fastapi.testclient import TestClient

    import kbcompare
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    rank, silent = runs["rank"], runs["silent"]
    note = f"trex: {silent}/bert answered nothing (3 dropped: {VOCAB_REASON}); not ranked (no score)"
    code, alone, err = run_kbc(["leaderboard", str(rank), "--format", "csv"], capsys)
    assert code == 0 and err == f"note: {one_sample_note(LIMIT)}\n"
    code, out, err = run_kbc(["leaderboard", str(silent), str(rank), "--format", "csv"], capsys)
    drawn = _samples((silent, 3, 0), (rank, LIMIT, 0))
    assert (code, board_csv(out), err) == (0, board_csv(alone), f"note: {drawn}\nnote: {note}\n")
    assert board_comments(out) == [f"note: {drawn}", f"note: {note}"]
    assert board_comments(alone) == [f"note: {one_sample_note(LIMIT)}"]
    assert [(r["predictor"], r["value"][:5], r["n_facts"]) for r in board_csv(out)] == [
        ("freq", "46.66", str(LIMIT)), ("bert", "0.0", str(LIMIT))]
    assert kbcompare.leaderboard(silent, rank).to_dict("records") == kbcompare.leaderboard(rank).to_dict("records")
    with TestClient(create_app(serve_explorer, Runs([silent, rank]))) as c:
        body = c.get("/api/leaderboard").json()
    assert [(r["run"], r["predictor"], r["n_facts"]) for r in body["rows"]] == [("rank", "freq", LIMIT),
                                                                              ("rank", "bert", LIMIT)]
    assert body["notes"] == [drawn.replace(str(silent), "silent").replace(str(rank), "rank"),
                             note.replace(str(silent), "silent")]


@pytest.mark.parametrize("scope", ["shared", "own"])
def test_nothing_to_rank_is_one_error_line(runs, capsys, serve_explorer, scope):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    silent = runs["silent"]
    why = (f"trex: no predictor of these runs answered a fact, so none can be ranked ({silent}/bert answered "
           f"nothing (3 dropped: {VOCAB_REASON}))")
    for fmt in ("md", "csv"):
        code, out, err = run_kbc(["leaderboard", str(silent), "--scope", scope, "--format", fmt], capsys)
        assert (code, out, err) == (2, "", f"error: {why}\n")
    with TestClient(create_app(serve_explorer, Runs([silent]))) as c:
        bad = c.get("/api/leaderboard", params={"scope": scope})
        assert (bad.status_code, bad.json()["detail"]) == (400, why)
        assert c.get("/leaderboard", params={"scope": scope}).status_code == 400
