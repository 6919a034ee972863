"""Labels from the data reach `kbc report`'s page and its CSV tables as text: HTML in a relation's label is shown,
never run, and a label a spreadsheet would run as a formula is written so that it is not one."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser

from cli_support import run_kbc, run_labelled

from bridge.report import mpl_config
from eval.cells import NUMBER

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
FORMULA = '=HYPERLINK("x","y")'


class _Tags(HTMLParser):
    """The tags and event-handler attributes a browser would build from the page."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list = []
        self.handlers: list = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts.append(attrs)
        self.handlers += [(tag, k) for k, _ in attrs if k.startswith("on")]


def test_labels_with_html_and_formulas_are_text_on_the_page_and_in_the_csv_tables(tmp_path, capsys):
    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    relations = [{"relation": "X1", "template": "[X] likes [Y] .", "label": IMG, "type": "N-M"},
                 {"relation": FORMULA, "template": "[X] drinks [Y] .", "label": "@SUM(A1)", "type": "N-1"}]
    (data / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in relations))
    facts = [(SCRIPT, "tea"), ("@SUM(A1)", "tea"), ("+cmd", "coffee"), ("-2+3", FORMULA)]
    for r in relations:
        (data / "TREx" / f"{r['relation']}.jsonl").write_text(
            "".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n" for s, o in facts))
    run = _run_and_report(data, tmp_path / "run", capsys)
    page = _Tags()
    page.feed((run / "report" / "report.html").read_text(encoding="utf-8"))
    assert page.scripts == [] and page.handlers == []
    cells = [cell for path in sorted((run / "report" / "tables").glob("*.csv"))
             for row in csv.reader(path.open(encoding="utf-8", newline="")) for cell in row]
    assert any(FORMULA in cell for cell in cells)
    formulas = [c for c in cells if c.startswith(("=", "+", "-", "@")) and not NUMBER.fullmatch(c)]
    assert formulas == []
    assert any(c.startswith("'" + FORMULA) for c in cells)


def test_a_label_written_as_a_markdown_link_is_text_in_the_markdown_tables(tmp_path, capsys):
    """`summary.md` and `report.md` are opened in Markdown viewers: a relation label `[x](javascript:...)` was a
    link there, and `![x](https://...)` an image fetched from that server when the file was opened."""
    import markdown

    data = tmp_path / "lama"
    (data / "TREx").mkdir(parents=True)
    link, image = "[x](javascript:alert(1))", "![t](https://example.com/pixel.png)"
    relations = [{"relation": "X1", "template": "[X] likes [Y] .", "label": link},
                 {"relation": "X2", "template": "[X] drinks [Y] .", "label": image}]
    (data / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in relations))
    for r in relations:
        (data / "TREx" / f"{r['relation']}.jsonl").write_text(json.dumps({"sub_label": "A", "obj_label": "b"}) + "\n")
    run = _run_and_report(data, tmp_path / "run", capsys)
    for path in (run / "summary.md", run / "report" / "report.md"):
        rendered = _Rendered()
        rendered.feed(markdown.markdown(path.read_text(encoding="utf-8"), extensions=["tables"]))
        assert link in rendered.text and image in rendered.text, path
        # the report links its own figures by relative path; nothing else is a link or an image
        assert [h for h in rendered.links + rendered.images if not h.startswith("figures/")] == [], path


