"""Labels are data: quotes, angle brackets and SPARQL syntax in labels reach SPARQL only as escaped
literals, the page only HTML-escaped, and links only percent-encoded."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from markupsafe import escape

EVIL = '" } ; DROP ALL ; #'
SCRIPT = '<script>alert("x")</script>'
QUOTED = 'Land of "Quotes" > <b>bold</b> \\ }'
CAPITAL = "Cap'ital {?s ?p ?o}"
AXIOMS = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
wdt:P47 a owl:SymmetricProperty .
"""
PARAGRAPHS = [("Borders", f"{EVIL} shares border with {SCRIPT} and with Plain Town ."),
              ("Towns", "Plain Town shares border with nothing else ."),
              ("Scripts", f"Only {SCRIPT} here ."),
              ("Other", "Nothing about either of them .")]
FACTS = {"P47": [("Q1", EVIL, "Q2", SCRIPT), ("Q3", "Plain Town", "Q1", EVIL)],
         "P36": [("Q4", QUOTED, "Q5", CAPITAL)]}


@pytest.fixture(scope="module")
def evil(lama_dir, tmp_path_factory):
    """An explorer over a tiny LAMA copy with hostile labels, with an inferred graph (P47 symmetric)."""
    from bridge.cli import cli
    from bridge.serve.explorer import Explorer, ExplorerConfig

    root = tmp_path_factory.mktemp("evil")
    data = root / "lama"
    (data / "TREx").mkdir(parents=True)
    lines = [line for line in (lama_dir / "relations.jsonl").read_text().splitlines()
             if json.loads(line)["relation"] in FACTS]
    (data / "relations.jsonl").write_text("\n".join(lines) + "\n")
    for rel, rows in FACTS.items():
        (data / "TREx" / f"{rel}.jsonl").write_text("".join(
            json.dumps({"uuid": f"{rel}-{i}", "predicate_id": rel, "sub_uri": s, "sub_label": sl, "obj_uri": o,
                        "obj_label": ol}) + "\n" for i, (s, sl, o, ol) in enumerate(rows)))
    (root / "axioms.ttl").write_text(AXIOMS)
    from kb.text.index import build_index
    from kb.text.paragraphs import Paragraph

    index = build_index([Paragraph(f"p{i}", title, 0, text) for i, (title, text) in enumerate(PARAGRAPHS)],
                        "tantivy", root / "index")
    index.close()
    store = root / "store"
    result = CliRunner().invoke(cli, ["kb", "infer", "--axioms", str(root / "axioms.ttl"), "--data-dir", str(data),
                                      "--store", str(store)])
    assert result.exit_code == 0, result.output
    explorer = Explorer.start(ExplorerConfig(data_dir=str(data), predictors=["freq"], store=str(store),
                                             cache_dir=root / "cache", text_index=str(root / "index")))
    yield explorer
    explorer.close()


@pytest.fixture(scope="module")
def client(evil):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app

    with TestClient(create_app(evil)) as c:
        yield c


@pytest.fixture
def sparql(evil):
    """Every SPARQL text the store is sent during a test."""
    sent: list[str] = []
    backend = evil.store.backend
    original = backend.select

    def spy(text: str):
        sent.append(text)
        return original(text)

    backend.select = spy
    yield sent
    backend.select = original


def _col(body: dict, name: str) -> dict:
    return next(c for c in body["columns"] if c["name"] == name)


def test_hostile_subject_is_answered_and_the_store_survives(client, evil, sparql):
    before = evil.store.count("gold-trex-P47")
    body = client.get("/api/query", params={"subject": EVIL, "relation": "P47"}).json()
    assert [a["label"] for a in _col(body, "gold KB")["answers"]] == [SCRIPT]
    assert body["query"]["prompt"] == f"{EVIL} shares border with [MASK] ."
    inferred = _col(body, "inferred graph")
    assert inferred["status"] == "ok"
    assert [(a["label"], a["gold"]) for a in inferred["answers"]] == [("Plain Town", False)]
    assert inferred["answers"][0]["axioms"] and "P47" in inferred["answers"][0]["axioms"][0]
    assert evil.store.count("gold-trex-P47") == before
    assert client.get("/api/query", params={"subject": "Plain Town", "relation": "P47"}).json()["gold"] == [EVIL]
    from rdflib.plugins.sparql import prepareQuery

    labelled = [q for q in sparql if "DROP ALL" in q]
    assert labelled, "the hostile label should have been looked up in the store"
    for text in labelled:
        parsed = prepareQuery(text)  # one well-formed SELECT: the label did not end the literal
        assert parsed.algebra.name == "SelectQuery"
        assert '"\\" } ; DROP ALL ; #"' in text


