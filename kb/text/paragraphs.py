"""Paragraphs to index: from a MediaWiki XML dump, from JSONL, or from the LAMA evidence text.

A paragraph carries its page title, its number on the page and the wiki links it contains
(link targets, normalised as page titles), so co-occurrence can count by link as well as by
phrase. Dumps are streamed page by page (constant memory) with a maintained parser (`mwxml`
for the XML, `mwparserfromhell` for the wikitext); redirects and non-article namespaces are
skipped and counted.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from eval.errors import DataError
from eval.jsonl import json_type, read_jsonl
from kb.text.analyzer import tokens

ARTICLE_NAMESPACE = 0
# Tags whose content is not running text (references, tables, galleries, math, code).
DROP_TAGS = {"ref", "references", "table", "gallery", "math", "chem", "score", "timeline", "imagemap",
             "syntaxhighlight", "source", "pre", "code", "nowiki", "hiero", "graph", "mapframe", "templatedata"}
# Link namespaces that are not links to articles in the running text.
DROP_LINK_PREFIXES = ("file:", "image:", "category:", "media:", "wikt:", "wiktionary:", "commons:")
_BLANK_LINES = re.compile(r"\n\s*\n")
_UNPARSED = re.compile(r"\{\{|\[\[|\{\||\|\}|<ref")


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One indexed unit. `facts` lists the LAMA fact uids it is gold evidence for (LAMA corpus only)."""

    pid: str
    title: str
    para: int
    text: str
    links: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"id": self.pid, "title": self.title, "para": self.para, "text": self.text,
                "links": list(self.links), "facts": list(self.facts)}


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # `json.dumps(x, ensure_ascii=False)`, its encoder made once


class ContentDigest:
    """The SHA-256 of the paragraphs an index is built from, taken as they stream by: the same input gives the same
    digest whatever files a backend writes, and an index rebuilt from other paragraphs another one. `with_facts`
    counts the paragraphs aligned to facts (none: no fact's own evidence is there to leak)."""

    def __init__(self, paragraphs: Iterable[Paragraph]) -> None:
        self._paragraphs = paragraphs
        self._sha = hashlib.sha256()
        self.with_facts = 0

    def __iter__(self) -> Iterator[Paragraph]:
        for p in self._paragraphs:
            self._sha.update(_ENCODE(p.to_dict()).encode() + b"\n")
            self.with_facts += bool(p.facts)
            yield p

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def index_fingerprint(meta: dict, fallback: str) -> str:
    """What an index holds, from its build metadata: the digest of its paragraphs (`ContentDigest`), else (an
    index built before it was recorded) the digest of `fallback`, a text naming that build alone."""
    return meta.get("content_sha256") or hashlib.sha256(fallback.encode()).hexdigest()


@dataclass
class IngestReport:
    """What a reader kept and skipped, printed after a build."""

    source: str
    pages: int = 0
    paragraphs: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items())) or "nothing"
        return f"{self.source}: {self.pages} pages, {self.paragraphs} paragraphs; skipped {skipped}"


def link_title(target: str) -> str | None:
    """A wiki link target as the page title it points to (MediaWiki normalisation), or None."""
    title = " ".join(target.split("#", 1)[0].replace("_", " ").split())
    if not title or title.lower().startswith(DROP_LINK_PREFIXES) or title.startswith(":"):
        return None
    return title[0].upper() + title[1:]


def _running_text(code) -> str:
    """Wikitext with templates, tables, references, comments, files and categories removed."""
    from mwparserfromhell.nodes import Comment, Heading, Tag, Template, Wikilink

    parts: list[str] = []
    for node in code.nodes:
        if isinstance(node, (Template, Comment)):
            continue
        if isinstance(node, Heading):
            parts.append("\n\n")
            continue
        if isinstance(node, Tag):
            tag = str(node.tag).lower()
            if tag in DROP_TAGS or node.wiki_markup == "{|":
                continue
            if tag in ("br", "hr"):
                parts.append("\n")
                continue
            if node.contents is not None and not node.wiki_markup:
                parts.append(_running_text(node.contents))
                continue
        if isinstance(node, Wikilink) and link_title(str(node.title)) is None:
            continue
        parts.append(str(node))
    return "".join(parts)


def wikitext_paragraphs(title: str, wikitext: str, min_words: int = 3,
                        report: IngestReport | None = None) -> Iterator[Paragraph]:
    """Paragraphs of one page: blank-line separated blocks of running text with their links.

    Blocks the parser could not read (broken templates or tables leave `{{`, `[[`, `{|` behind)
    are skipped and counted rather than indexed as markup.
    """
    import mwparserfromhell

    body = _running_text(mwparserfromhell.parse(wikitext))
    n = 0
    for block in _BLANK_LINES.split(body):
        block_code = mwparserfromhell.parse(block)
        links = tuple(dict.fromkeys(
            t for link in block_code.filter_wikilinks() if (t := link_title(str(link.title)))
        ))
        text = " ".join(block_code.strip_code(normalize=True, collapse=True).split())
        if len(tokens(text)) < min_words:
            continue
        if _UNPARSED.search(text):
            if report is not None:
                report.skip("paragraphs with unparsed markup")
            continue
        yield Paragraph(f"{title}#{n}", title, n, text, links)
        n += 1


def _open_dump(path: Path):
    if not path.is_file():
        raise DataError(f"{path}: dump file not found")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


