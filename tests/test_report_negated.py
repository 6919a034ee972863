"""`kbc report` on a negated run: the negated and misprimed rows, and no LAMA-only sections."""

from __future__ import annotations

from cli_support import run_kbc


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
                 "Misprimed, prime answered (%)", "Misprimed, P@1 drop (points)"):
        assert f"*{name}, setting raw*" in md, name
    # Freq answers a negated sentence as the positive one: the same top answer, scores ranked alike
    overlap = md.split("*Negated query, same top answer (%), setting raw*")[1]
    assert "| negated-google_re | freq | 68 | 10 | 100.00 | 100.00 | - |" in overlap.split("*Spearman")[0]
    spearman = md.split("*Spearman, positive vs negated scores, setting raw*")[1]
    assert "| negated-google_re | freq | 68 | 10 | 1.00 | 1.00 | - |" in spearman.split("*Misprimed")[0]
