"""Train wikipedia2vec on a Wikipedia dump, step by step and resumably.

The library's own pipeline (dump DB, dictionary, link graph, mention DB, embeddings) runs here one
step at a time; a step whose output this training wrote (its SHA-256 recorded, `lm.entities.manifest`)
is skipped, so an interrupted run resumes. Defaults
follow E-BERT §4 (cased words, link graph on, the library's negative-sampling powers). Building
the default negative tables takes over a minute even for a tiny dump: `word_neg_power=0` and
`entity_neg_power=0` (uniform tables) make small test runs take seconds.
"""

from __future__ import annotations

import bz2
import logging
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from eval.durable import fsync_dir, fsync_file
from eval.errors import DataError
from lm.entities.manifest import Manifest

log = logging.getLogger(__name__)


@dataclass
class TrainSettings:
    dim: int = 768  # E-BERT sets d_F = d_B (bert-base)
    iterations: int = 5
    window: int = 5
    negative: int = 5
    word_neg_power: float = 0.75
    entity_neg_power: float = 0.0
    min_word_count: int = 5
    min_entity_count: int = 5
    lowercase: bool = False  # E-BERT trains cased wikipedia2vec
    link_graph: bool = True  # E-BERT Fig. 1: the link-graph loss is vital
    pool_size: int = max(1, os.cpu_count() or 1)


def check_dump(dump: Path) -> str:
    """The library needs a bz2 dump whose first line carries `xml:lang`; return the language."""
    if not dump.exists():
        raise DataError(f"{dump}: no such dump file")
    try:
        with bz2.open(dump, "rt", encoding="utf-8") as handle:
            head = handle.readline()
    except OSError as exc:
        raise DataError(f"{dump}: not a bz2-compressed Wikipedia dump ({exc}); compress it with bzip2") from exc
    found = re.search(r'xml:lang="([^"]*)"', head)
    if not found:
        raise DataError(f"{dump}:1: the <mediawiki> header has no xml:lang attribute (wikipedia2vec needs it)")
    return found.group(1)


def _run(command: str, args: list[str]) -> None:
    from wikipedia2vec.cli import cli

    try:
        cli.main(args=[command, *args], prog_name="wikipedia2vec", standalone_mode=False)
    except IndexError as exc:
        raise DataError(
            f"wikipedia2vec {command} failed ({exc}); if it is about the link graph, retry with "
            "--no-link-graph"
        ) from exc


def _complete_link_graph(lg: Path, dic: Path) -> None:
    """Give every dictionary entity a row in the link graph.

    wikipedia2vec sizes the graph's sparse matrix by the highest entity index that has a link, so
    when the last entities of the dictionary have none (common on small dumps) their rows are
    missing and training fails at random in `LinkGraph.neighbor_indices` (IndexError). Empty rows
    are what those entities should have; the graph is rewritten with them.
    """
    import numpy as np
    from wikipedia2vec.dictionary import Dictionary
    from wikipedia2vec.link_graph import LinkGraph

    dictionary = Dictionary.load(str(dic))
    graph = LinkGraph.load(str(lg), dictionary, mmap=False)
    indptr = np.asarray(graph._indptr, dtype=np.int32)
    missing = dictionary.entity_size + 1 - len(indptr)
    if missing > 0:
        indptr = np.concatenate([indptr, np.full(missing, indptr[-1], dtype=np.int32)])
        LinkGraph(dictionary, np.asarray(graph._indices, dtype=np.int32), indptr, graph.build_params,
                  graph.uuid).save(str(lg))


