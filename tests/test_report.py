"""`kbc report` end to end: a small real run, analysis files written by their contract, the page parsed."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from cli_support import run_kbc

from bridge.cli import main

VOID = {"meta", "img", "br", "hr", "link", "input", "source", "wbr"}
LAMA_FIGURES = {"p_at_k", "p_at_1_relation", "p_at_1_type", "delta_gold_vs_freq"}
ANALYSIS_FIGURES = {"correlation", "cooccurrence_bins", "rank_variation"}


class Page(HTMLParser):
    """Checks that tags balance and collects images, links, sections and skip notes."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self.sections: list[str] = []
        self.skipped: dict[str, str] = {}
        self._section: str | None = None
        self._in_skip = False
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "script" or (tag == "link" and attrs.get("rel") == "stylesheet"):
            self.scripts += 1
        if tag == "section":
            self._section = attrs["id"]
            self.sections.append(attrs["id"])
        if tag == "p" and attrs.get("class") == "skipped":
            self._in_skip = True
            self.skipped[self._section] = ""
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "p":
            self._in_skip = False

    def handle_data(self, data):
        if self._in_skip:
            self.skipped[self._section] += data


def parse(path: Path) -> Page:
    page = Page()
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    page.feed(text)
    page.close()
    assert not page.errors and not page.stack, (page.errors, page.stack)
    assert page.scripts == 0  # self-contained: no scripts or external style sheets
    return page


def check_figures(html_path: Path, page: Page) -> set[str]:
    """Every image exists and is non-empty, with its SVG beside it and linked; returns the figure names."""
    base = html_path.parent
    names = set()
    for src in page.images:
        png = base / src
        svg = png.with_suffix(".svg")
        assert src.endswith(".png") and png.is_file() and png.stat().st_size > 1000, src
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert svg.is_file() and svg.stat().st_size > 1000 and b"<svg" in svg.read_bytes()[:2000]
        assert svg.relative_to(base).as_posix() in page.links
        names.add(png.stem)
    assert len(names) == len(page.images)
    return names


def kbc(argv: list[str]) -> None:
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code in (0, None), f"kbc {' '.join(argv)} exited {exc.code}"


