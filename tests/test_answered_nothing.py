"""A finished run where one predictor answered nothing: it keeps a row of 0 answered units with its dropped reasons,
never a score, and it restricts no one's shared facts (as on a leaderboard, which leaves it out and ranks the others
on what they answered); every reader accepts the run and names the predictor."""

from __future__ import annotations

import json
import math
from pathlib import Path

from cli_support import one_sample_note, run_kbc
from lm_fixtures import tiny_models  # noqa: F401  (pytest finds the fixture by name)

VOCAB_REASON = "object is not in the candidate vocabulary"
SUBJECT_REASON = "subject is not a single token of the model"


def _lama_run(tiny_models, lama_dir, tmp_path, capsys) -> tuple[Path, str]:  # noqa: F811
    """Freq and a tiny BERT whose only candidate (`table`) is no P19 object: BERT drops every fact."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("table\n", encoding="utf-8")
    out = tmp_path / "none"
    code, stdout, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5",
                                 "--predictors", "freq", f"bert={tiny_models('bert-cased')}",
                                 "--set", f"bert.vocab_file={vocab}", "--data-dir", str(lama_dir),
                                 "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    return out, stdout


def _silent_rows(out: Path, predictor: str) -> list[dict]:
    return [r for r in json.loads((out / "summary.json").read_text()) if r["predictor"] == predictor]


def _none_row(setting: str, reasons: dict[str, int]) -> dict:
    return {"corpus": "trex", "predictor": "bert", "scope": "own", "setting": setting, "group": "all",
            "metric": "units_answered", "value": 0, "n_facts": 0, "stderr": None, "ci_low": None, "ci_high": None,
            "dropped": reasons}


def _readers_accept(out: Path, other: str, reason: str, metric: str, capsys, tmp_path) -> None:
    """kbc serve (its finished-run check and overview), kbc report, kbc leaderboard, kbc compare and load_run."""
    import kbcompare
    from bridge.serve.runs import Runs, leaderboard, overview

    note = f"trex: bert answered nothing (5 dropped: {reason})"
    runs = Runs([out])
    shown = overview(runs.get(out.name))
    assert [(r["predictor"], r["facts"], r["answered_none"], (r["shared"] or {}).get("facts"))
            for r in shown["table"]] == [(other, 5, None, 5), ("bert", 0, {reason: 5}, None)]
    assert f"{note}; it has no score (`-`, facts 0)" in shown["notes"]
    assert [r["predictor"] for r in leaderboard(runs, scope="own")["rows"]] == [other]

    code, stdout, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    page = (tmp_path / "report" / "report.md").read_text()
    assert f"{note}; it has no score (`-`, #facts 0)" in page
    assert "| trex | bert | - | 0 | - | - | - |" in page.splitlines()

    code, stdout, err = run_kbc(["leaderboard", str(out), "--scope", "own"], capsys)
    assert code == 0, err
    lines = stdout.splitlines()
    assert lines[0] == f"note: trex: {out}/bert answered nothing (5 dropped: {reason}); not ranked (no score)"
    ranked = [line.split(" | ")[2] for line in lines if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert ranked == [other]
    code, stdout, err = run_kbc(["leaderboard", str(out)], capsys)  # shared: bert left out restricts nothing
    assert code == 0, err
    assert stdout.splitlines()[:3] == [
        f"note: trex: {out}/bert answered nothing (5 dropped: {reason}); not ranked (no score)",
        f"note: {one_sample_note(5)}", ""]
    boards = {}
    for scope in ("shared", "own"):
        code, stdout, err = run_kbc(["leaderboard", str(out), "--scope", scope, "--format", "json"], capsys)
        assert code == 0, err
        boards[scope] = [(r["predictor"], r["value"], r["n_facts"]) for r in json.loads(stdout)["rows"]]
    own_total = next(r["value"] for r in json.loads((out / "summary.json").read_text()) if
                     (r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]) ==
                     (other, "own", "raw", "all", metric) and not r.get("prompt"))
    assert boards["shared"] == boards["own"] == [(other, own_total, 5)]

    if metric == "p@1":  # kbc compare pairs LAMA facts (a coherency run it refuses for every pair)
        code, _, err = run_kbc(["compare", str(out), other, "bert"], capsys)
        assert code == 2
        assert err == f"error: {other} and bert have no answered fact in common in {out} ({note}; it has no score)\n"

    run = kbcompare.load_run(out)
    assert run.predictors == [other, "bert"]
    silent = run.summary[run.summary["metric"] == "units_answered"]
    assert silent["predictor"].tolist() == ["bert"] * len(silent)
    assert silent["dropped"].tolist() == [{reason: 5}] * len(silent)
    table = run.table(metric, scope="own")
    assert list(table.index) == [("trex", other), ("trex", "bert")]
    assert all(math.isnan(v) for v in table.loc[("trex", "bert")])
    assert table.attrs["notes"] == [f"{note}; it has no score"]
    shared = run.table(metric)  # bert restricts no one's facts: the others' shared scope is their own
    assert shared.loc[("trex", other)].tolist() == table.loc[("trex", other)].tolist()
    assert all(math.isnan(v) for v in shared.loc[("trex", "bert")])


def test_lama_predictor_that_answered_nothing(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, stdout = _lama_run(tiny_models, lama_dir, tmp_path, capsys)
    reasons = {VOCAB_REASON: 5}
    assert _silent_rows(out, "bert") == [_none_row("raw", reasons), _none_row("filtered", reasons)]
    rows = json.loads((out / "summary.json").read_text())
    assert not [r for r in rows if r["scope"] == "shared" and r["predictor"] == "bert"]
    counts = {(r["scope"], r["setting"], r["metric"]): r["n_facts"] for r in rows
              if r["predictor"] == "freq" and r["group"] == "all"}
    assert [counts[(scope, setting, "p@1")] for scope in ("own", "shared")
            for setting in ("raw", "filtered")] == [5, 5, 5, 5]
    md = (out / "summary.md").read_text().splitlines()
    assert "- Scope `shared`: per metric, the facts every predictor scored on that metric answered (trex: 5 " \
           "answered by freq); a predictor without the metric, or that answered nothing, restricts no one's facts; " \
           "`own`: the facts each predictor answered." in md
    assert f"- trex: bert answered nothing (5 dropped: {VOCAB_REASON}); it has no score (`-`, #facts 0) and " \
           "restricts no one's shared facts." in md
    shared = md[md.index("## P@1 (%), shared facts"):md.index("## P@10 (%), shared facts")]
    assert shared[2:9] == [
        "| corpus | predictor | answer space | #facts | P19 place of birth (n=5) | Total | Total 95% CI |",
        "|---|---|---|---|---|---|---|",
        "| trex | freq | 325 | 5 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |",
        "| trex | bert | - | 0 | - | - | - |",
        "",
        "- Shared facts: the 5 answered by freq.",
        "",
    ]
    own_table = md[md.index("## P@1 (%), own facts"):md.index("## P@10 (%), own facts")]
    assert own_table[4:6] == ["| trex | freq | 325 | 5 | 0.00 ± 0.00 | 0.00 ± 0.00 | [0.00, 0.00] |",
                              "| trex | bert | - | 0 | - | - | - |"]
    assert "| trex | bert | P19 | object is not in the candidate vocabulary | 5 |" in md
    printed = stdout.splitlines()
    assert printed[:4] == ["P@1 (%) in the layout of LAMA Table 2, setting raw, shared facts",
                           shared[2], shared[3], shared[4]]
    assert printed[4] == shared[5]
    _readers_accept(out, "freq", VOCAB_REASON, "p@1", capsys, tmp_path)


def test_coherency_predictor_that_answered_nothing(tiny_models, lama_dir, tmp_path, capsys,  # noqa: F811
                                                   monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "coherency"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P19", "--limit", "5",
                            "--predictors", "gold", f"bert={tiny_models('bert-cased')}", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert _silent_rows(out, "bert") == [_none_row("raw", {SUBJECT_REASON: 5})]
    rows = json.loads((out / "summary.json").read_text())
    assert not [r for r in rows if r["scope"] == "shared" and r["predictor"] == "bert"]
    gold = {r["scope"]: (r["value"], r["n_facts"]) for r in rows
            if r["predictor"] == "gold" and r["group"] == "all" and r["metric"] == "coherency"}
    assert gold == {"own": (100.0, 5), "shared": (100.0, 5)}
    md = (out / "summary.md").read_text().splitlines()
    assert f"- trex: bert answered nothing (5 dropped: {SUBJECT_REASON}); it has no score (`-`, #facts 0) and " \
           "restricts no one's shared facts." in md
    shared = md[md.index("## Coherency (%), shared facts"):]
    assert shared[4:8] == [
        "| trex | gold | open | 5 | 100.00 ± 0.00 | 100.00 ± 0.00 | [100.00, 100.00] |",
        "| trex | bert | - | 0 | - | - | - |",
        "",
        "- Shared facts: the 5 answered by gold.",
    ]
    _readers_accept(out, "gold", SUBJECT_REASON, "coherency", capsys, tmp_path)


def test_the_note_names_each_reasons_count_apart_from_its_words():
    from bridge.run.summaries import answered_nothing

    assert answered_nothing("freq", {"a SQuAD question has no relation: Freq has no objects to count": 60}) == (
        "freq answered nothing (60 dropped: a SQuAD question has no relation: Freq has no objects to count)")
    assert answered_nothing("bert", {VOCAB_REASON: 3, SUBJECT_REASON: 2}) == (
        f"bert answered nothing (5 dropped: {VOCAB_REASON} (3); {SUBJECT_REASON} (2))")
