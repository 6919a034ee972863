"""The Python API (`kbcompare`): the same runs, tables, errors and answers as the `kbc` commands."""

from __future__ import annotations

import json
from pathlib import Path

import lm_fixtures
import pandas as pd
import pytest
from cli_support import run_kbc

import kbcompare
from bridge.cli import main
from eval.jsonl import write_json

RELATIONS = ["P19", "P36"]


@pytest.fixture(scope="module")
def env(lama_dir, tmp_path_factory):
    """A cache of this module's own, and a tiny BERT."""
    root = tmp_path_factory.mktemp("api")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        tiny = lm_fixtures.tiny_model_dir("bert-cased", root)
        yield {"root": root, "tiny": str(tiny), "data": str(lama_dir)}


@pytest.fixture(scope="module")
def runs(env):
    """The same run made by `kbc run lama` and by `kbcompare.run`."""
    cli_out, api_out = env["root"] / "cli", env["root"] / "api"
    try:
        main(["run", "lama", "--corpus", "trex", "--relations", *RELATIONS, "--predictors", "freq",
              f"bert={env['tiny']}", "--limit", "30", "--data-dir", env["data"], "--out", str(cli_out), "--quiet"])
    except SystemExit as exc:
        pytest.fail(f"kbc run lama exited with status {exc.code}")
    result = kbcompare.run("lama", corpus="trex", relations=RELATIONS, predictors={"freq": "freq", "bert": env["tiny"]},
                           limit=30, data_dir=env["data"], out=api_out)
    return cli_out, result


def _summary(path: Path) -> list[dict]:
    return json.loads((path / "summary.json").read_text(encoding="utf-8"))


def test_run_returns_what_the_cli_writes(runs):
    cli_out, result = runs
    assert isinstance(result, kbcompare.Run)
    assert result.run_dir == runs[1].run_dir and result.experiment == "lama"
    assert result.predictors == ["freq", "bert"] and result.corpora == ["trex"]
    rows = _summary(result.run_dir)
    assert rows == _summary(cli_out)  # the same numbers, whichever way the run was started
    pd.testing.assert_frame_equal(result.summary, pd.DataFrame(rows))
    written = pd.read_parquet(cli_out / "instances.parquet")
    ranks = ["gold_rank_raw", "gold_rank_filtered"]  # the rank P@k counts: the list rank, else the exact one
    pd.testing.assert_frame_equal(result.facts.drop(columns=ranks), written)
    for setting in ("raw", "filtered"):
        want = written[f"rank_{setting}"].fillna(written[f"rank_exact_{setting}"])
        assert result.facts[f"gold_rank_{setting}"].equals(want.rename(f"gold_rank_{setting}"))
    assert len(result.facts) == 2 * 60  # two predictors, 30 facts of each relation


def test_table_is_the_headline_pivot(runs):
    _, result = runs
    rows = _summary(result.run_dir)

    def value(predictor: str, group: str, metric: str = "p@1", scope: str = "shared") -> float:
        found = [r["value"] for r in rows if (r["corpus"], r["predictor"], r["setting"], r["scope"], r["group"],
                                              r["metric"]) == ("trex", predictor, "raw", scope, group, metric)]
        assert len(found) == 1
        return found[0]

    table = result.table()
    assert list(table.columns) == ["P36", "P19", "all"]  # by relation type (1-1, N-1), as `kbc run` prints
    assert list(table.index) == [("trex", "freq"), ("trex", "bert")]
    for predictor in ("freq", "bert"):
        for group in ("P19", "P36", "all"):
            assert table.loc[("trex", predictor), group] == value(predictor, group)
    mrr = result.table("mrr", scope="own")
    assert mrr.loc[("trex", "bert"), "all"] == value("bert", "all", "mrr", "own")
    with pytest.raises(kbcompare.ConfigError, match=r"has no p@7 \(raw, shared\) rows; metrics: .*mrr"):
        result.table("p@7")


def test_rerun_into_the_cli_directory_resumes_without_changing_a_score(runs, env):
    cli_out, _ = runs
    before = _summary(cli_out)
    again = kbcompare.run("lama", corpus="trex", relations=RELATIONS, predictors=["freq", f"bert={env['tiny']}"],
                          limit=30, data_dir=env["data"], out=cli_out)
    assert _summary(cli_out) == before
    assert again.summary.equals(pd.DataFrame(before))
    assert kbcompare.load_run(cli_out).summary.equals(pd.DataFrame(before))


def test_leaderboard_and_compare_match_the_commands(runs, capsys):
    cli_out, result = runs
    code, out, err = run_kbc(["leaderboard", str(cli_out), str(result.run_dir), "--format", "json"], capsys)
    assert code == 0, err
    board = kbcompare.leaderboard(cli_out, result)
    rows = json.loads(out)["rows"]
    # the same values, numbers in nullable columns: a missing one <NA> where the JSON has null
    assert board.astype(object).where(board.notna(), None).to_dict("records") == rows
    assert list(board["predictor"]) == [r["predictor"] for r in rows]
    from transformers import AutoModelForMaskedLM

    spec = json.loads((cli_out / "config.json").read_text())["predictor_specs"]["bert"]["spec"]
    weights = sum(p.numel() for p in AutoModelForMaskedLM.from_pretrained(spec).parameters())
    what = {(r["predictor"], r["side"], r["parameters"], r["dtype"], r["device"]) for r in rows}
    assert what == {("freq", "kb", None, None, None), ("bert", "lm", weights, "float32", "cpu")}
    code, out, err = run_kbc(["compare", str(cli_out), "freq", "bert", "--json"], capsys)
    assert code == 0, err
    expected = json.loads(out)["corpora"]["trex"]
    frame = kbcompare.compare(cli_out, "freq", "bert")
    # the order of `kbc compare`'s table and --json: by relation type (P36 1-1, P19 N-1), then id; not alphabetical
    assert list(frame["group"]) == ["P36", "P19", "all"]
    assert list(expected["relations"]) == ["P36", "P19"]
    code, text, err = run_kbc(["compare", str(cli_out), "freq", "bert"], capsys)
    assert code == 0, err
    assert [line.split()[0] for line in text.splitlines() if line.startswith(("P19", "P36", "all"))] == \
        ["P36", "P19", "all"]
    total = frame[frame["group"] == "all"].iloc[0]
    for key in ("n", "both", "only_a", "only_b", "neither", "p_value"):
        assert total[key] == expected["overall"][key]
    assert (total["p1_a"], total["p1_b"], total["difference"]) == (expected["macro_p1_a"], expected["macro_p1_b"],
                                                                    expected["difference"])
    assert [total["ci_low"], total["ci_high"]] == expected["ci"]
    p19 = frame[frame["group"] == "P19"].iloc[0]
    assert p19["both"] == expected["relations"]["P19"]["both"] and p19["n"] == 30


