"""Ingestion: the real Wikipedia sample dump, JSONL paragraphs, the LAMA evidence corpus, bad input."""

from __future__ import annotations

import bz2
import re
from pathlib import Path

import pytest

from eval.errors import DataError
from kb.text.paragraphs import IngestReport, evidence_paragraphs, link_title, read_dump, read_paragraph_jsonl


@pytest.fixture(scope="module")
def dump(shared_data: Path) -> Path:
    return shared_data / "wikipedia" / "enwiki-sample-206-pages.xml.bz2"


@pytest.fixture(scope="module")
def wiki(wiki_sample):
    return wiki_sample  # the whole dump read with its report, once per run


def _raw_pages(dump: Path) -> list[tuple[str, int, bool]]:
    """(title, namespace, is_redirect) of every page, read with regexes from the raw XML."""
    xml = bz2.open(dump, "rt", encoding="utf-8").read()
    pages = re.findall(r"<page>(.*?)</page>", xml, flags=re.S)
    return [(re.search(r"<title>(.*?)</title>", p).group(1), int(re.search(r"<ns>(\d+)</ns>", p).group(1)),
             "<redirect" in p) for p in pages]


def test_dump_pages_match_a_raw_scan(dump, wiki):
    paragraphs, report = wiki
    raw = _raw_pages(dump)
    assert len(raw) == 206
    articles = [t for t, ns, red in raw if ns == 0 and not red]
    assert report.pages == len(articles) == 106
    assert report.skipped == {"redirects": 99, "pages outside the article namespace": 1,
                              "paragraphs with unparsed markup": 4}
    assert list(dict.fromkeys(p.title for p in paragraphs)) == [t.replace("&amp;", "&") for t in articles]


def test_dump_paragraph_counts_and_content(wiki):
    paragraphs, report = wiki
    assert report.paragraphs == len(paragraphs) == 5332
    assert len({p.pid for p in paragraphs}) == len(paragraphs)
    first = paragraphs[0]
    assert (first.pid, first.title, first.para) == ("Anarchism#0", "Anarchism", 0)
    assert first.text.startswith("Anarchism is a political philosophy that advocates self-governed societies")
    assert first.links[:3] == ("Political philosophy", "Self-governance", "Stateless society")
    for p in paragraphs:  # markup is gone from the running text
        assert "[[" not in p.text and "{{" not in p.text and "<ref" not in p.text
    by_title = {}
    for p in paragraphs:
        by_title.setdefault(p.title, []).append(p.para)
    assert all(nums == list(range(len(nums))) for nums in by_title.values())


def test_link_titles_are_normalised():
    assert link_title("united_States#History") == "United States"
    assert link_title("File:Foo.jpg") is None
    assert link_title("Category:Anarchism") is None
    assert link_title("  ") is None


def test_truncated_bz2_is_a_clear_error(dump, tmp_path):
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(dump.read_bytes()[:200_000])
    with pytest.raises(DataError, match="cut.xml.bz2: the compressed dump is truncated or corrupt"):
        list(read_dump(cut))


def test_not_a_dump_is_a_clear_error(tmp_path):
    bad = tmp_path / "notes.xml"
    bad.write_text("<notes><note>hello</note></notes>")
    with pytest.raises(DataError, match="notes.xml: not a MediaWiki XML dump"):
        list(read_dump(bad))
    text = tmp_path / "plain.xml.bz2"
    text.write_bytes(bz2.compress(b"this is not xml at all"))
    with pytest.raises(DataError, match="plain.xml.bz2"):
        list(read_dump(text))
    with pytest.raises(DataError, match="dump file not found"):
        list(read_dump(tmp_path / "missing.xml.bz2"))


def test_jsonl_paragraphs(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"title": "A", "text": "one two three", "links": ["B"]}\n'
                    '{"title": "A", "text": "four five"}\n'
                    '{"title": "C", "text": "  ", "para": 3}\n')
    report = IngestReport("p")
    rows = list(read_paragraph_jsonl(path, report))
    assert [(p.pid, p.para, p.links) for p in rows] == [("A#0", 0, ("B",)), ("A#1", 1, ())]
    assert (report.pages, report.paragraphs, report.skipped) == (2, 2, {"empty paragraphs": 1})
    path.write_text('{"title": "A", "text": "x", "links": "B"}\n')
    with pytest.raises(DataError, match=r"p.jsonl:1: 'links' must be a list"):
        list(read_paragraph_jsonl(path))
    path.write_text('{"text": "x"}\n')
    with pytest.raises(DataError, match=r"p.jsonl:1: missing field\(s\) title"):
        list(read_paragraph_jsonl(path))


def test_lama_evidence_corpus(trex, google_re):
    report = IngestReport("lama")
    paragraphs = evidence_paragraphs([trex, google_re], report)
    with_ev = [f for f in trex.facts if f.evidences]
    assert report.skipped == {"trex facts without evidences": len(trex.facts) - len(with_ev)}
    # every evidence text is indexed once, and lists every fact it is aligned to
    texts = {p.text: p for p in paragraphs}
    assert len(texts) == len(paragraphs) == report.paragraphs
    for fact in with_ev[::50] + google_re.facts[::50]:
        for ev in fact.evidences:
            assert fact.uid in texts[" ".join(ev.text.split())].facts
    # [MASK] is restored from obj_surface
    assert not any("[MASK]" in p.text for p in paragraphs)
    first = with_ev[0]
    ev = first.evidences[0]
    assert ev.masked.replace("[MASK]", ev.obj_surface) == ev.text
    # Google-RE snippets are titled by the page of their URL
    g = google_re.facts[0]
    page = g.evidences[0].url.rsplit("/wiki/", 1)[1].replace("_", " ")
    assert texts[" ".join(g.evidences[0].text.split())].title == page
