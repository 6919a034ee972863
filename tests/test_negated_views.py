"""`kbc run negated` on T-REx P19 and P36: what P@1 drop counts and says, and one headline (top-1 overlap) in every
view of the run: `kbc run`, `load_run(...).table()`, the leaderboard and the explorer's run page."""

from __future__ import annotations

import contextlib
import io
import json

import lm_fixtures
import pytest
from cli_support import run_kbc

from bridge.cli import main
from bridge.run.summaries import headline_metric
from eval.report import table

tiny_models = lm_fixtures.tiny_models


@pytest.fixture(scope="module")
def negated_run(lama_dir, tmp_path_factory):
    """Freq and a tiny BERT over 20 facts each of P19 and P36 (high-ranked primes), and what `kbc run` printed;
    Freq gets 6 of P19 right (always the same city) and none of P36, BERT none at all."""
    root = tmp_path_factory.mktemp("neg")
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
        mp.setenv("KBC_CACHE", str(root / "cache"))
        bert = lm_fixtures.tiny_model_dir("bert-cased", root)
        try:
            main(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36", "--predictors", "freq",
                  f"bert={bert}", "--misprimes", "high_ranked", "--data-dir", str(lama_dir), "--limit", "20",
                  "--out", str(root / "run"), "--quiet"])
        except SystemExit as exc:
            pytest.fail(f"kbc run negated exited with status {exc.code}")
    return root / "run", printed.getvalue()


def _summary(out):
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_p1_drop_counts_the_facts_right_without_the_prime(negated_run):
    out, _ = negated_run
    rows = _summary(out)
    drop = {(r["predictor"], r["scope"], r["group"]): (r["value"], r["n_facts"]) for r in rows
            if r["metric"] == "p@1-drop"}
    # Freq: 6 of P19's 20 right (P@1 30), none of P36; the prime leaves them right; BERT: none right anywhere, so
    # no fact is right for every predictor: the shared scope has no P@1 drop (as the docs define it)
    assert drop == {("freq", "own", g): (0.0, 6) for g in ("P19", "all")}
    p1 = {(r["predictor"], r["group"]): r["value"] for r in rows if r["metric"] == "p@1" and r["scope"] == "own"}
    assert p1 == {("freq", "P19"): 30.0, ("freq", "P36"): 0.0, ("freq", "all"): 15.0,
                  ("bert", "P19"): 0.0, ("bert", "P36"): 0.0, ("bert", "all"): 0.0}
    facts = {(r["predictor"], r["group"]): r["n_facts"] for r in rows if r["metric"] == "became-prime"
             and r["scope"] == "own"}
    assert facts == {(p, g): n for p in ("freq", "bert") for g, n in (("P19", 20), ("P36", 20), ("all", 40))}


def test_p1_drop_table_says_why_a_cell_is_empty(negated_run):
    out, _ = negated_run
    md = (out / "summary.md").read_text(encoding="utf-8")
    shared = md.split("## Misprimed, P@1 drop (% of facts right unprimed), shared facts\n\n")[1].split("\n\n## ")[0]
    space = shared.splitlines()[3].split(' | ')[2]
    assert shared.splitlines() == [  # BERT got no fact right: none was right for both, so no shared drop
        "| corpus | predictor | answer space (mean) | #facts | P19 | P36 | Total | Total 95% CI |",
        "|---|---|---|---|---|---|---|---|",
        "| negated-trex | freq | 152.5 | 0 | - | - | - | - |",
        f"| negated-trex | bert | {space} | 0 | - | - | - | - |",
        "",
        "- `-` under P19, P36, Total for every predictor: no fact of them was right without the prime for all "
        "predictors (the drop is taken over those facts).",
    ]
    own = md.split("## Misprimed, P@1 drop (% of facts right unprimed), own facts\n\n")[1].split("\n\n## ")[0]
    assert own.splitlines() == [
        "| corpus | predictor | answer space (mean) | #facts | P19 (n=6) | P36 | Total | Total 95% CI |",
        "|---|---|---|---|---|---|---|---|",
        "| negated-trex | freq | 152.5 | 6 | 0.00 ± 0.00 | - | 0.00 ± 0.00 | [0.00, 0.00] |",
        f"| negated-trex | bert | {space} | 0 | - | - | - | - |",
        "",
        "- `-` under P36 for every predictor: no fact of it was right without the prime (the drop is taken over "
        "those facts).",
        "- `-` throughout for bert (#facts 0): no fact it answered was right without the prime (the drop is taken "
        "over those facts).",
    ]
    assert "answered none" not in md


def test_a_cell_of_a_predictor_with_facts_elsewhere():
    """One predictor right without the prime in P1 only, the other in P2 only: each `-` is named, per predictor."""
    rows = [{"corpus": "c", "predictor": p, "setting": "raw", "scope": "shared", "group": g, "metric": m,
             "value": 0.0, "n_facts": n}
            for p, drop in (("a", ("P1",)), ("b", ("P2",)))
            for g in ("P1", "P2", "all") for m, n in (("p@1", 5), ("p@1-drop", 2))
            if m == "p@1" or g in drop or g == "all"]
    lines = table(rows, "p@1-drop", relations={"c": {"P1": (None, None), "P2": (None, None)}}).splitlines()
    assert lines[0].startswith("| corpus | predictor | answer space | #facts | P1 (n=0–2) | P2 (n=0–2) |")
    assert lines[2:] == [
        "| c | a | - | 2 | 0.00 | - | 0.00 | - |",
        "| c | b | - | 2 | - | 0.00 | 0.00 | - |",
        "",
        "- `-` under P2 for a: no fact of it was right without the prime (the drop is taken over those facts).",
        "- `-` under P1 for b: no fact of it was right without the prime (the drop is taken over those facts).",
    ]


