"""What a leaderboard of several runs says about how its numbers were drawn: each run's `--limit` sample where the
samples differ, the shared facts per relation behind a mean over relations, the resamples and seed behind every
interval; which metrics rank (scores, never counts) and how an unknown one is named; one scale for LM-KBC's F1 in
`kbc leaderboard` and `kbc compare`; and a run of other data or without the corpus left out with a note, the rest
ranked, by the command, the Python API and the explorer alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import serve_support
from cli_support import one_sample_note, run_kbc, run_kbc_captured

import kbcompare
from bridge.run.leaderboard import board
from eval.errors import ConfigError

RELATIONS = ["P19", "P36", "P101"]
LIMIT = 60
serve_explorer = serve_support.serve_explorer


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory) -> dict[str, Path]:
    """s1, s2: samples of 60 facts per relation with seeds 1 and 2 (s2's summaries drawn with 200 resamples, seed
    7); other: s1's command over a data folder whose P36 file lacks its last fact; coh: a coherency run; sets: an
    LM-KBC run; g: a Google-RE run."""
    root = tmp_path_factory.mktemp("samples")
    edited = root / "data"  # the real data, but for one fact fewer in P36's file
    folder = "TREx_reconstructed"
    (edited / folder).mkdir(parents=True)
    for item in lama_dir.iterdir():
        if item.name != folder:
            (edited / item.name).symlink_to(item)
    for item in (lama_dir / folder).iterdir():
        if item.name != "P36.jsonl":
            (edited / folder / item.name).symlink_to(item)
    lines = (lama_dir / folder / "P36.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (edited / folder / "P36.jsonl").write_text("".join(lines[:-1]), encoding="utf-8")
    made = {
        "s1": ["lama", "--corpus", "trex", "--relations", *RELATIONS, "--predictors", "freq", "random", "--limit",
               str(LIMIT), "--seed", "1"],
        "s2": ["lama", "--corpus", "trex", "--relations", *RELATIONS, "--predictors", "freq", "random", "--limit",
               str(LIMIT), "--seed", "2", "--bootstrap", "200", "--bootstrap-seed", "7"],
        "other": ["lama", "--corpus", "trex", "--relations", *RELATIONS, "--predictors", "freq", "random", "--limit",
                  str(LIMIT), "--seed", "1", "--data-dir", str(edited)],
        "coh": ["coherency", "--corpus", "trex", "--relations", "P36", "--predictors", "freq", "gold", "--limit", "5",
                "--bootstrap", "0"],
        "sets": ["lmkbc", "--relations", "personHasCityOfDeath", "countryLandBordersCountry", "--predictors", "freq",
                 "gold", "--limit", "5", "--bootstrap", "0"],
        "g": ["lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors", "freq", "--limit",
              "5", "--bootstrap", "0"],
    }
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        for name, args in made.items():
            data = [] if "--data-dir" in args else ["--data-dir", str(lama_dir)]
            code, _, err = run_kbc_captured(["run", *args, *data, "--quiet", "--out", str(root / name)])
            assert code == 0, (name, err)
    return {name: root / name for name in made}


def _uids(run: Path, relation: str) -> set[str]:
    path = run / "predictions" / "trex" / "freq" / f"{relation}.jsonl"
    return {json.loads(line)["uid"] for line in path.read_text(encoding="utf-8").splitlines()}


def _own(run: Path, metric: str = "p@1") -> dict[str, dict]:
    rows = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    return {r["predictor"]: r for r in rows if (r["scope"], r["setting"], r["group"], r["metric"])
            == ("own", "raw", "all", metric) and not r.get("prompt")}


def test_runs_of_other_samples_say_each_sample_and_the_facts_per_relation(runs, capsys):
    s1, s2 = runs["s1"], runs["s2"]
    shared = {rel: len(_uids(s1, rel) & _uids(s2, rel)) for rel in RELATIONS}
    assert len(set(shared.values())) > 1  # the relations weigh alike in the mean, over unlike counts
    least = min(RELATIONS, key=lambda r: shared[r])
    n = sum(shared.values())
    found = board([s1, s2])
    assert {r["n_facts"] for r in found.rows} == {n}
    word = "fact weighs" if shared[least] == 1 else "facts weigh"
    assert found.notes[0] == (f"samples, not every fact: {s1} `--limit {LIMIT} --seed 1`; {s2} `--limit {LIMIT} "
                              "--seed 2` (at most --limit facts per relation, drawn with --seed)")
    assert found.notes[-1] == (f"trex: the {n} shared facts per relation: "
                               + ", ".join(f"{rel} {shared[rel]}" for rel in RELATIONS)
                               + f"; the Total is the mean over the 3 relations, so {least}'s {shared[least]} "
                                 f"{word} 1/3 of it")
    assert len(found.warnings) == 1 and found.warnings[0].startswith(f"trex: only {n} of the 180 facts ")
    code, out, err = run_kbc(["leaderboard", str(s1), str(s2)], capsys)
    assert code == 0 and out.startswith(f"WARNING: {found.warnings[0]}\n"
                                        + "".join(f"note: {note}\n" for note in found.notes) + "\n"), err
    # one run, or runs of one sample, ask the same facts: the board says which sample, and no count per relation
    for alone in (board([s1]), board([s1, s1])):
        assert [n for n in alone.notes if "sample" in n or "per relation" in n] == [one_sample_note(LIMIT, seed=1)]


def test_every_format_says_the_resamples_and_seed_behind_the_intervals(runs, capsys):
    s1, s2 = runs["s1"], runs["s2"]
    found = board([s2, s1])
    assert found.notes[1] == (f"the runs' summaries drew their intervals differently ({s2}: 200 bootstrap resamples, "
                              f"seed 7; {s1}: 1,000 bootstrap resamples, seed 0); the intervals here draw 1,000 "
                              "bootstrap resamples, seed 0, for every row alike")
    assert {(r["bootstrap"], r["bootstrap_seed"]) for r in found.rows} == {(1000, 0)}
    code, out, err = run_kbc(["leaderboard", str(s2), str(s1)], capsys)
    assert code == 0 and out.endswith("|\n\n95% CI: 1,000 bootstrap resamples, seed 0.\n"), err
    code, out, err = run_kbc(["leaderboard", str(s2), str(s1), "--format", "csv"], capsys)
    head, *rows = [line for line in out.splitlines() if not line.startswith("# ")]
    assert code == 0 and head.endswith(",bootstrap,bootstrap_seed") and all(r.endswith(",1000,0") for r in rows)
    # asked: no note, the rows say what was asked
    code, out, err = run_kbc(["leaderboard", str(s2), str(s1), "--format", "json", "--bootstrap", "300",
                              "--bootstrap-seed", "3"], capsys)
    assert code == 0 and {(r["bootstrap"], r["bootstrap_seed"]) for r in json.loads(out)["rows"]} == {(300, 3)}
    assert "drew their intervals differently" not in err
    # own scope: each run's summary, each with its own resamples and seed, and its own interval
    code, out, err = run_kbc(["leaderboard", str(s2), str(s1), "--scope", "own", "--format", "json"], capsys)
    assert code == 0, err
    for row in json.loads(out)["rows"]:
        summary = _own(Path(row["run"]))[row["predictor"]]
        drawn = (200, 7) if row["run"] == str(s2) else (1000, 0)
        assert (row["bootstrap"], row["bootstrap_seed"], row["ci_low"], row["ci_high"]) == (
            *drawn, summary["ci_low"], summary["ci_high"])
    code, out, err = run_kbc(["leaderboard", str(s2), str(s1), "--scope", "own"], capsys)
    assert code == 0 and out.endswith(f"|\n\n95% CI: each run's own: {s1}: 1,000 bootstrap resamples, seed 0; {s2}: "
                                      "200 bootstrap resamples, seed 7.\n"), err


def test_only_scores_rank_and_only_scores_are_suggested(runs, capsys):
    coh, sets = runs["coh"], runs["sets"]
    code, _, err = run_kbc(["leaderboard", str(coh), "--metric", "n_instances"], capsys)
    assert (code, err) == (2, "error: --metric n_instances counts the coherency instances it was asked, not how well "
                              "it answers: nothing to rank by; rank by --metric coherency\n")
    code, _, err = run_kbc(["leaderboard", str(coh), "--metric", "p@1"], capsys)
    assert (code, err) == (2, "error: --metric p@1: no metric of that name in these runs; rank by "
                              "--metric all_correct, c1, c2, coherency, coherency_round1 or coherency_round2\n")
    code, _, err = run_kbc(["leaderboard", str(sets), "--metric", "f1"], capsys)
    suggested = ["macro-f1", "macro-p", "macro-r", "micro-f1", "micro-p", "micro-r"]
    assert (code, err) == (2, "error: --metric f1: no metric of that name in these runs; "
                              f"rank by --metric {', '.join(suggested[:-1])} or {suggested[-1]}\n")
    for metric in suggested:  # each one suggested ranks
        code, _, err = run_kbc(["leaderboard", str(sets), "--metric", metric, "--format", "json"], capsys)
        assert code == 0, (metric, err)


def test_an_unknown_metric_is_called_unknown_in_each_callers_own_words(runs, capsys, serve_explorer):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    s1 = runs["s1"]
    code, _, err = run_kbc(["leaderboard", str(s1), "--metric", "p1"], capsys)
    assert (code, err) == (2, "error: --metric p1: no metric of that name in these runs (did you mean p@1?); rank by "
                              "--metric mrr, p@1 or p@10\n")
    api = "metric='p1': no metric of that name in these runs (did you mean p@1?); rank by metric='mrr', 'p@1' or 'p@10'"
    with pytest.raises(ConfigError) as caught:
        kbcompare.leaderboard(s1, metric="p1")
    assert str(caught.value) == api
    with TestClient(create_app(serve_explorer, Runs([s1]))) as c:
        bad = c.get("/api/leaderboard", params={"metric": "p1"})
        assert (bad.status_code, bad.json()["detail"]) == (400, api)


def test_lmkbc_f1_is_one_scale_in_the_board_and_in_compare(runs, capsys):
    sets = runs["sets"]
    f1 = _own(sets, "macro-f1")
    code, out, err = run_kbc(["compare", str(sets), "freq", "gold", "--json", "--bootstrap", "0"], capsys)
    assert code == 0, err
    found = json.loads(out)["corpora"]["lmkbc2024"]
    assert found["scale"] == "fraction"
    assert (found["macro_p1_a"], found["macro_p1_b"]) == (pytest.approx(f1["freq"]["value"], abs=1e-12),
                                                          pytest.approx(f1["gold"]["value"], abs=1e-12))
    assert found["difference"] == pytest.approx(f1["freq"]["value"] - f1["gold"]["value"], abs=1e-12)
    code, text, err = run_kbc(["compare", str(sets), "freq", "gold", "--bootstrap", "0"], capsys)
    all_row = next(line.split() for line in text.splitlines() if line.startswith("all "))
    assert code == 0 and all_row[6:8] == [f"{f1['freq']['value']:.3f}", f"{f1['gold']['value']:.3f}"], err
    code, board_text, err = run_kbc(["leaderboard", str(sets), "--scope", "own"], capsys)
    assert code == 0 and "lmkbc2024, macro-f1 (a fraction, 0-1; raw, own pairs)" in board_text
    assert f"| freq | kb | freq (all answers) | - | - | - | {f1['freq']['value']:.3f} ± " in board_text
    frame = kbcompare.compare(sets, "freq", "gold", bootstrap=0)
    assert frame.attrs["scale"] == "fraction" and frame.iloc[-1]["p1_a"] == pytest.approx(f1["freq"]["value"])


def test_a_run_of_other_data_or_without_the_corpus_is_left_out_and_the_rest_ranked(runs, capsys, serve_explorer):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    s1, g, other = runs["s1"], runs["g"], runs["other"]
    alone = board([s1])
    code, out, err = run_kbc(["leaderboard", str(s1), str(other), "--format", "json"], capsys)
    note = f"left out {other}: it and {s1} differ in trex data versions (P36); runs of other data are never ranked " \
           "together"
    notes = [note, *alone.notes]
    assert (code, json.loads(out), err) == (0, {"rows": alone.rows, "notes": notes, "warnings": []},
                                            "".join(f"note: {n}\n" for n in notes))
    code, out, err = run_kbc(["leaderboard", str(s1), str(g), "--corpus", "trex", "--format", "json"], capsys)
    assert (code, json.loads(out)["rows"]) == (0, alone.rows)
    assert err.splitlines()[0] == f"note: trex: left out {g} (no trex results; it has google_re)"
    named = {str(s1): "s1", str(other): "other"}
    with TestClient(create_app(serve_explorer, Runs([s1, other, g]))) as c:
        body = c.get("/api/leaderboard", params={"run": ["s1", "other"]})
        assert body.status_code == 200
        assert body.json()["rows"] == [{**r, "run": named[r["run"]]} for r in alone.rows]
        assert body.json()["notes"][0] == note.replace(str(other), "other").replace(str(s1), "s1")
        assert c.get("/leaderboard", params={"run": ["s1", "other"]}).status_code == 200
        trex = c.get("/api/leaderboard", params={"corpus": "trex"}).json()
        assert trex["rows"] == body.json()["rows"] and "left out g" in trex["notes"][0]
