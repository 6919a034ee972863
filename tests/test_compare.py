"""`kbc compare` and the per-fact table on a hand-made run directory with known answers.

The run (predictors alpha and beta, and gamma that never ran) holds two T-REx relations:
  P19: both p19-1 p19-2 | only alpha p19-3 | only beta p19-4 p19-5 p19-6 | neither p19-7
       (alpha ranks p19-7's gold 2nd raw, 1st filtered) | p19-8: beta dropped it
  P36: both p36-1 | only beta p36-2 p36-3 p36-4 | neither p36-5 p36-6
       | p36-7: beta never wrote it | p36-8: alpha dropped it; beta's file ends in a torn line
Pooled: both 3, only alpha 1, only beta 6, neither 3; McNemar p = 2 * (1 + 7) / 2**7 = 0.125.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lm_fixtures
import numpy as np
import pandas as pd
import pytest
from cli_support import run_kbc
from records_support import seal_records
from scipy.stats import binomtest

import kbcompare
from bridge.run.instances import write_instances
from eval.compare import (
    Counts,
    Pair,
    ScoredPair,
    bootstrap_difference,
    compare,
    compare_scores,
    mcnemar_exact,
    sign_flip_exact,
)
from eval.errors import ConfigError
from eval.lama import READING

tiny_models = lm_fixtures.tiny_models
SUBJECTS = {"p19-1": ("Ada Lovelace", "Q7259")}


def record(uid: str, rel: str, raw: int | None, filtered: int | None = "same", **extra) -> dict:
    """A prediction record whose answer list puts the gold where the ranks say."""
    filtered = raw if filtered == "same" else filtered
    gold = f"gold-{uid}"
    answers = [[f"wrong-{uid}-{i}", round(-1.0 - i / 10, 6), None] for i in range(10)]
    other_valid = []
    if raw is not None:
        answers.insert(raw - 1, [gold, -0.5, f"Q{uid[-1]}"])
        if filtered is not None and filtered < raw:
            other_valid = [answers[0][0]]
    subject, subject_id = SUBJECTS.get(uid, (f"subject {uid}", f"Q9{uid[-1]}"))
    out = {"uid": uid, "relation": rel, "subject": subject, "subject_id": subject_id, "gold": gold,
           "gold_id": f"Q{uid[-1]}", "prompt": f"{subject} relates to [MASK] .", "other_valid": other_valid,
           "rank_raw": raw, "rank_filtered": filtered, "answers": answers[:10]}
    out.update(extra)
    return out


def dropped(uid: str, rel: str, reason: str) -> dict:
    return {"uid": uid, "relation": rel, "subject": f"subject {uid}", "gold": f"gold-{uid}", "dropped": reason}


ALPHA = {
    "P19": [record("p19-1", "P19", 1, rank_exact_raw=1, rank_exact_filtered=1), record("p19-2", "P19", 1),
            record("p19-3", "P19", 1), record("p19-4", "P19", 3), record("p19-5", "P19", None),
            record("p19-6", "P19", 4), record("p19-7", "P19", 2, 1), record("p19-8", "P19", 1)],
    "P36": [record("p36-1", "P36", 1), record("p36-2", "P36", 2), record("p36-3", "P36", None),
            record("p36-4", "P36", 5), record("p36-5", "P36", 2), record("p36-6", "P36", None),
            record("p36-7", "P36", 1), dropped("p36-8", "P36", "object not in vocabulary")],
}
BETA = {
    "P19": [record("p19-1", "P19", 1), record("p19-2", "P19", 1), record("p19-3", "P19", 2),
            record("p19-4", "P19", 1), record("p19-5", "P19", 1), record("p19-6", "P19", 1),
            record("p19-7", "P19", None), dropped("p19-8", "P19", "multi-token object")],
    "P36": [record("p36-1", "P36", 1), record("p36-2", "P36", 1), record("p36-3", "P36", 1),
            record("p36-4", "P36", 1), record("p36-5", "P36", 3), record("p36-6", "P36", None),
            record("p36-8", "P36", 1)],
}


def make_run(root: Path) -> Path:
    """The hand-made run directory described in the module docstring."""
    run = root / "run"
    config = {"corpora": ["trex"], "predictors": ["alpha", "beta", "gamma"], "settings": {"depth": 100},
              "data_reading": READING}  # this kbc's reading of the data files
    (run / "predictions").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(config))
    for name, files in (("alpha", ALPHA), ("beta", BETA)):
        for rel, records in files.items():
            path = run / "predictions" / "trex" / name / f"{rel}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with (run / "predictions" / "trex" / "beta" / "P36.jsonl").open("a") as handle:
        handle.write('{"uid": "p36-7", "relation": "P3')  # torn: a crash mid-write
    seal_records(run)
    return run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path)


def _compare(run_dir: Path, capsys, *args: str) -> dict:
    code, out, err = run_kbc(["compare", str(run_dir), "alpha", "beta", "--json", *args], capsys)
    assert code == 0, err
    return json.loads(out)["corpora"]["trex"]


def _cells(counts: dict) -> tuple[int, int, int, int]:
    return counts["both"], counts["only_a"], counts["only_b"], counts["neither"]


def test_counts_per_relation_and_overall(run_dir, capsys):
    res = _compare(run_dir, capsys)
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta", "--json"], capsys)
    assert json.loads(out)["metric"] == "P@1"  # what the shares right measure
    assert _cells(res["relations"]["P19"]) == (2, 1, 3, 1)
    assert _cells(res["relations"]["P36"]) == (1, 0, 3, 2)
    assert _cells(res["overall"]) == (3, 1, 6, 3)
    assert res["overall"]["n"] == 13
    assert res["left_out"] == {"answered_by_a_only": 2, "answered_by_b_only": 1}  # p19-8, p36-7 | p36-8
    assert res["macro_p1_a"] == pytest.approx((300 / 7 + 100 / 6) / 2)
    assert res["macro_p1_b"] == pytest.approx((500 / 7 + 400 / 6) / 2)


def test_the_all_row_says_its_shares_are_macro_and_its_counts_pooled(run_dir, capsys):
    """Relations of 7 and 6 facts: the `all` row's P@1 is the summaries' Total (the mean over relations), which
    differs from its own counts' share right (4 of 13); the footnote tells the two apart."""
    code, out, err = run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys)
    assert code == 0, err
    row = next(line.split() for line in out.splitlines() if line.startswith("all "))
    assert row[1:6] == ["13", "3", "1", "6", "3"] and row[6] == f"{(300 / 7 + 100 / 6) / 2:.2f}" != f"{400 / 13:.2f}"
    assert ("(`all` row: P@1 macro over relations, as the summaries' Total; its facts, both, only A, only B and "
            "neither pool the facts; McNemar on the pooled facts)") in out


