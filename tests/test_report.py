"""`kbc report` end to end: a small real run, analysis files written by their contract, the page parsed."""

from __future__ import annotations

import base64
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import lm_fixtures
import pandas as pd
import pytest
from cli_support import run_kbc, run_kbc_captured

from bridge.cli import main
from bridge.report import figures
from bridge.report.sections import merge_bins
from bridge.run.summaries import collect

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests

VOID = {"meta", "img", "br", "hr", "link", "input", "source", "wbr"}
LAMA_FIGURES = {"p_at_k", "p_at_1_relation", "p_at_1_type", "delta_vs_freq"}
LAMA_SECTIONS = ["overview", "scores", "p_at_k", "by_relation", "by_type", "deltas", "correlation", "bins",
                 "rank_variation"]
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
    """Every image is in the page (a PNG data URI: the page alone shows its figures) and non-empty, the same PNG
    beside it with its SVG, linked; returns the figure names."""
    base = html_path.parent
    embedded = []
    for src in page.images:
        assert src.startswith("data:image/png;base64,"), src[:40]
        data = base64.b64decode(src.split(",", 1)[1])
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
        embedded.append(data)
    names = set()
    for link in (link for link in page.links if link.endswith(".svg")):
        svg = base / link
        png = svg.with_suffix(".png")
        assert svg.is_file() and svg.stat().st_size > 1000 and b"<svg" in svg.read_bytes()[:2000]
        assert png.read_bytes() == embedded[len(names)], link  # in page order
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
                                     "p_value": None if undefined else 0.005 * (i + 1), "n": 8})
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
def runs(lama_dir, tmp_path_factory, tiny_models):
    """A LAMA run of freq, the gold KB and two tiny BERTs (T-REx and Google-RE) and a coherency run (T-REx)."""
    root = tmp_path_factory.mktemp("report")
    mp = pytest.MonkeyPatch()
    mp.setenv("KBC_CACHE", str(root / "cache"))
    common = ["--data-dir", str(lama_dir), "--store", str(root / "store"), "--quiet", "--limit", "8"]
    try:
        kbc(["run", "lama", "--corpus", "trex", "google_re", "--relations", "P19", "P36", "P101", "place_of_birth",
             "--predictors", "freq", "gold", f"bert={tiny_models('bert-cased')}",
             f"bert2={tiny_models('bert-cased', 1)}", "--out", str(root / "lama"), *common])
        kbc(["run", "coherency", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq", "gold",
             "--out", str(root / "coherency"), *common])
    finally:
        mp.undo()
    bare = root / "bare"
    shutil.copytree(root / "lama", bare)
    write_analysis(root / "lama")
    return root


@pytest.fixture(scope="module")
def lama_report_made(runs) -> dict:
    """`kbc report` of the LAMA run into its own `report/`, made once for the tests that only read it: its (exit
    status, stdout, stderr) as `result`, and what each figure it saved held as it was saved (`figures.save`
    watched): `drawn` (titles of empty axes, legends inside, legends outside) and `legends` (their labels)."""
    drawn: dict[str, tuple[list, int, int]] = {}
    legends: dict[str, list[str]] = {}
    real = figures.save

    def audit(fig, out, key):
        axes = [ax for ax in fig.axes if ax.get_visible()]
        empty = [ax.get_title() for ax in axes
                 if not (ax.lines or ax.patches or ax.collections or ax.images) and ax.get_xlabel() != ""
                 and not any(other is not ax and other.bbox.bounds == ax.bbox.bounds for other in axes)]
        inside = sum(ax.get_legend() is not None for ax in axes)
        drawn[key] = (empty, inside, len(fig.legends))
        legends[key] = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        return real(fig, out, key)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save", audit)
        result = run_kbc_captured(["report", str(runs / "lama")])
    return {"result": result, "drawn": drawn, "legends": legends, "open": len(figures.plt.get_fignums())}


