"""The runner: outputs, resume after an interruption, refusal of incompatible reruns."""

import json
import signal

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (fixture)

from bridge.predictors import registry
from bridge.run.record_digests import key_of, line_digest
from bridge.run.runner import RunConfig, run_lama
from eval.errors import ConfigError, DataError
from eval.types import QUERIES_PER_CALL as CHUNK
from kb.freq import FreqPredictor

CALLS = []


class Flaky(FreqPredictor):
    """Freq that is interrupted after its first chunk, the first time it runs."""

    name = "flaky"

    def predict(self, queries, depth):
        CALLS.append(len(queries))
        if len(CALLS) == 2:
            raise KeyboardInterrupt
        return super().predict(queries, depth)


def make_flaky(name, ctx):
    return Flaky(ctx.corpus.facts)


@pytest.fixture
def flaky(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(registry.ENTRIES, "flaky", (f"{__name__}:make_flaky", "test"))


def _chunks(n):
    return [min(CHUNK, n - start) for start in range(0, n, CHUNK)]


def _cfg(tmp_path, lama_dir, **kw):
    return RunConfig(["trex"], ["flaky"], tmp_path / "out", str(lama_dir), relations=["P19", "P47"],
                     cache_dir=tmp_path / "cache", **kw)


def test_resume_after_interrupt(tmp_path, lama_dir, flaky, caplog):
    with pytest.raises(KeyboardInterrupt):
        run_lama(_cfg(tmp_path, lama_dir), progress=False)
    p19 = tmp_path / "out" / "predictions" / "trex" / "flaky" / "P19.jsonl"
    assert len(p19.read_text().splitlines()) == CHUNK  # the finished chunk was kept
    with p19.open("a") as handle:  # a torn line, as a crash mid-write leaves it
        handle.write('{"uid": "torn')
    caplog.set_level("INFO", logger="kbc")
    caplog.clear()
    rows = run_lama(_cfg(tmp_path, lama_dir), progress=False)
    # a resume says what was recorded before, in the words of a stage recorded whole
    assert [m for m in caplog.messages if "queries" in m and "trex / flaky:" in m] == [
        f"trex / flaky: {CHUNK} of {944 + 922} queries recorded earlier; asking {944 + 922 - CHUNK}"]
    # resumed: only the remaining 944 - CHUNK queries of P19 and all 922 of P47 were asked
    assert CALLS[2:] == _chunks(944 - CHUNK) + _chunks(922)
    lines = [json.loads(x) for x in p19.read_text().splitlines()]
    assert len(lines) == 944 and len({x["uid"] for x in lines}) == 944
    digests = tmp_path / "out" / ".kbc-records" / "trex" / "flaky" / "P19.digests"  # one per line, as written
    assert digests.read_bytes() == b"".join(line_digest(raw, key_of(p19))
                                            for raw in p19.read_bytes().splitlines(keepends=True))
    get = {(r["setting"], r["group"], r["metric"]): r["value"] for r in rows}
    fresh = run_lama(RunConfig(["trex"], ["freq"], tmp_path / "fresh", str(lama_dir), relations=["P19", "P47"],
                               cache_dir=tmp_path / "cache"), progress=False)
    assert get == {(r["setting"], r["group"], r["metric"]): r["value"] for r in fresh}
    CALLS.clear()
    caplog.clear()
    run_lama(_cfg(tmp_path, lama_dir), progress=False)
    assert CALLS == []  # everything done: nothing recomputed
    assert "trex / flaky: all 1866 queries done, skipped" in caplog.messages


class Stopped(FreqPredictor):
    """Freq stopped after its first chunk by `STOP` (raising Ctrl-C's exception, or sending this process SIGTERM)."""

    name = "stopped"

    def predict(self, queries, depth):
        CALLS.append(len(queries))
        if len(CALLS) == 2:
            STOP[0]()
        return super().predict(queries, depth)


STOP = [lambda: None]


def make_stopped(name, ctx):
    return Stopped(ctx.corpus.facts)


class Unhandled(Exception):
    """SIGTERM reached the test's own handler: the command had none."""


def _unhandled(signum, frame):
    raise Unhandled


def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path, lama_dir, monkeypatch, capsys):
    """`kill`, `timeout` and job schedulers send SIGTERM: the records written are kept, the attempt is marked
    `failed: interrupted` in config.json as on Ctrl-C, the same line tells how to resume, and a rerun resumes."""
    monkeypatch.setitem(registry.ENTRIES, "stopped", (f"{__name__}:make_stopped", "test"))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def ctrl_c():
        raise KeyboardInterrupt

    def sigterm():
        signal.raise_signal(signal.SIGTERM)

    def sigterm_in_ray():
        """Ray's waits take the signal's exception and raise a KeyboardInterrupt of their own."""
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None

    previous = signal.signal(signal.SIGTERM, _unhandled)  # what the command leaves in place: here, a failure
    try:
        ended = {}
        for name, stop in (("ctrl-c", ctrl_c), ("sigterm", sigterm), ("sigterm-in-ray", sigterm_in_ray)):
            CALLS.clear()
            STOP[0] = stop
            out = tmp_path / name
            argv = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P47", "--predictors", "stopped",
                    "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
            code, _, err = run_kbc(argv, capsys)
            run = json.loads((out / "config.json").read_text())["runs"][-1]
            records = out / "predictions" / "trex" / "stopped" / "P19.jsonl"
            ended[name] = (code, err.strip().splitlines()[-1], sorted(run), run["error"],
                           len(records.read_text().splitlines()))
            STOP[0] = lambda: None
            assert run_kbc(argv, capsys)[0] == 0
            assert CALLS[2:] == _chunks(944 - CHUNK) + _chunks(922)  # resumed: only what was not recorded
            assert "finished" in json.loads((out / "config.json").read_text())["runs"][-1]
        assert signal.getsignal(signal.SIGTERM) is _unhandled  # the command put back the handler it found
    finally:
        signal.signal(signal.SIGTERM, previous)
    keys = ["argv", "asked", "batch_size", "corpora", "device", "error", "executor", "failed", "limit", "predictors",
            "relations", "seed", "started", "usage_log", "versions"]
    line = "interrupted: results written so far are kept; rerun the same command to resume"
    assert ended == {"ctrl-c": (130, line, keys, "interrupted", CHUNK),
                     "sigterm": (143, line, keys, "interrupted", CHUNK),
                     "sigterm-in-ray": (143, line, keys, "interrupted", CHUNK)}


