"""`kbc report` on a negated run: the negated and misprimed rows, and no LAMA-only sections."""

from __future__ import annotations

import json

import lm_fixtures
from cli_support import run_kbc

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def test_report_shows_the_negated_rows(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-google_re", "--relations", "place_of_birth",
                            "--predictors", "freq", "--misprimes", "high_ranked", "--limit", "10", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    md = (out / "report" / "report.md").read_text()
    assert "Skipped" not in md and "Mean P@k curves" not in md
    for name in ("P@1 (%)", "Negated query, same top answer (%)", "Spearman, positive vs negated scores",
                 "Misprimed, prime answered (%)", "Misprimed, P@1 drop (% of facts right unprimed)"):
        assert f"*{name}, setting raw*" in md and f"*{name}, setting raw, own facts*" in md, name
    # Freq answers a negated sentence as the positive one: the same top answer, scores ranked alike
    overlap = md.split("*Negated query, same top answer (%), setting raw*")[1]
    # every fact the same (100): a standard error of 0 and an interval of the point, as LAMA's constant cells
    assert ("| negated-google_re | freq | 68 | 10 | 100.00 ± 0.00 | 100.00 ± 0.00 | [100.00, 100.00] |"
            in overlap.split("*Spearman")[0])
    spearman = md.split("*Spearman, positive vs negated scores, setting raw*")[1]
    assert ("| negated-google_re | freq | 68 | 10 | 1.00 ± 0.00 | 1.00 ± 0.00 | [1.00, 1.00] |"
            in spearman.split("*Misprimed")[0])


def test_p_at_1_drop_lists_every_corpus_and_predictor_with_a_note(lama_dir, tmp_path, monkeypatch, capsys,
                                                                 tiny_models):
    """No fact of negated-trex was right without the prime, and none bert answered on negated-google_re: summary.md
    and the report still list every corpus and predictor, `-` with the note saying why (docs/negated.md)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "negated-google_re", "--relations", "P36",
                            "P159", "place_of_birth", "--limit", "15", "--predictors",
                            f"bert={tiny_models('bert-cased')}", "freq", "gold", "--misprimes", "high_ranked",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    rows = json.loads((out / "summary.json").read_text())
    drops = [r for r in rows if r["metric"] == "p@1-drop" and r["setting"] == "raw"]
    # summary.json holds the drop of freq on negated-google_re alone, in its own scope: bert got no fact right
    # without the prime, so no fact was right for every predictor and the shared scope has no drop (docs/negated.md)
    assert [(r["corpus"], r["predictor"], r["scope"], r["group"], r["value"], r["n_facts"]) for r in drops] == [
        ("negated-google_re", "freq", "own", "place_of_birth", 0.0, 1),
        ("negated-google_re", "freq", "own", "all", 0.0, 1)]

    def trex(scope: str) -> list[str]:
        return ["| negated-trex | bert | 21,018 | 0 | - | - | - | - |",
                "| negated-trex | freq | 200.5 | 0 | - | - | - | - |",
                "| negated-trex | gold | open | 0 | - | - | - | - |", "",
                "- `-` under P36, P159, Total for every predictor: no fact of them was right without the prime"
                f"{' for all predictors' if scope == 'shared' else ''} (the drop is taken over those facts)."]
    google_re = {"own": ["| negated-google_re | bert | 21,018 | 0 | - | - | - |",
                         "| negated-google_re | freq | 68 | 1 | 0.00 | 0.00 | - |",
                         "| negated-google_re | gold | open | 0 | - | - | - |", "",
                         "- `-` throughout for bert (#facts 0): no fact it answered was right without the prime (the "
                         "drop is taken over those facts).",
                         "- `-` throughout for gold (#facts 0): it answered no fact of negated-google_re."],
                 "shared": ["| negated-google_re | bert | 21,018 | 0 | - | - | - |",
                            "| negated-google_re | freq | 68 | 0 | - | - | - |",
                            "| negated-google_re | gold | open | 0 | - | - | - |", "",
                            "- `-` under place_of_birth, Total for every predictor: no fact of them was right without "
                            "the prime for all predictors (the drop is taken over those facts)."]}
    summary = (out / "summary.md").read_text()
    report = (out / "report" / "report.md").read_text()
    for page, heads in ((summary, ("## Misprimed, P@1 drop (% of facts right unprimed), shared facts",
                                   "## Misprimed, P@1 drop (% of facts right unprimed), own facts")),
                        (report, ("*Misprimed, P@1 drop (% of facts right unprimed), setting raw*",
                                  "*Misprimed, P@1 drop (% of facts right unprimed), setting raw, own facts*"))):
        for head, scope in zip(heads, ("shared", "own")):
            lines = page.split(head, 1)[1].lstrip("\n").splitlines()
            assert lines[2:7] == trex(scope), head
            assert lines[10:10 + len(google_re[scope])] == google_re[scope], head