def test_a_predictor_that_answered_nothing_leaves_the_counts_alone():
    """A KB drops every probe: it shows `-` at #facts 0, and the headers count the facts of those who answered."""
    rows = [{"corpus": "c", "predictor": "a", "setting": "raw", "scope": s, "group": g, "metric": m, "value": 0.0,
             "n_facts": 5 if g != "all" else 10} for s in ("own", "shared") for g in ("P1", "P2", "all")
            for m in ("p@1", "overlap")]
    rows += [{"corpus": "c", "predictor": "kb", "setting": "raw", "scope": s, "group": "all",
              "metric": "units_answered", "value": 0, "n_facts": 0} for s in ("own", "shared")]
    relations = {"c": {"P1": (None, None), "P2": (None, None)}}
    for scope in ("own", "shared"):
        lines = table(rows, "overlap", scope=scope, relations=relations).splitlines()
        assert lines[0].startswith("| corpus | predictor | answer space | #facts | P1 (n=5) | P2 (n=5) | Total |")
        assert lines[3] == "| c | kb | - | 0 | - | - | - | - |"


def test_one_headline_in_every_view(negated_run):
    import kbcompare
    from bridge.run.leaderboard import board
    from bridge.serve.runs import Runs, overview

    out, printed = negated_run
    assert headline_metric("negated") == "overlap"
    assert printed.startswith("Top-1 overlap (%) positive/negated, setting raw, shared facts\n")
    overlap = {(r["predictor"], r["group"]): r["value"] for r in _summary(out)
               if r["metric"] == "overlap" and r["scope"] == "shared"}
    frame = kbcompare.load_run(out).table()
    assert {(p, g): frame.loc[("negated-trex", p), g] for p in ("freq", "bert") for g in ("P19", "P36", "all")} \
        == overlap
    assert overlap["freq", "all"] == 100.0  # Freq ranks every sentence of a relation alike
    found = board([out])
    assert {r["predictor"]: r["value"] for r in found.rows} == {"freq": 100.0, "bert": overlap["bert", "all"]}
    assert {r["metric"] for r in found.rows} == {"overlap"}

    shown = overview(Runs([out]).get(out.name))
    assert (shown["metric"], shown["extra_metrics"]) == ("overlap", ["p@1", "spearman", "became-prime", "p@1-drop"])
    by = {r["predictor"]: r for r in shown["table"]}
    assert {m: by["freq"][m] for m in ("p@1", "spearman", "became-prime", "p@1-drop")} == {
        "p@1": 15.0, "spearman": 1.0, "became-prime": 0.0, "p@1-drop": 0.0}
    assert (by["freq"]["overlap"]["all"], by["bert"]["p@1-drop"]) == (100.0, None)
    assert shown["notes"] == ["negated-trex: `-` under P@1 drop own for bert: no fact it answered was right without "
                              "the prime (the drop is taken over those facts)"]


def test_load_run_p1_drop_table_names_its_gaps(negated_run):
    import kbcompare

    out, _ = negated_run
    shared = kbcompare.load_run(out).table("p@1-drop")  # no fact right for both: NaN throughout
    assert shared.isna().all().all() and shared.attrs["notes"] == [
        "negated-trex: P19, P36, all are NaN for every predictor: no fact of them was right without the prime for all "
        "predictors (the drop is taken over those facts)"]
    frame = kbcompare.load_run(out).table("p@1-drop", scope="own")
    assert list(frame.columns) == ["P19", "P36", "all"]
    assert list(frame.index) == [("negated-trex", "freq"), ("negated-trex", "bert")]  # as summary.md's rows
    assert (frame.loc[("negated-trex", "freq"), "P19"], frame.loc[("negated-trex", "freq"), "all"]) == (0.0, 0.0)
    assert frame.loc[("negated-trex", "freq"), "P36"] != frame.loc[("negated-trex", "freq"), "P36"]  # NaN
    assert frame.loc[("negated-trex", "bert")].isna().all()
    assert frame.attrs["notes"] == [
        "negated-trex: P36 is NaN for every predictor: no fact of it was right without the prime (the drop is taken "
        "over those facts)",
        "negated-trex: bert is NaN throughout: no fact it answered was right without the prime (the drop is taken "
        "over those facts)"]


def test_load_run_p1_drop_table_with_no_fact_right_is_nan_not_an_error(lama_dir, tiny_models, tmp_path, capsys,
                                                                       monkeypatch):
    """No predictor got any fact right without the prime: summary.md shows `-` with notes, and so does the table
    (NaN), as for one relation or one predictor with none."""
    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "P36",
                            "--predictors", f"bert={tiny_models('bert-cased')}", "--misprimes", "high_ranked",
                            "--limit", "5", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert not [r for r in _summary(out) if r["metric"] == "p@1-drop"]
    assert "| negated-trex | bert | 21,018 | 0 | - | - | - | - |" in (out / "summary.md").read_text(encoding="utf-8")
    for scope in ("shared", "own"):
        frame = kbcompare.load_run(out).table("p@1-drop", scope=scope)
        assert list(frame.columns) == ["P19", "P36", "all"] and list(frame.index) == [("negated-trex", "bert")]
        assert frame.isna().all().all()
        assert frame.attrs["notes"] == [
            "negated-trex: P19, P36, all are NaN for every predictor: no fact of them was right without the prime"
            f"{' for all predictors' if scope == 'shared' else ''} (the drop is taken over those facts)"]
    with pytest.raises(kbcompare.ConfigError, match=r"has no p@7 \(raw, shared\) rows"):
        kbcompare.load_run(out).table("p@7")