def test_a_command_stopped_before_its_output_folder_exists_says_nothing_is_kept(tmp_path, lama_dir, monkeypatch,
                                                                                 capsys):
    """Ctrl-C while the data loads, before the run made its folder, leaves nothing to resume: the line says so, not
    that results are kept; stopped the same way on a rerun into an existing folder, the usual line."""
    import bridge.run.runner as runner

    def loading(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "google_re", "--predictors", "freq", "--data-dir", str(lama_dir),
            "--out", str(out), "--quiet"]
    plan_run = runner.plan_run
    monkeypatch.setattr(runner, "plan_run", loading)
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.strip().splitlines()[-1], out.exists()) == (
        130, f"interrupted before anything was written ({out} was not made); rerun the same command to start",
        False)
    monkeypatch.setattr(runner, "plan_run", plan_run)
    assert run_kbc(argv, capsys)[0] == 0
    monkeypatch.setattr(runner, "plan_run", loading)
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.strip().splitlines()[-1]) == (
        130, "interrupted: results written so far are kept; rerun the same command to resume")


def make_stopped_while_loading(name, ctx):
    raise KeyboardInterrupt  # Ctrl-C while a model loads


def test_compare_says_a_run_is_unfinished_only_when_its_stopped_attempt_left_it_so(tmp_path, lama_dir, monkeypatch,
                                                                                    capsys):
    """A rerun stopped before it asked anything leaves the earlier attempt's summaries whole and current: `kbc
    compare` reads a finished run and says nothing; one stopped after it added a predictor is refused until rerun."""
    monkeypatch.setitem(registry.ENTRIES, "loading", (f"{__name__}:make_stopped_while_loading", "test"))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "google_re", "--predictors", "freq", "random", "--data-dir", str(lama_dir),
            "--out", str(out), "--quiet", "--limit", "20"]
    assert run_kbc(argv, capsys)[0] == 0
    import bridge.run.runner as runner

    def checking(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while a rerun reads back what is recorded

    with monkeypatch.context() as m:
        m.setattr(runner.Job, "run", checking)
        assert run_kbc(argv, capsys)[0] == 130
    assert json.loads((out / "config.json").read_text())["runs"][-1]["error"] == "interrupted"
    code, text, err = run_kbc(["compare", str(out), "freq", "random"], capsys)
    assert (code, err) == (0, "")
    assert text.splitlines()[1].startswith("Sample: at most 20 facts per relation")
    assert text.splitlines()[2].startswith("google_re: 60 facts answered by both")
    assert run_kbc([*argv[:7], "loading", *argv[7:]], capsys)[0] == 130
    code, _, err = run_kbc(["compare", str(out), "freq", "random"], capsys)
    started = json.loads((out / "config.json").read_text())["runs"][-1]["started"]
    # the runs log holds two commands: the line names the one stopped (rebuilt from its entry: pytest ran it)
    assert (code, err) == (2, f"error: {out}: its config.json changed since its summaries were written; rerun `kbc run "
                              f"lama --corpus google_re --predictors freq random loading --limit 20 --seed 0 "
                              f"--data-dir {lama_dir} --out {out}` (the attempt started {started}) to rescore it\n")


def test_outputs(tmp_path, lama_dir):
    out = tmp_path / "out"
    run_lama(RunConfig(["google_re"], ["freq"], out, str(lama_dir), cache_dir=tmp_path / "cache"), progress=False)
    config = json.loads((out / "config.json").read_text())
    assert config["predictors"] == ["freq"] and config["data_versions"]["google_re"]
    assert config["predictor_configs"]["google_re"]["freq"]["ties"] == "first occurrence in the data"
    assert config["predictor_configs"]["google_re"]["freq"]["slots"] == ["object", "subject"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary[0]) == {"corpus", "predictor", "setting", "scope", "group", "metric", "value", "n_facts",
                               "stderr", "ci_low", "ci_high"}
    assert {r["metric"] for r in summary} == {"p@1", "p@10", "mrr", "answer_space"}
    assert {r["scope"] for r in summary} == {"own", "shared"}
    curves = json.loads((out / "curves.json").read_text())
    assert [r["k"] for r in curves if r["setting"] == "raw" and r["scope"] == "own"] == list(range(1, 101))
    record = json.loads((out / "predictions/google_re/freq/place_of_birth.jsonl").open().readline())
    assert record["prompt"] == "Khatchig Mouradian was born in [MASK] ."
    assert record["gold"] == "Lebanon" and len(record["answers"]) == 10
    assert record["answers"][0][0] == "London"
    assert "| google_re | freq | 372 | 5527 | 1.86 ± 0.32 | 4.63 ± 0.39 | 6.80 ± 0.91 | 4.43 ± 0.35 | [3.74, 5.12] |" \
        in (out / "summary.md").read_text()


def test_rerun_with_other_settings_refused(tmp_path, lama_dir):
    cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                    relations=["place_of_death"])
    run_lama(cfg, progress=False)
    cfg.depth = 50
    with pytest.raises(ConfigError, match="predictor 'freq' was run with"):
        run_lama(cfg, progress=False)


