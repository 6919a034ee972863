"""The graph store against a remote SPARQL 1.1 endpoint (a loopback endpoint serving an Oxigraph store)."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pyoxigraph as ox
import pytest
from tests_support_facts import toy_facts

from eval.types import Entity
from kb.store import GraphStore


class _Endpoint(BaseHTTPRequestHandler):
    store: ox.Store

    def _answer(self, query: str) -> None:
        body = self.store.query(query).serialize(format=ox.QueryResultsFormat.JSON)
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._answer(parse_qs(urlparse(self.path).query)["query"][0])

    def do_POST(self):  # noqa: N802
        data = self.rfile.read(int(self.headers["Content-Length"])).decode()
        if self.headers.get("Content-Type", "").startswith("application/sparql-query"):
            self._answer(data)
        else:
            self._answer(parse_qs(data)["query"][0])

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint(tmp_path):
    with GraphStore.open(tmp_path / "local") as local:
        local.add_facts(toy_facts())
    handler = type("Handler", (_Endpoint,), {"store": ox.Store(str(tmp_path / "local"))})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/sparql"
    server.shutdown()


def test_same_answers_remote(endpoint):
    store = GraphStore.remote(endpoint)
    assert store.objects(Entity("Paris", "Q90"), "P131") == [Entity("France", "Q142")]
    assert sorted(e.label for e in store.subjects("P131", Entity("France", "Q142"))) == ["Lyon", "Paris"]
    assert store.valid_objects("P47") == {"Q29": {"France"}, "Q142": {"Spain", "Italy"}}
