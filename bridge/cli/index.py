"""`kbc index build|stats|search` and `kbc cooccur A B`: the Wikipedia text index from the command line."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import click

from bridge.cli.options import data_dir_option, es_timeout, es_url_option, show_progress
from bridge.cli.value_types import IntRange, PathType
from eval.cells import count_of
from eval.errors import ConfigError
from eval.labels import printable
from eval.out_folders import removed_if_left_empty

DEFAULT_NAME = "lama-evidence"
MAX_K = 10_000  # results per query; tantivy allocates room for k hits up front

backend_option = click.option("--backend", type=click.Choice(["tantivy", "elasticsearch"]), default="tantivy",
                              show_default=True, help="Embedded tantivy index or an Elasticsearch server.")
index_option = click.option("--index", "location", type=PathType(), default=None, metavar="DIR|NAME",
                            help="Index directory (tantivy) or index name (Elasticsearch); "
                                 f"default: <cache>/index/{DEFAULT_NAME}, or {DEFAULT_NAME!r} on Elasticsearch.")


def _location(location: str | None, backend: str) -> str:
    if location:
        return location
    if backend == "elasticsearch":
        return DEFAULT_NAME
    from bridge.run.runner import default_cache_dir

    return str(default_cache_dir() / "index" / DEFAULT_NAME)


def _open(location, backend, es_url):
    from kb.text.index import open_index

    return open_index(backend, _location(location, backend), es_url, es_timeout())


@click.group()
def index() -> None:
    """Build and query the text index (tantivy by default, or Elasticsearch)."""


@index.command("build", short_help="Index paragraphs (tantivy or Elasticsearch).")
@click.option("--source", type=click.Choice(["lama", "dump", "jsonl"]), default="lama", show_default=True,
              help="lama: the LAMA evidence text (T-REx, Google-RE); dump: a MediaWiki XML dump; "
                   "jsonl: paragraphs.")
@click.option("--input", "input_path", type=PathType(exists=True, dir_okay=False), default=None,
              help="The dump (.xml, .xml.bz2, .xml.gz) or JSONL file (for --source dump|jsonl).")
@click.option("--out", "location", type=PathType(), default=None, metavar="DIR|NAME",
              help="Index directory (tantivy) or index name (Elasticsearch); default as for --index.")
@click.option("--min-words", type=IntRange(min=1), default=3, show_default=True,
              help="Dump paragraphs shorter than this are skipped.")
@backend_option
@es_url_option
@data_dir_option
@click.option("--force", is_flag=True,
              help="--source lama: rebuild even where the index already holds this data (a damaged file that "
                   "kept its size and time goes unseen until then; `kbc index verify` re-hashes every file).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def build(source, input_path, location, min_words, backend, es_url, data_dir, force, quiet) -> None:
    """Index paragraphs; the new index replaces the old one only once complete.

    --source lama keeps an index already built from the same data (say so, unless --force); --source dump|jsonl
    always builds. A build waits for another build of the same --out folder (Elasticsearch: index name and URL).
    """
    location = _location(location, backend)
    # a failed build leaves no empty --out folder behind (an Elasticsearch index is no folder)
    with removed_if_left_empty(location) if backend == "tantivy" else contextlib.nullcontext():
        _build(source, input_path, location, min_words, backend, es_url, data_dir, force, quiet)


# a build is atomic: an interrupted one leaves nothing of itself, and nothing to resume from
build.interrupted = ("interrupted: no index was built and nothing of it is kept; the index at --out before, if any, "
                     "is unchanged; rerun the same command to build it from the start")


def _build(source: str, input_path: str | None, location: str, min_words: int, backend: str, es_url: str | None,
           data_dir: str | None, force: bool, quiet: bool) -> None:
    from kb.text.index import build_index
    from kb.text.paragraphs import IngestReport, read_dump, read_paragraph_jsonl

    if source == "lama":
        from kb.text.evidence import evidence_index

        idx = evidence_index(location, data_dir, backend, es_url, progress=show_progress(quiet),
                             es_timeout=es_timeout(), force=force)
        if idx.built:
            click.echo(idx.stats().get("ingest", ""))
    else:
        if not input_path:
            raise ConfigError(f"--source {source} needs --input FILE")
        report = IngestReport(input_path)
        paragraphs = read_dump(input_path, report, min_words, progress=show_progress(quiet)) if source == "dump" \
            else read_paragraph_jsonl(input_path, report)
        idx = build_index(paragraphs, backend, location, es_url, meta={"source": f"{source}:{input_path}"},
                          progress=show_progress(quiet), es_timeout=es_timeout())
        click.echo(report.summary())
    stats = idx.stats()
    n = stats["paragraphs"]
    held = f"index: {count_of(n, 'paragraphs')} in {stats['location']} ({backend})"
    if idx.built:
        click.echo(f"{held}, built")
    else:
        click.echo(f"{held}, already built "
                   "from this data, kept as it is (--force rebuilds it)")
    idx.close()


@index.command("stats", short_help="Paragraph count, size and build metadata.")
@index_option
@backend_option
@es_url_option
def stats(location, backend, es_url) -> None:
    """Paragraph count, size and build metadata of an index (when it was built as a UTC time, not epoch seconds)."""
    idx = _open(location, backend, es_url)
    stats = idx.stats()
    if isinstance(stats.get("built_at"), (int, float)):
        from datetime import UTC, datetime

        stats["built_at"] = datetime.fromtimestamp(stats["built_at"], UTC).isoformat(timespec="seconds")
    click.echo(json.dumps(stats, indent=1, ensure_ascii=False))
    idx.close()


@index.command("verify", short_help="Re-hash every file of a tantivy index against its build-time digests.")
@index_option
def verify(location) -> None:
    """Re-hash every file of a tantivy index against the SHA-256 recorded when it was built.

    Opening an index re-hashes only the files whose size or modification time changed since they last matched;
    this checks them all (a damaged index is one error line with the command that rebuilds it).
    """
    from kb.text.tantivy_index import TantivyIndex

    location = _location(location, "tantivy")
    with TantivyIndex.open(Path(location)) as idx:
        n = idx.verify()
    click.echo(f"index {location}: all {n} files match the SHA-256 digests recorded when it was built")


@index.command("search")
@click.argument("query")
@click.option("-k", type=IntRange(1, MAX_K), default=10, show_default=True, help="Number of results.")
@index_option
@backend_option
@es_url_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
def search(query, k, location, backend, es_url, as_json) -> None:
    """BM25 top-k paragraphs for QUERY."""
    from kb.text.analyzer import term_counts

    if not term_counts(query):
        raise ConfigError(f"QUERY {query!r} has no word to search for (letters or digits)")
    idx = _open(location, backend, es_url)
    for rank, hit in enumerate(idx.search(query, k), 1):
        p = hit.paragraph
        if as_json:
            click.echo(json.dumps({"rank": rank, "score": hit.score, **p.to_dict()}, ensure_ascii=False))
        else:
            click.echo(f"{rank:3d} {hit.score:8.3f} {p.pid}: {printable(p.text[:160])}")
    idx.close()


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--alias-a", multiple=True, help="Another name of A (repeatable).")
@click.option("--alias-b", multiple=True, help="Another name of B (repeatable).")
@click.option("--by-link", is_flag=True, help="Also count paragraphs linking to the page titled A / B.")
@index_option
@backend_option
@es_url_option
def cooccur(a, b, alias_a, alias_b, by_link, location, backend, es_url) -> None:
    """Paragraphs mentioning A, B and both, with PMI."""
    from kb.text.cooccur import Cooccur
    from kb.text.index import Mention

    mentions = (Mention.of(a, alias_a, a if by_link else None), Mention.of(b, alias_b, b if by_link else None))
    for name, given, mention in (("A", a, mentions[0]), ("B", b, mentions[1])):
        if not mention.token_phrases() and not mention.link:
            raise ConfigError(f"{name}={given!r} has no word to look for (letters or digits); give a name, or "
                              f"--alias-{name.lower()} NAME")
    idx = _open(location, backend, es_url)
    c = Cooccur(idx).pair(*mentions)
    pmi = "n/a" if c.pmi is None else f"{c.pmi:.3f}"
    npmi = "n/a" if c.npmi is None else f"{c.npmi:.3f}"
    click.echo(f"A={a!r}: {c.a}  B={b!r}: {c.b}  both: {c.both}  of {c.total} paragraphs  pmi={pmi}  npmi={npmi}")
    idx.close()