def read_dump(path: str | Path, report: IngestReport | None = None, min_words: int = 3,
              progress: bool = False) -> Iterator[Paragraph]:
    """Stream the article paragraphs of a MediaWiki XML dump (`.xml`, `.xml.bz2`, `.xml.gz`)."""
    import mwxml
    from mwxml.errors import MalformedXML
    from tqdm import tqdm

    path = Path(path)
    report = report if report is not None else IngestReport(str(path))
    handle = _open_dump(path)
    bar = tqdm(desc=f"pages of {path.name}", unit="page", disable=not progress)
    try:
        try:
            dump = mwxml.Dump.from_file(handle)
        except (ET.ParseError, MalformedXML, AssertionError, ValueError, KeyError, AttributeError,
                TypeError) as exc:
            why = f" ({exc})" if str(exc) else ""
            raise DataError(f"{path}: not a MediaWiki XML dump (expected <mediawiki> with <siteinfo> and <page>)"
                            f"{why}") from None
        pages = iter(dump)
        while True:
            try:
                page = next(pages)
            except StopIteration:
                break
            bar.update(1)
            if page.namespace != ARTICLE_NAMESPACE:
                report.skip("pages outside the article namespace")
                _drain(page)
                continue
            if page.redirect:
                report.skip("redirects")
                _drain(page)
                continue
            text = None
            for revision in page:
                text = revision.text  # dumps of current pages hold one revision; keep the last
            if not text:
                report.skip("empty pages")
                continue
            report.pages += 1
            for paragraph in wikitext_paragraphs(page.title, text, min_words, report):
                report.paragraphs += 1
                yield paragraph
    except (EOFError, OSError) as exc:
        raise DataError(f"{path}: the compressed dump is truncated or corrupt ({exc}); download it again") from None
    except (ET.ParseError, MalformedXML) as exc:
        raise DataError(f"{path}: malformed XML ({exc}); the dump is truncated or not a MediaWiki export") from None
    finally:
        bar.close()
        handle.close()


def _drain(page) -> None:
    for _ in page:
        pass


def _id_text(value, where: str) -> str | None:
    """An id given as a string or an integer, as text; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DataError(f"{where} must be a string or an integer, got {json_type(value)}")
    return str(value)


def read_paragraph_jsonl(path: str | Path, report: IngestReport | None = None) -> Iterator[Paragraph]:
    """JSONL rows {"title", "text", optional "id", "para", "links", "facts"}, one paragraph each."""
    path = Path(path)
    report = report if report is not None else IngestReport(str(path))
    titles: set[str] = set()
    numbers: dict[str, int] = {}
    for lineno, row in read_jsonl(path, required=("title", "text")):
        where = f"{path}:{lineno}"
        title, text = row["title"], row["text"]
        if not isinstance(title, str) or not isinstance(text, str):
            raise DataError(f"{where}: 'title' and 'text' must be strings")
        links = row.get("links") or []
        if not isinstance(links, list) or not all(isinstance(x, str) for x in links):
            raise DataError(f"{where}: 'links' must be a list of strings")
        para = row.get("para")
        if para is None:
            para = numbers.get(title, 0)
        if not isinstance(para, int) or isinstance(para, bool) or para < 0:
            raise DataError(f"{where}: 'para' must be a non-negative integer")
        pid = _id_text(row.get("id"), f"{where}: 'id'")
        facts = row.get("facts") or []
        if not isinstance(facts, list):
            raise DataError(f"{where}: 'facts' must be a list of ids, got {json_type(facts)}")
        facts = [_id_text(f, f"{where}: 'facts'") for f in facts]
        numbers[title] = para + 1
        if title not in titles:
            titles.add(title)
            report.pages += 1
        if not text.strip():
            report.skip("empty paragraphs")
            continue
        report.paragraphs += 1
        yield Paragraph(pid or f"{title}#{para}", title, para, text, tuple(links), tuple(f for f in facts if f))


def evidence_paragraphs(corpora: Iterable, report: IngestReport | None = None) -> list[Paragraph]:
    """The LAMA evidence text as a small real corpus: one paragraph per distinct evidence text.

    T-REx sentences get `[MASK]` restored from `obj_surface` (as the loader does); Google-RE
    contributes its Wikipedia snippets, titled by the page of their URL. A text aligned to several
    facts is indexed once and lists all of them in `facts`; links are the labels of the aligned
    subject and object, which for LAMA are Wikipedia titles.
    """
    report = report if report is not None else IngestReport("LAMA evidences")
    by_text: dict[str, dict] = {}
    for corpus in corpora:
        for fact in corpus.facts:
            if not fact.evidences:
                report.skip(f"{corpus.name} facts without evidences")
                continue
            for ev in fact.evidences:
                text = " ".join(ev.text.split())  # `str.split` splits on exactly what `\s` matches
                if not text:
                    report.skip("empty evidences")
                    continue
                entry = by_text.get(text)
                if entry is None:
                    title = _title_from_url(ev.url) or fact.subject.label
                    entry = by_text[text] = {"title": title, "links": {}, "facts": {}}
                entry["links"].update(dict.fromkeys((fact.subject.label, fact.object.label)))
                entry["facts"][fact.uid] = None
    numbers: dict[str, int] = {}
    out = []
    for text, entry in by_text.items():
        title = entry["title"]
        n = numbers.get(title, 0)
        numbers[title] = n + 1
        out.append(Paragraph(f"{title}#{n}", title, n, text, tuple(entry["links"]), tuple(entry["facts"])))
    report.pages = len(numbers)
    report.paragraphs = len(out)
    return out


def _title_from_url(url: str | None) -> str | None:
    if not url or "/wiki/" not in url:
        return None
    from urllib.parse import unquote

    return link_title(unquote(url.rsplit("/wiki/", 1)[1]))