@pytest.fixture(scope="module")
def lama_report(lama_report_made) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `kbc report` of the LAMA run into its own `report/`."""
    return lama_report_made["result"]


def test_report_has_every_figure_and_valid_html(runs, lama_report):
    run = runs / "lama"
    code, out, err = lama_report
    assert code == 0, err
    html_path = run / "report" / "report.html"
    assert out.strip() == str(html_path)
    page = parse(html_path)
    assert check_figures(html_path, page) == LAMA_FIGURES | ANALYSIS_FIGURES
    assert page.sections == LAMA_SECTIONS
    assert set(page.skipped) == set()
    text = html_path.read_text(encoding="utf-8")
    assert "Spearman ρ" in text and "seconds" in text.lower()
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    for name in LAMA_FIGURES | ANALYSIS_FIGURES:
        assert f"(figures/{name}.png)" in md and f"(figures/{name}.svg)" in md
    assert "| corpus | predictor | answer space | #facts |" in md


def test_missing_analysis_files_give_notes_not_errors(runs, capsys):
    run = runs / "bare"
    code, out, err = run_kbc(["report", str(run), "--out", str(runs / "bare-report"), "--setting", "filtered"],
                             capsys)
    assert code == 0, err
    html_path = Path(out.strip())
    page = parse(html_path)
    assert check_figures(html_path, page) == LAMA_FIGURES
    assert set(page.skipped) == {"correlation", "bins", "rank_variation"}
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
    assert check_figures(html_path, page) == {"coherency_relation", "coherency_type"}
    assert page.sections == ["overview", "scores", "coherency", "by_relation", "by_type"] and not page.skipped
    text = html_path.read_text(encoding="utf-8")
    assert "LAMA Table 2" not in text and "coherency paper Table 1" in text and "−" not in text
    assert text.count("gold (100 by construction) is left out.") == 4  # two figures: alt text and caption
    summary = json.loads((run / "summary.json").read_text())
    gold = next(r for r in summary if r["predictor"] == "gold" and r["group"] == "all" and r["scope"] == "shared"
                and r["setting"] == "raw" and r["metric"] == "coherency_round1")
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "| corpus | predictor | round 1 | round 2 | coherency | c1 | c2 | all correct | instances |" in md
    assert f"| trex | gold | {gold['value']:.2f} |" in md


@pytest.fixture(scope="module")
def kmir_store(tmp_path_factory) -> Path:
    """One graph store for the module's KMIR runs (T-REx P19 and P36): its instance-of list and closure are written
    once; each run keeps its own cache and directory."""
    return tmp_path_factory.mktemp("kmir") / "store"


def test_kmir_run_gets_its_tables_from_the_summary(lama_dir, kmir_store, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "kmir"
    kbc(["run", "kmir", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq", "kb",
         "--questions-per-relation", "5", "--data-dir", str(lama_dir), "--store", str(kmir_store),
         "--quiet", "--out", str(run)])
    capsys.readouterr()
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    page = parse(Path(out.strip()))
    assert page.sections == ["overview", "scores", "by_type", "kmir"] and not page.skipped
    assert "LAMA Table 2" not in Path(out.strip()).read_text(encoding="utf-8")
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    rows = json.loads((run / "summary.json").read_text())
    for metric, caption in (("f1", "*Token F1 (%) per question kind, shared facts*"),
                            ("em", "*Exact match (%) per question kind, shared facts*")):
        table = md.split(caption, 1)[1].strip().split("\n\n", 1)[0].splitlines()
        header = [c.strip() for c in table[0].strip("|").split("|")]
        # the shared scope: freq ranks no choice of the yes/no and reasoning questions, so they are dropped for it
        assert header == ["corpus", "predictor", "triple_completion", "entity_distinction", "all"]
        body = {line.split("|")[2].strip(): [c.strip() for c in line.strip("|").split("|")] for line in table[2:]}
        assert set(body) == {"freq", "kb"}
        for predictor, cells in body.items():
            for kind, cell in zip(header[2:], cells[2:]):
                want = [r["value"] for r in rows if r["predictor"] == predictor and r["group"] == kind
                        and r["metric"] == metric and r["scope"] == "shared" and r["setting"] == "raw"]
                assert cell == f"{want[0]:.2f}", (metric, predictor, kind)
    # on the page, each table's scope notes sit directly under it, never in the section's text above the tables
    html_text = Path(out.strip()).read_text(encoding="utf-8")
    section = html_text.split('<section id="scores">', 1)[1].split("</section>", 1)[0]
    before, *after = section.split("</tbody></table>")
    notes = [f'<p class="tnote"><code>-</code> under {kind} for every predictor: no unit of it was answered by '
             "every predictor (freq answered none; kb did: see the own-facts table).</p>"
             for kind in ("predicate_reasoning", "statement_checking")]
    # the shared F1 and EM tables, then the own-facts tables their notes point to
    assert len(after) == 4 and "for every predictor" not in before
    assert '<p class="tcap">Token F1 (%), setting raw, own facts</p>' in after[1]
    for following in after[:2]:  # the F1 table, then the EM table
        assert following.split("<p class=\"tcap\">", 1)[0].strip().splitlines()[:2] == notes


def test_kmir_report_shows_the_own_facts_beside_the_shared(lama_dir, kmir_store, tmp_path, monkeypatch, capsys,
                                                           tiny_models):
    """bert drops every entity-distinction question and freq the yes/no kinds: the shared scope keeps only
    triple_completion, where the gold KB gets every Q-set right. The report shows the own-facts tables too, as
    summary.md does, where kb fails every predicate-reasoning question."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "kmir"
    kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "P19", "--limit", "10", "--predictors", "freq",
         "kb", f"bert={tiny_models('bert-cased')}", "--data-dir", str(lama_dir), "--store", str(kmir_store), "--quiet",
         "--out", str(run)])
    capsys.readouterr()
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    md = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    rows = json.loads((run / "summary.json").read_text())

    def value(scope: str, predictor: str, group: str, metric: str) -> str:
        return next(f"{r['value']:.2f}" for r in rows if (r["scope"], r["predictor"], r["group"], r["metric"],
                                                          r["setting"]) == (scope, predictor, group, metric, "raw"))

    caption = "Q-set robustness (% of Q-sets, Table 5) and % of questions answered"
    shared = {row[1]: row[2:] for row in md_table(md, f"{caption}, shared facts")[1:]}
    own = {row[1]: row[2:] for row in md_table(md, f"{caption}, own facts")[1:]}
    for scope, table in (("shared", shared), ("own", own)):
        assert set(table) == {"freq", "kb", "bert"}
        for predictor, cells in table.items():
            assert cells == [value(scope, predictor, "all", m) for m in
                             ("robust_all", "robust_partial", "robust_none", "answered")], (scope, predictor)
    assert shared["kb"] == ["100.00", "0.00", "0.00", "20.00"]
    assert own["kb"] == ["0.00", "100.00", "0.00", "100.00"]
    kinds = md_table(md, "Token F1 (%) per question kind, own facts")
    assert kinds[0] == ["corpus", "predictor", "triple_completion", "entity_distinction", "statement_checking",
                        "predicate_reasoning", "all"]
    assert {row[1]: row[2:] for row in kinds[1:]}["kb"] == [
        value("own", "kb", g, "f1") for g in kinds[0][2:]] == ["100.00", "100.00", "100.00", "0.00", "80.00"]
    # the shared tables' notes point to the own-facts tables, which the report holds
    assert "see the own-facts table" in md and "*Token F1 (%), setting raw, own facts*" in md