class _Rendered(HTMLParser):
    """Links and image sources of rendered Markdown."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.text = ""

    def handle_data(self, data):
        self.text += data

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.links.append(dict(attrs).get("href", ""))
        if tag == "img":
            self.images.append(dict(attrs).get("src", ""))


def _run_and_report(data, run, capsys):
    """`kbc run` (freq) over the corpus in `data`, then `kbc report` of it; the run folder."""
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data),
                            "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    return run


def test_labels_in_scripts_the_font_lacks_give_one_warning(tmp_path, capsys, recwarn, monkeypatch):
    """Relation labels in Japanese and Korean drew as boxes, and matplotlib warned once per character and figure
    (with its own source lines): the report says once which characters its figures could not draw and why."""
    monkeypatch.setattr(mpl_config, "font_families", lambda: ["DejaVu Sans"])  # a machine without Noto fonts
    relations = [{"relation": "ja", "template": "[X]の首都は[Y]です。", "label": "首都"},
                 {"relation": "ko", "template": "[X]의 수도는 [Y]이다 .", "label": "수도"}]
    run_labelled(tmp_path, relations, [("a", "b"), ("c", "b")], ["freq"], capsys)
    code, _, err = run_kbc(["report", str(tmp_path / "run")], capsys)
    assert code == 0, err
    said = [line for line in err.splitlines() if "has no glyph" in line]
    assert said == ["warning: the figures' font (DejaVu Sans) has no glyph for 4 characters of the labels drawn (CJK, "
                    "Hangul: 都 首 도 수); they show as boxes in the figures (the tables show them); install a Noto "
                    "Sans font covering these scripts (e.g. Noto Sans CJK JP, Noto Sans Devanagari: the fonts-noto "
                    "packages), then run `kbc cache clear matplotlib` so that the next report lists the fonts again"]
    assert [w for w in recwarn if "missing from font" in str(w.message)] == []
    assert "has no glyph for 4 characters" in (tmp_path / "run" / "report" / "report.html").read_text(encoding="utf-8")


def test_installed_noto_fonts_draw_what_dejavu_sans_lacks(monkeypatch):
    """The figures' fonts: DejaVu Sans first, so labels it covers draw as ever, then every installed Noto Sans
    family (not its monospaced ones) for the characters it lacks."""
    from types import SimpleNamespace

    import matplotlib
    from matplotlib import font_manager

    fonts = [SimpleNamespace(name=n) for n in ("Noto Sans Mono", "DejaVu Sans", "Noto Sans Devanagari",
                                                "Noto Sans CJK JP", "Liberation Sans", "Noto Sans CJK JP")]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", fonts)
    assert mpl_config.font_families() == ["DejaVu Sans", "Noto Sans CJK JP", "Noto Sans Devanagari"]
    with mpl_config.report_style():
        assert matplotlib.rcParams["font.family"] == ["DejaVu Sans", "Noto Sans CJK JP", "Noto Sans Devanagari"]
    assert matplotlib.rcParams["font.family"] != ["DejaVu Sans", "Noto Sans CJK JP", "Noto Sans Devanagari"]


def test_missing_glyphs_note_names_the_font_list_matplotlib_reads(tmp_path, monkeypatch):
    """`kbc cache clear matplotlib` makes matplotlib list the fonts again only where its folder is kbc's: with
    MPLCONFIGDIR naming another, the note names that folder's font list instead."""
    from bridge.report import figures

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "cache" / "matplotlib"))
    assert figures.missing_glyphs_note({"DejaVu Sans": {"首"}}).endswith(
        "then run `kbc cache clear matplotlib` so that the next report lists the fonts again")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mine"))
    note = figures.missing_glyphs_note({"DejaVu Sans": {"首"}})
    assert note.endswith(f"then delete the fontlist-*.json files in MPLCONFIGDIR ({tmp_path / 'mine'}) so that the "
                         "next report lists the fonts again"), note


def test_a_missing_cell_and_a_negative_number_stay_as_they_are_in_the_csv_tables(tmp_path):
    """A report table's missing cell is `-` and a delta `-0.50`: neither is a formula a spreadsheet would run, so
    neither gets the leading `'` that real formula starts get."""
    from bridge.cli.report import write_tables
    from bridge.report.page import Section, Table

    table = Table(["relation", "A", "B - A"], [["P19", "-", "-0.50"], ["=1+2", "+0.25", "-x"], ["@cmd", "12.5", "-"]])
    (path,) = write_tables([Section("deltas", "Deltas", tables=[table])], tmp_path)
    rows = list(csv.reader(path.open(encoding="utf-8", newline="")))
    assert rows[1:] == [["P19", "-", "-0.50"], ["'=1+2", "+0.25", "'-x"], ["'@cmd", "12.5", "-"]]
