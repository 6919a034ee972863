"""The report as one self-contained HTML page and as Markdown, both from the same sections.

The HTML has its style inline, no scripts or web fonts, and its figures embedded as PNG data (so the page alone,
mailed or moved, shows everything); each figure links to its SVG beside it (`figures/`), as the Markdown twin links
its PNGs. Warnings (numbers over few of what the runs scored) stand above every section. A skipped section is kept,
with a note saying what is missing and which command produces it.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from eval.cells import md_cells, md_row


@dataclass
class Table:
    head: list[str]
    rows: list[list[str]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)  # shown directly under the table (why a column is `-`)


@dataclass
class Figure:
    key: str
    caption: str
    png: Path
    svg: Path


@dataclass
class Section:
    key: str
    title: str
    source: str = ""  # the paper figure or table this section reproduces
    text: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    skipped: str | None = None  # why the section is empty, and the command that fills it
    links: list[tuple[str, Path]] = field(default_factory=list)  # files beside the page: (what it holds, path)
    footnotes: list[str] = field(default_factory=list)  # below the tables (what a † means)


def tables_from_markdown(text: str, caption: str = "") -> list[Table]:
    """Pipe tables (as `eval.report` writes them) back into rows, one Table per block; the `- ` lines that
    follow a block are its notes."""
    out: list[Table] = []
    block: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        line = line.strip()
        if line.startswith("|"):
            cells = md_cells(line)
            if not all(set(c) <= {"-", ":"} and c for c in cells):
                block.append(cells)
            continue
        if block:
            out.append(Table(block[0], block[1:], caption if not out else ""))
            block = []
        if line.startswith("- ") and out:
            out[-1].notes.append(line[2:])
    return out


CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """HTML of a line of Markdown-ish text: escaped, with `code` spans."""
    parts = CODE.split(text)
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def _numeric(cell: str) -> bool:
    return bool(re.fullmatch(r"[-+−]?[\d,]*\.?\d+(e[-+]?\d+)?%?|-|–", cell.strip()))


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d232a;
background:#fafbfc;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.25em;margin:34px 0 6px;border-bottom:1px solid #d9dee4;
padding-bottom:4px}
.meta{color:#56606b;font-size:.92em}.source{color:#56606b;font-size:.85em;font-weight:normal}
nav ol{columns:2;font-size:.92em;padding-left:20px}
table{border-collapse:collapse;margin:10px 0 16px;font-size:.86em;background:#fff}
th,td{border:1px solid #d9dee4;padding:3px 8px;text-align:left}th{background:#eef1f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.tcap{color:#56606b;margin:14px 0 -6px;font-size:.86em}.tnote{color:#3b444d;font-size:.86em;margin:-10px 0 12px}
figure{margin:12px 0 20px;background:#fff;border:1px solid #e3e7eb;padding:8px;overflow-x:auto}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.86em;color:#3b444d;margin-top:6px}
.footnote{color:#3b444d;font-size:.86em;margin-top:-6px}
.warning{background:#fdecea;border-left:4px solid #c62828;padding:8px 12px;font-weight:600}
.note{background:#eef4fb;border-left:4px solid #3a6ea5;padding:8px 12px;font-size:.92em}
.skipped{background:#fff8e5;border-left:4px solid #e0a800;padding:8px 12px;font-size:.92em}
code{background:#eef1f4;padding:1px 4px;border-radius:3px;font-size:.92em}
"""


def _html_table(table: Table) -> str:
    parts = [f'<p class="tcap">{_inline(table.caption)}</p>'] if table.caption else []
    parts.append("<table>")
    parts.append("<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.head) + "</tr></thead>")
    parts.append("<tbody>")
    for row in table.rows:
        cells = "".join(f'<td class="n">{html.escape(c)}</td>' if _numeric(c) else f"<td>{html.escape(c)}</td>"
                        for c in row)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</tbody></table>")
    parts += [f'<p class="tnote">{_inline(n)}</p>' for n in table.notes]
    return "\n".join(parts)


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else path.as_posix()


def _png_data(path: Path) -> str:
    """A PNG as a data URI: the page carries its figures."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render_html(title: str, meta: list[str], sections: list[Section], base: Path, warnings: list[str] = (),
                notes: list[str] = ()) -> str:
    """The page; `base` is the folder the HTML is written to (SVG links are relative to it). `notes`: what a reader
    must know of the runs before reading a number (one scored under an earlier data reading), under the meta lines."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>", "<main>",
           f"<h1>{html.escape(title)}</h1>"]
    out += [f'<p class="meta">{_inline(line)}</p>' for line in meta]
    out += [f'<p class="note">Note: {_inline(n)}</p>' for n in notes]
    out += [f'<p class="warning">Warning: {_inline(w)}</p>' for w in warnings]
    out.append("<nav><ol>" + "".join(f'<li><a href="#{s.key}">{html.escape(s.title)}</a>'
                                     + (" (skipped)" if s.skipped else "") + "</li>" for s in sections)
               + "</ol></nav>")
    for s in sections:
        source = f' <span class="source">{html.escape(s.source)}</span>' if s.source else ""
        out.append(f'<section id="{s.key}">')
        out.append(f"<h2>{html.escape(s.title)}{source}</h2>")
        if s.skipped:
            out.append(f'<p class="skipped">Skipped: {_inline(s.skipped)}</p>')
        out += [f"<p>{_inline(p)}</p>" for p in s.text]
        for fig in s.figures:
            svg = _rel(fig.svg, base)
            out.append(f'<figure id="fig-{fig.key}"><img src="{_png_data(fig.png)}" alt="{html.escape(fig.caption)}">'
                       f"<figcaption>{_inline(fig.caption)} "
                       f'(<a href="{html.escape(svg)}">SVG</a>)</figcaption></figure>')
        out += [_html_table(t) for t in s.tables]
        out += [f'<p class="download"><a href="{html.escape(_rel(path, base))}">{html.escape(path.name)}</a>: '
                f"{_inline(what)}</p>" for what, path in s.links]
        out += [f'<p class="footnote">{_inline(n)}</p>' for n in s.footnotes]
        out.append("</section>")
    out += ["</main>", "</body>", "</html>", ""]
    return "\n".join(out)


def _md_table(table: Table) -> list[str]:
    lines = [f"*{table.caption}*", ""] if table.caption else []
    lines.append(md_row(table.head))
    lines.append("|" + "---|" * len(table.head))
    lines += [md_row(row) for row in table.rows]
    lines += ["", *(f"- {n}" for n in table.notes)] if table.notes else []
    return [*lines, ""]


def render_markdown(title: str, meta: list[str], sections: list[Section], base: Path, warnings: list[str] = (),
                    notes: list[str] = ()) -> str:
    out = [f"# {title}", ""]
    out += [f"{line}  " for line in meta]
    out.append("")
    for n in notes:
        out += [f"> **Note:** {n}", ""]
    for w in warnings:
        out += [f"> **Warning:** {w}", ""]
    for s in sections:
        out += [f"## {s.title}" + (f" — {s.source}" if s.source else ""), ""]
        if s.skipped:
            out += [f"> Skipped: {s.skipped}", ""]
        for p in s.text:
            out += [p, ""]
        for fig in s.figures:
            out += [f"![{fig.caption}]({_rel(fig.png, base)})", "", f"{fig.caption} ([SVG]({_rel(fig.svg, base)}))",
                    ""]
        for t in s.tables:
            out += _md_table(t)
        for what, path in s.links:
            out += [f"[{path.name}]({_rel(path, base)}): {what}", ""]
        for n in s.footnotes:
            out += [n, ""]
    return "\n".join(out).rstrip() + "\n"
