"""Every reader of a finished run refuses it, in the same one line, once a prediction file was cut after scoring;
the rerun that line names scores it again and the readers read it as before the cut."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from analyze_support import call_kbc
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (the session fixture)

from bridge.serve.runs import Runs, fact_detail
from eval.errors import DataError


@pytest.fixture(scope="module")
def finished(lama_dir, tiny_models, tmp_path_factory) -> tuple[Path, list[str]]:  # noqa: F811
    """A finished run of freq and a tiny BERT over 12 facts of T-REx P19 and P36, and the argv that made it."""
    root = tmp_path_factory.mktemp("cut")
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "12", "--predictors", "freq",
            f"bert={tiny_models('bert-cased')}", "--set", "bert.cache=off", "--store", str(root / "store"),
            "--data-dir", str(lama_dir), "--out", str(root / "run"), "--quiet"]
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KBC_CACHE", str(root / "cache"))
        code, out = call_kbc(argv)
    assert code == 0, out
    return root / "run", argv


def _cut(run: Path, lines: int = 3) -> list[dict]:
    """Cut the last `lines` records off freq's P19 file; the records cut."""
    path = run / "predictions" / "trex" / "freq" / "P19.jsonl"
    kept = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(kept[:-lines]), encoding="utf-8")
    return [json.loads(line) for line in kept[-lines:]]


def test_every_reader_refuses_a_run_cut_after_scoring(finished, tmp_path, capsys, monkeypatch):
    intact, argv = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    names = Runs([run])  # the explorer, started before the cut
    (gone, *_) = _cut(run)
    line = (f"error: {run}: its prediction files changed since its summaries were written: "
            "predictions/trex/freq/P19.jsonl (cut or edited); rerun the same `kbc run` command to rescore it")
    for argv_ in (["compare", str(run), "freq", "bert"], ["compare", str(run), "freq", "bert", "--list", "only-a"],
                  ["compare", str(run), "freq", "bert", "--json"],
                  ["compare", str(intact), "bert", "freq", "--b-run", str(run)],
                  ["compare", str(run), "freq", "bert", "--b-run", str(intact)],
                  ["show", str(run), "--uid", gone["uid"]], ["show", str(run), "--uid", gone["uid"], "--json"],
                  ["show", str(run), "--subject", gone["subject"], "--relation", "P19"],
                  ["analyze", "correlation", str(run), "--index", str(tmp_path / "no-index"), "--quiet"],
                  ["analyze", "correlation", str(intact), "--compare", str(run), "--index",
                   str(tmp_path / "no-index"), "--quiet"],
                  ["leaderboard", str(run)], ["report", str(run)]):
        assert run_kbc(argv_, capsys) == (2, "", line + "\n"), argv_
    for read in (lambda: Runs([run]), lambda: fact_detail(names.get("run"), gone["uid"])):
        with pytest.raises(DataError) as caught:
            read()
        assert f"error: {caught.value}" == line
    monkeypatch.setenv("KBC_CACHE", str(intact.parent / "cache"))
    assert run_kbc([*argv[:-3], "--out", str(run), "--quiet"], capsys)[0] == 0  # the rerun asks the facts cut again
    for which in (["compare", "{}", "freq", "bert", "--json"], ["show", "{}", "--uid", gone["uid"], "--json"]):
        code, out, err = run_kbc([a.format(run) for a in which], capsys)
        assert (code, err) == (0, "")
        assert out.replace(str(run), "RUN") == run_kbc([a.format(intact) for a in which], capsys)[1].replace(
            str(intact), "RUN"), which
    assert fact_detail(names.get("run"), gone["uid"])["predictors"]["freq"]["status"] == "answered"


def test_every_reader_says_a_run_is_writing_while_one_is(finished, tmp_path, capsys):
    """A `kbc run` adding to a finished run rewrites its config.json first: while it holds the run's lock, every
    reader says to wait for it (rerunning would be refused by that lock); once it lets go, the rerun line again."""
    import kbcompare
    from bridge.run.run_lock import RunLock

    intact, _ = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    config["summary"]["bootstrap"] += 1
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    writing = f"error: {run}: a kbc run is writing to it now; wait for it to finish, then read it again"
    stale = (f"error: {run}: its config.json changed since its summaries were written; rerun the same `kbc run` "
             "command to rescore it")
    commands = (["leaderboard", str(run)], ["leaderboard", str(intact), str(run), "--format", "csv"],
                ["report", str(run)], ["report", str(intact), "--compare", str(run)],
                ["compare", str(run), "freq", "bert"], ["show", str(run), "--subject", "x", "--relation", "P19"])
    reads = (lambda: Runs([run]), lambda: kbcompare.load_run(run), lambda: kbcompare.leaderboard(run))
    for line, held in ((writing, True), (stale, False)):
        with RunLock(run) if held else contextlib.nullcontext():
            for argv_ in commands:
                assert run_kbc(argv_, capsys) == (2, "", line + "\n"), argv_
            for read in reads:
                with pytest.raises(DataError) as caught:
                    read()
                assert f"error: {caught.value}" == line
    (run / "summary.json").unlink()  # stopped before its first scoring, or still before it
    config["runs"].append({"started": "2026-01-01T00:00:00+00:00"})  # the attempt writing it: no end yet
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for read in (lambda: kbcompare.load_run(run), lambda: Runs([run])):  # `kbc serve --run` as the others
        with RunLock(run), pytest.raises(DataError) as caught:
            read()
        assert f"error: {caught.value}" == writing
    config["runs"].pop()
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        kbcompare.load_run(run)
    assert str(caught.value) == (f"{run} has predictions but no summary.json: the run has not finished; rerun the "
                                 "same `kbc run` command to complete it")


