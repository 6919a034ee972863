"""A relation an interrupted attempt left part-asked is never scored as if whole: another command into the directory
is refused up front naming the command that finishes it, and the readers refuse summaries that would score it."""

import json
import shlex
import sys

import pytest
from cli_support import run_kbc

import kbcompare
from bridge.predictors import registry
from bridge.run import runner
from eval.errors import DataError
from eval.types import QUERIES_PER_CALL as CHUNK
from kb.freq import FreqPredictor

CALLS: list[int] = []


class Cut(FreqPredictor):
    """Freq stopped by Ctrl-C in its second call, the first time it runs (its first 512 queries recorded)."""

    name = "cut"

    def predict(self, queries, depth):
        CALLS.append(len(queries))
        if len(CALLS) == 2:
            raise KeyboardInterrupt
        return super().predict(queries, depth)


def make_cut(name, ctx):
    return Cut(ctx.corpus.facts)


@pytest.fixture
def cut(monkeypatch, tmp_path):
    CALLS.clear()
    monkeypatch.setitem(registry.ENTRIES, "cut", (f"{__name__}:make_cut", "test"))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))


def _kbc(argv, capsys, monkeypatch):
    """`kbc ARGV` as typed: the runs log records this argv."""
    monkeypatch.setattr(sys, "argv", ["kbc", *argv])
    return run_kbc(argv, capsys)


def _argv(lama_dir, out, relations, *more):
    return ["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors", "freq", "cut",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", *more]


def _lines(out, predictor, relation):
    return len((out / "predictions" / "trex" / predictor / f"{relation}.jsonl").read_text().splitlines())


def test_a_command_that_does_not_finish_a_part_asked_relation_is_refused(tmp_path, lama_dir, cut, capsys,
                                                                         monkeypatch):
    out = tmp_path / "run"
    first = _argv(lama_dir, out, ["P19"])
    assert _kbc(first, capsys, monkeypatch)[0] == 130
    assert (_lines(out, "freq", "P19"), _lines(out, "cut", "P19")) == (944, CHUNK)
    attempt = json.loads((out / "config.json").read_text())["runs"][-1]
    assert (attempt["asked"], attempt["done"]) == ({"trex": ["P19"]}, {"trex": {"freq": ["P19"]}})
    line = (f"error: --out {out}: the attempt started {attempt['started']} (interrupted) left trex P19 of cut "
            "part-asked, which this command does not ask again whole (the same --limit and --seed, or no --limit); "
            f"finish it first with `{shlex.join(['kbc', *first])}`, or use another --out\n")
    before = (out / "config.json").read_bytes()
    for other in (_argv(lama_dir, out, ["P36"]),  # adds a relation: P19 would be scored over its first 512 facts
                  _argv(lama_dir, out, ["P19", "P36"], "--limit", "100")):  # another sample of P19
        code, _, err = _kbc(other, capsys, monkeypatch)
        assert (code, err.splitlines()[-1] + "\n", err.count("error:")) == (2, line, 1), other  # after the load line
    assert (out / "config.json").read_bytes() == before  # refused before anything was written
    assert not (out / "predictions" / "trex" / "freq" / "P36.jsonl").exists()
    assert _kbc(first, capsys, monkeypatch)[0] == 0  # the named command finishes it
    assert _lines(out, "cut", "P19") == 944
    assert _kbc(_argv(lama_dir, out, ["P36"]), capsys, monkeypatch)[0] == 0  # and the directory takes others again
    rows = json.loads((out / "summary.json").read_text())
    n = {(r["predictor"], r["group"]) for r in rows if r["scope"] == "shared" and r["group"] == "P19"
         and r["n_facts"] == 944 and r["metric"] == "p@1" and r["setting"] == "raw"}
    assert n == {("freq", "P19"), ("cut", "P19")}


def test_readers_refuse_summaries_that_score_a_part_asked_relation(tmp_path, lama_dir, cut, capsys, monkeypatch):
    """A directory an earlier kbc left so (an interrupted attempt, then another command that scored it): every
    reader refuses it, naming what is part-asked and the exact command that finishes it."""
    out = tmp_path / "run"
    first = _argv(lama_dir, out, ["P19"])
    assert _kbc(first, capsys, monkeypatch)[0] == 130
    monkeypatch.setattr(runner, "check_part_asked", lambda *args: None)  # as kbc did before it refused
    assert _kbc(_argv(lama_dir, out, ["P36"]), capsys, monkeypatch)[0] == 0
    monkeypatch.undo()
    config = json.loads((out / "config.json").read_text())
    started = config["runs"][0]["started"]
    command = shlex.join(["kbc", *first])
    line = (f"error: {out}: the attempt started {started} (interrupted) left trex P19 of cut part-asked, so its "
            f"scores there would be over part of the facts; rerun `{command}` to finish it\n")
    for argv in (["leaderboard", str(out)], ["report", str(out)], ["compare", str(out), "freq", "cut"],
                 ["show", str(out), "--uid", "whatever"]):
        assert run_kbc(argv, capsys) == (2, "", line), argv
    with pytest.raises(DataError) as caught:
        kbcompare.load_run(out).table()
    assert f"error: {caught.value}\n" == line
    for attempt in config["runs"]:  # entries written before attempts noted what they asked and finished
        attempt.pop("asked", None)
        attempt.pop("done", None)
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["leaderboard", str(out)], capsys)
    assert (code, err) == (2, line.replace("of cut", "of freq, cut"))


