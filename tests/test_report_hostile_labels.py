"""Labels from the data reach `kbc report`'s page and its CSV tables as text: HTML in a relation's label is shown,
never run, and a label a spreadsheet would run as a formula is written so that it is not one."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser

from cli_support import run_kbc

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
    run = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data),
                            "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["report", str(run)], capsys)
    assert code == 0, err
    page = _Tags()
    page.feed((run / "report" / "report.html").read_text(encoding="utf-8"))
    assert page.scripts == [] and page.handlers == []
    cells = [cell for path in sorted((run / "report" / "tables").glob("*.csv"))
             for row in csv.reader(path.open(encoding="utf-8", newline="")) for cell in row]
    assert any(FORMULA in cell for cell in cells)
    formulas = [c for c in cells if c.startswith(("=", "+", "-", "@")) and not NUMBER.fullmatch(c)]
    assert formulas == []
    assert any(c.startswith("'" + FORMULA) for c in cells)
