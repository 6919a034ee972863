"""One meaning of `shared`: per metric, the facts every predictor scored on that metric answered. A run of two
ranking predictors (freq, and a tiny BERT whose candidates are 6 of the 12 objects asked) beside two generating ones
(tiny GPT-2 and T5, which answer all 12): P@1's shared scope is the 6 facts both rankers answered, exact match's the
12 both generators answered, and summary.md, the leaderboard, the report, the explorer and `load_run` give the same
counts and numbers. The report's delta rows are over the facts both sides answered, every column of a row alike."""

from __future__ import annotations

import json
import os

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_model_dir, tiny_t5_dir

# the candidates of BERT: the objects of 4 of the 6 P19 facts asked and 2 of the 6 P36 facts (Babylon, Jerusalem)
CANDIDATES = ("Glasgow", "Dublin", "Lisbon", "Chicago", "Babylon", "Jerusalem")


@pytest.fixture(scope="module")
def run(lama_dir, tmp_path_factory):
    from bridge.cli import main

    root = tmp_path_factory.mktemp("shared-scope")
    bert, gpt = tiny_model_dir("bert-cased", root / "models"), tiny_model_dir("gpt2", root / "models")
    t5 = tiny_t5_dir(root / "models")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(CANDIDATES) + "\n", encoding="utf-8")
    before = os.environ.get("KBC_CACHE")
    os.environ["KBC_CACHE"] = str(root / "cache")
    generate = [x for name in ("gpt", "t5") for x in ("--set", f"{name}.answer=generate",
                                                      "--set", f"{name}.max_new_tokens=5")]
    out = root / "run"
    asked = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "6", "--data-dir",
             str(lama_dir), "--store", str(root / "store"), "--quiet", "--bootstrap", "50"]
    try:
        for argv in ([*asked, "--predictors", "freq", f"bert={bert}", f"gpt={gpt}", f"t5={t5}", *generate, "--set",
                      f"bert.vocab_file={vocab}", "--out", str(out)],
                     [*asked, "--predictors", f"bert={bert}", "--out", str(root / "every")]):  # BERT on every object
            try:
                main(argv)
            except SystemExit as exc:
                assert exc.code in (0, None), exc
    finally:
        if before is None:
            os.environ.pop("KBC_CACHE", None)
        else:
            os.environ["KBC_CACHE"] = before
    return out


def _section(md: str, title: str) -> list[str]:
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 1)
    return (md[start:] if end < 0 else md[start:end]).splitlines()


def _summary(run) -> dict[tuple[str, str, str], dict]:
    rows = json.loads((run / "summary.json").read_text())
    return {(r["predictor"], r["scope"], r["metric"]): r for r in rows
            if r["setting"] == "raw" and r["group"] == "all" and not r.get("prompt")}


def _board(run, metric: str, capsys) -> list[tuple]:
    code, out, err = run_kbc(["leaderboard", str(run), "--metric", metric, "--format", "json"], capsys)
    assert code == 0, err
    return [(r["predictor"], r["n_facts"], round(r["value"], 4), round(r["ci_low"], 4), round(r["ci_high"], 4))
            for r in json.loads(out)["rows"]]


def test_every_reader_means_the_same_facts_by_shared(run, capsys):
    import kbcompare
    from bridge.serve.runs import Runs, overview

    rows = _summary(run)
    scored = {(p, m): (rows[(p, "shared", m)]["n_facts"], round(rows[(p, "shared", m)]["value"], 4))
              for p, _, m in rows if m in ("p@1", "em", "unlinked") and (p, "shared", m) in rows}
    assert scored == {("freq", "p@1"): (6, 0.0), ("bert", "p@1"): (6, 12.5),
                      ("gpt", "em"): (12, 0.0), ("t5", "em"): (12, 0.0),
                      ("gpt", "unlinked"): (12, 100.0), ("t5", "unlinked"): (12, 33.3333)}

    md = (run / "summary.md").read_text()
    assert "- Scope `shared`: per metric, the facts every predictor scored on that metric answered (trex: 6 " \
           "answered by all of freq, bert and 12 answered by all of gpt, t5); a predictor without the metric, or " \
           "that answered nothing, restricts no one's facts; `own`: the facts each predictor answered." in md
    em = _section(md, "Exact match (%), shared facts")
    assert em[4:8] == ["| trex | gpt | open | 12 | 0.00 ± 0.00 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |",
                       "| trex | t5 | open | 12 | 0.00 ± 0.00 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |",
                       "", "- Shared facts: the 12 answered by all of gpt, t5."]
    unlinked = _section(md, "Answers linked to no entity (%), generated answers, shared facts")
    assert unlinked[5] == "| trex | t5 | open | 12 | 50.00 ± 22.36 | 16.67 ± 16.67 | 33.33 ± 13.94 | [8.33, 50.00] |"
    p1 = _section(md, "P@1 (%), shared facts")
    assert p1[5:8] == ["| trex | bert | 6 | 6 | 0.00 ± 0.00 | 25.00 ± 25.00 | 12.50 ± 12.50 | [0.00, 25.00] |", "",
                       "- Shared facts: the 6 answered by all of freq, bert."]

    assert _board(run, "em", capsys) == [("gpt", 12, 0.0, 0.0, 0.0), ("t5", 12, 0.0, 0.0, 0.0)]
    # fewer unlinked answers rank first
    assert _board(run, "unlinked", capsys) == [("t5", 12, 33.3333, 8.3333, 50.0), ("gpt", 12, 100.0, 100.0, 100.0)]
    assert _board(run, "p@1", capsys) == [("bert", 6, 12.5, 0.0, 25.0), ("freq", 6, 0.0, 0.0, 0.0)]

    code, _, err = run_kbc(["report", str(run), "--out", str(run.parent / "report")], capsys)
    assert code == 0, err
    page = (run.parent / "report" / "report.md").read_text()
    start = page.index("## Scores (shared facts, then own facts)")
    scores = page[start:page.index("\n## ", start)]
    assert "| trex | t5 | open | 12 | 0.00 ± 0.00 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |" in scores
    assert "| trex | t5 | open | 12 | 50.00 ± 22.36 | 16.67 ± 16.67 | 33.33 ± 13.94 | [8.33, 50.00] |" in scores
    assert "| trex | bert | 6 | 6 | 0.00 ± 0.00 | 25.00 ± 25.00 | 12.50 ± 12.50 | [0.00, 25.00] |" in scores
    assert scores.count("Shared facts: the 12 answered by all of gpt, t5.") == 3  # EM, abstentions, unlinked

    loaded = kbcompare.load_run(run)
    assert loaded.table("unlinked").loc[("trex", "t5")].round(4).tolist() == [50.0, 16.6667, 33.3333]
    assert loaded.table("p@1").loc[("trex", "bert")].tolist() == [0.0, 25.0, 12.5]
    shown = {r["predictor"]: r["shared"] for r in overview(Runs([run]).get(run.name))["table"]}
    assert (shown["bert"]["value"], shown["bert"]["facts"]) == (12.5, 6)


