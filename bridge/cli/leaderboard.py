"""`kbc leaderboard`: every predictor of several run directories in one table, with intervals."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click

from bridge.cli.choices import NamedChoice
from bridge.cli.value_types import Int, IntRange, PathType
from eval.cells import csv_cell, fixed, md_row, parameters_text
from eval.corpora import CORPORA
from eval.errors import ConfigError
from eval.uncertainty import DEFAULT_BOOTSTRAP, MAX_BOOTSTRAP

MD_HEAD = "| rank | run | predictor | side | spec | params | dtype | device | value ± stderr | 95% CI |"
# the heads of leaderboards written before the model columns, and before the relations column: `--out` may
# overwrite those too
EARLIER_HEADS = ("| rank | run | predictor | value ± stderr | 95% CI | #facts |",
                 "rank,run,predictor,corpus,setting,scope,metric,value,stderr,ci_low,ci_high,n_facts,upper_bound",
                 "rank,run,predictor,corpus,setting,scope,metric,value,stderr,ci_low,ci_high,n_facts,own_value,"
                 "own_n_facts,upper_bound,side,spec,parameters,dtype,device",
                 "rank,run,predictor,corpus,setting,scope,metric,value,stderr,ci_low,ci_high,n_facts,relations,"
                 "own_value,own_n_facts,upper_bound,side,spec,parameters,dtype,device")  # before bootstrap, its seed

JSON_KEYS = ("rows", "notes", "warnings")  # `--format json`: the rows, what the scope left out, and the warnings


def _fmt(value: float | None, metric: str) -> str:
    from bridge.run.leaderboard import is_fraction

    if value is None:
        return "-"
    return fixed(value, 3 if is_fraction(metric) else 2)


def markdown(rows: list[dict], notes: list[str] = (), unit: str = "facts", warnings: list[str] = ()) -> str:
    """The warnings (numbers over a small part of what the runs scored) and notes (what the scope left out), then
    one pipe table per corpus: rank, run, predictor, what it is, value ± stderr, 95% CI, the `unit`s counted (facts;
    KMIR's questions), and the own-scope value where the shared scope kept less than half of a predictor's; †
    marks upper bounds."""
    from bridge.run.leaderboard import intervals_line, is_fraction, short
    from eval.metrics import LOWER_IS_BETTER

    notes = [*(f"WARNING: {w}" for w in warnings), *(f"note: {n}" for n in notes)]
    lines: list[str] = list(notes) + ([""] if notes else [])
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        mine = [r for r in rows if r["corpus"] == corpus]
        m = mine[0]["metric"]
        own = any(short(r) for r in mine)
        if len(lines) > len(notes) + bool(notes):
            lines.append("")
        lower = "; lower is better" if m in LOWER_IS_BETTER else ""
        scale = "a fraction, 0-1; " if is_fraction(m) else ""
        counted = "prompt pairs" if m == "consistency" else unit  # consistency's n: the pairs of a fact's prompts
        lines += [f"{corpus}, {m} ({scale}{mine[0]['setting']}, {mine[0]['scope']} {unit}{lower})", "",
                  MD_HEAD + f" #{counted} |" + (f" own scope (#{counted}) |" if own else ""), "|---" * (11 + own) + "|"]
        for r in mine:
            value = _fmt(r["value"], m) + ("" if r["stderr"] is None else f" ± {_fmt(r['stderr'], m)}")
            ci = "-" if r["ci_low"] is None else f"[{_fmt(r['ci_low'], m)}, {_fmt(r['ci_high'], m)}]"
            name = r["predictor"] + (" †" if r.get("upper_bound") else "")
            cells = [str(r["rank"]), r["run"], name, r["side"], r["spec"], parameters_text(r["parameters"]),
                     r["dtype"] or "-", r["device"] or "-", value, ci, str(r["n_facts"])]
            if own:
                cells.append(f"{_fmt(r['own_value'], m)} ({r['own_n_facts']})" if r["own_n_facts"] is not None
                             else "-")
            lines.append(md_row(cells))
        lines += ["", intervals_line(mine)]
    if any(r.get("upper_bound") for r in rows):
        lines += ["", "† upper bound, not a baseline: it reads the gold evidence of each fact."]
    return "\n".join(lines) + "\n"


def as_csv(rows: list[dict], notes: list[str] = (), warnings: list[str] = ()) -> str:
    """The rows, after `# warning: ...` and `# note: ...` comment lines (`pandas.read_csv(path, comment="#")`
    skips them)."""
    from bridge.run.leaderboard import FIELDS

    buf = io.StringIO()
    buf.writelines(f"# {kind}: {' '.join(text.split())}\n" for kind, texts in (("warning", warnings), ("note", notes))
                   for text in texts)
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def _is_board(text: str) -> bool:
    """Whether `text` is a leaderboard this command wrote, in any of its formats."""
    from bridge.run.leaderboard import FIELDS

    lines = [line for line in text.splitlines() if not line.startswith("# ")]  # a CSV's notes
    if lines[:1] == [",".join(FIELDS)] or any(line.startswith(MD_HEAD) or line in EARLIER_HEADS for line in lines):
        return True
    try:
        rows = json.loads(text)
    except ValueError:
        return False
    heads = [list(FIELDS), *(head.split(",") for head in EARLIER_HEADS[1:])]
    if isinstance(rows, dict) and set(rows) == set(JSON_KEYS):  # rows with their notes
        rows = rows["rows"]
    return isinstance(rows, list) and all(isinstance(r, dict) and list(r) in heads for r in rows)


def check_out(out: Path) -> None:
    """`--out` may be a new file or a leaderboard written before, never a file of a run directory or a data
    folder, nor any other file: the command owns only its own outputs."""
    from bridge.run.directory import run_dir_holding
    from eval.out_folders import refuse_in_data

    refuse_in_data(out, "; write the leaderboard outside the data")
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
@click.option("--corpus", "corpora", multiple=True, type=NamedChoice(CORPORA),
              help="Only this corpus (default: every corpus all runs hold).")
@click.option("--metric", default=None, help="p@1, p@10, mrr; coherency, c1, ...; f1, em; macro-f1, ... "
              "[default: the experiment's headline: p@1 (em where every predictor generates), coherency, f1 (kmir), "
              "macro-f1 (lmkbc), f1-macro (fewrel), overlap (negated)]; macro-f1 and f1-macro (macro-p and "
              "precision-macro, macro-r and recall-macro) are one metric: either spelling ranks by the one the runs "
              "hold")
@click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True)
@click.option("--scope", type=click.Choice(["shared", "own"]), default="shared", show_default=True,
              help="shared: the facts every ranked predictor of every run answered (of the relations every run holds; "
              "those left out, without the metric or an answer, restrict nothing), each predictor's own beside it "
              "where that keeps less than half; own: each predictor's.")
@click.option("--sort", type=click.Choice(["value", "predictor", "run"]), default="value", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["md", "csv", "json"]), default="md", show_default=True,
              help="A Markdown table, CSV rows or JSON (rows, notes, warnings).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: --format json, spelt as other commands spell it.")
@click.option("--bootstrap", type=IntRange(min=0, max=MAX_BOOTSTRAP), default=None,
              help=f"Resamples behind each shared-scope 95% interval (0: stderr only) [default: the runs' own "
              f"setting where they agree, else {DEFAULT_BOOTSTRAP}]; --scope own reads each run's summary.json.")
@click.option("--bootstrap-seed", type=Int(), default=None, help="[default: the runs' own where they agree, else 0]")
@click.option("--out", type=PathType(dir_okay=False), default=None, help="Write to this file, not stdout.")
def leaderboard(run_dirs, corpora, metric, setting, scope, sort, fmt, as_json, bootstrap, bootstrap_seed,
                out) -> None:
    """Every predictor of RUN_DIR... ranked on one metric, with stderr and 95% bootstrap interval.

    \b
    Example:
      kbc leaderboard runs/kb runs/bert runs/gpt2 --corpus trex --metric p@1 --format csv --out board.csv
    """
    from bridge.run.leaderboard import board

    if len(corpora) > 1:
        raise ConfigError("--corpus: name one corpus (or none for every corpus of the runs)")
    if as_json:
        given = click.get_current_context().get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT
        if given and fmt != "json":
            raise ConfigError(f"--json and --format {fmt} ask for two formats; give one")
        fmt = "json"
    if out is not None:
        check_out(Path(out))
    found = board(run_dirs, corpora[0] if corpora else None, metric, setting, scope, bootstrap, bootstrap_seed, sort)
    if fmt == "md":
        text = markdown(found.rows, found.notes, found.unit, found.warnings)
    else:
        text = (as_csv(found.rows, found.notes, found.warnings) if fmt == "csv" else
                json.dumps(dict(zip(JSON_KEYS, (found.rows, found.notes, found.warnings))), indent=1) + "\n")
        for note in found.notes:  # in the file, and on stderr for whoever reads the terminal
            click.echo(f"note: {note}", err=True)
    for warned in found.warnings:
        click.echo(f"warning: {warned}", err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    from bridge.report.out_dir import write_text

    try:
        write_text(Path(out), text)  # aside, then switched in: a full disk leaves the earlier file, not half a board
    except OSError as exc:
        raise ConfigError(f"cannot write --out {out}: {exc.strerror}") from None
    click.echo(f"written: {out}", err=True)