def test_filtered_setting_uses_filtered_ranks(run_dir, capsys):
    res = _compare(run_dir, capsys, "--setting", "filtered")
    assert _cells(res["relations"]["P19"]) == (2, 2, 3, 0)  # p19-7: alpha right once p19-7's other object is removed
    assert _cells(res["overall"]) == (3, 2, 6, 2)


def test_mcnemar_exact_p_values(run_dir, capsys):
    res = _compare(run_dir, capsys)
    assert res["overall"]["p_value"] == pytest.approx(0.125)
    assert res["overall"]["p_value"] == pytest.approx(binomtest(1, 7, 0.5).pvalue)
    assert res["relations"]["P19"]["p_value"] == pytest.approx(binomtest(1, 4, 0.5).pvalue)  # = 0.625
    assert res["relations"]["P19"]["p_value"] == pytest.approx(0.625)
    assert res["relations"]["P36"]["p_value"] == pytest.approx(0.25)
    assert mcnemar_exact(0, 0) == 1.0


def test_bootstrap_is_seeded_and_covers_the_observed_difference(run_dir, capsys):
    first = _compare(run_dir, capsys, "--seed", "7")
    again = _compare(run_dir, capsys, "--seed", "7")
    other = _compare(run_dir, capsys, "--seed", "8", "--bootstrap", "500")
    observed = ((300 - 500) / 7 + (100 - 400) / 6) / 2
    assert first["difference"] == pytest.approx(observed)
    assert first["ci"] == again["ci"]
    assert other["bootstrap"] == 500 and other["seed"] == 8
    low, high = first["ci"]
    assert low <= observed <= high
    assert -100 <= low < high <= 0  # beta never loses a discordant pair in P36 and wins 3 of 4 in P19
    assert _compare(run_dir, capsys, "--bootstrap", "0")["ci"] is None