def test_a_damaged_line_stops_the_rerun_and_is_kept(tmp_path, lama_dir):
    cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                    relations=["place_of_death"], limit=5)
    run_lama(cfg, progress=False)
    path = tmp_path / "out" / "predictions" / "google_re" / "freq" / "place_of_death.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = b"".join(lines[:1] + [b'{"uid": "x", "relation": "place_of_death", "coherent": "false"}\n'] + lines[1:])
    path.write_bytes(damaged)
    with pytest.raises(DataError, match=r"place_of_death.jsonl:2: not the record this run wrote there"):
        run_lama(cfg, progress=False)
    assert path.read_bytes() == damaged  # nothing cut off or rewritten


def test_a_rerun_with_another_sample_says_the_scores_cover_both(tmp_path, lama_dir, caplog):
    def run(limit, seed):
        cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                        relations=["place_of_death"], limit=limit, seed=seed)
        caplog.clear()
        rows = run_lama(cfg, progress=False)
        return next(r["n_facts"] for r in rows if r["metric"] == "p@1" and r["scope"] == "own"
                    and r["group"] == "all"), [m for m in caplog.messages if "also holds facts asked with" in m]

    assert run(5, 0) == (5, [])
    assert run(5, 0) == (5, [])  # the same sample again: nothing to say
    n, notes = run(5, 1)
    assert 5 < n <= 10 and len(notes) == 1 and "--limit 5 --seed 0" in notes[0]


