"""Co-occurrence: exact counts against a scan of the real Wikipedia sample; PMI; SM/OM; KMIR score."""

from __future__ import annotations

import itertools
import math

import pytest

from eval.types import Entity, Fact
from kb.text.cooccur import Cooccur, Cooccurrence, ScanIndex, mention_of
from kb.text.index import Mention, build_index
from kb.text.paragraphs import Paragraph


@pytest.fixture(scope="module")
def wiki(wiki_sample, tmp_path_factory):
    paragraphs = list(wiki_sample[0][:2500])  # the dump's first 2,500
    return build_index(paragraphs, "tantivy", tmp_path_factory.mktemp("co") / "idx"), ScanIndex(paragraphs)


def test_pair_counts_equal_the_scan_on_the_wikipedia_sample(wiki):
    index, scan = wiki
    names = ["Anarchism", "Proudhon", "Abraham Lincoln", "Illinois", "Aristotle", "Plato", "Alabama",
             "United States", "Greek", "slavery"]
    pairs = [(Mention.of(a), Mention.of(b)) for a, b in itertools.combinations(names, 2)]
    got = Cooccur(index).pairs(pairs)
    for (a, b), c in zip(pairs, got):
        assert (c.a, c.b, c.both, c.total) == (scan.count(a), scan.count(b), scan.count(a, b), len(scan))
    lincoln_illinois = got[pairs.index((Mention.of("Abraham Lincoln"), Mention.of("Illinois")))]
    assert lincoln_illinois.both > 0 and lincoln_illinois.pmi > 0


def test_link_mentions_count_linking_paragraphs(wiki):
    index, scan = wiki
    by_link = Mention.of("Plato", link="Plato")
    assert index.count(by_link) == scan.count(by_link) >= index.count(Mention.of("Plato"))
    assert index.count(Mention((), link="Plato")) == scan.count(Mention((), link="Plato")) > 0


def test_pmi_and_npmi_values():
    c = Cooccurrence(a=10, b=20, both=5, total=100)
    assert c.pmi == pytest.approx(math.log(5 * 100 / (10 * 20)))
    assert c.npmi == pytest.approx(math.log(2.5) / -math.log(0.05))
    assert Cooccurrence(3, 4, 0, 10).pmi is None and Cooccurrence(3, 4, 0, 10).npmi is None
    assert Cooccurrence(5, 5, 5, 5).npmi == 1.0


@pytest.fixture
def tiny(tmp_path):
    rows = ["Dante was born in Florence", "Florence is in Italy", "Dante Alighieri wrote the Comedy",
            "Alighieri left Florence", "Rome is in Italy"]
    paragraphs = [Paragraph(f"p#{i}", "p", i, t, ("Florence",) if "Florence" in t else ()) for i, t in enumerate(rows)]
    return build_index(paragraphs, "tantivy", tmp_path / "tiny")


def test_fact_mentions_give_sm_and_om(tiny):
    dante = Entity("Dante", "Q1067", ("Dante Alighieri", "Alighieri"))
    facts = [Fact("f1", "trex", "P19", dante, Entity("Florence", "Q2044")),
             Fact("f2", "trex", "P19", dante, Entity("Rome", "Q220"))]
    rows = Cooccur(tiny).fact_mentions(facts)
    assert [(r["sm"], r["om"], r["both"]) for r in rows] == [(3, 3, 2), (3, 1, 0)]
    assert rows[0]["pmi"] == pytest.approx(math.log(2 * 5 / 9))
    assert mention_of(dante).phrases == ("Dante", "Dante Alighieri", "Alighieri")


def test_kmir_score_counts_entities_with_answer_words(tiny):
    c = Cooccur(tiny).kmir_score([Mention.of("Dante")], "Florence, Italy")
    assert (c.a, c.b, c.both, c.total) == (2, 1, 0, 5)
    c = Cooccur(tiny).kmir_score([Mention.of("Florence")], "Italy")
    assert (c.a, c.b, c.both) == (3, 2, 1)