def test_inferred_answer_with_script_label(client):
    body = client.get("/api/query", params={"subject": SCRIPT, "relation": "P47"}).json()
    inferred = _col(body, "inferred graph")
    assert [a["label"] for a in inferred["answers"]] == [EVIL]
    assert inferred["answers"][0]["gold"] is False  # derived by symmetry, not in the gold KB
    assert _col(body, "gold KB")["answers"] == []


@pytest.mark.parametrize("prefix,expected", [('" }', [EVIL]), ("<scr", []), ("Plain", ["Plain Town"]),
                                             ("land of \"q", [QUOTED]), ("\\", []), ("'", []), ('"', [EVIL])])
def test_suggestions_with_sparql_syntax_in_the_prefix(client, sparql, prefix, expected):
    """Subjects only (the script label is an object): SPARQL syntax in a prefix is matched, never run."""
    r = client.get("/api/suggest", params={"prefix": prefix})
    assert r.status_code == 200, r.text
    assert r.json()["labels"] == expected


def test_page_escapes_labels_and_links(client):
    for subject, rel, answer in ((EVIL, "P47", SCRIPT), (QUOTED, "P36", CAPITAL)):
        r = client.get("/", params={"subject": subject, "relation": rel})
        assert r.status_code == 200
        page = r.text
        assert "<script>alert" not in page and "<b>bold</b>" not in page
        assert str(escape(answer)) in page
        hrefs = re.findall(r'href="([^"]*)"', page)
        links = [html.unescape(h) for h in hrefs if h.startswith("/api/query?")]
        assert links, "the page links its JSON"
        for link in links:
            assert not set(link) & set('"<> {}'), link
            assert parse_qs(urlsplit(link).query)["subject"] == [subject]
        values = re.findall(r'<input id="subject" name="subject" value="([^"]*)"', page)
        assert [html.unescape(v) for v in values] == [subject]


def test_bad_input_pages_escape_the_message(client):
    r = client.get("/", params={"subject": "x", "relation": "<img src=x onerror=alert(1)>"})
    assert r.status_code == 400 and "<img src=x" not in r.text and "&lt;img src=x" in r.text
    api = client.get("/api/query", params={"subject": "x", "relation": '"; DROP'})
    assert api.status_code == 400 and api.json()["detail"].startswith("unknown relation")


def test_evidence_paragraphs_are_segments_with_counts(client):
    body = client.get("/api/query", params={"subject": "Plain Town", "relation": "P47"}).json()
    ev = body["evidence"]
    assert ev["status"] == "ok" and len(ev["paragraphs"]) >= 2
    first = ev["paragraphs"][0]
    assert first["title"] in ("Borders", "Towns")
    marked = {(s["text"], s["mark"]) for p in ev["paragraphs"] for s in p["segments"] if s["mark"]}
    assert ("Plain Town", "subject") in marked and (EVIL, "object") in marked
    assert all("".join(s["text"] for s in p["segments"]) for p in ev["paragraphs"])
    (count,) = [c for c in ev["cooccurrence"] if c["object"] == EVIL]
    # "Plain Town" is in Borders and Towns; the hostile label (its words) only in Borders
    assert (count["a"], count["b"], count["both"], count["total"], count["gold"]) == (2, 1, 1, 4, True)
    page = client.get("/", params={"subject": "Plain Town", "relation": "P47"}).text
    assert '<mark class="subject">Plain Town</mark>' in page
    assert f'<mark class="object">{escape(EVIL)}</mark>' in page and "<script>alert" not in page