def test_bootstrap_resamples_within_relations():
    """A relation where A and B always agree contributes a constant; the interval is the other's."""
    agree = Counts(both=5, neither=5)
    split = Counts(only_a=10, only_b=10)
    low, high = bootstrap_difference({"x": agree, "y": split}, n_boot=2000, seed=1)
    alone = bootstrap_difference({"y": split}, n_boot=2000, seed=1)
    assert (low, high) == pytest.approx((alone[0] / 2, alone[1] / 2))
    assert bootstrap_difference({"x": agree}, n_boot=100, seed=0) == (0.0, 0.0)
    big = {"r": Counts(both=300, only_a=120, only_b=95, neither=485), "s": Counts(only_a=40, only_b=61, neither=99)}
    assert bootstrap_difference(big, seed=5) == bootstrap_difference(big, seed=5)
    assert bootstrap_difference(big, seed=5) != bootstrap_difference(big, seed=6)


def test_one_fact_per_relation_gives_no_interval_as_the_summaries():
    """A relation of one fact resamples to itself: with no relation of two facts, the difference has no interval
    (the summaries' Total has none either), not a zero-width one that reads as certainty."""
    single = {rel: Counts(only_b=1) for rel in ("P19", "P36", "P101")}
    assert bootstrap_difference(single, n_boot=200, seed=0) is None
    clustered = {"P19": Counts(only_b=3, per_fact=((-3, 3),))}
    assert bootstrap_difference(clustered, n_boot=200, seed=0) is None
    low, high = bootstrap_difference({**single, "P20": Counts(only_a=1, neither=1)}, n_boot=200, seed=0)
    assert low < high  # one relation of two facts gives the others' constants an interval around them
    res = compare([Pair("P19", "u1", True, False)], n_boot=200, pooled=True)
    assert res.ci is None and res.to_dict()["ci"] is None
    assert compare_scores([ScoredPair("r", "u1", 1.0, 0.5)], n_boot=200).ci is None


def test_compare_pure_function_lists():
    pairs = [Pair("r", "u1", True, False), Pair("r", "u2", False, True), Pair("s", "u3", True, True)]
    res = compare(pairs, n_boot=50, seed=3)
    assert res.lists == {"both": ["u3"], "only_a": ["u1"], "only_b": ["u2"], "neither": []}
    assert list(res.by_relation) == ["r", "s"] and res.difference == 0.0


def test_table_output(run_dir, capsys):
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys)
    assert code == 0
    assert "trex: 13 facts answered by both" in out
    rows = {line.split()[0]: line.split()[1:6] for line in out.splitlines() if line.startswith(("P19", "P36", "all"))}
    assert rows == {"P19": ["7", "2", "1", "3", "1"], "P36": ["6", "1", "0", "3", "2"],
                    "all": ["13", "3", "1", "6", "3"]}
    assert "0.125" in out and "95% CI [" in out and "-39.29 points" in out


def test_list_only_a_and_only_b(run_dir, capsys):
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta", "--list", "only-a"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split("\t") == ["corpus", "relation", "uid", "subject", "gold", "alpha top1", "beta top1"]
    assert [line.split("\t") for line in lines[1:]] == [
        ["trex", "P19", "p19-3", "subject p19-3", "gold-p19-3", "gold-p19-3", "wrong-p19-3-0"]]
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta", "--list", "only-b"], capsys)
    assert [line.split("\t")[2] for line in out.splitlines()[1:]] == ["p19-4", "p19-5", "p19-6", "p36-2", "p36-3",
                                                                       "p36-4"]
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta", "--list", "neither", "--json"], capsys)
    assert [f["uid"] for f in json.loads(out)["list"]["facts"]] == ["p19-7", "p36-5", "p36-6"]


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_unknown_predictor_suggests_a_name(run_dir, capsys):
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "bta"], capsys))
    assert "'bta'" in line and "did you mean 'beta'" in line


