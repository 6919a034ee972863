"""`kbc report` on a FewRel run (a tiny BERT fine-tuned one epoch, and the KB): the sections that apply, every
metric summary.md shows, the macro-precision rule with coverage, the confusion matrices and the default delta."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from fewrel_fixtures import fewrel_slice
from lm_fixtures import tiny_model_dir


@pytest.fixture(scope="module")
def fewrel_report(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("fewrel-report")
    data = root / "data"  # 40 sentences of each of three relations: training is over the whole split
    fewrel_slice(shared_data, data, per_relation=40, relations=("P177", "P361", "P364"))
    (data / "lama").symlink_to(shared_data / "lama")  # the KB's graph
    model = tiny_model_dir("bert-cased", root)
    out = root / "run"
    return data, model, out, root / "report"


def _table(md: str, caption: str) -> list[list[str]]:
    block = md.split(f"*{caption}*", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    return [[c.strip() for c in line.strip("|").split("|")] for line in block if not line.startswith("|---")]


def test_a_fewrel_report_shows_what_summary_md_shows_and_no_lama_sections(fewrel_report, capsys):
    shared_data, model, out, report = fewrel_report
    argv = ["run", "fewrel", "--predictors", f"bert={model}", "kb", "--set", "bert.epochs=1", "--set", "bert.lr=1e-3",
            "--relations", "P177", "P361", "P364", "--limit", "10", "--data-dir", str(shared_data), "--out", str(out),
            "--quiet", "--bootstrap", "20"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(out), "--out", str(report)], capsys)
    assert code == 0, err
    md = (report / "report.md").read_text(encoding="utf-8")
    for absent in ("LAMA Table 2", "Mean P@k", "analyze stats", "analyze evidence",
                   "needs a KB predictor other than gold"):
        assert absent not in md
    titles = [line for line in md.splitlines() if line.startswith("## ")]
    assert titles == ["## Run, predictors and costs", "## Scores (shared facts, then own facts)",
                      "## F1, Total: macro over relations by relation", "## Confusion matrices",
                      "## Per-relation deltas against the best KB predictor (kb) — E-BERT Fig. 2"]
    for caption in ("Precision (%), Total: macro over relations, setting raw",
                    "Recall (%), Total: macro over relations, setting raw", "accuracy, setting raw",
                    "coverage, setting raw"):
        assert f"*{caption}*" in md
    rows = {(r["predictor"], r["metric"]): r["value"] for r in json.loads((out / "summary.json").read_text())
            if r["scope"] == "shared" and r["group"] == "all" and r["setting"] == "raw"}
    assert "zero_division=0" in md
    shown = _table(md, "Macro precision beside coverage (shared facts)")
    assert shown[0] == ["predictor", "macro P", "coverage", "precision of its answers"]
    for row in shown[1:]:
        p = row[0]
        cov, acc = rows[(p, "coverage")], rows[(p, "accuracy")]
        assert row[1:] == [f"{rows[(p, 'precision-macro')]:.2f}", f"{cov:.2f}",
                           f"{100 * acc / cov:.2f}" if cov else "-"]
    for p in ("bert", "kb"):
        found = json.loads((out / "figures" / f"confusion-{p}.json").read_text())
        table = _table(md, f"{p}: sentences per gold (row) and predicted relation (column); `none`: no answer")
        assert table[0] == ["gold relation", *found["predicted"]]
        assert table[1:] == [[g, *map(str, c)] for g, c in zip(found["gold"], found["counts"])]
        assert found["gold"] == ["P177", "P361", "P364"]
        assert (report / "figures" / f"confusion_{p}.png").is_file()
