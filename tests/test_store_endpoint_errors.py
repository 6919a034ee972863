"""Remote store failures: bounded by the timeout, transient ones retried, all others one-line `KbcError`s."""

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval.errors import KbcError
from kb.store import GraphStore

RESULTS = (b'{"head": {"vars": ["n"]}, "results": {"bindings": '
           b'[{"n": {"type": "literal", "value": "7", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}')
OK = (200, "application/sparql-results+json", RESULTS)
HTML = (200, "text/html; charset=utf-8",
        b"<html><head><title>Welcome</title></head>\n<body><h1>It works!</h1></body></html>")


class _Scripted(BaseHTTPRequestHandler):
    """Answers requests with the next step of `script`: (status, content type, body) or "reset"."""

    script: list
    seen: list  # (path, Authorization header) of each request

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.seen.append((self.path, self.headers.get("Authorization")))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if step == "reset":  # close with RST, as a crashing proxy does
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        status, ctype, body = step
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the reset step leaves a closed socket behind


@contextlib.contextmanager
def scripted(*script) -> Iterator[tuple[str, list]]:
    """(URL, requests seen) of a loopback HTTP server that answers with `script`."""
    seen: list = []
    handler = type("Handler", (_Scripted,), {"script": list(script), "seen": seen})
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/sparql", seen
    finally:
        server.shutdown()
        server.server_close()


def remote(url: str, **kw) -> GraphStore:
    return GraphStore.remote(url, url.replace("/sparql", "/update"), **{"timeout": 2.0, "backoff": 0.01, **kw})


def one_line_error(call, pattern: str) -> str:
    with pytest.raises(KbcError, match=pattern) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and len(message) < 400
    return message


def test_an_endpoint_that_never_answers_times_out():
    with socket.socket() as silent:  # accepts connections (the kernel's backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/sparql"
        started = time.monotonic()
        message = one_line_error(lambda: remote(url, timeout=1.0).count(), "no answer within 1 s")
        assert 0.9 < time.monotonic() - started < 20  # never, without the timeout
    assert message == f"SPARQL endpoint {url}: no answer within 1 s (raise --store-timeout for slow servers)"


def test_refused_connection():
    with socket.socket() as sock:  # bound, never listening: refused, and no other process can take the port meanwhile
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/sparql"
        message = one_line_error(lambda: remote(url).count(), "connection refused")
    assert message == f"SPARQL endpoint {url}: connection refused (is the server running on 127.0.0.1:{port}?)"


def test_unknown_host():
    message = one_line_error(lambda: remote("http://nonexistent.invalid/sparql").count(), "unknown host")
    assert message == "SPARQL endpoint http://nonexistent.invalid/sparql: unknown host nonexistent.invalid"


def test_http_500_names_status_and_endpoint():
    with scripted((500, "text/plain", b"Internal error:\n  at line 3\n  boom")) as (url, seen):
        message = one_line_error(lambda: remote(url).count(), "HTTP 500")
    assert message == f"SPARQL endpoint {url} answered HTTP 500 Internal Server Error: Internal error: at line 3 boom"
    assert len(seen) == 1  # not retried


def test_html_is_not_sparql_results():
    with scripted(HTML) as (url, _):
        message = one_line_error(lambda: remote(url).count(), "did not answer with SPARQL results")
    assert message == (f"the SPARQL endpoint {url} did not answer with SPARQL results (Content-Type text/html: "
                       "Welcome It works!); is it the query URL of a SPARQL endpoint?")


def test_broken_json_is_not_sparql_results():
    with scripted((200, "application/sparql-results+json", b'{"head": ')) as (url, _):
        one_line_error(lambda: remote(url).count(), r"did not answer with SPARQL results \(unreadable")


def test_transient_errors_are_retried():
    busy = (503, "text/plain", b"busy")
    with scripted(busy, (502, "text/plain", b"bad gateway"), "reset", OK) as (url, seen):
        store = remote(url)
        assert store.count() == 7
    assert len(seen) == 4 and store.backend.requests == 4
    with scripted("reset") as (url, seen):
        one_line_error(lambda: remote(url, retries=2).count(),
                       r"^SPARQL endpoint http://127\.0\.0\.1:\d+/sparql: connection lost "
                       r"\((ConnectionResetError|RemoteDisconnected)\) \(after 3 tries\)$")
    assert len(seen) == 3


def test_retries_give_up_with_backoff():
    with scripted((504, "text/plain", b"gateway timeout")) as (url, seen):
        started = time.monotonic()
        message = one_line_error(lambda: remote(url, retries=3, backoff=0.1).count(), "HTTP 504")
        waited = time.monotonic() - started
    assert message == f"SPARQL endpoint {url} answered HTTP 504 Gateway Timeout (after 4 tries): gateway timeout"
    assert len(seen) == 4
    assert 0.7 <= waited < 10  # 0.1 + 0.2 + 0.4 s between the four tries, not one more second each


def test_updates_are_retried_and_reported_too():
    with scripted((503, "text/plain", b""), (200, "text/plain", b"")) as (url, seen):
        remote(url).drop_graph("x")
    assert [path for path, _ in seen] == ["/update", "/update"]
    with scripted((403, "text/plain", b"updates are disabled")) as (url, _):
        one_line_error(lambda: remote(url).drop_graph("x"), r"^SPARQL endpoint http://127\.0\.0\.1:\d+/update "
                                                            r"answered HTTP 403 Forbidden: updates are disabled$")


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_printed():
    with scripted((500, "text/plain", b"no")) as (url, seen):
        secret = url.replace("http://", "http://ann:s3cret@")
        store = GraphStore.remote(secret, timeout=2.0)
        message = one_line_error(store.count, "HTTP 500")
        assert seen == [("/sparql", "Basic YW5uOnMzY3JldA==")]  # base64 of ann:s3cret
    assert message == f"SPARQL endpoint {url} answered HTTP 500 Internal Server Error: no"
    assert store.location == url


class _Dribbling(BaseHTTPRequestHandler):
    """Sends a valid SPARQL answer one byte a `pause`, headers included: each read is quick, the whole is not."""

    pause = 0.2

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"
                f"Content-Length: {len(RESULTS)}\r\n\r\n").encode()
        try:
            for i in range(len(head + RESULTS)):
                self.wfile.write((head + RESULTS)[i:i + 1])
                self.wfile.flush()
                time.sleep(self.pause)
        except OSError:
            pass  # the client gave up

    def log_message(self, *args):
        pass


def test_a_server_sending_a_byte_at_a_time_is_timed_out_as_a_whole():
    server = _QuietServer(("127.0.0.1", 0), _Dribbling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/sparql"
    try:
        started = time.monotonic()
        message = one_line_error(lambda: remote(url, timeout=1.0).count(), "no answer within 1 s")
        assert 0.9 < time.monotonic() - started < 20  # the answer would take ~60 s
    finally:
        server.shutdown()
        server.server_close()
    assert message == f"SPARQL endpoint {url}: no answer within 1 s (raise --store-timeout for slow servers)"


def test_a_slow_but_timely_answer_is_read_whole():
    handler = type("Quick", (_Dribbling,), {"pause": 0.0005})
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert remote(f"http://127.0.0.1:{server.server_address[1]}/sparql", timeout=10.0).count() == 7
    finally:
        server.shutdown()
        server.server_close()
