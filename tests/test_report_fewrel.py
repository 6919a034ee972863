"""`kbc report` on a FewRel run (a tiny BERT fine-tuned one epoch, and the KB): the sections that apply, every
metric summary.md shows, the macro-precision rule with coverage, the confusion matrices and the default delta; and
`kbc show` on one of its sentences."""

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
        # the heat map as every figure of the page: PNG shown, SVG linked (the run writes both)
        for suffix in ("png", "svg"):
            assert (out / "figures" / f"confusion-{p}.{suffix}").is_file()
            assert (report / "figures" / f"confusion_{p}.{suffix}").read_bytes() == (
                out / "figures" / f"confusion-{p}.{suffix}").read_bytes()
        assert f"![{p}'s confusion matrix as a heat map](figures/confusion_{p}.png)" in md
        assert f"([SVG](figures/confusion_{p}.svg))" in md


def test_the_summary_and_report_say_macro_scores_are_over_the_relations_asked(fewrel_report, capsys):
    """summary.md and the report name the relations the macro scores are over; `--compare` against a run that
    asked fewer relations says the two are over different sentences, on stderr and in report.md."""
    data, model, out, report = fewrel_report
    if not (out / "summary.json").is_file():
        test_a_fewrel_report_shows_what_summary_md_shows_and_no_lama_sections(fewrel_report, capsys)
    over = ("Macro P/R/F1 are means over the 3 relations asked (P177, P361, P364), and a relation's precision "
            "counts only the sentences asked")
    assert over in (out / "summary.md").read_text(encoding="utf-8")
    code, _, err = run_kbc(["report", str(out), "--out", str(report)], capsys)
    assert code == 0, err
    md = (report / "report.md").read_text(encoding="utf-8")
    assert over in md
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["fewrel"]["bert"]["models"]["bert"]
    trained = _table(md, "Training of the fine-tuned predictors: lr kept on dev (of those tried), epoch kept (best "
                         "dev macro F1) of those trained, its dev macro F1, batch size, dtype")
    assert trained[1:] == [["bert", "bert", "0.001", "1 / 1", f"{described['best']['f1']:.2f}", "32", "float32"]]
    fewer = out.parent / "fewer"
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "kb", "--relations", "P177", "P361", "--limit", "10",
                            "--data-dir", str(data), "--out", str(fewer), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    assert "means over the 2 relations asked (P177, P361)" in (fewer / "summary.md").read_text(encoding="utf-8")
    code, _, err = run_kbc(["report", str(out), "--compare", str(fewer), "--out", str(out.parent / "cmp")], capsys)
    assert code == 0, err
    differ = (f"These runs asked different relations ({out}: P177, P361, P364; {fewer}: P177, P361): their macro "
              "scores, and a relation's precision and F1, are over different sentences and do not compare")
    assert f"note: {differ}" in err
    md = (out.parent / "cmp" / "report.md").read_text(encoding="utf-8")
    assert "These runs asked different relations (run: P177, P361, P364; fewer: P177, P361)" in md


def test_show_prints_a_sentence_with_each_predictors_own_input_and_the_tail(fewrel_report, capsys):
    """Head and tail with their ids, each predictor's input as it classified it (BERT its marked sentence, the KB
    the two ids), a KB abstention as no answer (not `answered`), and none of LAMA's fields."""
    data, model, out, report = fewrel_report
    if not (out / "summary.json").is_file():
        test_a_fewrel_report_shows_what_summary_md_shows_and_no_lama_sections(fewrel_report, capsys)

    def records(name):
        return {r["uid"]: r for p in sorted((out / "predictions" / "fewrel" / name).glob("*.jsonl"))
                for r in map(json.loads, p.read_text().splitlines())}

    kb = records("kb")
    uid = next(u for u, r in sorted(kb.items()) if r["predicted"] is None)
    bert = records("bert")[uid]
    code, text, err = run_kbc(["show", str(out), "--uid", uid], capsys)
    assert code == 0, err
    lines = text.splitlines()
    assert lines[:5] == [f"fewrel / {bert['relation']} / uid {uid}", f"  sentence: {bert['sentence']}",
                         f"  head:     {bert['subject']} ({bert['subject_id']})",
                         f"  tail:     {bert['object']} ({bert['object_id']})", f"  gold:     {bert['relation']}"]
    right = "right" if bert["predicted"] == bert["relation"] else "wrong"
    assert lines[5] == f"  bert  predicted {bert['predicted']} ({right}; gold rank {bert['rank_raw']})"
    assert lines[6] == f"          input: {bert['prompt']}" and " # " in bert["prompt"] and " $ " in bert["prompt"]
    kb_at = lines.index("  kb    no answer: the KB holds no relation between head and tail")
    assert lines[kb_at + 1] == (f"          input: the relations the KB holds between {bert['subject_id']} and "
                                f"{bert['object_id']}")
    assert "other valid" not in text and "filtered" not in text
    code, shown, err = run_kbc(["show", str(out), "--uid", uid, "--json"], capsys)
    assert code == 0, err
    fact = json.loads(shown)["facts"][0]
    assert (fact["tail"], fact["tail_id"]) == (bert["object"], bert["object_id"])
    assert fact["predictors"]["kb"] == {
        "status": "no answer", "predicted": None, "gold_rank": None, "kb_relations": kb[uid]["kb_relations"],
        "input": f"the relations the KB holds between {bert['subject_id']} and {bert['object_id']}", "answers": []}
    assert fact["predictors"]["bert"]["status"] == "answered"
    assert fact["predictors"]["bert"]["input"] == bert["prompt"]
    assert "other_valid" not in fact and "rank_filtered" not in fact["predictors"]["bert"]
