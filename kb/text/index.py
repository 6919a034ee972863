"""Building and opening a text index by backend name (backends register as "module:Class").

Both backends rank by BM25 (k1 1.2, b 0.75) over the same analyzer (`kb.text.analyzer`), and
build bag-of-words queries the same way: one OR'd term query per distinct term, boosted by its
count. So tantivy and Elasticsearch return the same ranking (up to the order of tied scores)
and the same counts; the contract tests check it.

Builds are atomic: a new index is built aside and switched in only when complete (tantivy: a
`CURRENT` pointer file replaced with `os.replace`; Elasticsearch: an alias swapped in one call).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from eval.errors import ConfigError, KbcError
from kb.text.base import Hit, Mention, TextIndex
from kb.text.paragraphs import Paragraph

__all__ = ["BACKENDS", "Hit", "Mention", "TextIndex", "build_index", "check_backend", "open_index"]

# backend name -> "module:Class"; imported only when a backend is asked for
REGISTRY: dict[str, str] = {"tantivy": "kb.text.tantivy_index:TantivyIndex",
                            "elasticsearch": "kb.text.es_index:ESIndex"}
BACKENDS = tuple(REGISTRY)
ES_TIMEOUT = 30.0  # seconds one Elasticsearch request may take in all, the whole answer included


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown index backend {backend!r}; choose from {', '.join(BACKENDS)}")
    return backend


def open_index(backend: str, location: str | Path, es_url: str | None = None,
               es_timeout: float = ES_TIMEOUT) -> TextIndex:
    """An existing index: a directory for tantivy, an index (alias) name for Elasticsearch.

    `es_timeout`: seconds each Elasticsearch request may take in all (answer included).
    """
    cls = _backend(backend)
    if backend == "tantivy":
        return cls.open(Path(location))
    return cls.open(_need_url(es_url), str(location), timeout=es_timeout)


def build_index(paragraphs: Iterable[Paragraph], backend: str, location: str | Path, es_url: str | None = None,
                meta: dict | None = None, progress: bool = False, es_timeout: float = ES_TIMEOUT,
                reuse: Callable[[dict], bool] | None = None) -> TextIndex:
    """Index `paragraphs` aside, then switch `location` to the new index; returns it opened (`built` True).

    `reuse`: whether the intact index already at `location` (its metadata) is the one asked for; it is then
    returned as it is (`built` False). Both backends ask after waiting for any other build of the same index
    (tantivy: of the same folder; Elasticsearch: of the same alias at the same URL).
    """
    cls = _backend(backend)
    if backend == "tantivy":
        return cls.build(paragraphs, Path(location), meta=meta, progress=progress, reuse=reuse)
    return cls.build(paragraphs, _need_url(es_url), str(location), meta=meta, progress=progress, timeout=es_timeout,
                     reuse=reuse)


def _backend(backend: str):
    module, attr = REGISTRY[check_backend(backend)].split(":")
    return getattr(importlib.import_module(module), attr)


def _need_url(es_url: str | None) -> str:
    if not es_url:
        raise ConfigError("the elasticsearch backend needs --es-url (or KBC_ES_URL), e.g. http://127.0.0.1:9200")
    return es_url


ES_BUILDS = "elasticsearch-builds"  # `<cache>/index/` folder of the locks of Elasticsearch builds


@contextmanager
def builds_alone(folder: Path) -> Iterator[list]:
    """Every build lock under `folder` (`<cache>/index`: each tantivy index folder's, and those of Elasticsearch
    builds in `elasticsearch-builds/`), and each tantivy index's readers' lock, taken without waiting while the
    block runs; a KbcError naming the builder where a build runs, or the readers where a process searches one.
    Gives the locks, to be released with their files removed once the folder is emptied."""
    from eval.readers_lock import READERS_LOCK, ReadersLock
    from kb.text import tantivy_index
    from kb.writer_lock import WriterLock

    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        yield []
        return
    locks: list[tuple[WriterLock, str]] = []
    readers: list[ReadersLock] = []  # taken after the build locks: a build is named before the readers it serves
    for sub in sorted(folder.iterdir()):
        if sub.is_symlink() or not sub.is_dir():
            continue
        if sub.name == ES_BUILDS:
            locks += [(WriterLock(lock, lock.with_suffix(".json"), "", "", "", 0), "an Elasticsearch index")
                      for lock in sorted(sub.glob("*.lock")) if not lock.is_symlink()]
        else:  # locked even before its first build made the lock file: a build starting now waits
            locks.append((tantivy_index.writer_lock(sub), f"the text index {sub}"))
            readers.append(ReadersLock(sub / READERS_LOCK, f"the text index {sub}"))
    with ExitStack() as held:
        for lock, what in locks:
            if not lock.try_acquire():
                raise KbcError(f"{what} is being built by {lock.holder()}")
            held.callback(lock.release)
        for reader in readers:
            reader.acquire()
            held.callback(reader.release)
        yield [*(lock for lock, _ in locks), *readers]
