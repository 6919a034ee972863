"""Link a query's subject to a wikipedia2vec entity (E-BERT §4: no vector -> fall back to plain BERT).

Order of evidence: the Wikidata id through a title map (`Q-id<TAB>title`, as E-BERT obtained from
Wikidata's SPARQL service), then the label as an exact title (and with the first letter upper-cased,
as Wikipedia titles are), then redirects, then the mention dictionary (the entity the label most
often links to). Every link records how it was found, so coverage can be reported per method.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import DataError
from eval.types import Entity

METHODS = ("wikidata", "title", "redirect", "mention")
MentionLookup = Callable[[str], list[tuple[str, float]]]


@dataclass(frozen=True, slots=True)
class Link:
    row: int
    title: str
    method: str


def read_title_map(path: str | Path) -> dict[str, str]:
    """A two-column TSV `Q-id<TAB>title` (header optional); a title may use underscores."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such title map (expected lines `Q42<TAB>Douglas Adams`)")
    out: dict[str, str] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), 1):
            if not row or (lineno == 1 and not row[0].startswith("Q")):
                continue
            if len(row) < 2 or not row[0].startswith("Q"):
                raise DataError(f"{path}:{lineno}: expected `Q-id<TAB>title`, got {row!r}")
            out[row[0]] = row[1].replace("_", " ")
    return out


def read_redirects(path: str | Path) -> dict[str, str]:
    """Redirects from a wikipedia2vec dump DB (`<model>.db`) or a TSV `source<TAB>target`."""
    path = Path(path)
    if path.suffix == ".db":
        from wikipedia2vec.dump_db import DumpDB

        try:
            return dict(DumpDB(str(path)).redirects())
        except Exception as exc:  # lmdb raises its own error types
            raise DataError(f"{path}: not a wikipedia2vec dump DB ({exc})") from exc
    out = {}
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2:
                raise DataError(f"{path}:{lineno}: expected `source<TAB>target`")
            out[parts[0].replace("_", " ")] = parts[1].replace("_", " ")
    return out


def mention_lookup_from_pkl(mention_file: str | Path, model_file: str | Path) -> MentionLookup:
    """The library's mention DB (needs the dictionary of the `.pkl` model it was built with)."""
    from wikipedia2vec import Wikipedia2Vec
    from wikipedia2vec.mention_db import MentionDB

    dictionary = Wikipedia2Vec.load(str(model_file)).dictionary
    try:
        db = MentionDB.load(str(mention_file), dictionary)
    except RuntimeError as exc:
        raise DataError(f"{mention_file}: built with another dictionary than {model_file}") from exc

    def lookup(text: str) -> list[tuple[str, float]]:
        try:
            found = db.query(text)
        except KeyError:
            return []
        return [(m.entity.title, float(m.commonness)) for m in found]

    return lookup


def _upper_first(label: str) -> str:
    return label[:1].upper() + label[1:]


@dataclass
class Linker:
    """Subject -> entity row of an `EntityEmbeddings` (anything with `entity_row(title)`)."""

    entity_row: Callable[[str], int | None]
    title_map: dict[str, str] = field(default_factory=dict)
    redirects: dict[str, str] = field(default_factory=dict)
    mentions: MentionLookup | None = None

    def link(self, entity: Entity) -> Link | None:
        if entity.id and entity.id in self.title_map:
            found = self._by_title(self.title_map[entity.id].replace("_", " "), "wikidata")
            if found:
                return found
        for name in (entity.label, *entity.aliases):
            for title in dict.fromkeys((name, _upper_first(name))):
                row = self.entity_row(title)
                if row is not None:
                    return Link(row, title, "title")
                target = self.redirects.get(title)
                if target is not None and (row := self.entity_row(target)) is not None:
                    return Link(row, target, "redirect")
        if self.mentions is not None:
            for name in (entity.label, *entity.aliases):
                ranked = sorted(self.mentions(name), key=lambda m: -m[1])
                for title, _ in ranked:
                    row = self.entity_row(title)
                    if row is not None:
                        return Link(row, title, "mention")
        return None

    def _by_title(self, title: str, method: str) -> Link | None:
        row = self.entity_row(title)
        if row is None and title in self.redirects:
            title = self.redirects[title]
            row = self.entity_row(title)
        return Link(row, title, method) if row is not None else None


@dataclass
class Coverage:
    """How many distinct subjects got a vector, by method (E-BERT: Google-RE 54%, T-REx > 98%)."""

    total: int = 0
    by_method: Counter = field(default_factory=Counter)

    @property
    def linked(self) -> int:
        return sum(self.by_method.values())

    @property
    def percent(self) -> float:
        return 100.0 * self.linked / self.total if self.total else 0.0

    def to_dict(self) -> dict:
        return {"subjects": self.total, "linked": self.linked, "coverage_percent": round(self.percent, 2),
                **{m: self.by_method.get(m, 0) for m in METHODS}}


def coverage(linker: Linker, subjects: Iterable[Entity]) -> Coverage:
    cov = Coverage()
    for ent in {s.key: s for s in subjects}.values():
        cov.total += 1
        link = linker.link(ent)
        if link:
            cov.by_method[link.method] += 1
    return cov
