"""`kbc show`: one fact of the hand-made run (see test_compare) across every predictor."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from records_support import seal_records
from test_compare import make_run


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path)


def _one_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_show_by_uid(run_dir, capsys):
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p19-7"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[:5] == [
        "trex / P19 / uid p19-7",
        "  subject:     subject p19-7 (Q97)",
        "  prompt:      subject p19-7 relates to [MASK] .",
        "  gold:        gold-p19-7 (Q7)",
        "  other valid: wrong-p19-7-0",
    ]
    assert "  alpha  gold rank raw 2, filtered 1" in lines
    assert "  beta   gold not among the answers" in lines
    assert "  gamma  not run" in lines
    alpha = lines.index("  alpha  gold rank raw 2, filtered 1")
    assert [line.split()[1] for line in lines[alpha + 1:alpha + 6]] == [
        "wrong-p19-7-0", "gold-p19-7", "wrong-p19-7-1", "wrong-p19-7-2", "wrong-p19-7-3"]
    assert lines[alpha + 2].endswith("<- gold")


def test_show_dropped_and_json(run_dir, capsys):
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p36-8", "--corpus", "trex", "--json"], capsys)
    assert code == 0
    (fact,) = json.loads(out)["facts"]
    assert (fact["corpus"], fact["relation"], fact["gold"], fact["prompt"]) == (
        "trex", "P36", "gold-p36-8", "subject p36-8 relates to [MASK] .")
    assert fact["predictors"]["alpha"] == {"status": "dropped", "reason": "object not in vocabulary"}
    assert fact["predictors"]["gamma"] == {"status": "not run"}
    beta = fact["predictors"]["beta"]
    assert (beta["status"], beta["rank_raw"], beta["rank_filtered"]) == ("answered", 1, 1)
    assert beta["answers"][0] == {"label": "gold-p36-8", "score": -0.5, "id": "Q8"} and len(beta["answers"]) == 10
    code, out, _ = run_kbc(["show", str(run_dir), "--uid", "p36-8"], capsys)
    assert "  alpha  dropped: object not in vocabulary" in out.splitlines()


def test_show_by_subject_label_or_id(run_dir, capsys):
    code, by_label, _ = run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace", "--relation", "P19"], capsys)
    assert code == 0 and by_label.startswith("trex / P19 / uid p19-1\n")
    assert "  alpha  gold rank raw 1, filtered 1; exact raw 1, filtered 1" in by_label.splitlines()
    code, by_id, _ = run_kbc(["show", str(run_dir), "--subject", "Q7259", "--relation", "P19"], capsys)
    assert code == 0 and by_id == by_label


def test_show_errors(run_dir, capsys):
    line = _one_error(*run_kbc(["show", str(run_dir), "--uid", "p19-99"], capsys))
    assert "no fact with uid 'p19-99'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Nobody", "--relation", "P19"], capsys))
    assert "no fact with subject 'Nobody'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace", "--relation", "P91"], capsys))
    assert "did you mean 'P19'" in line
    line = _one_error(*run_kbc(["show", str(run_dir), "--subject", "Ada Lovelace"], capsys))
    assert "--relation" in line
    line = _one_error(*run_kbc(["show", str(run_dir)], capsys))
    assert "--uid" in line
    _one_error(*run_kbc(["show", str(run_dir / "nope"), "--uid", "p19-7"], capsys))


@pytest.mark.parametrize(("experiment", "stage"), [("kmir", ""), ("coherency", "first|second/"), ("negated", ""),
                                                   ("evidence", "")])
def test_show_refuses_runs_it_cannot_display(run_dir, capsys, experiment, stage):
    config = json.loads((run_dir / "config.json").read_text())
    (run_dir / "config.json").write_text(json.dumps({**config, "experiment": experiment}))
    line = _one_error(*run_kbc(["show", str(run_dir), "--uid", "p19-7"], capsys))
    assert line == (f"error: {run_dir} is a `kbc run {experiment}` run: kbc show prints LAMA facts (prompt, gold, "
                    f"gold rank), FewRel sentences and LM-KBC pairs; each {experiment} record is one line of "
                    f"predictions/<corpus>/<predictor>/{stage}<relation>.jsonl and of instances.parquet")


def test_a_prompt_of_several_lines_stays_under_its_field(tmp_path, capsys):
    """A fact every predictor answered by generation shows the prompt it was sent, each line under the first."""
    run = tmp_path / "run"
    folder = run / "predictions" / "trex" / "gen"
    folder.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"corpora": ["trex"], "predictors": ["gen"]}))
    record = {"uid": "p19-1", "relation": "P19", "subject": "Ada Lovelace", "subject_id": "Q7259", "gold": "London",
              "gold_id": "Q84", "other_valid": [], "prompt": "Q: Where was Ada Lovelace born?\nA:",
              "generation": " London\nQ: Where", "parsed": ["London"], "answers": [["London", 1.0, "Q84"]],
              "unlinked": [], "abstained": False, "em_raw": True, "em_filtered": True, "rank_raw": 1,
              "rank_filtered": 1}
    (folder / "P19.jsonl").write_text(json.dumps(record) + "\n")
    seal_records(run)
    code, out, err = run_kbc(["show", str(run), "--uid", "p19-1"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "trex / P19 / uid p19-1",
        "  subject:     Ada Lovelace (Q7259)",
        "  prompt:      Q: Where was Ada Lovelace born?",
        "               A:",
        "  gold:        London (Q84)",
        "  other valid: -",
        "  gen  exact match raw yes, filtered yes (answered by generation)",
        "       prompt:     Q: Where was Ada Lovelace born?",
        "                   A:",
        "       generation:  London",
        "                   Q: Where",
        "       1. London (Q84)  <- gold",
    ]
