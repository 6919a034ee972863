"""Every Elasticsearch request ends within its timeout as a whole, however slowly a server sends its answer.

A loopback HTTP server plays an Elasticsearch holding one index (the routes the client uses to open
it, count and describe it) and sends the answers of chosen routes one byte at a time. The client is
the real `elasticsearch` client over real sockets. An answer trickled at one byte per 0.5 s takes
about a minute to arrive whole; without a deadline on the whole request each of these tests would
wait for it, then see the answer instead of the error.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_support import run_kbc

from eval.errors import KbcError
from kb.text.index import open_index

INDEX, CONCRETE = "lama", "lama-1"
SHARDS = {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
ANSWERS = {
    "/": {"name": "node", "cluster_name": "kbc", "tagline": "You Know, for Search",
          "version": {"number": "9.0.0", "build_flavor": "default"}},
    f"/_alias/{INDEX}": {CONCRETE: {"aliases": {INDEX: {}}}},
    f"/{CONCRETE}/_mapping": {CONCRETE: {"mappings": {"_meta": {"source": "jsonl:paragraphs.jsonl"}}}},
    f"/{INDEX}/_count": {"count": 7, "_shards": SHARDS},
    f"/{CONCRETE}/_stats": {"_all": {"primaries": {"docs": {"count": 7}, "store": {"size_in_bytes": 4096}}}},
}
TRICKLE = 0.5  # seconds between two bytes of a slow answer


class _FakeElasticsearch(BaseHTTPRequestHandler):
    """Answers the routes of `ANSWERS`; those in `slow` (route -> seconds per byte) one byte at a time."""

    protocol_version = "HTTP/1.1"  # connections stay open between requests, as with Elasticsearch
    slow: dict[str, float]
    connections: list  # one entry per connection accepted

    def setup(self) -> None:
        super().setup()
        self.connections.append(self.client_address)

    def _answer(self, with_body: bool = True) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self.path.split("?")[0]
        body = json.dumps(ANSWERS.get(route, {"error": f"no route {route}"})).encode()
        self.send_response(200 if route in ANSWERS else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Elastic-Product", "Elasticsearch")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        pause = self.slow.get(route)
        if not with_body:
            return
        if pause is None:
            self.wfile.write(body)
            return
        for i in range(len(body)):
            self.wfile.write(body[i:i + 1])
            self.wfile.flush()
            time.sleep(pause)

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        self._answer()

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(with_body=False)

    def log_message(self, *args) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a trickle cut off by the client ends in a broken pipe


@contextlib.contextmanager
def fake_es(slow: dict[str, float]) -> Iterator[tuple[str, list]]:
    """(URL, connections accepted) of a fake Elasticsearch that trickles the answers of the `slow` routes."""
    connections: list = []
    handler = type("Handler", (_FakeElasticsearch,), {"slow": slow, "connections": connections})
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", connections
    finally:
        server.shutdown()
        server.server_close()


def late(url: str, seconds: str = "1") -> str:
    return (f"Elasticsearch at {url}: no answer within {seconds} s (raise --es-timeout, or --set "
            "es_timeout=SECONDS in `kbc run`, for slow servers)")


def test_a_trickled_answer_on_a_kept_alive_connection_ends_at_the_timeout():
    with fake_es({f"/{INDEX}/_count": TRICKLE}) as (url, connections):
        index = open_index("elasticsearch", INDEX, url, es_timeout=1.0)
        assert len(connections) == 1  # the count below goes over the connection the opening used
        with pytest.raises(KbcError) as err:
            len(index)
        index.close()
    assert str(err.value) == late(url)
    assert len(connections) == 1  # a request past its deadline is not retried


def test_a_trickled_first_answer_ends_at_the_timeout():
    with fake_es({"/": TRICKLE}) as (url, _), pytest.raises(KbcError) as err:
        open_index("elasticsearch", INDEX, url, es_timeout=1.5)
    assert str(err.value) == late(url, "1.5")


def test_a_slow_but_timely_answer_is_read_whole():
    with fake_es({f"/{INDEX}/_count": 0.002, f"/{CONCRETE}/_stats": 0.002}) as (url, connections):
        index = open_index("elasticsearch", INDEX, url, es_timeout=30.0)
        assert len(index) == 7
        stats = index.stats()
        index.close()
    assert (stats["paragraphs"], stats["size_bytes"], stats["index"], stats["source"]) == (
        7, 4096, CONCRETE, "jsonl:paragraphs.jsonl")
    assert len(connections) == 1


def _one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_cli_names_the_url_and_the_timeout_option(capsys):
    with fake_es({f"/{CONCRETE}/_stats": TRICKLE}) as (url, _):
        code, _, err = run_kbc(["index", "stats", "--backend", "elasticsearch", "--es-url", url, "--index", INDEX,
                                "--es-timeout", "1"], capsys)
    assert _one_error(code, err) == f"error: {late(url)}"


def test_a_run_bounds_its_retrieval_predictor_by_es_timeout(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    with fake_es({f"/{CONCRETE}/_stats": TRICKLE}) as (url, _):
        code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_death",
                                "--predictors", "retrieval", "--set", "backend=elasticsearch", "--set",
                                f"es_url={url}", "--set", f"text_index={INDEX}", "--set", "es_timeout=1",
                                "--data-dir", str(lama_dir), "--out", str(tmp_path / "run"), "--quiet"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and "Traceback" not in err and errors == [f"error: {late(url)}"], err