def test_a_delta_row_is_over_the_facts_both_sides_answered(run, capsys):
    """P36: bert answered 2 of the 6 facts asked (Babylon, Jerusalem); over those two, one object is in its subject
    (Kingdom of Jerusalem): 50.0, not the 2 of 6 (with County Limerick) of every fact asked. Rows name their
    relations and follow the figure's order, by the mean delta (P36's +0 before P19's +25)."""
    from test_report import md_table

    code, _, err = run_kbc(["report", str(run), "--delta", "freq", "bert", "--out", str(run.parent / "delta")],
                           capsys)
    assert code == 0, err
    md = (run.parent / "delta" / "report.md").read_text()
    assert md_table(md, "P@1 deltas against freq") == [
        ["corpus", "relation", "#facts", "freq", "bert − freq", "object in subject (%)"],
        ["trex", "P36 capital", "2", "0.00", "+0.00", "50.0"],
        ["trex", "P19 place of birth", "4", "0.00", "+25.00", "0.0"]]
    assert ("P@1 deltas against freq: each row's #facts, freq's value, the differences and the object-in-subject "
            "share are over the same facts, those answered by all of freq, bert; relations in the figure's order top "
            "to bottom, by the mean delta.") in md


def test_a_delta_of_two_runs_is_over_the_facts_both_answered(run, capsys):
    """bert of `run` answered 6 facts, bert of `every` all 12: the rows are over the 6, their scores in each run's
    shared scope (over 6 and over 12) never set side by side."""
    from test_report import md_table

    every = run.parent / "every"
    code, _, err = run_kbc(["report", str(run), "--compare", str(every), "--delta", "bert", "bert", "--out",
                            str(run.parent / "compared")], capsys)
    assert code == 0, err
    md = (run.parent / "compared" / "report.md").read_text()
    assert md_table(md, "P@1 deltas against run:bert") == [
        ["corpus", "relation", "#facts", "run:bert", "every:bert − run:bert", "object in subject (%)"],
        ["trex", "P19 place of birth", "4", "25.00", "-25.00", "0.0"],
        ["trex", "P36 capital", "2", "0.00", "+0.00", "50.0"]]


def test_the_scope_note_counts_the_facts_answered_whatever_order_the_metrics_come_in():
    """Negated LAMA's became-prime and P@1 drop are taken over fewer facts than P@1: the note's count for a set of
    predictors is the largest of their metrics' scopes, the same in every process (the metrics come from a set)."""
    from bridge.run.summaries import scope_counts

    answered, primed, right = frozenset("abcdef"), frozenset("abcd"), frozenset("ab")
    held = {"freq": {"p@1", "became-prime", "p@1-drop"}, "gold": {"p@1"}}
    orders = [{"p@1-drop": right, "became-prime": primed, "p@1": frozenset("abc")},
              {"p@1": frozenset("abc"), "became-prime": primed, "p@1-drop": right}]
    assert [scope_counts(scopes, held) for scopes in orders] == [[(["freq"], 4, 4), (["freq", "gold"], 3, 3)]] * 2
    solo = {"freq": {"p@1", "became-prime", "p@1-drop"}}
    assert scope_counts({"p@1-drop": right, "became-prime": primed, "p@1": answered}, solo) == [(["freq"], 6, 6)]