def test_kmir_scores_per_relation_and_draws_the_delta_asked_for(lama_dir, kmir_store, tmp_path, monkeypatch, capsys):
    """summary.json holds F1/EM per relation (a question's relation, every kind pooled); summary.md's per-relation
    table names relations, not kinds, and says which kinds its questions are of; freq answers no yes/no or
    reasoning question, so the shared questions lose the derived relations and the own-facts per-relation table
    follows (kb's P1376 beside random's), derived relations named as the data or the axioms name them; `--delta
    random kb` draws kb minus random per relation over the questions both answered, headed by the pair asked for,
    relations named and in the figure's order (by the delta), with no object-in-subject column (no answer of a
    question is ranked among object names); counts are `#questions`."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "kmir"
    kbc(["run", "kmir", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq", "random", "kb",
         "--questions-per-relation", "5", "--data-dir", str(lama_dir), "--store", str(kmir_store),
         "--quiet", "--out", str(run)])
    records = {name: [json.loads(line) for path in sorted((run / "predictions" / "trex" / name).glob("*.jsonl"))
                      for line in path.read_text().splitlines()] for name in ("random", "kb")}
    f1: dict[str, dict[str, list[float]]] = {}
    for name, mine in records.items():
        for r in mine:
            assert "dropped" not in r
            f1.setdefault(name, {}).setdefault(r["relation"], []).append(100.0 * r["f1"])
    relations = sorted(f1["kb"])
    assert relations == ["P1376", "P19", "P36", "schema:birthPlace"]
    rows = json.loads((run / "summary.json").read_text())
    got = {(r["predictor"], r["group"]): r for r in rows
           if r["scope"] == "own" and r["metric"] == "f1" and r["setting"] == "raw"}
    for name in ("random", "kb"):
        for rel in relations:
            assert got[(name, rel)]["value"] == pytest.approx(sum(f1[name][rel]) / len(f1[name][rel]))
            assert got[(name, rel)]["n_facts"] == len(f1[name][rel])
    shared_kinds = [g for g in ("triple_completion", "entity_distinction", "statement_checking", "predicate_reasoning")
                    if any(r["scope"] == "shared" and r["metric"] == "f1" and r["setting"] == "raw" and r["group"] == g
                           for r in rows)]
    assert shared_kinds == ["triple_completion", "entity_distinction"]
    summary_md = (run / "summary.md").read_text(encoding="utf-8")
    per_rel = summary_md.split("## Token F1 (%) per relation, shared facts", 1)[1].split("\n## ", 1)[0]
    assert "Per relation: the mean over its questions, of kinds: triple_completion, entity_distinction." in per_rel
    lines = [line for line in per_rel.strip().splitlines() if line.startswith("| trex")]
    assert sorted(line.split("|")[2].strip().split(" ")[0] for line in lines) == ["P19", "P36"]
    own_rel = summary_md.split("## Token F1 (%) per relation, own facts", 1)[1].split("\n## ", 1)[0]
    assert ("Per relation: the mean over its questions, of kinds: triple_completion, entity_distinction, "
            "statement_checking, predicate_reasoning.") in own_rel
    own_lines = {line.split("|")[2].strip().split(" ")[0]: [c.strip() for c in line.strip("|").split("|")]
                 for line in own_rel.strip().splitlines() if line.startswith("| trex")}
    assert sorted(own_lines) == relations
    assert own_lines["P1376"][:4] == ["trex", "P1376 capital of", "-", str(len(f1["kb"]["P1376"]))]
    assert own_lines["schema:birthPlace"][1] == "schema:birthPlace birth place"  # derived: named by the axioms
    assert own_lines["P1376"][4:] == ["-", f"{got[('random', 'P1376')]['value']:.2f} ± "
                                      f"{got[('random', 'P1376')]['stderr']:.2f}", "0.00 ± 0.00"]
    # the kinds stay the columns of the main tables
    assert "| corpus | predictor | answer space | #questions | entity_distinction |" in summary_md

    capsys.readouterr()
    code, _, err = run_kbc(["report", str(run), "--delta", "random", "kb", "--out", str(tmp_path / "rep")], capsys)
    assert code == 0, err
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## Per-relation deltas of kb against random — E-BERT Fig. 2" in md
    table = md_table(md, "Token F1 deltas against random")
    assert table[0] == ["corpus", "relation", "#questions", "random", "kb − random"]
    names = {"P19": "P19 place of birth", "P36": "P36 capital", "P1376": "P1376 capital of",
             "schema:birthPlace": "schema:birthPlace birth place"}
    want = []
    for rel in relations:
        base, other = sum(f1["random"][rel]) / len(f1["random"][rel]), sum(f1["kb"][rel]) / len(f1["kb"][rel])
        want.append((other - base, rel, ["trex", names.get(rel, rel), str(len(f1["kb"][rel])), f"{base:.2f}",
                                         f"{other - base:+.2f}"]))
    assert table[1:] == [row for _, _, row in sorted(want)]
    assert "relations in the figure's order top to bottom, by the mean delta" in md and "object in subject" not in md
    assert (tmp_path / "rep" / "figures" / "delta_kb_vs_random.svg").is_file()
    assert md_table(md, "trex: Token F1 (%), shared facts [95% interval]")[0][-1] == "#questions"
    shared = md_table(md, "Token F1 (%) per relation (mean over its questions, of kinds: triple_completion, "
                          "entity_distinction), shared facts")
    assert shared[0] == ["corpus", "relation", "type", "#questions", "freq", "random", "kb"]
    assert sorted(row[1] for row in shared[1:]) == ["P19 place of birth", "P36 capital"]
    own = md_table(md, "Token F1 (%) per relation (mean over its questions, of kinds: triple_completion, "
                       "entity_distinction, statement_checking, predicate_reasoning), own facts")
    counts = {rel: {r["n_facts"] for r in rows if (r["scope"], r["metric"], r["setting"], r["group"]) ==
                    ("own", "f1", "raw", rel)} for rel in relations}
    assert counts["P19"] != {len(f1["kb"]["P19"])}  # freq answered fewer P19 questions than kb
    assert {row[1]: (row[3], row[6]) for row in own[1:]} == {  # a count beside each score where the counts differ
        names.get(rel, rel): ("–".join(str(n) for n in sorted(counts[rel])[::max(1, len(counts[rel]) - 1)]),
                              f"{got[('kb', rel)]['value']:.2f} ± {got[('kb', rel)]['stderr']:.2f}"
                              + (f" ({len(f1['kb'][rel])})" if len(counts[rel]) > 1 else ""))
        for rel in relations}
    assert "- #questions: fewest–most where the predictors answered different numbers of a relation's questions; " \
           "each score's own count in parentheses." in md
    assert "whatever their kind" not in md
    assert "#facts" not in md.split("## KMIR scores", 1)[1]


def test_coherency_report_shows_the_relations_and_types_only_own_facts_hold(runs, capsys):
    """freq answers no P19 fact: the shared facts hold P36 alone, so the report shows each predictor's own facts
    per relation and type too (as summary.md does) instead of saying the run scored one relation."""
    run = runs / "coherency-no-p19"
    shutil.copytree(runs / "coherency", run, ignore=shutil.ignore_patterns("report*", ".kbc-records"))
    first = run / "predictions" / "trex" / "freq" / "first" / "P19.jsonl"
    keep = ("uid", "relation", "subject", "subject_id", "gold", "gold_id")
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    first.write_text("".join(json.dumps({**{k: r[k] for k in keep if k in r}, "dropped": "subject is not a single "
                                         "token of the model"}) + "\n" for r in lines))
    (run / "predictions" / "trex" / "freq" / "second" / "P19.jsonl").unlink()
    collect(run)
    rows = json.loads((run / "summary.json").read_text())
    own = {(r["predictor"], r["group"]): r["value"] for r in rows
           if r["scope"] == "own" and r["metric"] == "coherency" and r["setting"] == "raw"}
    assert {g for (p, g) in own if p == "gold"} == {"P19", "P36", "N-1", "1-1", "all"}
    code, _, err = run_kbc(["report", str(run), "--delta", "freq", "gold", "--out", str(run / "report")], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "one relation scored" not in md
    table = md_table(md, "Coherency (%) per relation, own facts")
    assert [row[:3] for row in table] == [["corpus", "relation", "type"], ["trex", "P36 capital", "1-1"],
                                          ["trex", "P19 place of birth", "N-1"]]
    assert table[2][4:] == ["-", f"{own[('gold', 'P19')]:.2f} ± 0.00"]
    types = md_table(md, "trex: Coherency (%), own facts [95% interval]")
    assert types[0] == ["predictor", "1-1", "N-1", "all", "#facts"]
    assert [row[0] for row in types[1:]] == ["freq", "gold"] and types[1][2] == "-"  # gold stays in the tables
    assert types[2][2].startswith(f"{own[('gold', 'N-1')]:.2f} [")
    assert md_table(md, "trex: Coherency (%), shared facts [95% interval]")[0] == ["predictor", "1-1", "all",
                                                                                   "#facts"]
    # the delta names the pair asked for, not "the best KB predictor (freq)"
    assert "## Per-relation deltas of gold against freq — coherency" not in md
    assert [line for line in md.splitlines() if line.startswith("## Per-relation deltas")] == [
        "## Per-relation deltas of gold against freq — E-BERT Fig. 2"]


def shared_values(run: Path, metric: str = "p@1") -> dict[tuple[str, str, str], float]:
    rows = json.loads((run / "summary.json").read_text())
    return {(r["corpus"], r["group"], r["predictor"]): r["value"] for r in rows
            if r["metric"] == metric and r["setting"] == "raw" and r["scope"] == "shared"}


def md_table(md: str, caption: str) -> list[list[str]]:
    block = md.split(f"*{caption}*", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    return [[c.strip() for c in line.strip("|").split("|")] for line in block if not line.startswith("|---")]


def test_default_delta_is_every_lm_against_the_best_kb_not_gold(runs, lama_report):
    run = runs / "lama"
    code, out, err = lama_report
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    figs = sorted(p.name for p in (run / "report" / "figures").glob("delta_*.png"))
    assert figs == ["delta_vs_freq.png"]  # one figure, both LMs, freq (the best KB but gold) as the baseline
    table = md_table(md, "P@1 deltas against freq")
    assert table[0] == ["corpus", "relation", "#facts", "freq", "bert − freq", "bert2 − freq",
                        "object in subject (%)"]
    values = shared_values(run)
    names = {"P101": "P101 field of work", "P19": "P19 place of birth", "P36": "P36 capital"}

    def mean_delta(rel: str) -> float:
        return sum(values[("trex", rel, lm)] - values[("trex", rel, "freq")] for lm in ("bert", "bert2")) / 2

    # named, in the figure's order (by the mean delta); Google-RE has one relation: no panel
    assert [r[1] for r in table[1:]] == [names[rel] for rel in sorted(names, key=lambda r: (mean_delta(r), r))]
    for row in table[1:]:
        rel = row[1].split(" ")[0]
        assert row[3] == f"{values[('trex', rel, 'freq')]:.2f}"
        assert row[4] == f"{values[('trex', rel, 'bert')] - values[('trex', rel, 'freq')]:+.2f}"
        assert row[5] == f"{values[('trex', rel, 'bert2')] - values[('trex', rel, 'freq')]:+.2f}"
    assert "gold −" not in md and "− gold" not in md


def test_correlation_is_a_compact_matrix_with_the_full_table_as_csv(runs, lama_report):
    code, out, err = lama_report
    assert code == 0, err
    md = (runs / "lama" / "report" / "report.md").read_text(encoding="utf-8")
    caption = ("trex: Spearman ρ between a fact's P@1 (0/1) and each statistic; * p < 0.01; -: undefined (constant "
               "values or under 3 facts); left out (P@1 constant, ρ undefined): gold")
    table = md_table(md, caption)
    assert table[0] == ["predictor", "sm", "om", "cooc_paragraphs", "cooc_sentences", "st", "swp", "socs", "n"]
    # write_analysis: coefficient 0.1 i - 0.2, p 0.005 (i + 1): only the first statistic is under 0.01
    expected = ["-0.200*", "-0.100", "+0.000", "+0.100", "+0.200", "+0.300", "+0.400", "8"]
    assert table[1:] == [["freq", *expected], ["bert", *expected], ["bert2", *expected]]
    assert "[correlation.csv](correlation.csv)" in md
    full = pd.read_csv(runs / "lama" / "report" / "correlation.csv")
    assert len(full) == 4 * 7 * 2 * 2  # predictors x statistics x targets x methods, raw
    assert full.columns.tolist() == ["corpus", "predictor", "setting", "statistic", "target", "method",
                                     "coefficient", "p_value", "n"]
    assert set(full["setting"]) == {"raw"}


def test_small_cooccurrence_bins_are_merged():
    lines = {"a": [("0", 30, 10.0), ("1", 5, 20.0), ("2-3", 10, 50.0), ("4-7", 25, 40.0), ("8-15", 3, 100.0)],
             "b": [("0", 30, 0.0), ("1", 5, None), ("2-3", 10, 0.0), ("4-7", 25, 0.0), ("8-15", 3, 0.0)]}
    merged = merge_bins(lines)
    assert merged["a"] == [("0", 30, 10.0), ("1-15", 43, pytest.approx(100 * (1 + 5 + 10 + 3) / 43))]
    assert merged["b"][1][:2] == ("1-15", 43) and merged["b"][1][2] == 0.0


def test_report_page_shows_merged_bins(runs, lama_report):
    code, out, err = lama_report
    assert code == 0, err
    md = (runs / "lama" / "report" / "report.md").read_text(encoding="utf-8")
    # write_analysis: bins 0, 1, 2-3 of 3 facts each (P@1 0, 25, 50) and 4-7 empty: under 20 facts in all
    assert md_table(md, "trex, `cooc_paragraphs`: P@1 (%) per bin, over each predictor's own answered facts") == [
        ["bin", "facts", "freq", "gold", "bert", "bert2"], ["0-7", "9", "25.00", "25.00", "25.00", "25.00"]]
    assert f"analysis/bins.json predates bins over the facts every predictor answered; `kbc analyze correlation " \
        f"{runs / 'lama'}` writes them." in md


def test_bins_are_over_the_facts_every_predictor_answered_or_say_whose_facts(runs, capsys):
    """bins.json with `shared` rows: the table is over them, one `facts` column for all. Without (an older file)
    where predictors answered different facts: each cell says how many facts it is over."""
    run = runs / "bins-scoped"
    shutil.copytree(runs / "lama", run, ignore=shutil.ignore_patterns("report*"))
    own = [{"corpus": "trex", "predictor": p, "setting": "raw", "statistic": "sm", "bin": b, "low": lo, "high": hi,
            "n": n, "p@1": v, "scope": "own"}
           for p, cells in (("freq", ((66, 13.64), (34, 11.76))), ("bert", ((50, 0.0), (28, 3.57))))
           for (b, lo, hi), (n, v) in zip((("0-1", 0, 2), ("2-31", 2, 32)), cells)]
    shared = [{**r, "scope": "shared", "n": n, "p@1": v}
              for r, (n, v) in zip(own, ((50, 18.0), (28, 14.29), (50, 0.0), (28, 3.57)))]
    (run / "analysis" / "bins.json").write_text(json.dumps(own + shared))
    code, _, err = run_kbc(["report", str(run), "--out", str(run / "report")], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert md_table(md, "trex, `sm`: P@1 (%) per bin, over the facts every predictor answered") == [
        ["bin", "facts", "freq", "bert"], ["0-1", "50", "18.00", "0.00"], ["2-31", "28", "14.29", "3.57"]]
    (run / "analysis" / "bins.json").write_text(json.dumps([{k: v for k, v in r.items() if k != "scope"}
                                                            for r in own]))
    code, _, err = run_kbc(["report", str(run), "--out", str(run / "report")], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert md_table(md, "trex, `sm`: P@1 (%) per bin, over each predictor's own answered facts; each cell's facts "
                        "in parentheses (the predictors answered different facts)") == [
        ["bin", "facts", "freq", "bert"], ["0-1", "-", "13.64 (66)", "0.00 (50)"],
        ["2-31", "-", "11.76 (34)", "3.57 (28)"]]


def test_figures_have_no_empty_axes_and_legends_outside(lama_report_made):
    code, out, err = lama_report_made["result"]
    assert code == 0, err
    drawn, legends = lama_report_made["drawn"], lama_report_made["legends"]
    assert set(drawn) == LAMA_FIGURES | ANALYSIS_FIGURES
    for key, (empty, inside, outside) in drawn.items():
        assert empty == [] and inside == 0 and outside == 1, key
    for key in LAMA_FIGURES:  # gold scores 100 by construction: tables only
        assert legends[key] == ["freq", "bert", "bert2"] if key != "delta_vs_freq" else ["bert", "bert2"], key
    assert lama_report_made["open"] == 0


def test_upper_bounds_are_marked(runs, capsys):
    run = runs / "oracle"
    shutil.copytree(runs / "bare", run)
    config = json.loads((run / "config.json").read_text())
    config["predictor_specs"]["freq"]["spec"] = "re-oracle"  # the labelling reads the spec a predictor was built from
    (run / "config.json").write_text(json.dumps(config))
    collect(run)  # scored as a run of that spec is
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "| freq † | KB (upper bound) | re-oracle |" in md
    assert "| gold | KB (reference: 100 by construction) | gold |" in md
    assert "| trex | freq † | " in md
    assert md.count("† upper bound, not a baseline: `freq` extracts from the test facts' own sentences") >= 2


def test_random_is_a_baseline_never_an_lm_in_deltas(runs, capsys):
    run = runs / "random"
    shutil.copytree(runs / "bare", run)
    config = json.loads((run / "config.json").read_text())
    config["predictor_specs"]["bert2"]["spec"] = "random"  # the side reads the spec a predictor was built from
    (run / "config.json").write_text(json.dumps(config))
    collect(run)  # scored as a run of that spec is
    code, out, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "| bert2 | BASELINE | random |" in md and "| bert | LM |" in md
    assert md_table(md, "P@1 deltas against freq")[0] == ["corpus", "relation", "#facts", "freq",
                                                          "bert − freq", "object in subject (%)"]
    assert "bert2 − freq" not in md


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_out_refuses_folders_it_does_not_own(runs, tmp_path, capsys):
    """A folder of the user's files (a table, a figure, a draft report), a run directory and a data folder: one
    error line, nothing written, nothing removed."""
    results = tmp_path / "results"
    (results / "figures").mkdir(parents=True)
    (results / "my_table.csv").write_text("a,b\n")
    (results / "figures" / "mine.png").write_bytes(b"png")
    (results / "report.md").write_text("my draft\n")
    data = tmp_path / "data" / "lmkbc2024"
    data.mkdir(parents=True)
    (data / "train.jsonl").write_text("{}\n")
    other = runs / "coherency"
    for target, expected in (
        (results, f"error: --out {results} holds files `kbc report` did not write; name a new or empty folder (the "
                  "report writes only into folders of its own)\n"),
        (data, f"error: --out {data} holds files `kbc report` did not write; name a new or empty folder (the report "
               "writes only into folders of its own)\n"),
        (other, f"error: --out {other} is inside the run directory {other.resolve()}; write the report to a new "
                f"folder, or leave --out out (it writes {runs / 'lama' / 'report'})\n"),
        (other / "report", f"error: --out {other / 'report'} is inside the run directory {other.resolve()}; write the "
                           f"report to a new folder, or leave --out out (it writes {runs / 'lama' / 'report'})\n"),
    ):
        watched = other if target.is_relative_to(other) else target
        kept = _files(watched)
        code, out, err = run_kbc(["report", str(runs / "lama"), "--out", str(target)], capsys)
        assert (code, out, err) == (2, "", expected)
        assert _files(watched) == kept


def test_a_report_failing_midway_leaves_the_earlier_one_whole(runs, tmp_path, capsys, monkeypatch):
    """A disk filling up after the first figure of a second report: one error line, and the folder holds the first
    report as it was (no page beside a figure of the second, nothing half written left in it)."""
    folder = tmp_path / "mine"
    code, out, err = run_kbc(["report", str(runs / "lama"), "--out", str(folder)], capsys)
    assert code == 0, err
    kept = _files(folder)
    real, saved = figures.save, []

    def fill_up(fig, out, key):
        if saved:
            raise OSError(28, "No space left on device")
        fig.suptitle("drawn by the second report")  # unlike the first report's figure, whatever the data
        saved.append(key)
        return real(fig, out, key)

    monkeypatch.setattr(figures, "save", fill_up)
    code, out, err = run_kbc(["report", str(runs / "lama"), "--out", str(folder)], capsys)
    assert (code, out) == (2, "") and err.startswith("error: ") and err.count("\n") == 1, err
    assert saved and _files(folder) == kept
    assert sorted(p.name for p in folder.iterdir()) == sorted({name.split("/")[0] for name in kept})


def test_out_cleans_only_what_the_report_wrote(runs, tmp_path, capsys):
    """A second report into a folder of its own removes the figures and tables of the first that it does not draw,
    and keeps every file it did not write; so does a report into the run's own `report/` folder."""
    folder = tmp_path / "mine"
    code, out, err = run_kbc(["report", str(runs / "lama"), "--out", str(folder)], capsys)
    assert code == 0, err
    assert {"figures/correlation.png", "correlation.csv"} <= set(_files(folder))
    (folder / "notes.md").write_text("keep\n")
    (folder / "figures" / "mine.svg").write_text("<svg/>")
    (folder / "extra.csv").write_text("x\n")
    code, out, err = run_kbc(["report", str(runs / "bare"), "--out", str(folder)], capsys)
    assert code == 0, err
    names = set(_files(folder))
    assert {"notes.md", "figures/mine.svg", "extra.csv", "report.html", "report.md"} <= names
    assert not names & {"figures/correlation.png", "figures/correlation.svg", "correlation.csv"}
    assert {f"figures/{n}.{x}" for n in LAMA_FIGURES for x in ("png", "svg")} <= names
    own = json.loads((folder / ".kbc-report.json").read_text())["files"]
    assert own == sorted(names - {"notes.md", "figures/mine.svg", "extra.csv", ".kbc-report.json"})
    run = tmp_path / "run"
    shutil.copytree(runs / "bare", run, ignore=shutil.ignore_patterns("report"))
    (run / "report" / "figures").mkdir(parents=True)
    (run / "report" / "figures" / "mine.png").write_bytes(b"png")
    (run / "report" / "table.csv").write_text("a,b\n")
    for _ in range(2):
        code, out, err = run_kbc(["report", str(run)], capsys)
        assert (code, out) == (0, f"{run / 'report' / 'report.html'}\n"), err
        assert (run / "report" / "figures" / "mine.png").read_bytes() == b"png"
        assert (run / "report" / "table.csv").read_text() == "a,b\n"


