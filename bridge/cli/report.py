"""`kbc report`: a run's tables and figures as one HTML page and its Markdown twin.

Reads the run directory (and a second one with `--compare`); writes only under `--out`
(default `RUN/report/`), a folder of its own (`bridge.report.out_dir`): `report.html`, `report.md`,
`figures/*.png|svg`, the CSV files beside the page and every table of it as CSV (`tables/*.csv`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from bridge.cli.value_types import PathType


def make_report(run_dir: str | Path, compare: str | Path | None = None, out: str | Path | None = None,
                setting: str = "raw", delta: tuple[str, str] | None = None) -> Path:
    """Write the report of a run (beside a second run with `compare`); returns the HTML path."""
    from bridge.report.data import check_comparable, combine, delta_pairs, load_run
    from bridge.report.out_dir import (
        MARKER,
        PAGES,
        TABLES,
        check_out,
        record,
        remove_stale,
        staging,
        switch_in,
        write_text,
        written_before,
    )
    from bridge.report.page import render_html, render_markdown
    from bridge.report.sections import Builder
    from bridge.run.reading import reading_note
    from bridge.run.summaries import headline_metric

    runs = [load_run(run_dir)]
    if compare is not None:
        runs.append(load_run(compare))
        check_comparable(*runs)
        if runs[0].experiment == "fewrel":
            from bridge.experiments.fewrel import asked_differ, asked_relations

            differ = asked_differ([(str(r.path), asked_relations(r.summary)) for r in runs])
            if differ:
                click.echo(f"note: {differ}", err=True)

    from bridge.experiments import get
    from bridge.experiments.base import check_setting

    check_setting(get(runs[0].experiment), setting)
    view = combine(runs, setting)
    pairs = delta_pairs(view, delta, headline_metric(view.experiment))
    target = Path(out) if out is not None else runs[0].path / "report"
    check_out(target, runs[0].path)
    target.mkdir(parents=True, exist_ok=True)
    before = written_before(target)
    if not (target / MARKER).is_file():  # the folder is the report's from here on, should drawing fail
        record(target, before | set(PAGES))
    with staging(target) as stage:  # drawn whole aside: a failure midway leaves the earlier report as it was
        builder = Builder(view, stage, pairs, asked=delta is not None)
        sections = builder.sections()
        drawn = {p for s in sections for f in s.figures for p in (f.png, f.svg)}
        drawn |= {path for s in sections for _, path in s.links}
        drawn |= write_tables(sections, stage)
        written = {p.relative_to(stage).as_posix() for p in drawn} | set(PAGES)
        title = f"kbcompare report: {runs[0].label}" + (f" vs {runs[1].label}" if len(runs) > 1 else "")
        meta = [f"Run `{r.path}`: experiment `{r.command}`, corpora {', '.join(r.corpora)}, predictors "
                f"{', '.join(r.predictors)}" for r in runs]
        meta.append(f"Setting `{setting}`; written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by "
                    f"`kbc report`; every table as CSV in `{TABLES}/` (`<section>_<n>.csv`, in page order).")
        for warned in builder.warnings:
            click.echo(f"warning: {warned}", err=True)
        # a run scored under an earlier data reading: the stderr note, on the page too, once per run
        notes = list(dict.fromkeys(n for r in runs if (n := reading_note(r.path, r.config))))
        write_text(stage / "report.html", render_html(title, meta, sections, stage, builder.warnings, notes))
        write_text(stage / "report.md", render_markdown(title, meta, sections, stage, builder.warnings, notes))
        record(target, before | written)
        switch_in(stage, target, written)
    remove_stale(target, before, written)
    record(target, written, runs[0].path)
    html_path = target / "report.html"
    return html_path


def write_tables(sections: list, target: Path) -> set[Path]:
    """Each table of the page as CSV (head, then rows, cells as shown) under `target/tables/`, named by its section
    and place there: `by_relation_1.csv`; returns the paths. Relation labels and subjects come from the data, so a
    cell a spreadsheet would run as a formula (`=HYPERLINK(...)`) gets a leading `'`, as `kbc leaderboard` writes."""
    import csv
    import io

    from bridge.report.out_dir import TABLES, write_text
    from eval.cells import csv_cell

    folder = target / TABLES
    written = set()
    for s in sections:
        for i, table in enumerate(s.tables, 1):
            folder.mkdir(exist_ok=True)
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows([csv_cell(c) for c in row]
                                                            for row in [table.head, *table.rows])
            path = folder / f"{s.key}_{i}.csv"
            write_text(path, buf.getvalue())
            written.add(path)
    return written


@click.command("report")
@click.argument("run_dir")
@click.option("--compare", "compare", default=None, metavar="RUN_DIR2",
              help="A second run over the same corpora, drawn beside the first (predictors named RUN:PREDICTOR).")
@click.option("--out", type=PathType(file_okay=False), default=None, metavar="DIR",
              help="Where to write: a new or empty folder, or one `kbc report` wrote before (default: RUN_DIR/report).")
@click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True,
              help="Which gold rank counts: raw, or with the other valid objects removed.")
@click.option("--delta", nargs=2, default=None, metavar="A B",
              help="The two predictors of the per-relation delta figure (B minus A; with --compare: A of the first "
                   "run, B of the second).")
def report(run_dir: str, compare: str | None, out: str | None, setting: str, delta: tuple[str, str] | None) -> None:
    """One HTML page (and Markdown) with a run's tables and figures: P@k curves, P@1 by relation and type,
    per-relation deltas, correlations, co-occurrence bins, rank variation, coherency and KMIR tables; a negated
    run shows P@1, overlap, Spearman, became-prime and P@1 drop.

    Sections whose data the run lacks are kept with a note naming the command that produces it
    (e.g. `kbc analyze correlation RUN_DIR`). Prints the path of the HTML page.

    \b
    Example:
      kbc report runs/lama --delta bert ebert
      kbc report runs/lama --compare runs/lama-large --out reports/base-vs-large
    """
    click.echo(str(make_report(run_dir, compare, out, setting, delta or None)))