def test_missing_run_dir(tmp_path, capsys):
    line = _one_error(*run_kbc(["compare", str(tmp_path / "nope"), "alpha", "beta"], capsys))
    assert "does not exist" in line


def test_corrupt_or_missing_config(run_dir, capsys):
    (run_dir / "config.json").write_text('{"corpora": ["trex"], "predictors": ')
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys))
    assert "config.json is not valid JSON" in line
    (run_dir / "config.json").unlink()
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys))
    assert "no config.json" in line


def test_unknown_corpus_and_nothing_in_common(run_dir, capsys):
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta", "--corpus", "trx", "--json"], capsys))
    assert "did you mean 'trex'" in line
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "gamma"], capsys))
    assert "no answered fact in common" in line


def test_reading_leaves_a_torn_line_in_place(run_dir, capsys):
    path = run_dir / "predictions" / "trex" / "beta" / "P36.jsonl"
    before = path.read_bytes()
    run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys)
    assert path.read_bytes() == before


def test_show_prints_a_prompts_control_characters_escaped_and_json_keeps_them(tmp_path, capsys):
    """A template may hold control characters (labels may not): the text view shows them, `--json` keeps them."""
    run = make_run(tmp_path)
    prompt = "subject p19-2 was born in\x1b[2J [MASK] .\rhidden\u202e"
    for name in ("alpha", "beta"):
        path = run / "predictions" / "trex" / name / "P19.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r | ({"prompt": prompt} if r["uid"] == "p19-2" else {})) + "\n"
                                for r in records))
    seal_records(run)
    code, out, err = run_kbc(["show", str(run), "--uid", "p19-2"], capsys)
    assert code == 0, err
    assert "prompt:      subject p19-2 was born in\\x1b[2J [MASK] .\\rhidden\\u202e\n" in out, out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    code, out, err = run_kbc(["show", str(run), "--uid", "p19-2", "--json"], capsys)
    assert code == 0 and json.loads(out)["facts"][0]["prompt"] == prompt


DAMAGE = [
    (b"{garbage\n", ":3: malformed JSON"),
    (json.dumps(record("p19-3", "P19", 1) | {"rank_raw": "one"}).encode() + b"\n",
     ":3: field 'rank_raw' has the wrong type ('one')"),
    (b'{"relation": "P19"}\n', ":3: a prediction record needs string 'uid' and 'relation'"),
]
FIX = "delete that file so that the run recomputes it, or use a new --out"


def _damage(run_dir: Path, damage: bytes) -> Path:
    path = run_dir / "predictions" / "trex" / "alpha" / "P19.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + [damage] + lines[3:]))
    return path


@pytest.mark.parametrize("damage", [d for d, _ in DAMAGE])
def test_a_damaged_line_is_an_error_not_the_end_of_the_file(run_dir, capsys, damage):
    path = _damage(run_dir, damage)
    for argv in (["compare", str(run_dir), "alpha", "beta"], ["show", str(run_dir), "--uid", "p19-6"]):
        line = _one_error(*run_kbc(argv, capsys))
        assert line == f"error: {path}:3: not the record this run wrote there (changed since); {FIX}", argv


@pytest.mark.parametrize("damage,message", DAMAGE)
def test_a_damaged_line_of_a_run_without_digests_is_named_too(run_dir, capsys, damage, message):
    """Records kept without digests (an older kbc's) are read unchecked, with a warning (once per process), but
    still parsed whole."""
    shutil.rmtree(run_dir / ".kbc-records")
    path = _damage(run_dir, damage)
    warning = (f"warning: {run_dir}: its prediction records were written without record digests (by an older kbc, "
               "or by hand), so they are read unchecked, with the ranks that version gave; rerun its command into a "
               "new --out to have them checked and ranked by this one")
    for argv, said in ((["compare", str(run_dir), "alpha", "beta"], [warning]),
                       (["show", str(run_dir), "--uid", "p19-6"], [])):
        code, out, err = run_kbc(argv, capsys)
        *before, line = err.strip().splitlines()
        assert (code, out, before) == (2, "", said)
        assert line.startswith(f"error: {path}{message}") and line.endswith(f"; {FIX}"), argv


