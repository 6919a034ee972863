"""A small scripted OpenAI-compatible HTTP server on localhost, for the cases a real server will not produce on
demand (refusals, garbage, slowness, 429s) and for answers chosen by the test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lm.local_server import free_port

__all__ = ["DROP", "Scripted", "completion", "free_port"]

# (HTTP status, a JSON-able body or raw bytes), or with the headers to send as a third item (Retry-After)
Reply = tuple[int, object] | tuple[int, object, dict[str, str]]
DROP = 0  # as a reply's status: the connection is closed without an answer (a server restarting, a proxy's cut)


def completion(text: str, api: str, prompt_tokens: int = 3, completion_tokens: int = 2) -> dict:
    """An OpenAI response body holding `text`."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}} if api == "chat" else \
        {"index": 0, "text": text}
    return {"id": "x", "object": "chat.completion" if api == "chat" else "text_completion", "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


class Scripted:
    """Answers each POST with `script(path, body, n)` (n: the request's number, from 1), or drops the connection
    where its status is `DROP`; records every body.
    `GET /v1/models` lists `models` (the entries, which a test may change) where given, else answers 404."""

    def __init__(self, script: Callable[[str, dict, int], Reply], delay: float = 0.0,
                 models: list[dict] | None = None) -> None:
        self.script, self.delay, self.bodies, self.models = script, delay, [], models
        self.listed = 0  # GET /v1/models answered
        self.lock = threading.Lock()
        self.active = self.peak = 0  # requests being answered now, and the most at once
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                body["_auth"] = self.headers.get("Authorization")
                with owner.lock:
                    owner.bodies.append(body)
                    n = len(owner.bodies)
                    owner.active += 1
                    owner.peak = max(owner.peak, owner.active)
                if owner.delay:
                    time.sleep(owner.delay)
                status, reply, *headers = owner.script(self.path, body, n)
                with owner.lock:
                    owner.active -= 1
                if status == DROP:
                    self.close_connection = True
                    return
                self._send(status, reply, *headers)

            def do_GET(self) -> None:  # noqa: N802
                if owner.models is None or self.path != "/v1/models":
                    self._send(404, {"detail": "Not Found"})
                    return
                with owner.lock:
                    owner.listed += 1
                self._send(200, {"object": "list", "data": owner.models})

            def _send(self, status: int, reply, headers: dict[str, str] | None = None) -> None:
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout case)
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        # a short poll: `close` waits for the serving loop to see the shutdown (half a second by default)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
