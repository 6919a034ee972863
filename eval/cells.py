"""Cells of the tables the tool writes (CSV, TSV, Markdown) from strings it does not control: run folder names,
predictor names, relation labels and subjects from the data.

A spreadsheet runs a CSV cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return as a formula, so such
a cell gets a leading `'` (OWASP's advice for CSV injection); a negative number stays a number, and a lone `-`
(a missing value) stays as it is. A Markdown table
cell is one line without a bare `|`, and its HTML shows as text.
"""

from __future__ import annotations

import html
import math
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


SIGNIFICANT = 12  # digits a CSV float keeps: sums of percentages carry noise past them (28.37499999999996)


def csv_cell(value):
    """`value` as a spreadsheet shows it, never as a formula: strings that would start one get a leading `'`;
    a float keeps `SIGNIFICANT` digits, so float noise (28.37499999999996) is written as the number (28.375)."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, str) and value.startswith(FORMULA_START) and value != "-" and not NUMBER.fullmatch(value):
        return "'" + value
    return value


SMALL_DIGITS = 2  # significant digits a value that is not zero but rounds to zero keeps (0.00027, not 0.000)
FEWEST = 1e-9  # below it such a value is written in e-notation (2.7e-12)


def fixed(value: float, places: int, signed: bool = False) -> str:
    """`value` to `places` decimals, as every text table shows a score (MRR 0.123, P@1 22.03); a value that is not
    zero but rounds to zero keeps `SMALL_DIGITS` significant digits (0.00027, not 0.000), so it is not read as a
    zero, which a table shows only where it is one (a zero-width interval: every fact scored alike). `signed`: with
    its sign, as a difference (+0.25, -0.0040)."""
    sign = "+" if signed else ""
    text = f"{value:{sign}.{places}f}"
    if value == 0 or not math.isfinite(value) or float(text) != 0:
        return text
    if abs(value) < FEWEST:
        return f"{value:{sign}.{SMALL_DIGITS - 1}e}"
    return f"{value:{sign}.{SMALL_DIGITS - 1 - math.floor(math.log10(abs(value)))}f}"


def parameters_text(n: int | None) -> str:
    """A parameter count as people say it: 110M, 1.3B, 4.4K; "-" where none was recorded."""
    if n is None:
        return "-"
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


def byte_size(n: int) -> str:
    """A size as `ls -h --si` and download pages give it: 640 B, 12 kB, 43.1 MB, 3.9 GB (powers of 1,000)."""
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n} B"


def count_of(n: int, unit: str) -> str:
    """'1 fact', '2 queries': a count with its unit, given in the plural (facts, queries, relations), in the right
    number."""
    if n != 1:
        return f"{n} {unit}"
    return f"1 {unit[:-3]}y" if unit.endswith("ies") else f"1 {unit[:-1]}"


def tsv_cell(value) -> str:
    """A tab-separated cell: `csv_cell`, with tabs and line breaks (which would split the row) as spaces."""
    text = "" if value is None else str(value)
    return str(csv_cell(re.sub(r"[\t\r\n]+", " ", text)))


def md_cell(value) -> str:
    """A Markdown table cell: one line, `|` escaped, `&`, `<` and `>` as entities (HTML shows as text), and no link:
    a label `[x](javascript:...)` or `![x](https://tracker)` shows as written, not as a link or a fetched image."""
    text = html.escape(re.sub(r"[\r\n]+", " ", str(value)), quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("](", "]\\(")


def md_row(cells) -> str:
    """`| a | b |` from cells, each escaped by `md_cell`."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def md_cells(line: str) -> list[str]:
    """The cells of a table row `md_row` wrote, as they were before escaping."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [html.unescape(c.strip().replace("]\\(", "](").replace("\\|", "|").replace("\\\\", "\\"))
            for c in UNESCAPED_PIPE.split(inner)]