def test_a_rerun_on_fewer_relations_says_the_summary_covers_them_all(tmp_path, lama_dir, caplog):
    def run(corpora, relations):
        caplog.clear()
        rows = run_lama(RunConfig(corpora, ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                                  relations=relations, limit=3), progress=False)
        groups = sorted({r["group"] for r in rows if r["scope"] == "own" and r["metric"] == "p@1"})
        return groups, [m for m in caplog.messages if "relation" in m and "also holds" in m]

    both = ["N-1", "all", "place_of_birth", "place_of_death"]
    assert run(["google_re"], ["place_of_death", "place_of_birth"]) == (both, [])
    assert run(["google_re"], ["place_of_death", "place_of_birth"]) == (both, [])  # the same relations: no note
    assert run(["google_re"], ["place_of_death"]) == (both, [
        f"{tmp_path / 'out'} also holds 1 relation this run does not ask (place_of_birth): its summaries cover every "
        "relation asked so far; use another --out for these relations alone"])
    assert run(["google_re"], ["place_of_death", "place_of_birth", "date_of_birth"])[1] == []


def test_relations_added_later_keep_the_earlier_answer_spaces(tmp_path, lama_dir):
    def run(*relations):
        return run_lama(RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                                  relations=list(relations)), progress=False)

    run("place_of_birth")
    rows = run("place_of_death")
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert set(config["answer_space"]["google_re"]["freq"]) == {"place_of_birth", "place_of_death"}
    together = run_lama(RunConfig(["google_re"], ["freq"], tmp_path / "both", str(lama_dir), cache_dir=tmp_path / "c",
                                  relations=["place_of_birth", "place_of_death"]), progress=False)
    assert rows == together


def test_progress_moves_per_batch_inside_a_chunk(tmp_path, lama_dir, monkeypatch):
    """A masked LM's bar moves as its batches finish, not once per 512-query chunk; it ends at the total."""
    import lm_fixtures

    from bridge.run import runner

    steps: list[int] = []

    class Bar:
        def __init__(self, total, **kw):
            self.total = total

        def update(self, n):
            steps.append(n)

        def close(self):
            pass

    monkeypatch.setattr(runner, "tqdm", Bar)
    bert = lm_fixtures.tiny_model_dir("bert-cased", tmp_path)
    run_lama(RunConfig(["trex"], [f"bert={bert}"], tmp_path / "out", str(lama_dir), relations=["P140"], limit=40,
                       batch_size=4, cache_dir=tmp_path / "cache", options={"cache": "off"}), progress=True)
    answered = [json.loads(x) for x in (tmp_path / "out/predictions/trex/bert/P140.jsonl").read_text().splitlines()]
    asked = [r for r in answered if "dropped" not in r]
    assert sum(steps) == len(asked) and len(steps) >= len(asked) // 4 and max(steps) <= 4


def test_a_run_opens_the_graph_store_only_for_what_reads_it(tmp_path, lama_dir):
    """The filtered setting's valid objects come from the facts: a Freq run neither creates nor opens the store;
    gold fills the graphs it reads, and Freq beside it records the same lines."""
    from kb.store import GraphStore

    def run(out, predictors):
        return run_lama(RunConfig(["trex"], predictors, tmp_path / out, str(lama_dir), relations=["P19", "P47"],
                                  cache_dir=tmp_path / "cache"), progress=False)

    alone = run("alone", ["freq"])
    assert not (tmp_path / "cache" / "store").exists()
    beside = run("beside", ["freq", "gold"])
    with GraphStore.open(tmp_path / "cache" / "store") as store:
        assert store.graph_names() == ["gold-trex-P19", "gold-trex-P47"]
    for rel in ("P19", "P47"):
        lines = [(tmp_path / out / "predictions" / "trex" / "freq" / f"{rel}.jsonl").read_bytes()
                 for out in ("alone", "beside")]
        assert lines[0] == lines[1] and lines[0].count(b"\n") == {"P19": 944, "P47": 922}[rel]
    filtered = [{(r["metric"], r["group"]): r["value"] for r in rows
                 if r["predictor"] == "freq" and r["setting"] == "filtered" and r["scope"] == "own"}
                for rows in (alone, beside)]
    assert filtered[0] == filtered[1] and filtered[0][("p@1", "all")] == 3.938449023861171
    gold = {r["setting"]: r["value"] for r in beside
            if r["predictor"] == "gold" and r["metric"] == "p@1" and r["group"] == "all" and r["scope"] == "own"}
    assert gold == {"raw": 100.0, "filtered": 100.0}