def test_write_instances_round_trips_through_pandas(run_dir):
    path = write_instances(run_dir)
    assert path == run_dir / "instances.parquet"
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]
    df = pd.read_parquet(path)
    assert len(df) == 16 + 15  # alpha 8 + 8, beta 8 + 7 (torn line not read), gamma none
    assert df.groupby("predictor").size().to_dict() == {"alpha": 16, "beta": 15}
    assert list(df.columns) == ["corpus", "predictor", "relation", "uid", "subject", "subject_id", "gold", "gold_id",
                                "prompt", "dropped", "rank_raw", "rank_filtered", "rank_exact_raw",
                                "rank_exact_filtered", "correct_raw", "correct_filtered", "top1", "answers",
                                "generation", "parsed", "unlinked", "abstained"]
    assert str(df["rank_raw"].dtype) == "Int64" and str(df["correct_raw"].dtype) == "boolean"
    row = df[(df.predictor == "alpha") & (df.uid == "p19-7")].iloc[0]
    assert (row.rank_raw, row.rank_filtered, row.correct_raw, row.correct_filtered) == (2, 1, False, True)
    assert row.top1 == "wrong-p19-7-0" and row.prompt == "subject p19-7 relates to [MASK] ."
    assert pd.isna(row.dropped) and pd.isna(row.rank_exact_raw)
    answers = json.loads(row.answers)
    assert len(answers) == 10 and answers[1] == ["gold-p19-7", -0.5, "Q7"]
    exact = df[(df.predictor == "alpha") & (df.uid == "p19-1")].iloc[0]
    assert (exact.rank_exact_raw, exact.rank_exact_filtered, exact.subject_id) == (1, 1, "Q7259")
    gone = df[(df.predictor == "beta") & (df.uid == "p19-8")].iloc[0]
    assert gone.dropped == "multi-token object"
    assert pd.isna(gone.rank_raw) and pd.isna(gone.correct_raw) and pd.isna(gone.answers) and pd.isna(gone.top1)
    assert bool(df[(df.predictor == "beta") & (df.uid == "p19-5")].iloc[0].correct_raw)
    absent = df[(df.predictor == "alpha") & (df.uid == "p19-5")].iloc[0]
    assert pd.isna(absent.rank_raw) and not bool(absent.correct_raw)  # gold not in the answers: wrong, not null
    # mean of correct_raw per relation = P@1 over answered facts (dropped ones are null, skipped)
    p1 = df.groupby(["predictor", "relation"])["correct_raw"].mean()
    assert p1["alpha", "P36"] == pytest.approx(2 / 7) and p1["beta", "P19"] == pytest.approx(5 / 7)


def test_write_instances_replaces_and_handles_empty_runs(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"corpora": ["trex"], "predictors": ["freq"]}))
    first = pd.read_parquet(write_instances(run))
    assert len(first) == 0 and str(first["rank_raw"].dtype) == "Int64"
    (run / "predictions" / "trex" / "freq").mkdir(parents=True)
    (run / "predictions" / "trex" / "freq" / "P19.jsonl").write_text(json.dumps(record("p19-1", "P19", 1)) + "\n")
    assert len(pd.read_parquet(write_instances(run))) == 1


def test_bootstrap_count_is_bounded(run_dir, capsys):
    for value in ("1e11", "100000000000", "-1", "2.5", "nan", "many"):
        line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta", "--bootstrap", value], capsys))
        assert line.startswith("error: Invalid value for '--bootstrap'") and "--help" in line, line
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta", "--bootstrap", "1e11"], capsys))
    assert "1e11: give a whole number from 0 (no interval) to 1,000,000" in line
    code, out, _ = run_kbc(["compare", str(run_dir), "alpha", "beta", "--json", "--bootstrap", "1e3"], capsys)
    assert code == 0 and json.loads(out)["corpora"]["trex"]["bootstrap"] == 1000
    with pytest.raises(ConfigError, match="at most 1,000,000"):
        bootstrap_difference({"P19": Counts(1, 2, 3, 4)}, n_boot=10**11)


