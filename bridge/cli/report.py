"""`kbc report`: a run's tables and figures as one HTML page and its Markdown twin.

Reads the run directory (and a second one with `--compare`); writes only under `--out`
(default `RUN/report/`): `report.html`, `report.md` and `figures/*.png|svg`.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import click

from bridge.cli.value_types import PathType
from eval.errors import ConfigError


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def make_report(run_dir: str | Path, compare: str | Path | None = None, out: str | Path | None = None,
                setting: str = "raw", delta: tuple[str, str] | None = None) -> Path:
    """Write the report of a run (beside a second run with `compare`); returns the HTML path."""
    from bridge.report.data import check_comparable, combine, delta_pairs, load_run
    from bridge.report.page import render_html, render_markdown
    from bridge.report.sections import HEADLINE, Builder

    runs = [load_run(run_dir)]
    if compare is not None:
        runs.append(load_run(compare))
        check_comparable(*runs)
    view = combine(runs, setting)
    pairs = delta_pairs(view, delta, HEADLINE.get(view.experiment, "p@1"))
    target = Path(out) if out is not None else runs[0].path / "report"
    if target.exists() and not target.is_dir():
        raise ConfigError(f"--out {target}: exists and is not a directory")
    target.mkdir(parents=True, exist_ok=True)
    builder = Builder(view, target, pairs)
    sections = builder.sections()
    written = {p for s in sections for f in s.figures for p in (f.png, f.svg)}
    written |= {path for s in sections for _, path in s.links}
    for stale in [*builder.fig_dir.glob("*.png"), *builder.fig_dir.glob("*.svg"), *target.glob("*.csv")]:
        if stale not in written:
            stale.unlink()
    title = f"kbcompare report: {runs[0].label}" + (f" vs {runs[1].label}" if len(runs) > 1 else "")
    meta = [f"Run `{r.path}`: experiment `{r.command}`, corpora {', '.join(r.corpora)}, predictors "
            f"{', '.join(r.predictors)}" for r in runs]
    meta.append(f"Setting `{setting}`; written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} by "
                f"`kbc report`.")
    html_path = target / "report.html"
    _write(html_path, render_html(title, meta, sections, target))
    _write(target / "report.md", render_markdown(title, meta, sections, target))
    return html_path


@click.command("report")
@click.argument("run_dir")
@click.option("--compare", "compare", default=None, metavar="RUN_DIR2",
              help="A second run over the same corpora, drawn beside the first (predictors named RUN:PREDICTOR).")
@click.option("--out", type=PathType(file_okay=False), default=None, metavar="DIR",
              help="Where to write (default: RUN_DIR/report).")
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