def write_analysis(run: Path) -> None:
    """Hand-made files in the shapes `kbc analyze` writes (the file contract)."""
    folder = run / "analysis"
    folder.mkdir()
    inst = pd.read_parquet(run / "instances.parquet")
    inst = inst[inst["corpus"] == "trex"]  # one corpus keeps the figures small
    facts = inst.drop_duplicates(["corpus", "uid"]).reset_index(drop=True)
    n = len(facts)
    pd.DataFrame({"corpus": facts["corpus"], "uid": facts["uid"], "relation": facts["relation"],
                  "sm": [i % 7 for i in range(n)], "om": [i * 3 for i in range(n)],
                  "cooc_paragraphs": [i % 9 for i in range(n)], "cooc_sentences": [i % 4 for i in range(n)],
                  "st": [1 + i % 3 for i in range(n)], "swp": [2 + i % 5 for i in range(n)],
                  "socs": [i / n for i in range(n)]}).to_parquet(folder / "fact_stats.parquet", index=False)
    pairs = inst[["corpus", "predictor"]].drop_duplicates().itertuples(index=False)
    corr, bins = [], []
    for corpus, predictor in pairs:
        for setting in ("raw", "filtered"):
            for i, stat in enumerate(("sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs")):
                for target in ("p@1", "rr"):
                    for method in ("pearson", "spearman"):
                        undefined = predictor == "gold"  # P@1 constant: the coefficient is undefined
                        corr.append({"corpus": corpus, "predictor": predictor, "setting": setting, "statistic": stat,
                                     "target": target, "method": method,
                                     "coefficient": None if undefined else round(0.1 * i - 0.2, 2),
                                     "p_value": None if undefined else 0.01 * (i + 1), "n": 8})
            for stat in ("cooc_paragraphs", "cooc_sentences"):
                for low, high, label, hits in ((0, 0, "0", 0.0), (1, 2, "1", 25.0), (2, 4, "2-3", 50.0),
                                               (4, 8, "4-7", None)):
                    count = 0 if hits is None else 3
                    bins.append({"corpus": corpus, "predictor": predictor, "setting": setting, "statistic": stat,
                                 "bin": label, "low": low, "high": high, "n": count, "p@1": hits})
    (folder / "correlation.json").write_text(json.dumps(corr))
    (folder / "bins.json").write_text(json.dumps(bins))
    answered = inst[inst["dropped"].isna()]
    evidence = [{"corpus": r.corpus, "predictor": r.predictor, "relation": r.relation, "uid": r.uid, "evidence": e,
                 "rank": None if e == 2 else 1 + (i + e) % 40, "n_evidences": 3}
                for i, r in enumerate(answered.itertuples(index=False)) for e in range(3)]
    pd.DataFrame(evidence).astype({"rank": "Int64"}).to_parquet(folder / "evidence.parquet", index=False)
    summary = [{"corpus": c, "predictor": p, "relation": rel, "n_facts": 8, "median_rank": 4.0, "mean_rank_std": 2.5}
               for c, p, rel in answered[["corpus", "predictor", "relation"]].drop_duplicates().itertuples(index=False)]
    (folder / "evidence_summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def runs(lama_dir, tmp_path_factory):
    """A LAMA run of freq and the gold KB (T-REx and Google-RE) and a coherency run (T-REx)."""
    root = tmp_path_factory.mktemp("report")
    mp = pytest.MonkeyPatch()
    mp.setenv("KBC_CACHE", str(root / "cache"))
    common = ["--data-dir", str(lama_dir), "--store", str(root / "store"), "--quiet", "--limit", "8"]
    try:
        kbc(["run", "lama", "--corpus", "trex", "google_re", "--relations", "P19", "P36", "P101", "place_of_birth",
             "--predictors", "freq", "gold", "--out", str(root / "lama"), *common])
        kbc(["run", "coherency", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq", "gold",
             "--out", str(root / "coherency"), *common])
    finally:
        mp.undo()
    bare = root / "bare"
    shutil.copytree(root / "lama", bare)
    write_analysis(root / "lama")
    return root


def test_report_has_every_figure_and_valid_html(runs, capsys):
    run = runs / "lama"
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    html_path = run / "report" / "report.html"
    assert out.strip() == str(html_path)
    page = parse(html_path)
    assert check_figures(html_path, page) == LAMA_FIGURES | ANALYSIS_FIGURES
    assert page.sections == ["overview", "scores", "p_at_k", "by_relation", "by_type", "deltas", "correlation",
                             "bins", "rank_variation", "coherency", "kmir"]
    assert set(page.skipped) == {"coherency", "kmir"}
    assert "kbc run coherency" in page.skipped["coherency"]
    text = html_path.read_text(encoding="utf-8")
    assert "Spearman ρ" in text and "seconds" in text.lower()
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    for name in LAMA_FIGURES | ANALYSIS_FIGURES:
        assert f"(figures/{name}.png)" in md and f"(figures/{name}.svg)" in md
    assert "| corpus | predictor | answers | #facts |" in md


def test_missing_analysis_files_give_notes_not_errors(runs, capsys):
    run = runs / "bare"
    code, out, err = run_kbc(["report", str(run), "--out", str(runs / "bare-report"), "--setting", "filtered"],
                             capsys)
    assert code == 0, err
    html_path = Path(out.strip())
    page = parse(html_path)
    assert check_figures(html_path, page) == LAMA_FIGURES
    assert set(page.skipped) == {"correlation", "bins", "rank_variation", "coherency", "kmir"}
    assert f"kbc analyze correlation {run}" in page.skipped["correlation"]
    assert f"kbc analyze evidence {run}" in page.skipped["rank_variation"]
    assert not (run / "report").exists()


def test_compare_draws_both_runs_and_refuses_other_corpora(runs, capsys):
    code, out, err = run_kbc(["report", str(runs / "bare"), "--compare", str(runs / "coherency")], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: --compare needs runs over the same corpora")
    other = runs / "coherency-copy"
    shutil.copytree(runs / "coherency", other, ignore=shutil.ignore_patterns("report"))
    code, out, err = run_kbc(["report", str(runs / "coherency"), "--compare", str(other), "--out",
                              str(runs / "compared"), "--delta", "freq", "gold"], capsys)
    assert code == 0, err
    html_path = Path(out.strip())
    names = check_figures(html_path, parse(html_path))
    assert names == {"coherency_relation", "coherency_type", "delta_coherency_copy_gold_vs_coherency_freq"}
    text = html_path.read_text(encoding="utf-8")
    assert "coherency:freq" in text and "coherency-copy:gold" in text


def test_bad_input_is_one_line_exit_2(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(runs / "lama" / "config.json", empty / "config.json")
    for argv, expected in (
        (["report", str(empty)], "has no predictions"),
        (["report", str(tmp_path / "missing")], "does not exist"),
        (["report", str(runs / "bare"), "--delta", "freq", "gld"], "did you mean 'gold'"),
    ):
        code, out, err = run_kbc(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and expected in err, (argv, err)


def test_coherency_run_gets_the_coherency_table(runs, capsys):
    run = runs / "coherency"
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    html_path = Path(out.strip())
    page = parse(html_path)
    assert check_figures(html_path, page) == {"coherency_relation", "coherency_type", "delta_gold_vs_freq"}
    assert "coherency" not in page.skipped and "p_at_k" in page.skipped and "kmir" in page.skipped
    summary = json.loads((run / "summary.json").read_text())
    gold = next(r for r in summary if r["predictor"] == "gold" and r["group"] == "all" and r["scope"] == "shared"
                and r["setting"] == "raw" and r["metric"] == "coherency_round1")
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "| corpus | predictor | round 1 | round 2 | coherency | c1 | c2 | all correct | instances |" in md
    assert f"| trex | gold | {gold['value']:.2f} |" in md


def test_kmir_run_gets_its_tables_from_the_summary(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "kmir"
    kbc(["run", "kmir", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq", "kb",
         "--questions-per-relation", "5", "--data-dir", str(lama_dir), "--store", str(tmp_path / "store"),
         "--quiet", "--out", str(run)])
    capsys.readouterr()
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    page = parse(Path(out.strip()))
    assert "kmir" not in page.skipped and "coherency" in page.skipped
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    rows = json.loads((run / "summary.json").read_text())
    for metric, caption in (("f1", "*Token F1 (%) per question kind*"), ("em", "*Exact match (%) per question kind*")):
        table = md.split(caption, 1)[1].strip().split("\n\n", 1)[0].splitlines()
        header = [c.strip() for c in table[0].strip("|").split("|")]
        assert header[:2] == ["corpus", "predictor"] and header[-1] == "all" and len(header) == 7
        body = {line.split("|")[2].strip(): [c.strip() for c in line.strip("|").split("|")] for line in table[2:]}
        assert set(body) == {"freq", "kb"}
        for predictor, cells in body.items():
            for kind, cell in zip(header[2:], cells[2:]):
                want = [r["value"] for r in rows if r["predictor"] == predictor and r["group"] == kind
                        and r["metric"] == metric and r["scope"] == "own" and r["setting"] == "raw"]
                assert cell == f"{want[0]:.2f}", (metric, predictor, kind)
