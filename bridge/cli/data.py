"""`kbc data download|stats|uhn`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from bridge.cli.choices import NamedChoice
from bridge.cli.options import batch_size_option, data_dir_option, device_option, show_progress
from bridge.cli.value_types import IntRange, PathType
from eval.bear import BEAR_CORPORA, resolve_bear_dir
from eval.cells import byte_size, count_of
from eval.corpora import CORPORA, corpus_outline
from eval.datadir import ENV_VAR, absolute_path, resolve_data_dir
from eval.errors import ConfigError, DataError, MissingData
from eval.out_folders import removed_if_left_empty
from eval.sources import BY_NAME, MIRROR_ENV, SOURCES
from lm.name_ranker import UHN_MODEL_ENV, uhn_name_ranker
from lm.precision import DTYPES

SOURCE_NAMES = tuple(s.name for s in SOURCES)


@click.group()
def data() -> None:
    """Get and describe the evaluation data."""


@data.command("download", short_help="Fetch corpora by NAME (default: lama; `all`).")
@click.argument("names", nargs=-1, metavar="[NAME]...", type=NamedChoice([*SOURCE_NAMES, "all"]))
@click.option("--dest", type=PathType(file_okay=False), default="data", show_default=True,
              help="Data folder to lay the corpora out in (LAMA lands in DEST/lama, BEAR in DEST/bear, ...).")
@click.option("--mirror", envvar=MIRROR_ENV, default=None, show_envvar=True,
              help="Base URL of a mirror holding each upstream file at HOST/PATH (e.g. raw.githubusercontent.com/...), "
                   "or a local folder: such a mirror, or a data folder laid out as this command lays it out; every "
                   "file is checked against its SHA-256.")
@click.option("--url", default=None, help="Override LAMA's release URL.")
@click.option("--sha256", default=None, help="Expected SHA-256 of LAMA's release archive.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def download(names, dest, mirror, url, sha256, quiet) -> None:
    """Fetch corpora by NAME (`all` for every one; default: lama), each pinned to an upstream commit and SHA-256,
    into where the loaders look; `kbc data list` names them."""
    chosen = list(dict.fromkeys(SOURCE_NAMES if "all" in names else names or ("lama",)))
    if (url or sha256) and "lama" not in chosen:
        raise ConfigError("--url and --sha256 are for LAMA's release archive; add lama to the names")
    with removed_if_left_empty(dest):  # a failed download leaves no folder behind
        _download_each(chosen, dest, mirror, quiet, url, sha256)
    if "lama" in chosen:
        lama = Path(dest) / "lama"
        click.echo(f"use --data-dir {lama} or export KBC_DATA={lama}; the other corpora are read beside it")


def _download_each(chosen: list[str], dest: str, mirror: str | None, quiet: bool, url: str | None,
                   sha256: str | None) -> None:
    from eval.download import download_corpus

    failed: list[str] = []
    for name in chosen:
        try:
            path = download_corpus(name, dest, mirror, show_progress(quiet), url, sha256)
        except DataError as exc:
            if len(chosen) == 1:
                raise
            failed.append(name)  # the others are still worth having: each corpus is checked on its own
            click.echo(f"{name}: not downloaded: {exc}", err=True)
            continue
        n = len(BY_NAME[name].files())
        click.echo(f"{name}: ready in {path} ({count_of(n, 'files')}, SHA-256 checked"
                   + (_archive_note(path, sha256) if BY_NAME[name].archive else "") + ")")
    if failed:
        ready = len(chosen) - len(failed)
        raise DataError(f"{len(failed)} of {len(chosen)} corpora could not be downloaded ({', '.join(failed)}: "
                        f"why is said above); {'the other ' + str(ready) + ' are ready' if ready else 'none is ready'}"
                        "; rerun the same command to fetch what is missing (what is in place is checked, not fetched "
                        "again)")


def _archive_note(lama: Path, sha256: str | None) -> str:
    """What was checked of LAMA's release archive: no digest of it is pinned, so without --sha256 its digest is
    only printed and stored (`lama/SHA256`), for the user to compare."""
    from eval.download import LAMA_SHA256

    if sha256 or BY_NAME["lama"].archive.sha256 or LAMA_SHA256:
        return ", and LAMA's release archive"
    stored = lama / "SHA256"
    digest = stored.read_text(encoding="utf-8").strip() if stored.is_file() else "unknown"
    return (f"; LAMA's release archive has no pinned digest, so it was not checked: its SHA-256 {digest} is stored "
            f"in {stored}; pass --sha256 to check it")


@data.command("list", short_help="The corpora `download` fetches, and which are here.")
@click.option("--dest", type=PathType(file_okay=False), default=None,
              help="Data folder to look in (default: the folder holding $KBC_DATA's LAMA copy, else ./data).")
def list_sources(dest) -> None:
    """Every corpus `kbc data download` fetches: its size, whether it is in DEST, where, its licence, what it is."""
    from eval.download import status

    dest, source = _list_folder(dest)
    rows = [(s.name, byte_size(s.size) + ("+zip" if s.archive else ""), status(s, dest), str(Path(dest) / s.where),
             s.licence, s.what) for s in SOURCES]
    head = ("name", "size", "status", "where", "licence", "what")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    for row in [head, *rows]:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + f"  {row[4]}: {row[5]}")
    files = {f for s in SOURCES for f in s.files()}  # a file two corpora share counts once
    click.echo(f"total {byte_size(sum(f.size for f in files))} in {len(files)} files of {len(SOURCES)} corpora, "
               "plus LAMA's release archive")
    click.echo(f"listed {absolute_path(dest)} ({source})" + _not_made_yet(dest, source))


def _not_made_yet(dest: str, source: str) -> str:
    """A folder that does not exist holds nothing yet, as `kbc data download` (which makes it) takes it; said, so
    that a mistyped --dest does not read as a folder whose corpora are all missing."""
    if Path(dest).exists():
        return ""
    import shlex

    fetch = f"kbc data download --dest {shlex.quote(str(dest))}" if source == "--dest" else "kbc data download"
    return f": no such folder yet, so nothing is in it; `{fetch}` makes it"


def _list_folder(dest: str | None) -> tuple[str, str]:
    """The folder `kbc data list` looks in, and where it comes from: `--dest`, else the folder holding the LAMA copy
    of `$KBC_DATA` (the LAMA folder itself or its parent, as the loaders read it), else `data`."""
    if dest is not None:
        return dest, "--dest"
    given = os.environ.get(ENV_VAR)
    if not given:
        return "data", f"--dest default; {ENV_VAR} is not set"
    try:
        lama = resolve_data_dir(given)
    except DataError:  # no LAMA copy yet: $KBC_DATA names the folder it would be in
        lama = absolute_path(given)
    return str(lama.parent), f"from {ENV_VAR}={given}"


@data.command("stats", short_help="Rows read, kept and dropped per relation.")
@click.option("--corpus", "corpora", multiple=True, type=NamedChoice(CORPORA),
              default=("trex", "google_re", "squad"), show_default=True)
@data_dir_option
def stats(corpora, data_dir) -> None:
    """Rows read, kept and dropped per relation, and the data version."""
    read = False  # a corpus of the folder was read: a later one missing is no missing folder
    for name in corpora:
        try:
            corpus, n_facts = corpus_outline(name, data_dir)  # the counts, without decoding the facts of a snapshot
        except MissingData as exc:  # a malformed file keeps its own fix: no hint about which corpus to read
            hint = (_default_hint(corpora) if read else None) or _bear_hint(name, data_dir)
            if hint is None:
                raise
            raise DataError(f"{exc.args[0].split('; ')[0]}; {hint}") from None
        read = True
        n_rel = len(corpus.relations)
        click.echo(f"# {name}: {n_facts} facts, {count_of(n_rel, 'relations')}, version {corpus.version}")
        click.echo(corpus.summary(n_facts=n_facts).splitlines()[0])
        for report in _in_relation_order(corpus):
            click.echo("  " + report.summary())


def _in_relation_order(corpus) -> list:
    """The corpus's load reports, per-relation ones in report order (P19 before P101), each relation's label
    after its id ("trex/P19 place of birth (TREx/P19.jsonl)"); reports of the whole corpus first."""
    from dataclasses import replace

    from eval.report import relation_order

    labels = {rel: r.label for rel, r in corpus.relations.items()}
    whole = [r for r in corpus.reports if r.relation is None]
    per = {r.relation: r for r in corpus.reports if r.relation is not None}
    named = []
    for rel in relation_order(list(per)):
        report = per[rel]
        label = labels.get(rel)
        if label and label != rel and f"/{rel} " in report.source + " ":
            report = replace(report, source=report.source.replace(f"/{rel}", f"/{rel} {label}", 1))
        named.append(report)
    return [*whole, *named]


def _default_hint(corpora: tuple[str, ...]) -> str | None:
    """When a corpus of the default list is missing from a folder another was read from (a folder of one's own facts
    holds T-REx's layout alone): the flag that names the corpora the folder holds."""
    from click.core import ParameterSource

    if click.get_current_context().get_parameter_source("corpora") is not ParameterSource.DEFAULT:
        return None
    return f"--corpus was not given, so {', '.join(corpora)} are read; name the ones this folder holds (--corpus trex)"


def _bear_hint(name: str, data_dir: str | None) -> str | None:
    """When a non-BEAR corpus is asked of a folder that holds BEAR data: the flag that reads it."""
    if name in BEAR_CORPORA or not data_dir:
        return None
    root = absolute_path(data_dir)
    for bear in BEAR_CORPORA:
        try:
            found = resolve_bear_dir(bear, data_dir)
        except DataError:
            continue
        if found.is_relative_to(root):  # not a BEAR copy beside the folder, which --corpus bear reads as well
            return f"it holds BEAR data: add --corpus {bear}"
    return None




@data.command("uhn", short_help="LAMA-UHN: drop facts whose subject gives the answer.")
@click.option("--out", required=True, type=PathType(file_okay=False),
              help="Folder for the filtered data set (LAMA layout, plus deletions.json).")
@click.option("--filters", multiple=True, type=click.Choice(["string", "name"]), default=None,
              help="Filters, applied string first (several values after one flag; default: string, "
                   "plus name when a model is given).")
@click.option("--model", default=None,
              help=f"Masked LM for the person-name filter (local dir or hub id; default: ${UHN_MODEL_ENV}).")
@click.option("--top-k", type=IntRange(min=1), default=3, show_default=True,
              help="Person-name filter: delete when the gold object is in the top k for a name token.")
@device_option
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True)
@batch_size_option
@data_dir_option
@click.option("--quiet", is_flag=True, help="No progress bar.")
def uhn(out, filters, model, top_k, device, dtype, batch_size, data_dir, quiet) -> None:
    """LAMA-UHN (E-BERT §2.1): delete facts whose subject name gives the answer away."""
    from eval.errors import ConfigError
    from eval.uhn import build_uhn, check_filters, check_out, deletion_rates

    check_out(Path(out), data_dir)  # before a name model is loaded
    chosen = tuple(dict.fromkeys(filters or ()))
    if chosen and "name" not in chosen and model:
        raise ConfigError("--model is only used by the name filter; add --filters name")
    ranker = uhn_name_ranker(model, device, dtype, batch_size) if not chosen or "name" in chosen else None
    if not chosen:
        chosen = ("string", "name") if ranker is not None else ("string",)
    check_filters(chosen, ranker)
    deletions = build_uhn(data_dir, Path(out), chosen, ranker, top_k, progress=show_progress(quiet))
    string_rate = deletion_rates(deletions, "deleted_string")
    name_rate = deletion_rates(deletions, "deleted_name")
    click.echo(f"{'relation':<16} {'facts':>6} {'string':>7} {'name':>6} {'kept':>6}")
    ran = {"string": "string" in chosen, "name": "name" in chosen}  # a filter not run shows "-", not 0
    for rel, d in deletions.items():
        name = str(d["deleted_name"]) if ran["name"] else "-"
        rates = " / ".join(f"{rate.get(rel, 0):.0f}%" if ran[f] else "-"
                           for f, rate in (("string", string_rate), ("name", name_rate)))
        string = str(d["deleted_string"]) if ran["string"] else "-"
        click.echo(f"{rel:<16} {d['n']:>6} {string:>7} {name:>6} {d['kept']:>6}   ({rates})")
    total = sum(d["n"] for d in deletions.values())
    kept = sum(d["kept"] for d in deletions.values())
    click.echo(f"LAMA-UHN ({', '.join(chosen)}) in {out}: kept {kept} of {total} facts; use --data-dir {out}")