def test_ctrl_c_keeps_the_records_of_returned_calls_and_the_scores_of_every_collected_batch(
        tmp_path, lama_dir, tiny_models, monkeypatch):  # noqa: F811
    """docs/lama.md: records are kept per call of up to QUERIES_PER_CALL queries, the LM result cache per batch:
    the batches a cut-off call had collected are in the cache, so a resume scores only the queries never scored."""
    import sqlite3

    from lm import masked

    model, forward = tiny_models("bert-cased"), masked.MaskedLMScorer._mask_logits
    calls, rows = [0], [0]

    def counted(cut: int | None):
        def logits(self, input_ids, *args, **kw):
            calls[0] += 1
            if calls[0] == cut:
                raise KeyboardInterrupt
            rows[0] += int(input_ids.shape[0])
            return forward(self, input_ids, *args, **kw)
        return logits

    for at, kept in ((10, 0), (140, CHUNK)):  # within the first call's batches of 4; within the second's
        cfg = RunConfig(["trex"], [f"bert={model}"], tmp_path / f"out-{at}", str(lama_dir), relations=["P19"],
                        cache_dir=tmp_path / f"cache-{at}", batch_size=4)
        records = cfg.out / "predictions" / "trex" / "bert" / "P19.jsonl"
        calls[0] = rows[0] = 0
        masked._PATHS_SAID.clear()
        monkeypatch.setattr(masked.MaskedLMScorer, "_mask_logits", counted(at))
        with pytest.raises(KeyboardInterrupt):
            run_lama(cfg, progress=False)
        assert (len(records.read_text().splitlines()) if records.exists() else 0) == kept
        db = sqlite3.connect(tmp_path / f"cache-{at}" / "lm" / "results.sqlite")
        cached = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        db.close()
        assert kept < cached < rows[0]  # the batch that had run but was not collected is not kept
        calls[0] = rows[0] = 0
        monkeypatch.setattr(masked.MaskedLMScorer, "_mask_logits", counted(None))
        run_lama(cfg, progress=False)
        answered = [json.loads(x) for x in records.read_text().splitlines()]
        asked = sum("dropped" not in r for r in answered)
        assert rows[0] == asked - cached  # every query scored before the cut, and only those, came from the cache


def test_a_run_stopped_while_its_summaries_are_written_is_not_recorded_finished(tmp_path, lama_dir, tiny_models,  # noqa: F811
                                                                                monkeypatch):
    """An attempt ends when its summaries are written: a Ctrl-C or SIGTERM while they are leaves it `failed:
    interrupted` (readers refuse the run until a rerun writes them), and the attempt that writes them is marked
    finished in config.json as scoring left it (with the dropped facts scoring adds)."""
    from bridge.run import runner

    cfg = RunConfig(["trex"], ["freq", f"bert={tiny_models('bert-cased')}"], tmp_path / "out", str(lama_dir),
                    relations=["P19"], limit=20, cache_dir=tmp_path / "cache")
    real = runner.collect

    def stopped(out, *args):
        (out / "summary.json").write_text("[]")  # part of the way
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "collect", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_lama(cfg, progress=False)
    config = json.loads((cfg.out / "config.json").read_text())
    assert "finished" not in config["runs"][-1] and config["runs"][-1]["error"] == "interrupted"
    from bridge.run.directory import RunDir, unfinished

    assert unfinished(RunDir(cfg.out, config)) != []
    def scored(out, *args):  # scoring writes to config.json too (each predictor's dropped facts)
        rows = real(out, *args)
        written = json.loads((out / "config.json").read_text())
        (out / "config.json").write_text(json.dumps({**written, "added_by_scoring": True}))
        return rows

    monkeypatch.setattr(runner, "collect", scored)
    run_lama(cfg, progress=False)
    config = json.loads((cfg.out / "config.json").read_text())
    assert [sorted(k for k in r if k in ("finished", "failed")) for r in config["runs"]] == [["failed"], ["finished"]]
    assert config["added_by_scoring"] is True
    assert unfinished(RunDir(cfg.out, config)) == []
