"""One deadline for a whole HTTP request: connecting, sending and reading the last byte.

A socket timeout bounds each read only, so a server that sends a byte now and then is never
timed out by it. Inside `with Deadline(seconds):` a timer shuts down the sockets this thread's
requests use once the time is up. A client takes part by building its connections from
`watching(ConnectionClass)` (http.client's classes, or urllib3's, which derive from them).
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Callable
from typing import TypeVar
from urllib.request import HTTPHandler, HTTPRedirectHandler, HTTPSHandler, OpenerDirector, build_opener

T = TypeVar("T")
_active = threading.local()  # .deadline: the Deadline of the request this thread is making, if any


class Deadline:
    """Shuts down the sockets of the requests made inside `with` once `seconds` have passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._outer: Deadline | None = None

    def __enter__(self) -> Deadline:
        self._outer = getattr(_active, "deadline", None)
        _active.deadline = self
        self._timer = threading.Timer(self.seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        _active.deadline = self._outer

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def within(seconds: float, call: Callable[[], T]) -> T:
    """What `call()` returns, its requests (made through `watching` connections, as `OPENER`'s) bounded as a whole
    by `seconds`: `TimeoutError` past them, also where the call ended, since the shutdown may end a body without a
    length early and part of it must never be used."""
    deadline = Deadline(seconds)
    try:
        with deadline:
            result = call()
    except Exception:
        if deadline.expired:
            raise TimeoutError from None
        raise
    if deadline.expired:
        raise TimeoutError
    return result


def watching(connection_class: type) -> type:
    """`connection_class` reporting its socket to the deadline of the request that uses it.

    A new connection reports when it connects; one kept alive from an earlier request, when it
    is used again.
    """

    class Watched(connection_class):
        def connect(self) -> None:
            super().connect()
            _report(self.sock)

        def request(self, *args, **kwargs):
            if self.sock is not None:
                _report(self.sock)
            return super().request(*args, **kwargs)

    Watched.__name__ = Watched.__qualname__ = f"Watched{connection_class.__name__}"
    return Watched


def _report(sock: socket.socket | None) -> None:
    deadline = getattr(_active, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.watch(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def opener(follow_redirects: bool = True) -> OpenerDirector:
    """A urllib opener whose connections report their sockets to the request's `Deadline`; without
    `follow_redirects`, a redirect is raised as the `HTTPError` it is (urllib would ask a POST's new address with a
    GET, without its body)."""
    http_conn, https_conn = watching(http.client.HTTPConnection), watching(http.client.HTTPSConnection)

    class HttpHandler(HTTPHandler):
        def http_open(self, req):
            return self.do_open(http_conn, req)

    class HttpsHandler(HTTPSHandler):
        def https_open(self, req):
            return self.do_open(https_conn, req, context=self._context)

    class Unfollowed(HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs) -> None:
            return None

    return build_opener(HttpHandler, HttpsHandler, *([] if follow_redirects else [Unfollowed]))


OPENER = opener()  # `OPENER.open(request)` inside `with Deadline(seconds):` is bounded as a whole