def test_a_run_that_has_just_taken_the_lock_is_waited_for(finished, tmp_path, capsys):
    """A rerun of the same command into a finished run records its attempt in config.json before it changes any
    file its summaries were scored from: from then on every reader says to wait, as it does later in that run,
    never that it compares the run as it stands (what it reads would change under it)."""
    from bridge.run.run_lock import RunLock

    intact, _ = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    config["runs"].append({"started": "2026-01-01T00:00:00+00:00"})  # the attempt starting: no end yet
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    writing = f"error: {run}: a kbc run is writing to it now; wait for it to finish, then read it again"
    with RunLock(run):
        for argv_ in (["compare", str(run), "freq", "bert"], ["leaderboard", str(run)], ["report", str(run)]):
            assert run_kbc(argv_, capsys) == (2, "", writing + "\n"), argv_


@pytest.mark.parametrize("reader", ["compare", "leaderboard", "report", "show", "show-json"])
def test_a_run_that_takes_the_lock_while_a_reader_reads_is_waited_for(finished, tmp_path, capsys, monkeypatch,
                                                                      reader):
    """A `kbc run` that starts into a finished run just after a reader checked it may change its files while the
    reader reads them: the reader checks again once it has read, and says to wait rather than print a mix."""
    import bridge.cli.compare as compare_cli
    import bridge.run.freshness as freshness
    import bridge.run.leaderboard as board
    from bridge.run.run_lock import RunLock

    intact, _ = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    held = contextlib.ExitStack()
    module, name = {"compare": (compare_cli, "check_readable"), "leaderboard": (board, "check_scored"),
                    "report": (freshness, "check_scored")}.get(reader, (compare_cli, "check_readable"))
    original = getattr(module, name)

    def checked_then_a_run_starts(*args, **kwargs):
        found = original(*args, **kwargs)
        if not held._exit_callbacks:
            held.enter_context(RunLock(run))
        return found

    monkeypatch.setattr(module, name, checked_then_a_run_starts)
    writing = f"error: {run}: a kbc run is writing to it now; wait for it to finish, then read it again"
    fact = json.loads((run / "predictions" / "trex" / "freq" / "P19.jsonl").read_text().splitlines()[0])
    argv_ = {"compare": ["compare", str(run), "freq", "bert"], "leaderboard": ["leaderboard", str(run)],
             "report": ["report", str(run), "--out", str(tmp_path / "report")],
             "show": ["show", str(run), "--subject", fact["subject"], "--relation", "P19"],
             "show-json": ["show", str(run), "--uid", fact["uid"], "--json"]}[reader]
    with held:
        assert run_kbc(argv_, capsys) == (2, "", writing + "\n")
    monkeypatch.setattr(module, name, original)
    assert run_kbc(argv_, capsys)[0] == 0  # the run ended: read as before