def test_coherency_runs_are_refused(run_dir, capsys):
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "experiment": "coherency"}))
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys))
    assert line.startswith(f"error: {run_dir} is a `kbc run coherency` run: kbc compare judges LAMA facts, KMIR "
                           "questions and LM-KBC pairs one by one")


def test_kmir_runs_are_judged_by_exact_match(run_dir, capsys):
    """A KMIR run's records carry no ranks: a question is right when its answer matches exactly (em)."""
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "experiment": "kmir"}))
    folder = run_dir / "predictions" / "trex"
    for name, ems in (("alpha", (1.0, 1.0, 0.0, 1.0)), ("beta", (1.0, 0.0, 0.0, 0.0))):
        for rel in ("P19", "P36"):
            (folder / name / f"{rel}.jsonl").unlink()
        kinds = ("statement_checking", "statement_checking", "triple_completion", "triple_completion")
        records = [{"uid": f"q{i}", "relation": "P19", "kind": kind, "answer": "yes", "gold": "yes", "em": em,
                    "f1": em} for i, (kind, em) in enumerate(zip(kinds, ems))]
        (folder / name / "P19.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    seal_records(run_dir)
    result = _compare(run_dir, capsys, "--bootstrap", "0")
    assert result["total"] == "pooled"
    assert result["overall"] == {**result["overall"], "n": 4, "both": 1, "only_a": 2, "only_b": 0, "neither": 1}
    assert result["macro_p1_a"] == 75.0 and result["macro_p1_b"] == 25.0 and result["difference"] == 50.0
    assert result["relations"]["triple_completion"]["p1_a"] == 50.0
    line = _one_error(*run_kbc(["compare", str(run_dir), "alpha", "beta", "--setting", "filtered"], capsys))
    assert "scored only in the raw setting" in line


def test_one_model_in_two_precisions_is_compared_with_the_difference_said(tiny_models, lama_dir, tmp_path, capsys):
    """The same predictor name in two runs need not be the same predictor: `--b-run` says how A and B differ."""
    model = tiny_models("bert-cased")
    for dtype in ("float32", "bfloat16"):
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "10",
                                "--predictors", f"bert={model}", "--dtype", dtype, "--data-dir", str(lama_dir),
                                "--out", str(tmp_path / dtype), "--quiet", "--bootstrap", "0"], capsys)
        assert code == 0, err
    code, out, err = run_kbc(["compare", str(tmp_path / "float32"), "bert", "bert", "--b-run",
                              str(tmp_path / "bfloat16")], capsys)
    assert code == 0, err
    assert "note:" not in err  # two finished runs: nothing said of how they stand
    lines = out.splitlines()
    assert lines[1] == "note: A and B differ in dtype: float32 against bfloat16"
    drawn = ("Sample: at most 10 facts per relation, drawn with seed 0 (`--limit 10 --seed 0`), not every fact of "
             "the data.")
    assert lines[2:4] == [f"{tmp_path / dtype}: {drawn}" for dtype in ("float32", "bfloat16")]
    assert lines[4].startswith("trex: 10 facts answered by both (left out: 0 answered only by A (bert), 0 only by B ")


def test_a_one_prompt_comparison_gives_the_numbers_it_always_gave(run_dir, capsys):
    """Each fact one query: McNemar's test and the multinomial bootstrap, to the last digit."""
    res = _compare(run_dir, capsys)
    assert res["test"] == "mcnemar" and res["overall"]["n"] == res["overall"]["queries"] == 13
    assert res["ci"] == [-70.23809523809524, -2.3809523809523814]
    again = _compare(run_dir, capsys, "--setting", "filtered", "--seed", "7", "--bootstrap", "3000")
    assert again["ci"] == [-69.04761904761905, 4.761904761904759]
    assert again["overall"]["p_value"] == 0.2890625 and again["relations"]["P19"]["p_value"] == 1.0


def _sign_flip_by_counting(differences: list[int]) -> float:
    """P(|sum| >= |observed|) over every assignment of signs to the non-zero differences, counted exactly."""
    ways = {0: 1}
    nonzero = [d for d in differences if d]
    for d in nonzero:
        step: dict[int, int] = {}
        for total, n in ways.items():
            for signed in (d, -d):
                step[total + signed] = step.get(total + signed, 0) + n
        ways = step
    observed = abs(sum(differences))
    return sum(n for total, n in ways.items() if abs(total) >= observed) / 2 ** len(nonzero)


