"""The `TextIndex` protocol both backends implement, and building/opening by backend name.

Both backends rank by BM25 (k1 1.2, b 0.75) over the same analyzer (`kb.text.analyzer`), and
build bag-of-words queries the same way: one OR'd term query per distinct term, boosted by its
count. So tantivy and Elasticsearch return the same ranking (up to the order of tied scores)
and the same counts; the contract tests check it.

Builds are atomic: a new index is built aside and switched in only when complete (tantivy: a
`CURRENT` pointer file replaced with `os.replace`; Elasticsearch: an alias swapped in one call).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from eval.errors import ConfigError
from kb.text.analyzer import tokens
from kb.text.paragraphs import Paragraph

BACKENDS = ("tantivy", "elasticsearch")


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved paragraph with its BM25 score."""

    score: float
    paragraph: Paragraph


@dataclass(frozen=True, slots=True)
class Mention:
    """How a paragraph mentions an entity: any of its phrases, or a wiki link to `link`."""

    phrases: tuple[str, ...]
    link: str | None = None

    @classmethod
    def of(cls, label: str, aliases: Iterable[str] = (), link: str | None = None) -> Mention:
        return cls(tuple(dict.fromkeys((label, *aliases))), link)

    def token_phrases(self) -> list[tuple[str, ...]]:
        """The phrases as analyzed token sequences (empty ones dropped, duplicates merged)."""
        return list(dict.fromkeys(t for p in self.phrases if (t := tuple(tokens(p)))))


@runtime_checkable
class TextIndex(Protocol):
    backend: str

    def __len__(self) -> int:
        """Number of indexed paragraphs."""

    def search(self, text: str, k: int = 10) -> list[Hit]:
        """BM25 top-k paragraphs for a bag-of-words query, best first."""

    def count(self, *mentions: Mention) -> int:
        """Paragraphs matching every mention (no mention: all paragraphs)."""

    def count_many(self, groups: Sequence[Sequence[Mention]]) -> list[int]:
        """`count(*group)` for each group; backends may batch the requests."""

    def matching(self, *mentions: Mention) -> Iterator[str]:
        """Ids of all paragraphs matching every mention (paged, any number of results)."""

    def matching_paragraphs(self, *mentions: Mention) -> Iterator[Paragraph]:
        """The paragraphs of `matching` with their text (for counts below the paragraph, e.g. sentences)."""

    def doc_freq(self, term: str) -> int:
        """Paragraphs containing the analyzed term."""

    def stats(self) -> dict:
        """Backend, location, paragraph count, size on disk and build metadata."""

    def close(self) -> None: ...


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown index backend {backend!r}; choose from {', '.join(BACKENDS)}")
    return backend


def open_index(backend: str, location: str | Path, es_url: str | None = None) -> TextIndex:
    """An existing index: a directory for tantivy, an index (alias) name for Elasticsearch."""
    if check_backend(backend) == "tantivy":
        from kb.text.tantivy_index import TantivyIndex

        return TantivyIndex.open(Path(location))
    from kb.text.es_index import ESIndex

    return ESIndex.open(_need_url(es_url), str(location))


def build_index(paragraphs: Iterable[Paragraph], backend: str, location: str | Path, es_url: str | None = None,
                meta: dict | None = None, progress: bool = False) -> TextIndex:
    """Index `paragraphs` aside, then switch `location` to the new index; returns it opened."""
    if check_backend(backend) == "tantivy":
        from kb.text.tantivy_index import TantivyIndex

        return TantivyIndex.build(paragraphs, Path(location), meta=meta, progress=progress)
    from kb.text.es_index import ESIndex

    return ESIndex.build(paragraphs, _need_url(es_url), str(location), meta=meta, progress=progress)


def _need_url(es_url: str | None) -> str:
    if not es_url:
        raise ConfigError("the elasticsearch backend needs --es-url (or KBC_ES_URL), e.g. http://127.0.0.1:9200")
    return es_url