def test_an_unscored_run_being_written_is_said_to_be_running(finished, tmp_path, capsys):
    """A run with no summaries yet is compared as it stands; while a `kbc run` holds its lock the note says that run
    is writing it, not that it may have been killed."""
    from bridge.run.run_lock import RunLock

    intact, _ = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    for name in ("summary.json", ".kbc-summaries"):
        (run / name).unlink()
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    config["runs"].append({"started": "2026-01-01T00:00:00+00:00"})
    (run / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with RunLock(run):
        code, _, err = run_kbc(["compare", str(run), "freq", "bert"], capsys)
    assert code == 0 and err.startswith(f"note: {run}: its last attempt is still running (started "
                                        "2026-01-01T00:00:00+00:00; a kbc run holds its lock)"), err
    code, _, err = run_kbc(["compare", str(run), "freq", "bert"], capsys)
    assert code == 0 and "recorded no end (started 2026-01-01T00:00:00+00:00; still running, or killed)" in err


def test_the_explorer_shows_a_run_a_kbc_run_starts_writing_mid_read_as_being_written(finished, lama_dir, tmp_path,
                                                                                     monkeypatch):
    """A `kbc run` that starts into a served run while a page reads it: the page says the run is being written
    (503), never numbers read half before it; nothing read then is kept, so once that run ends the page is what
    the run holds."""
    from fastapi.testclient import TestClient

    import bridge.serve.runs as run_views
    from bridge.run.run_lock import RunLock
    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig

    intact, _ = finished
    busy = tmp_path / "busy"
    shutil.copytree(intact, busy)
    held, started = contextlib.ExitStack(), []
    pivot = run_views._pivot

    def read_then_a_run_starts(long):
        facts = pivot(long)
        if started:
            return facts
        started.append(held.enter_context(RunLock(busy)))
        return facts.assign(**{"correct:freq": facts["correct:freq"].map(lambda v: not v)})  # what it rewrites

    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=["freq"],
                                             cache_dir=tmp_path / "cache"))
    writing = f"{busy}: a kbc run is writing to it now; wait for it to finish, then read it again"
    try:
        with TestClient(create_app(explorer, Runs([busy, intact]))) as c, held:
            expected = c.get("/api/runs/run/facts", params={"per_page": 500}).json()
            monkeypatch.setattr(run_views, "_pivot", read_then_a_run_starts)
            page = c.get("/runs/busy")
            assert page.status_code == 503 and "<h2>This run is being written</h2>" in page.text, page.text
            assert f'<p class="error" id="error">{writing}</p>' in page.text
            assert '<p id="hint">Reload this page when that run ends.</p>' in page.text
            assert started  # the run started while the page read it
            uid = expected["facts"][0]["uid"]
            for url in ("/api/runs/busy", "/api/runs/busy/facts", f"/api/runs/busy/facts/{uid}"):
                r = c.get(url)  # while it holds the lock, before it changed a file
                assert (r.status_code, r.json()) == (503, {"detail": writing, "being_written": True}), url
            for url in ("/runs/busy", "/leaderboard", "/leaderboard?run=busy"):
                r = c.get(url)
                assert r.status_code == 503 and f'<p class="error" id="error">{writing}</p>' in r.text, url
            held.close()  # the run ends, having changed nothing
            shown = c.get("/api/runs/busy/facts", params={"per_page": 500})
            assert shown.status_code == 200
            assert shown.json() == {**expected, "run": "busy"}
            assert c.get("/runs/busy").status_code == 200
    finally:
        explorer.close()


def test_show_of_a_fact_asked_several_ways_waits_for_a_run_starting_mid_read(lama_dir, tmp_path, capsys,
                                                                             monkeypatch):
    """`kbc show` of a negated run (each fact's positive, negated and misprimed probes side by side) reads several
    records of each fact: a `kbc run` that starts meanwhile is waited for, as for a fact asked once."""
    import bridge.cli.compare as compare_cli
    from bridge.run.run_lock import RunLock

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "negated"
    assert run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--limit", "3",
                    "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(run), "--quiet"], capsys)[0] == 0
    uid = json.loads((run / "predictions" / "negated-trex" / "freq" / "P19.jsonl").read_text().splitlines()[0])["uid"]
    argv = ["show", str(run), "--uid", f"{uid}:negated"]
    code, shown, _ = run_kbc(argv, capsys)
    assert code == 0 and shown.startswith(f"negated-trex / P19 / uid {uid}\n"), shown
    held, original = contextlib.ExitStack(), compare_cli.check_readable

    def checked_then_a_run_starts(*args, **kwargs):
        found = original(*args, **kwargs)
        held.enter_context(RunLock(run))
        return found

    monkeypatch.setattr(compare_cli, "check_readable", checked_then_a_run_starts)
    with held:
        assert run_kbc(argv, capsys) == (2, "", f"error: {run}: a kbc run is writing to it now; wait for it to "
                                                "finish, then read it again\n")


def test_the_explorer_refuses_a_summary_edited_to_its_old_size_and_time(finished, tmp_path, capsys):
    """A served run is trusted between full checks while its files keep their sizes and times: its summary.json
    is still read only as the bytes its scoring wrote, so an edit that keeps both is refused as `kbc show` and
    `kbc compare` refuse it, never served."""
    from bridge.serve.runs import overview

    intact, _ = finished
    run = tmp_path / "run"
    shutil.copytree(intact, run)
    runs = Runs([run])
    assert overview(runs.get("run"))["table"]
    path = run / "summary.json"
    before, text = path.stat(), path.read_text(encoding="utf-8")
    edited = re.sub(r'"value": (\d)', lambda m: f'"value": {(int(m.group(1)) + 1) % 10}', text, count=1)
    assert edited != text and len(edited) == len(text)
    path.write_text(edited, encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    line = (f"error: {run}: its summary.json is not the one its scoring wrote (edited or replaced); rerun the same "
            "`kbc run` command to rescore it")
    uid = json.loads((run / "predictions" / "trex" / "freq" / "P19.jsonl").read_text().splitlines()[0])["uid"]
    for argv in (["show", str(run), "--uid", uid], ["compare", str(run), "freq", "bert"]):
        assert run_kbc(argv, capsys) == (2, "", line + "\n"), argv
    with pytest.raises(DataError) as caught:
        overview(runs.get("run"))
    assert f"error: {caught.value}" == line
