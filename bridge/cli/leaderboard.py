"""`kbc leaderboard`: every predictor of several run directories in one table, with intervals."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click

from bridge.cli.value_types import Int, IntRange, PathType
from eval.cells import csv_cell, md_row
from eval.corpora import CORPORA
from eval.errors import ConfigError
from eval.uncertainty import DEFAULT_BOOTSTRAP, MAX_BOOTSTRAP

MD_HEAD = "| rank | run | predictor | value ± stderr | 95% CI | #facts |"


def _fmt(value: float | None, metric: str) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if metric == "mrr" else f"{value:.2f}"


def markdown(rows: list[dict]) -> str:
    """One pipe table per corpus: rank, run, predictor, value ± stderr, 95% CI, facts; † marks upper bounds."""
    lines: list[str] = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        mine = [r for r in rows if r["corpus"] == corpus]
        m = mine[0]["metric"]
        if lines:
            lines.append("")
        lines += [f"{corpus}, {m} ({mine[0]['setting']}, {mine[0]['scope']} facts)", "", MD_HEAD,
                  "|---|---|---|---|---|---|"]
        for r in mine:
            value = _fmt(r["value"], m) + ("" if r["stderr"] is None else f" ± {_fmt(r['stderr'], m)}")
            ci = "-" if r["ci_low"] is None else f"[{_fmt(r['ci_low'], m)}, {_fmt(r['ci_high'], m)}]"
            name = r["predictor"] + (" †" if r.get("upper_bound") else "")
            cells = [str(r["rank"]), r["run"], name, value, ci, str(r["n_facts"])]
            lines.append(md_row(cells))
    if any(r.get("upper_bound") for r in rows):
        lines += ["", "† upper bound, not a baseline: it reads the gold evidence of each fact."]
    return "\n".join(lines) + "\n"


def as_csv(rows: list[dict]) -> str:
    from bridge.run.leaderboard import FIELDS

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def _is_board(text: str) -> bool:
    """Whether `text` is a leaderboard this command wrote, in any of its formats."""
    from bridge.run.leaderboard import FIELDS

    lines = text.splitlines()
    if lines[:1] == [",".join(FIELDS)] or MD_HEAD in lines[2:3]:
        return True
    try:
        rows = json.loads(text)
    except ValueError:
        return False
    return isinstance(rows, list) and all(isinstance(r, dict) and list(r) == list(FIELDS) for r in rows)


def check_out(out: Path) -> None:
    """`--out` may be a new file or a leaderboard written before, never a file of a run directory or any other
    file: the command owns only its own outputs."""
    from bridge.run.directory import run_dir_holding

    holder = run_dir_holding(out)
    if holder is not None:
        raise ConfigError(f"--out {out} is inside the run directory {holder}; write the leaderboard elsewhere")
    if out.exists():
        try:
            ours = _is_board(out.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            ours = False
        if not ours:
            raise ConfigError(f"--out {out} exists and is not a leaderboard; `kbc leaderboard` overwrites only its "
                              "own outputs: name a new file")


@click.command("leaderboard")
@click.argument("run_dirs", nargs=-1, required=True, type=PathType(exists=True, file_okay=False))
@click.option("--corpus", "corpora", multiple=True, type=click.Choice(CORPORA),
              help="Only these corpora (default: every corpus of the first run; each run must hold them).")
@click.option("--metric", default=None, help="p@1, p@10, mrr; coherency, c1, ...; f1, em; macro-f1, ... "
              "[default: the experiment's headline: p@1, coherency, f1 (kmir), macro-f1 (lmkbc)]")
@click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True)
@click.option("--scope", type=click.Choice(["shared", "own"]), default="shared", show_default=True,
              help="shared: the facts every predictor of every run answered; own: each predictor's.")
@click.option("--sort", type=click.Choice(["value", "predictor", "run"]), default="value", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md", show_default=True)
@click.option("--bootstrap", type=IntRange(min=0, max=MAX_BOOTSTRAP), default=None,
              help=f"Resamples behind each shared-scope 95% interval (0: stderr only) [default: the runs' own "
              f"setting where they agree, else {DEFAULT_BOOTSTRAP}]; --scope own reads each run's summary.json.")
@click.option("--bootstrap-seed", type=Int(), default=None, help="[default: the runs' own where they agree, else 0]")
@click.option("--out", type=PathType(dir_okay=False), default=None, help="Write to this file, not stdout.")
def leaderboard(run_dirs, corpora, metric, setting, scope, sort, fmt, bootstrap, bootstrap_seed, out) -> None:
    """Every predictor of RUN_DIR... ranked on one metric, with stderr and 95% bootstrap interval.

    \b
    Example:
      kbc leaderboard runs/kb runs/bert runs/gpt2 --corpus trex --metric p@1 --format csv --out board.csv
    """
    from bridge.run.leaderboard import leaderboard_rows

    if len(corpora) > 1:
        raise ConfigError("--corpus: name one corpus (or none for every corpus of the runs)")
    if out is not None:
        check_out(Path(out))
    rows = leaderboard_rows(run_dirs, corpora[0] if corpora else None, metric, setting, scope, bootstrap,
                            bootstrap_seed, sort)
    text = {"md": markdown, "csv": as_csv, "json": lambda r: json.dumps(r, indent=1) + "\n"}[fmt](rows)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write --out {out}: {exc.strerror}") from None
    click.echo(f"written: {out}", err=True)