def _cli_error(argv: list[str], capsys) -> str:
    code, _, err = run_kbc(argv, capsys)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    return err.removeprefix("error: ").rstrip("\n")


def test_errors_carry_the_cli_message(env, capsys, tmp_path):
    base = ["run", "lama", "--corpus", "trex", "--data-dir", env["data"], "--out", str(tmp_path / "x")]
    # a value the flag refuses: click's message, without the pointer to --help
    cli = _cli_error([*base, "--predictors", "freq", "--depth", "0"], capsys)
    with pytest.raises(kbcompare.ConfigError) as caught:
        kbcompare.run("lama", corpus="trex", data_dir=env["data"], out=tmp_path / "x", predictors=["freq"], depth=0)
    assert str(caught.value) == "Invalid value for '--depth': 0 is not in the range x>=1."
    assert cli == f"{caught.value} (see `kbc run lama --help`)"
    # errors of the run itself: exactly the line the command prints
    for argv, options in ((["--predictors", "freq", "--relations", "P9999"], {"predictors": "freq",
                                                                                "relations": "P9999"}),
                          ([], {}),
                          (["--predictors", "freq", "--set", "freq.nope=1"], {"predictors": "freq",
                                                                               "settings": {"freq.nope": 1}})):
        cli = _cli_error([*base, *argv], capsys)
        with pytest.raises(kbcompare.KbcError) as caught:
            kbcompare.run("lama", corpus="trex", data_dir=env["data"], out=tmp_path / "x", **options)
        assert str(caught.value) == cli
    assert not (tmp_path / "x").exists()  # refused before anything was written
    # the `kbc run` commands
    assert kbcompare.experiments() == ["bear", "coherency", "fewrel", "kmir", "lama", "lmkbc", "negated"]
    with pytest.raises(kbcompare.ConfigError, match=r"^unknown experiment 'lamma' \(did you mean 'lama'\?\); known: "):
        kbcompare.run("lamma")
    with pytest.raises(kbcompare.ConfigError, match=r"^kbc run lama has no option 'deph' \(did you mean 'depth'\?\)"):
        kbcompare.run("lama", deph=3)
    cli = _cli_error(["report", str(tmp_path)], capsys)
    with pytest.raises(kbcompare.DataError) as caught:
        kbcompare.load_run(tmp_path)
    assert str(caught.value) == cli == f"{tmp_path} has no config.json: not a run directory written by `kbc run`"


def test_facts_refuse_a_run_without_its_table(runs, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(runs[0], copy)
    (copy / "instances.parquet").unlink()
    with pytest.raises(kbcompare.DataError, match=r"its instances.parquet is missing; rerun the same `kbc run`"):
        kbcompare.load_run(copy)
    write_json(copy / "summary.json", {"rows": "no"})
    with pytest.raises(kbcompare.DataError, match=r"summary.json must hold a JSON list of rows"):
        kbcompare.load_run(copy)


def test_ask_answers_from_both_sides(env, trex):
    fact = next(f for f in trex.facts if f.relation == "P19")
    gold = sorted({f.object.label for f in trex.facts if f.relation == "P19" and f.subject.label == fact.subject.label})
    with kbcompare.Sides(["freq", f"bert={env['tiny']}"], relations=["P19"], data_dir=env["data"]) as sides:
        answers = sides.ask(fact.subject.label, "P19", k=3)
        assert answers.gold == gold
        assert [c["name"] for c in answers.columns[:1] + answers.columns[2:]] == ["gold KB", "freq", "bert"]
        assert [(c["side"], c["status"]) for c in (answers.side("freq"), answers.side("bert"))] == [("kb", "ok"),
                                                                                                    ("lm", "ok")]
        assert len(answers.side("bert")["answers"]) == 3 and len(answers.side("freq")["answers"]) == 3
        frame = answers.frame
        assert list(frame[frame["name"] == "gold KB"]["label"]) == gold
        assert list(frame[frame["name"] == "bert"]["rank"]) == [1, 2, 3]
        assert answers.prompt == fact.subject.label + " was born in [MASK] ."
        with pytest.raises(kbcompare.ConfigError, match=r"^empty subject: type a subject and pick a relation"):
            sides.ask("", "P19")
        cloze = sides.ask(cloze="Paris is the capital of [MASK] .", k=2)
        assert cloze.side("freq")["status"] == "not applicable" and len(cloze.side("bert")["answers"]) == 2
    once = kbcompare.ask(fact.subject.label, "P19", k=3, predictors=["freq"], data_dir=env["data"])
    assert once.gold == gold and once.side("freq")["answers"] == answers.side("freq")["answers"]