def test_sign_flip_test_counts_every_assignment_and_is_mcnemar_for_single_queries():
    for differences in ([3, -1, 2, 0, 2, -4, 1], [1, 1, -1, 5], [2, -2], [0, 0], [4, 4, 4, -1, 3, 2, 2, -3, 1, 1]):
        assert sign_flip_exact(differences) == pytest.approx(_sign_flip_by_counting(differences), rel=1e-12)
    for only_a, only_b in ((1, 6), (26, 3), (16, 9), (40, 40), (300, 250)):
        assert sign_flip_exact([1] * only_a + [-1] * only_b) == pytest.approx(mcnemar_exact(only_a, only_b),
                                                                              rel=1e-9)


def test_a_prompt_set_is_compared_fact_by_fact(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """A fact asked with k prompts is one draw, not k: the facts column counts facts, the test is over facts and
    the interval resamples facts with their prompts, as the run's own summary intervals do."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P37", "P1412", "--prompts", "pararel",
                            "--limit", "15", "--predictors", "freq", f"bert={tiny_models('bert-cased')}",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    # every number again, from the prediction files alone
    facts: dict[str, dict[str, list[int]]] = {}  # relation -> fact -> [freq's right minus bert's, queries]
    cells: dict[str, list[int]] = {}  # relation -> both, only freq, only bert, neither (queries)
    lines = {name: [json.loads(x) for rel in ("P1412", "P37")
                    for x in (out / "predictions" / "trex" / name / f"{rel}.jsonl").read_text().splitlines()]
             for name in ("freq", "bert")}
    bert = {r["uid"]: r for r in lines["bert"]}
    for r in lines["freq"]:
        a, b = r["rank_raw"] == 1, bert[r["uid"]]["rank_raw"] == 1
        fact = facts.setdefault(r["relation"], {}).setdefault(r["fact_uid"], [0, 0])
        fact[0] += int(a) - int(b)
        fact[1] += 1
        cell = cells.setdefault(r["relation"], [0, 0, 0, 0])
        cell[0 if a and b else 1 if a else 2 if b else 3] += 1
    assert {rel: len(f) for rel, f in facts.items()} == {"P1412": 15, "P37": 15}
    assert sum(sum(c) for c in cells.values()) > 30  # several prompts a fact
    p1 = {rel: (100 * (c[0] + c[1]) / sum(c), 100 * (c[0] + c[2]) / sum(c)) for rel, c in cells.items()}
    difference = (p1["P37"][0] - p1["P37"][1] + p1["P1412"][0] - p1["P1412"][1]) / 2
    rng = np.random.default_rng(0)
    total = np.zeros(2000)
    for rel in sorted(facts):  # each relation's facts drawn with replacement, a fact's prompts together
        diffs, sizes = (np.array(column) for column in zip(*facts[rel].values()))
        if cells[rel][1] == cells[rel][2] == 0:  # no discordant query: adds 0 to every resample
            continue
        drawn = rng.integers(0, len(diffs), size=(2000, len(diffs)))
        total += 100.0 * diffs[drawn].sum(axis=1) / sizes[drawn].sum(axis=1)
    ci = np.quantile(total / 2, [0.025, 0.975])
    pooled = [d for f in facts.values() for d, _ in f.values()]

    code, text, err = run_kbc(["compare", str(out), "freq", "bert", "--json", "--bootstrap", "2000"], capsys)
    assert code == 0, err
    res = json.loads(text)["corpora"]["trex"]
    assert res["test"] == "sign-flip"
    for rel in ("P37", "P1412"):
        got = res["relations"][rel]
        assert (got["n"], got["queries"], got["both"], got["only_a"], got["only_b"], got["neither"]) == (
            15, sum(cells[rel]), *cells[rel])
        assert (got["p1_a"], got["p1_b"]) == pytest.approx(p1[rel], rel=1e-12)
        assert got["p_value"] == pytest.approx(
            _sign_flip_by_counting([d for d, _ in facts[rel].values()]), rel=1e-9)
    assert res["overall"]["n"] == 30 and res["overall"]["queries"] == sum(sum(c) for c in cells.values())
    assert res["overall"]["p_value"] == pytest.approx(_sign_flip_by_counting(pooled), rel=1e-9)
    assert res["difference"] == pytest.approx(difference, rel=1e-12)
    assert res["ci"] == pytest.approx(list(ci), rel=1e-12)
    # the same draws over queries, as if each were a fact, give a narrower interval: what fact draws avoid
    per_query = np.zeros(2000)
    for rel in sorted(facts):
        right = [(int(r["rank_raw"] == 1) - int(bert[r["uid"]]["rank_raw"] == 1)) for r in lines["freq"]
                 if r["relation"] == rel]
        drawn = rng.integers(0, len(right), size=(2000, len(right)))
        per_query += 100.0 * np.array(right)[drawn].mean(axis=1)
    narrow = np.quantile(per_query / 2, [0.025, 0.975])
    assert ci[1] - ci[0] > 1.5 * (narrow[1] - narrow[0])

    code, text, err = run_kbc(["compare", str(out), "freq", "bert", "--bootstrap", "2000"], capsys)
    assert code == 0, err
    lines = text.splitlines()
    assert lines[1].startswith("Sample: at most 15 facts per relation")
    assert lines[2].startswith(f"trex: 30 facts answered by both, asked with {res['overall']['queries']} "
                               "queries (left out: 0 queries answered only by freq, 0 only by bert)")
    assert lines[3].split()[1:3] == ["facts", "queries"] and lines[3].endswith("p sign-flip")
    assert f"95% CI [{ci[0]:+.2f}, {ci[1]:+.2f}] (bootstrap over facts within relations, a fact's queries drawn " \
           "together, 2000 resamples, seed 0)" in text

    frame = kbcompare.compare(out, "freq", "bert", bootstrap=2000)
    total_row = frame[frame["group"] == "all"].iloc[0]
    assert (total_row["n"], total_row["queries"]) == (30, res["overall"]["queries"])
    assert [total_row["ci_low"], total_row["ci_high"]] == res["ci"]
    assert total_row["p_value"] == res["overall"]["p_value"]
    assert frame.attrs["test"] == {"trex": "sign-flip"} and frame.attrs["metric"] == "P@1"


def test_an_interrupted_run_is_compared_as_it_stands_and_said_so(run_dir, capsys):
    """A run whose last attempt was stopped (Ctrl-C, SIGTERM) is compared as it stands, with one note on stderr
    that it is unfinished and how to finish it: the tables alone would read as a finished run's."""
    config = json.loads((run_dir / "config.json").read_text())
    config["runs"] = [{"started": "2026-11-27T22:02:41+00:00", "failed": "2026-11-27T22:02:53+00:00",
                       "error": "interrupted"}]
    (run_dir / "config.json").write_text(json.dumps(config))
    note = (f"note: {run_dir}: its last attempt was interrupted (started 2026-11-27T22:02:41+00:00), and it lacks "
            "summary.json: compared as it stands; rerun the same `kbc run` command to finish it")
    code, out, err = run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys)
    assert code == 0, err
    assert err.splitlines() == [note]
    assert out.splitlines()[1] == "trex: 13 facts answered by both (left out: 2 answered only by alpha, 1 only by beta)"
    code, out, err = run_kbc(["compare", str(run_dir), "alpha", "beta", "--json"], capsys)
    assert code == 0 and err.splitlines() == [note]
    assert json.loads(out)["incomplete"] == [note.removeprefix("note: ")]
    frame = kbcompare.compare(run_dir, "alpha", "beta", bootstrap=0)
    assert frame.attrs["notes"] == [note.removeprefix("note: ")]
    # an attempt that recorded no end (killed, or still running) is said as such
    config["runs"] = [{"started": "2026-11-27T22:02:41+00:00"}]
    (run_dir / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["compare", str(run_dir), "alpha", "beta"], capsys)
    assert code == 0 and err.splitlines() == [
        f"note: {run_dir}: its last attempt recorded no end (started 2026-11-27T22:02:41+00:00; still running, or "
        "killed), and it lacks summary.json: compared as it stands; rerun the same `kbc run` command to finish it"]