def train(dump: str | Path, out: str | Path, settings: TrainSettings | None = None) -> Path:
    """Build every artefact next to `out` (`<stem>.db`, `_dic.pkl`, `_lg.pkl`, `_mention.pkl`, `.pkl`).

    Returns the `.npz` beside them (vectors, redirects and mentions), the file the rest of the
    package reads. The `.pkl` files (and the pages inside the `.db`) are the library's pickles: a
    step's output is reused only when its SHA-256 is the one `<stem>_manifest.json` recorded when
    training wrote it (`lm.entities.manifest`); one without a record is rebuilt, never loaded, and
    so is every step after a rebuilt one.
    """
    s = settings or TrainSettings()
    dump, out = Path(dump), Path(out)
    if out.suffix == ".npz":
        out = out.with_suffix(".pkl")
    check_dump(dump)
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.parent / out.stem
    db, dic, lg, mention = (Path(f"{stem}{suffix}") for suffix in (".db", "_dic.pkl", "_lg.pkl", "_mention.pkl"))
    manifest = Manifest(Path(f"{stem}_manifest.json"))
    rebuilt = False  # once a step is rebuilt, the later ones are too: their inputs changed

    def reuse(path: Path, settings: dict) -> bool:
        """Whether `path` is this training's output for `settings`; else it is deleted, to be rebuilt."""
        nonlocal rebuilt
        if rebuilt:
            if path.exists():
                log.info("%s: rebuilt, as an earlier step was", path)
        elif manifest.verified(path):
            before = manifest.settings_of(path)
            if before is None:  # recorded by an earlier version, which kept no settings: trusted as before
                if settings:
                    log.warning("%s: its settings were not recorded; reused as is (delete it to rebuild it with %s)",
                                path, settings)
                return True
            if before == settings:
                return True
            changed = ", ".join(f"{k} {before.get(k)} -> {v}" for k, v in settings.items() if before.get(k) != v)
            log.warning("%s: built with other settings (%s), so it is rebuilt, and every later step", path, changed)
        elif path.exists():
            log.info("%s: not recorded in %s, so it is rebuilt (never loaded)", path, manifest.path)
        manifest.forget(path)
        rebuilt = True
        return False

    # what each step's output depends on (never the pool size): a rerun with other values rebuilds from that step
    steps = {
        "db": {"dump": dump.name, "dump_bytes": dump.stat().st_size},
        "dic": {"lowercase": s.lowercase, "min_word_count": s.min_word_count, "min_entity_count": s.min_entity_count},
        "out": {"dim": s.dim, "iterations": s.iterations, "window": s.window, "negative": s.negative,
                "word_neg_power": s.word_neg_power, "entity_neg_power": s.entity_neg_power,
                "link_graph": s.link_graph},
    }
    pool = ["--pool-size", str(s.pool_size)]
    case = ["--lowercase" if s.lowercase else "--no-lowercase"]
    if not reuse(db, steps["db"]):
        part = Path(f"{db}.part")
        _run("build-dump-db", [str(dump), str(part), *pool])
        fsync_file(part)  # on disk before its name, which the manifest then vouches for
        os.replace(part, db)
        fsync_dir(db.parent)
        Path(f"{part}-lock").unlink(missing_ok=True)
        manifest.record(db, steps["db"])
    if not reuse(dic, steps["dic"]):
        _run("build-dictionary", [str(db), str(dic), *case, "--min-word-count", str(s.min_word_count),
                                  "--min-entity-count", str(s.min_entity_count), *pool])
        manifest.record(dic, steps["dic"])
    if s.link_graph and not reuse(lg, {}):
        try:
            _run("build-link-graph", [str(db), str(dic), str(lg), *pool])
        except ValueError as exc:  # scipy cannot size a graph without a single link
            if "zero sized" not in str(exc):
                raise
            raise DataError(f"{dump}: no page links to another entity of its dictionary, so there is no link graph "
                            "to train with; use a larger dump, or --no-link-graph") from None
        _complete_link_graph(lg, dic)
        manifest.record(lg)
    if not reuse(mention, {}):
        _run("build-mention-db", [str(db), str(dic), str(mention), *pool])
        manifest.record(mention)
    if not reuse(out, steps["out"]):
        args = [str(db), str(dic), str(out), "--mention-db", str(mention), "--dim-size", str(s.dim),
                "--iteration", str(s.iterations), "--window", str(s.window), "--negative", str(s.negative),
                "--word-neg-power", str(s.word_neg_power), "--entity-neg-power", str(s.entity_neg_power), *pool]
        if s.link_graph:
            args += ["--link-graph", str(lg)]
        _run("train-embedding", args)
        manifest.record(out, steps["out"])
    safe = out.with_suffix(".npz")
    if rebuilt or not safe.exists() or safe.stat().st_mtime < out.stat().st_mtime:
        from lm.entities.convert import convert

        convert(out, safe, trust_pickle=True)  # every file it reads was verified or written just now
    return safe


def describe(settings: TrainSettings) -> dict:
    return asdict(settings)