def test_gold_reference_stays_in_the_tables_and_out_of_the_figures(runs, lama_report):
    """The gold KB (100 by construction) is left out of the P@k and per-type figures, whose captions say so, and
    kept in the tables beside them, with the values summary.json and curves.json hold."""
    code, out, err = lama_report
    assert code == 0, err
    run = runs / "lama"
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    summary = json.loads((run / "summary.json").read_text())
    shared = {(r["corpus"], r["group"]): r["value"] for r in summary if r["predictor"] == "gold"
              and r["scope"] == "shared" and r["setting"] == "raw" and r["metric"] == "p@1"}
    curves = json.loads((run / "curves.json").read_text())
    at = {(c["corpus"], c["k"]): c["value"] for c in curves if c["predictor"] == "gold" and c["setting"] == "raw"
          and c.get("scope", "shared") == "shared"}
    assert f"| trex | gold | {at[('trex', 1)]:.2f} | {at[('trex', 10)]:.2f} | {at[('trex', 100)]:.2f} |" in md
    table = md_table(md, "trex: P@1 (%), shared facts [95% interval]")
    gold = next(row for row in table if row[0] == "gold")
    assert gold[1:-1] == [f"{shared[('trex', g)]:.2f} [100.00, 100.00]" for g in table[0][1:-1]]
    assert "gold (100 by construction) is left out." in md