def test_readers_name_the_unfinished_command_when_the_log_holds_several(tmp_path, lama_dir, cut, capsys,
                                                                        monkeypatch):
    """An interrupted add of relations to a scored run: the readers name that attempt's command, not "the same"."""
    out = tmp_path / "run"
    CALLS.extend([0, 0])  # `cut` answers its first run whole
    assert _kbc(_argv(lama_dir, out, ["P36"]), capsys, monkeypatch)[0] == 0
    CALLS.clear()
    added = _argv(lama_dir, out, ["P36", "P19"])
    assert _kbc(added, capsys, monkeypatch)[0] == 130
    started = json.loads((out / "config.json").read_text())["runs"][-1]["started"]
    line = (f"error: {out}: the attempt started {started} (interrupted) left trex P19 of cut part-asked, so its "
            f"scores there would be over part of the facts; rerun `{shlex.join(['kbc', *added])}` to finish it\n")
    assert run_kbc(["leaderboard", str(out)], capsys) == (2, "", line)


def test_a_predictor_stopped_before_its_first_record_leaves_nothing_part_asked(tmp_path, lama_dir, cut, capsys,
                                                                                monkeypatch):
    """An attempt stopped before `cut` recorded anything, then another sample: what that writes is read by every
    reader and the same command runs again, as `kbc run` let it start (one rule for both)."""
    out = tmp_path / "run"
    CALLS.append(0)  # `cut` stops in its first call: freq finished, cut has no records
    assert _kbc(_argv(lama_dir, out, ["P19", "P36"], "--limit", "24"), capsys, monkeypatch)[0] == 130
    assert not any(f.stat().st_size for f in (out / "predictions" / "trex" / "cut").glob("*.jsonl"))
    other = _argv(lama_dir, out, ["P19", "P36"], "--limit", "10")
    assert _kbc(other, capsys, monkeypatch)[0] == 0
    assert (_lines(out, "cut", "P19"), _lines(out, "cut", "P36")) == (10, 10)
    assert run_kbc(["leaderboard", str(out)], capsys)[0] == 0
    assert len(kbcompare.load_run(out).table()) > 0
    assert _kbc(other, capsys, monkeypatch)[0] == 0
    fresh = json.loads((out / "config.json").read_text())["runs"][1]["fresh"]
    assert fresh == {"trex": {"cut": ["P19", "P36"]}}
