"""`kbc serve` under many users: a hostile query fails only its own request or column, no answer or error
carries another request's text, and the page's URLs never come from the request's Host header."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import serve_support

from eval.corpora import load_corpus

serve_explorer = serve_support.serve_explorer
serve_run = serve_support.serve_run
serve_app = serve_support.serve_app
client = serve_support.client

HOSTILE = ["The [MASK] Singer", "word " * 3000, "Ada <mask> Lovelace"]
HOSTILE_TEXT = ("[MASK] Singer", "word word", "<mask>")


@pytest.fixture(scope="module")
def subjects(lama_dir) -> list[str]:
    facts = load_corpus("trex", lama_dir, ["P19"]).facts
    counts = Counter(f.subject.label for f in facts)
    return [f.subject.label for f in facts if counts[f.subject.label] == 1][:10]


def _answers(body: dict) -> dict:
    return {c["name"]: (c["status"], c["answers"]) for c in [*body["columns"], body["coherency"]]}


def _assert_same_answers(body: dict, alone: dict, where: str) -> None:
    """Each column of a query asked in a batch as asked alone: the same status and answers, scores up to float32's
    reduction order (which the batch's shape may change)."""
    got, want = _answers(body), _answers(alone)
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}, where
    for name, (_, answers) in got.items():
        serve_support.assert_same_answers_in_any_batch(answers, want[name][1], f"{where} {name}")


def test_one_hostile_client_among_many(serve_explorer, subjects, monkeypatch):
    """Ten users and one who sends subjects holding the mask token or thousands of words, all at once, with
    the masked LM asked there and back (coherency): every other user's answers equal those asked alone."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app

    monkeypatch.setattr(serve_explorer.cfg, "coherency", "bert")
    with TestClient(create_app(serve_explorer)) as c:
        def ask(subject: str):
            return c.get("/api/query", params={"subject": subject, "relation": "P19", "k": 5})

        alone = {s: ask(s).json() for s in subjects}
        work = [s for _ in range(3) for s in subjects] + HOSTILE * 4
        work = [work[i] for i in sorted(range(len(work)), key=lambda i: (i * 7) % len(work))]  # hostile spread out
        start = threading.Barrier(16)

        def timed(subject: str):
            try:
                start.wait(timeout=5)
            except threading.BrokenBarrierError:
                pass
            return subject, ask(subject)

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(timed, work))
    batches = []
    for subject, r in results:
        if subject in HOSTILE:
            assert r.status_code == 400, (subject[:20], r.text[:200])
            detail = r.json()["detail"]
            assert "mask token" in detail or "14999 characters" in detail, detail
            assert not any(s in detail for s in subjects)
            continue
        assert r.status_code == 200, (subject, r.text[:300])
        assert not any(text in r.text for text in HOSTILE_TEXT), subject
        body = r.json()
        batches.append(body["batch"])
        assert body["coherency"]["status"] == "ok" and body["coherency"]["name"] == "bert"
        _assert_same_answers(body, alone[subject], subject)
    assert len(batches) == 30


def test_a_query_failing_inside_a_batch_fails_only_its_own_columns(serve_explorer, subjects, monkeypatch):
    """Past the checks (asked directly), a subject holding the mask token still fails only its own LM and
    coherency columns: the five queries batched with it keep their answers, and no message quotes it."""
    from bridge.serve.batching import Batcher
    from bridge.serve.sides import Ask, answer_many

    monkeypatch.setattr(serve_explorer.cfg, "coherency", "bert")
    asks = [Ask(subject=s, relation="P19", k=5) for s in [*subjects[:5], "The [MASK] Singer"]]
    alone = [serve_explorer.call(answer_many, serve_explorer, [a])[0] for a in asks]
    together = serve_explorer.call(answer_many, serve_explorer, asks)
    for ask, one, both in zip(asks, alone[:5], together[:5]):
        _assert_same_answers(both, one, ask.subject)
        assert "[MASK] Singer" not in repr(both)
    bad = together[-1]
    assert bad["coherency"]["status"] == "error" and "The [MASK] Singer was born in [MASK]" in bad["coherency"][
        "message"]
    assert next(c for c in bad["columns"] if c["name"] == "bert")["status"] == "error"
    assert next(c for c in bad["columns"] if c["name"] == "freq")["status"] == "ok"
    batcher = Batcher(serve_explorer, lambda items: answer_many(serve_explorer, items))
    with ThreadPoolExecutor(len(asks)) as pool:
        via_batcher = list(pool.map(batcher.ask, asks))
    for ask, got, one in zip(asks, via_batcher, alone):
        _assert_same_answers(got, one, ask.subject)


def test_a_failing_batch_is_answered_item_by_item(serve_explorer):
    """Whatever raises for one item of a batch reaches that item's request alone."""
    sizes: list[int] = []
    items = ["a", "b", "evil", "c"]

    def answer_many(items: list[str]) -> list[str]:
        sizes.append(len(items))
        if "evil" in items:
            raise ValueError(f"cannot answer {items}")
        return [item.upper() for item in items]

    batcher = serve_support.holding_batcher(serve_explorer, answer_many, len(items))  # the others join one batch

    def ask(item: str):
        try:
            return batcher.ask(item)
        except ValueError as exc:
            return f"error: {exc}"

    with ThreadPoolExecutor(len(items)) as pool:
        futures = [pool.submit(ask, item) for item in items]
        answers = [f.result(timeout=120) for f in futures]
    assert answers == ["A", "B", "error: cannot answer ['evil']", "C"]
    assert max(sizes) > 1


def test_page_urls_do_not_come_from_the_host_header(client):
    r = client.get("/", headers={"Host": "evil.example:666"})
    assert r.status_code == 200
    assert "evil.example" not in r.text
    assert '<script src="/static/app.js">' in r.text and 'href="/static/style.css"' in r.text
    assert client.get("/static/app.js").status_code == 200
