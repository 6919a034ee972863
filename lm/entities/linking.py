"""Link a query's subject to a wikipedia2vec entity (E-BERT §4: no vector -> fall back to plain BERT).

Order of evidence: the Wikidata id through a title map (`Q-id<TAB>title`, as E-BERT obtained from
Wikidata's SPARQL service), then the label as an exact title (and with the first letter upper-cased,
as Wikipedia titles are), then redirects, then the mention dictionary (the entity the label most
often links to). Every link records how it was found, so coverage can be reported per method.

Only the label is looked up, never the subject's aliases: Wikidata aliases hold bare surnames and
short forms ("Arrow" for Gilbert John Arrow, "Raven" for John Raven) that are titles of other pages,
and a wrong vector is worse than none (the query falls back to plain BERT). For the same reason a
mention links only to its most common entity: when that one has no vector, a rarer sense is not
taken in its place ("Madrid" is not the tennis tournament).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import ConfigError, DataError
from eval.types import Entity
from lm.entities.embeddings import PICKLE_SUFFIXES, EntityEmbeddings, LinkTables

METHODS = ("wikidata", "title", "redirect", "mention")
LINK_RULE = 2  # raised when which entity a subject links to changes (2: the label only, a mention's top entity only)
MentionLookup = Callable[[str], list[tuple[str, float]]]


@dataclass(frozen=True, slots=True)
class Link:
    row: int
    title: str
    method: str


def _refuse_table_pickle(path: Path, what: str, example: str) -> ConfigError:
    """A link table given as a pickle: read only as TSV, or from the .npz that `kbc entities convert` writes."""
    stored = ""
    if what != "title map":
        stem = path.name.removesuffix(path.suffix)
        side = next((x for x in ("_mention", "_dic", "_lg") if stem.endswith(x)), "")  # the trainer's side files
        model = path.with_name(stem.removesuffix(side) + ".pkl")
        stored = (f", or leave the option out to use the table stored in the .npz (`kbc entities convert {model} "
                  "--trust-pickle` stores it, from a model you trust)")
    kinds = "the model's dump DB (.db) or a TSV" if what == "redirect table" else "a TSV"
    return ConfigError(f"{path} is a pickle; loading one runs any code it holds, so a {what} is only read as "
                       f"{kinds} (lines `{example}`){stored}")


def _tsv_rows(path: Path, what: str, example: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a UTF-8 TSV file; unreadable files are one-line DataErrors."""
    if path.suffix in PICKLE_SUFFIXES:
        raise _refuse_table_pickle(path, what, example)
    if not path.exists():
        raise DataError(f"{path}: no such {what} (expected lines `{example}`)")
    if not path.is_file():
        raise DataError(f"{path}: not a file; pass a {what} TSV (lines `{example}`)")
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            for lineno, line in enumerate(handle, 1):
                yield lineno, line.rstrip("\r\n").split("\t")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None


def read_title_map(path: str | Path) -> dict[str, str]:
    """A two-column TSV `Q-id<TAB>title` (header optional); a title may use underscores."""
    path = Path(path)
    out: dict[str, str] = {}
    for lineno, row in _tsv_rows(path, "title map", "Q42<TAB>Douglas Adams"):
        if row == [""] or (lineno == 1 and not row[0].startswith("Q")):
            continue
        if len(row) < 2 or not row[0].startswith("Q"):
            raise DataError(f"{path}:{lineno}: expected `Q-id<TAB>title`, got {row!r}")
        out[row[0]] = row[1].replace("_", " ")
    return out


def read_redirects(path: str | Path) -> dict[str, str]:
    """Redirects from a wikipedia2vec dump DB (`<model>.db`, LMDB; titles are plain strings) or a TSV."""
    path = Path(path)
    if path.suffix == ".db":
        from wikipedia2vec.dump_db import DumpDB

        if not path.is_file():
            raise DataError(f"{path}: no such wikipedia2vec dump DB")
        try:
            return dict(DumpDB(str(path)).redirects())
        except Exception as exc:  # lmdb raises its own error types
            raise DataError(f"{path}: not a wikipedia2vec dump DB ({exc})") from None
    out = {}
    for lineno, parts in _tsv_rows(path, "redirect table", "source<TAB>target"):
        if len(parts) != 2:
            raise DataError(f"{path}:{lineno}: expected `source<TAB>target`")
        out[parts[0].replace("_", " ")] = parts[1].replace("_", " ")
    return out


def read_mentions(path: str | Path) -> MentionLookup:
    """A mention dictionary as TSV `text<TAB>title<TAB>commonness` (texts matched case-insensitively)."""
    path = Path(path)
    table: dict[str, list[tuple[str, float]]] = {}
    for lineno, parts in _tsv_rows(path, "mention dictionary", "text<TAB>title<TAB>commonness"):
        try:
            text, title, commonness = parts
            table.setdefault(text.lower(), []).append((title.replace("_", " "), float(commonness)))
        except ValueError:
            raise DataError(f"{path}:{lineno}: expected `text<TAB>title<TAB>commonness`") from None
    return LinkTables(mentions=table).mention_lookup


def build_linker(emb: EntityEmbeddings, titles: str | Path | None = None, redirects: str | Path | None = None,
                 mentions: str | Path | None = None) -> Linker:
    """A linker over `emb`; redirects and mentions default to the tables stored with the vectors."""
    tables = emb.links or LinkTables()
    return Linker(
        emb.entity_row,
        read_title_map(titles) if titles else {},
        read_redirects(redirects) if redirects else tables.redirects,
        read_mentions(mentions) if mentions else (tables.mention_lookup if tables.mentions else None),
    )


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
        name = entity.label
        for title in dict.fromkeys((name, _upper_first(name))):
            row = self.entity_row(title)
            if row is not None:
                return Link(row, title, "title")
            target = self.redirects.get(title)
            if target is not None and (row := self.entity_row(target)) is not None:
                return Link(row, target, "redirect")
        found = self.mentions(name) if self.mentions is not None else []
        if found:
            best = max(c for _, c in found)
            for title, commonness in found:
                if commonness == best and (row := self.entity_row(title)) is not None:
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
