"""What both text-index backends share: hits, mentions and the `TextIndex` protocol they implement."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kb.text.analyzer import tokens
from kb.text.paragraphs import Paragraph


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
    built: bool  # whether a build made this index (False: it was there, opened as it was)

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

    def facts_held(self, uids: Iterable[str]) -> set[str]:
        """The fact uids of `uids` that some paragraph is aligned to (their own evidence is in the index)."""

    def fingerprint(self) -> str:
        """A digest of what the index holds: a rebuild from other paragraphs changes it."""

    def stats(self) -> dict:
        """Backend, location, paragraph count, size on disk and build metadata."""

    def close(self) -> None: ...
