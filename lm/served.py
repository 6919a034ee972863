"""A client of any OpenAI-compatible server (vLLM, TGI, llama.cpp, Ollama, `transformers serve`, OpenAI).

`/v1/chat/completions` takes chat turns, `/v1/completions` plain text. Requests go out concurrently (at most
`concurrency` at a time), each with a timeout; timeouts, connections the server closed without answering and the answers
of a busy server or a gateway (429, 502, 503, 504) are retried with jittered exponential backoff (a random wait between
half and all of the doubled one, so that clients and threads failing together do not retry together), or after the
`Retry-After` the server names (as given, at most `RETRY_AFTER_MAX` seconds). A server that cannot be reached, refuses
the key (401/403), does not know the model (400 or 404: the names it lists are given), fails on the request itself (500:
the same request fails again, e.g. chat turns for a model without a chat template, a prompt longer than the model's
context) or answers something that is not a completion stops the run with one `ServerError` line naming the URL, the
server's own message and the fix. A Ctrl-C is taken while waiting for answers only: every answer that came is handed
over. The key is read from the environment variable named by the user and only ever sent in the Authorization header.
What a server says of a model (its `GET /v1/models` entry) and of the weights that answered (a response's
`system_fingerprint`) is read for a response cache shared across runs; many servers say nothing there that changes with
the weights.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
import math
import os
import random
import re
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urljoin

from eval.deadline import opener, within
from eval.errors import KbcError
from eval.jsonl import json_type
from lm.generation import Generated, GenerationParams, cut_at_stop

APIS = ("chat", "completions")
# busy, or a gateway before it: the same request may work later (408: a proxy's request timeout; 520-524: Cloudflare's
# origin errors and timeouts, 524 a reply slower than its 100 s; 529: overloaded, as Anthropic's API says it)
RETRY_STATUS = frozenset({408, 429, 502, 503, 504, 520, 521, 522, 523, 524, 529})
RETRY_AFTER_MAX = 60.0  # seconds: the longest wait a server's `Retry-After` gets
# a connection the server closed or reset without an answer (a restart, a proxy's idle cut): asked again
DROPPED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.RemoteDisconnected,
           http.client.IncompleteRead)
FAILED_ENDS = frozenset({"error", "abort"})  # finish reasons of a generation that failed: no answer, asked again
_OPENER = opener(follow_redirects=False)  # a redirect is said, never asked with a GET in the POST's place
SHOWN = 200  # characters of a server's message in an error line
LISTED = 10  # model names of a server's list in an error line


class ServerError(KbcError):
    """The server cannot answer the run (down, refuses, answers garbage): one line, the run stops.

    `failure`: an HTTP failure's (endpoint, code, server message, prompt length, models note), from which
    `ServedGenerator.generate` says it again once the requests in flight have settled: the requests it says were
    answered are then those the run counts and keeps."""

    failure: tuple[str, int, str, int | None, str] | None = None


class ServerUnavailable(ServerError):
    """The server failed or could not be reached (a refused connection, a timeout, an HTTP 5xx or 429 whose message
    names no fix of the run's): the same command, rerun, resumes the run, asking only what was never answered."""

    resumable = True


class _Unlisted(Exception):
    """`GET /v1/models` has no list to read (no such endpoint, not JSON): the server says nothing of its models."""


@dataclass(frozen=True)
class ServerSettings:
    url: str  # the API root, e.g. http://127.0.0.1:8000/v1
    model: str
    api: str = "chat"
    key_env: str | None = None
    timeout: float = 60.0
    concurrency: int = 4
    retries: int = 3
    backoff: float = 1.0  # seconds before the first retry, doubled each time
    option_prefix: str = ""  # how a run writes this model's options ("llm." of `--set llm.model=...`), for the fixes

    @property
    def shown(self) -> str:
        """The URL as a run writes and prints it (`recorded_url`)."""
        return recorded_url(self.url)

    def describe(self) -> dict:  # never the key itself, nor a query's values (`recorded_url`)
        digest = query_digest(self.url)
        return {"url": self.shown, **({"query_digest": digest} if digest else {}), "model": self.model,
                "api": self.api, "key_env": self.key_env,
                "timeout": self.timeout, "concurrency": self.concurrency, "retries": self.retries}


def api_root(url: str) -> str:
    """`http://host:port/v1` from the root or any endpoint under it; a query (`?api-version=...`) is kept after it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for tail in ("/chat/completions", "/completions"):
        if path.endswith(tail):
            path = path[: -len(tail)]
    path = path if path.endswith("/v1") else path + "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


PUBLIC_PARAMS = ("api-version", "version")  # query parameters known to hold no secret: written as they are


def recorded_url(url: str) -> str:
    """`url` as a run writes and prints it: the value of each query parameter but `PUBLIC_PARAMS` as `***` (a key
    may hide under any name: Azure Functions' `code`); `query_digest` tells two queries apart."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.query:
        return url
    items = [(item.split("=", 1)[0], "=" in item, item) for item in parts.query.split("&")]
    query = "&".join(item if unquote(key).lower() in PUBLIC_PARAMS or not has_value else f"{key}=***"
                     for key, has_value, item in items)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def query_digest(url: str) -> str | None:
    """A digest of `url`'s whole query where `recorded_url` hides some of it, so that a run's identity and a cache's
    key tell two queries apart without holding their values; None where nothing is hidden."""
    if recorded_url(url) == url:
        return None
    import hashlib
    from urllib.parse import urlsplit

    return hashlib.sha256(urlsplit(url).query.encode()).hexdigest()[:16]


def recorded_text(text: str) -> str:
    """`text` (a command-line word, a message) with each http(s) URL in it as `recorded_url` writes it."""
    return re.sub(r"https?://[^\s'\"]+", lambda m: recorded_url(m.group(0)), text)


def endpoint_of(root: str, tail: str) -> str:
    """The endpoint `tail` (`models`, `chat/completions`) under the API root `root`, its query kept after the path."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(root)
    return urlunsplit((parts.scheme, parts.netloc, f"{parts.path.rstrip('/')}/{tail}", parts.query, ""))


def public_url(url: str) -> str:
    """`url` as a table may show it: no user name or password, no query or fragment (where keys may hide)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


class ServedGenerator:
    """Sends prompts (text or chat turns) to one server and model; counts what it sent and what it cost."""

    def __init__(self, settings: ServerSettings, sleep: Callable[[float], object] | None = None,
                 uniform: Callable[[], float] | None = None) -> None:
        self.settings = settings
        self.sleep = sleep  # None: a backoff waits on the stop of its `generate`, which ends it at once
        self.uniform = uniform or random.Random().random  # the jitter of a backoff: a number in [0, 1)
        self.key = None
        if settings.key_env:
            self.key = os.environ.get(settings.key_env)
            if not self.key:
                raise ServerError(f"--set {settings.option_prefix}key_env={settings.key_env}: that environment "
                                  "variable is not set; export it with the server's API key")
        self.sent = self.failed = self.retried = 0
        self.answered = 0  # requests the server answered with a completion: a later bare 500 is no template's fault
        self._waits_told = False  # a server's `Retry-After` is said on stderr once
        self._answered_as: set[str] = set()  # model names answers came under other than the one asked, each said once
        self._lock = threading.Lock()  # the counters are bumped from the request threads
        self.slice = 4 * settings.concurrency  # prompts handed over at once by a caller that caches as it goes
        self.keeps = True  # the caller keeps each answer as it comes (a response cache); False: cache=off
        self._listed: tuple[dict | None] | None = None  # `listed()`, once asked

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    @property
    def fingerprint(self) -> str:
        digest = query_digest(self.settings.url)
        return f"{self.settings.shown}|{self.settings.api}" + (f"|query:{digest}" if digest else "")

    def _post(self, body: dict, stopping: threading.Event) -> dict:
        s = self.settings
        return self._request(endpoint_of(s.url, "chat/completions" if s.api == "chat" else "completions"), body,
                             stopping)

    def _request(self, endpoint: str, body: dict | None = None, stopping: threading.Event | None = None) -> dict:
        """The JSON answer of a POST of `body` (every try counted as sent), or of a GET where `body` is None. Once
        `stopping` is set (the run stops), a failed try is not retried."""
        s = self.settings
        stopping = stopping or threading.Event()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = None if body is None else json.dumps(body).encode()
        shown = recorded_url(endpoint)  # what the messages name
        count = self._count if body is not None else (lambda name: None)
        tries = f"{s.retries + 1} {'try' if s.retries == 0 else 'tries'}"
        for attempt in range(s.retries + 1):
            request = urllib.request.Request(endpoint, data=data, headers=headers,
                                             method="GET" if body is None else "POST")
            count("sent")
            try:
                raw = _within(request, s.timeout)
                break
            except urllib.error.HTTPError as exc:
                detail = server_message(exc.read(8192))
                after = exc.headers.get("Retry-After") if exc.headers else None
                if exc.code in RETRY_STATUS and attempt < s.retries and not stopping.is_set() and self._backoff(
                        self._wait(attempt, exc.code, after, shown), stopping):
                    count("retried")
                    continue
                count("failed")
                if body is None and exc.code not in (401, 403):
                    raise _Unlisted from None
                if 300 <= exc.code < 400:
                    moved = exc.headers.get("Location") if exc.headers else None
                    raise ServerError(f"{shown}: the server redirects the request (HTTP {exc.code}) to "
                                      f"{public_url(urljoin(endpoint, moved)) if moved else 'no address'}: give the "
                                      "URL it names as the predictor's spec") from None
                served = self._other_models() if exc.code in (400, 404) else ""
                asked = _asked_length(body)
                # a failure of the server's own, with no fix of the run's to name, may pass: rerun, the run resumes
                failed = (exc.code >= 500 or exc.code in (408, 429)) and not _hint(exc.code, detail, s, self.answered,
                                                                                    asked)
                kind = ServerUnavailable if failed else ServerError
                error = kind(_http_message(shown, exc.code, detail, s, self.answered, asked) + served)
                error.failure = (shown, exc.code, detail, asked, served)
                raise error from None
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                reason = getattr(exc, "reason", exc)
                timed_out = isinstance(reason, TimeoutError) or "timed out" in str(reason)
                dropped = isinstance(reason, DROPPED)
                if (timed_out or dropped) and attempt < s.retries and not stopping.is_set() and self._backoff(
                        self._delay(attempt), stopping):
                    count("retried")
                    continue
                count("failed")
                if timed_out:
                    raise ServerUnavailable(f"{shown}: no answer within {s.timeout:g} s ({tries}); raise --set "
                                            f"{s.option_prefix}timeout=SECONDS, or send fewer requests at once "
                                            f"(--set {s.option_prefix}concurrency=N, now {s.concurrency}): a server "
                                            "answering fewer at a time keeps the others waiting") from None
                if dropped:
                    raise ServerUnavailable(f"{shown}: the server closed the connection without an answer "
                                            f"({_reason_text(reason)}; {tries}); check that it is still running"
                                            ) from None
                raise ServerUnavailable(f"{shown}: cannot reach the server ({reason}); start it, or check the URL"
                                  ) from None
        try:
            return json.loads(raw)
        except ValueError:
            count("failed")
            if body is None:
                raise _Unlisted from None
            raise self._garbled(f"{shown}: the answer is not JSON ({raw[:80]!r})") from None

    def _garbled(self, message: str) -> ServerError:
        """The error of an answer that is no completion. Before any request of the run was answered, the URL likely
        names no OpenAI-compatible server; after, the server (or a gateway or proxy in its place: a login page, a
        reply cut short) failed, and the run resumes once it answers again."""
        if not self.answered:
            return ServerError(f"{message}; is this an OpenAI-compatible server?")
        told = "1 request of this run was" if self.answered == 1 else f"{self.answered:,} requests of this run were"
        return ServerUnavailable(f"{message}, though {told} answered: the server, or a gateway or proxy before it, "
                                 "failed")

    def _backoff(self, seconds: float, stopping: threading.Event) -> bool:
        """Wait `seconds` before a retry; False where the run stopped meanwhile, so that no request goes out after
        the stop and a stopping run waits for no backoff."""
        (self.sleep or stopping.wait)(seconds)
        return not stopping.is_set()

    def _delay(self, attempt: int) -> float:
        """Seconds before retry `attempt + 1` where the server names none: "equal jitter" of the doubled backoff,
        between half and all of it, so that requests failing at once (the `concurrency` threads, other clients of
        the server) spread their retries rather than hitting a busy server again together."""
        doubled = self.settings.backoff * 2 ** attempt
        return doubled / 2 + doubled / 2 * min(max(self.uniform(), 0.0), 1.0)

    def _wait(self, attempt: int, code: int, after: str | None, shown: str) -> float:
        """Seconds before retry `attempt + 1`: what the server's `Retry-After` asks (at most `RETRY_AFTER_MAX`, said
        on stderr once per generator), else the jittered exponential backoff."""
        asked = retry_after(after)
        if asked is None:
            return self._delay(attempt)
        wait = min(asked, RETRY_AFTER_MAX)
        with self._lock:
            told, self._waits_told = self._waits_told, True
        if not told:
            capped = f" (waiting at most {RETRY_AFTER_MAX:g} s)" if asked > RETRY_AFTER_MAX else ""
            logging.getLogger("kbc").warning("%s: HTTP %d asks to retry after %s%s; its retries wait as asked",
                                             shown, code, _duration(asked), capped)
        return wait

    def _models(self) -> list[dict]:
        """The entries of the server's `GET /v1/models`; none where it has no such list."""
        try:
            answer = self._request(endpoint_of(self.settings.url, "models"))
        except _Unlisted:
            return []
        entries = answer.get("data") if isinstance(answer, dict) else None
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

    def listed(self) -> dict | None:
        """This model's entry in the server's `GET /v1/models` (`id`, `created`, `owned_by`, whatever else the server
        says of it), less `status` (transformers serve's loaded or not, a state rather than an identity); None where
        the server lists no such model or has no such endpoint. Asked once per generator."""
        if self._listed is None:
            mine = [e for e in self._models() if e.get("id") == self.settings.model]
            self._listed = ({k: v for k, v in mine[0].items() if k != "status"} if mine else None,)
        return self._listed[0]

    def _other_models(self) -> str:
        """Where the server refuses a request (400, 404) and lists models without this one: the names it lists."""
        try:
            names = [str(e["id"]) for e in self._models() if e.get("id")]
        except ServerError:  # the list itself refused: the request's own error says enough
            return ""
        if not names or self.settings.model in names:
            return ""
        shown = ", ".join(names[:LISTED]) + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
        return f"; the server lists no model {self.settings.model}, it serves {shown}: " \
            f"--set {self.settings.option_prefix}model=NAME"

    def _one(self, prompt: str | Sequence[dict], params: GenerationParams, stopping: threading.Event) -> Generated:
        s = self.settings
        body: dict = {"model": s.model, "max_tokens": params.max_new_tokens, "temperature": params.temperature,
                      "top_p": params.top_p, "seed": params.seed}
        if params.stop:
            body["stop"] = list(params.stop)
        if s.api == "chat":
            body["messages"] = list(prompt) if not isinstance(prompt, str) else [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt if isinstance(prompt, str) else _plain(prompt)
        shown = recorded_url(endpoint_of(s.url, "chat/completions" if s.api == "chat" else "completions"))
        for attempt in range(s.retries + 1):
            answer = self._post(body, stopping)
            ended = _failed_end(answer)
            if ended is None:
                return self._read(answer, params, shown)
            if attempt < s.retries and not stopping.is_set() and self._backoff(self._delay(attempt), stopping):
                self._count("retried")
                continue
            self._count("failed")
            tries = f"{s.retries + 1} {'try' if s.retries == 0 else 'tries'}"
            raise ServerUnavailable(f"{shown}: the server ended the generation with finish_reason {ended!r} "
                                    f"({tries}): it failed, and wrote no answer to score")
        raise AssertionError("unreachable")

    def _keyless(self, prompt: str | Sequence[dict], params: GenerationParams,
                 stopping: threading.Event) -> Generated:
        """`_one`, whose error never holds the API key: a server's message may quote the key it was sent (a proxy
        naming the key it refuses), and the line is shown, logged and kept in the run's `config.json`."""
        try:
            return self._one(prompt, params, stopping)
        except ServerError as exc:
            key = self.key
            if key:
                def hidden(items: tuple) -> tuple:
                    return tuple(a.replace(key, "***") if isinstance(a, str) else a for a in items)

                exc.args = hidden(exc.args)
                if exc.failure is not None:
                    exc.failure = hidden(exc.failure)
            raise

    def _read(self, answer: object, params: GenerationParams, shown: str) -> Generated:
        """The response held by `answer`, a completion's JSON."""
        s = self.settings
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if isinstance(answer, dict) and not choices and answer.get("error"):  # a gateway's failure, sent as a 200
            self._count("failed")
            raise ServerUnavailable(f"{shown}: the server answered with an error: "
                                    f"{server_message(json.dumps(answer).encode())} (HTTP 200, no completion)")
        if isinstance(choices, list) and not choices:
            self._count("failed")
            raise self._garbled(f"{shown}: the answer holds no choice ({json.dumps(answer)[:120]})")
        try:
            choice, text = _completion_text(answer, s.api == "chat")
        except _Missing as exc:
            self._count("failed")
            raise self._garbled(f"{s.shown}: the answer holds no completion text: {exc} "
                                f"({json.dumps(answer)[:120]})") from None
        self._count("answered")
        self._named(shown, answer.get("model"))
        usage = answer.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = [_token_count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens")]
        system = answer.get("system_fingerprint")
        answered = cut_at_stop(text, params.stop)  # a stop sequence the server wrote ends the answer all the same
        return Generated(answered, tokens[0] or 0, tokens[1] or 0, str(system) if system else None,
                         usage_reported=any(t is not None for t in tokens),
                         cut=choice.get("finish_reason") == "length" and answered == text)  # stopped by max_tokens

    def _named(self, shown: str, name: object) -> None:
        """Say once per name where an answer names a model other than the one asked: a proxy's fallback scores
        another model under this one's name."""
        if not isinstance(name, str) or not name or name == self.settings.model:
            return
        with self._lock:
            told = name in self._answered_as
            self._answered_as.add(name)
        if not told:
            logging.getLogger("kbc").warning("%s answered as model %r, not %r as asked: the scores are that model's "
                                             "(a proxy's fallback, an alias or a dated snapshot of it)", shown, name,
                                             self.settings.model)

    def _await_in_flight(self, pool: ThreadPoolExecutor, in_flight: list[Future], stop: BaseException) -> None:
        """Wait for the requests in flight when the run stops, so that their answers are kept. The process would
        wait for them at its exit anyway: a Ctrl-C in this wait is taken (the run stops as it was stopping) and
        the wait goes on; stderr says what it waits for, which a stop by Ctrl-C would leave silent."""
        if in_flight and isinstance(stop, KeyboardInterrupt):
            fate = "whose answers are kept" if self.keeps else \
                "whose answers are not kept (cache=off: a resumed run asks them again)"
            logging.getLogger("kbc").warning("stopping: waiting for the %d request%s in flight (a try waits at most "
                                             "%g s), %s", len(in_flight), "" if len(in_flight) == 1 else "s",
                                             self.settings.timeout, fate)
        while True:
            try:
                pool.shutdown(wait=True)
                return
            except KeyboardInterrupt:
                continue

    def generate(self, prompts: Sequence[str | Sequence[dict]], params: GenerationParams,
                 kept: Callable[[int, Generated], None] | None = None,
                 handed: Callable[[Sequence[int]], None] | None = None) -> list[Generated]:
        """One response per prompt, in order, asked at most `concurrency` at a time. `kept(i, response)` is called
        in this thread as each response comes, also when a later request fails or the run is interrupted: every
        response paid for reaches the caller (requests in flight then are awaited, those not yet sent are not).
        `handed([i])` is told of each prompt as its request goes out, so that the caller knows which were never
        sent. A Ctrl-C is taken while waiting for the server only: never between a request and its hand-over, nor
        inside `kept`."""
        out: list[Generated | None] = [None] * len(prompts)
        if not prompts:
            return []
        stopping = threading.Event()  # set when this call stops: its requests in flight end with the try they are on
        pool = ThreadPoolExecutor(max(1, min(self.settings.concurrency, len(prompts))))
        futures: dict[Future, int] = {}  # every request handed to the pool, in flight or done
        waiting = iter(enumerate(prompts))
        running: set[Future] = set()
        kept_ones: set[int] = set()  # prompts whose response reached the caller

        def send() -> None:  # the next prompt, if any: a request goes out only while nothing has failed
            for i, prompt in waiting:
                future = pool.submit(self._keyless, prompt, params, stopping)
                futures[future] = i
                running.add(future)
                if handed is not None:
                    handed([i])
                return

        def came(future: Future) -> None:
            i = futures[future]
            kept_ones.add(i)
            out[i] = future.result()
            if kept is not None:
                kept(i, out[i])

        try:
            with interrupts_held():  # every request sent is one this thread hands over
                for _ in range(self.settings.concurrency):
                    send()
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: f.exception() is not None):  # answers first
                    with interrupts_held():
                        running.discard(future)
                        came(future)
                    with interrupts_held():  # after a Ctrl-C that came while keeping, nothing more is sent
                        send()
        except BaseException as exc:
            stopping.set()
            self._await_in_flight(pool, [f for f in running if not f.done()], exc)
            with interrupts_held():
                for future, i in futures.items():
                    if i not in kept_ones and future.exception() is None:
                        came(future)
            if isinstance(exc, ServerError) and exc.failure is not None:  # said with the answers that came since
                shown, code, detail, asked, served = exc.failure
                exc.args = (_http_message(shown, code, detail, self.settings, self.answered, asked) + served,)
            raise
        finally:
            pool.shutdown(wait=True)
        return out


HELD = (signal.SIGINT, signal.SIGTERM)  # the signals a run stops on, keeping what it has (`bridge.cli.main`)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """A Ctrl-C or SIGTERM that comes inside the block is delivered when it ends, so that a response being kept is
    kept whole. Python takes signals in the main thread only: elsewhere (or where a handler is not Python's to
    restore) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread() or any(signal.getsignal(s) is None for s in HELD):
        yield
        return
    caught: list = []
    previous = {s: signal.signal(s, lambda signum, frame: caught.append((signum, frame))) for s in HELD}
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
        if caught:
            signum, frame = caught[0]
            if callable(previous[signum]):
                previous[signum](signum, frame)
            elif previous[signum] != signal.SIG_IGN:
                signal.raise_signal(signum)


def _within(request: urllib.request.Request, seconds: float) -> bytes:
    """The body of `request`'s answer, from connecting to its last byte within `seconds` (`TimeoutError` past
    them): a socket timeout bounds each read only, so a server or gateway sending a byte now and then (whitespace
    to keep a connection open) would hold a run far past its `timeout`. An HTTP error is raised with its body (up
    to 8 KiB) read within the same time."""
    def read() -> bytes:
        try:
            with _OPENER.open(request, timeout=seconds) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise urllib.error.HTTPError(exc.url, exc.code, exc.msg, exc.headers, io.BytesIO(exc.read(8192))) from None

    return within(seconds, read)


def _failed_end(answer: object) -> str | None:
    """The `finish_reason` of the first choice where it says the generation failed (a gateway's `error`, vLLM's
    `abort`): what such a choice holds is no answer, and scored it would count as a wrong one."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[_chosen(choices)], dict):
        return None
    ended = choices[_chosen(choices)].get("finish_reason")
    return ended if isinstance(ended, str) and ended.strip().lower() in FAILED_ENDS else None


def _chosen(choices: list) -> int:
    """Where the choice read is: one completion is asked (no `n`); where several come, the one numbered 0,
    wherever it is listed."""
    return next((k for k, c in enumerate(choices) if isinstance(c, dict) and c.get("index") == 0), 0) \
        if len(choices) > 1 else 0


def _token_count(value: object) -> int | None:
    """A usage count as the server wrote it, or None where it wrote none a count can be (null, "n/a", 2.5, -1): the
    answer's text stands whatever its bookkeeping says, so a server's odd usage never stops a run."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return int(number) if number.is_integer() and number >= 0 else None


class _Missing(Exception):
    """What a reply lacks, in words: the field it has not, or holds as something else than asked."""


def _completion_text(answer: object, chat: bool) -> tuple[dict, str]:
    """The choice numbered 0 of a reply and its text (`message.content` on the chat API, `text` on the completions
    API); `_Missing` names the field where it is not (`the reply has no choices[0].message`)."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if choices is None:
        raise _Missing("the reply has no choices")
    if not isinstance(choices, list):
        raise _Missing(f"its choices is {json_type(choices)}, not a list")
    # one completion is asked (no `n`): where several come, the one numbered 0, wherever it is listed
    at = _chosen(choices)
    choice, where = choices[at], f"choices[{at}]"
    if not isinstance(choice, dict):
        raise _Missing(f"its {where} is {json_type(choice)}, not an object")
    if chat:
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _Missing(f"the reply has no {where}.message" if message is None else
                           f"its {where}.message is {json_type(message)}, not an object")
        if "content" not in message:
            raise _Missing(f"the reply has no {where}.message.content")
        text, where = message["content"], f"{where}.message.content"
        if text is None:  # the chat API's null content (a refusal, a reasoning model cut before it answered): an
            text = ""  # empty answer, scored wrong and counted, not a stopped run
        if isinstance(text, list) and all(isinstance(p, dict) for p in text):
            text = _text_parts(text)
            if text is None:
                raise _Missing(f"its {where} holds parts other than text")
    else:
        if "text" not in choice:
            raise _Missing(f"the reply has no {where}.text")
        text, where = choice["text"], f"{where}.text"
    if not isinstance(text, str):
        raise _Missing(f"its {where} is {json_type(text)}, not text")
    return choice, text


def _text_parts(parts: list[dict]) -> str | None:
    """A content written as typed parts (Mistral's reasoning models: a `thinking` part, then `text` parts): the text
    parts joined, the thoughts left out; None where a part is no readable text part or thought."""
    if not all(p.get("type") != "text" or isinstance(p.get("text"), str) for p in parts):
        return None
    if not all(p.get("type") in ("text", "thinking", "reasoning") for p in parts):
        return None
    return "".join(p["text"] for p in parts if p.get("type") == "text")


def _plain(messages: Sequence[dict]) -> str:
    return "\n".join(m["content"] for m in messages)


def server_message(raw: bytes) -> str:
    """What an error answer says, on one line: the `message` of OpenAI's `{"error": {...}}` (vLLM, llama.cpp, TGI's
    `error` text, FastAPI's `detail`), else the body's text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        found = next((v for v in (error.get("message") if isinstance(error, dict) else error, body.get("message"),
                                  body.get("detail")) if isinstance(v, str) and v.strip()), None)
        text = found or text
    if body in ({}, []):  # an empty JSON body says nothing
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"


def _duration(seconds: float) -> str:
    """A wait in words a reader takes in at once: seconds up to two minutes, then minutes, hours or days."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:g} s"


def retry_after(value: str | None) -> float | None:
    """The seconds a `Retry-After` header asks to wait (a number of seconds, or an HTTP date); None where it names
    none that can be read."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        from datetime import UTC, datetime
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _reason_text(reason: BaseException) -> str:
    """A dropped connection in words: http.client's own message, else the exception's name."""
    return str(reason) or type(reason).__name__


def _asked_length(body: dict | None) -> int | None:
    """Characters of the prompt a request sent (its chat turns' contents together); None for a GET."""
    if body is None:
        return None
    if "prompt" in body:
        return len(str(body["prompt"]))
    return sum(len(str(m.get("content", ""))) for m in body.get("messages") or () if isinstance(m, dict))


def _hint(code: int, detail: str, s: ServerSettings, answered: int = 0, asked: int | None = None) -> str:
    """The likely fix of a request the server fails on: chat turns to a model without a chat template (named so by
    the server, or an HTTP 500 with no message of its own, as `transformers serve` answers, before any chat turn of
    the run was answered); a prompt longer than the model's context (such a bare HTTP 500 on completions, or on chat
    turns after others were answered: the template works). A 500 with a message of its own gets no guess."""
    bare = code == 500 and detail.lower() in ("", "internal server error")  # the server's own message says more
    if s.api == "chat" and ("chat template" in detail.lower() or "chat_template" in detail.lower()):
        return "; the model has no chat template: use api=completions (plain text)"
    if not bare:
        return ""
    length = f"; this prompt is {asked:,} character{'' if asked == 1 else 's'}" if asked is not None else ""
    too_long = (f"a prompt and answer longer than the model's context are a common cause{length}: fewer shots, a "
                "shorter prompt or a smaller max_new_tokens")
    if s.api == "chat" and not answered:
        return ("; the server's log says why (a model without a chat template fails so on chat turns: then use "
                f"api=completions; else {too_long})")
    if s.api == "chat":
        return (f"; the server's log says why ({answered:,} chat request{'' if answered == 1 else 's'} of this run "
                f"{'was' if answered == 1 else 'were'} answered, so the chat template works; {too_long})")
    return f"; the server's log says why ({too_long})"


def _http_message(endpoint: str, code: int, detail: str, s: ServerSettings, answered: int = 0,
                  asked: int | None = None) -> str:
    if code in (401, 403):
        fix = (f"check the key in ${s.key_env}" if s.key_env else
               f"give the key's environment variable with --set {s.option_prefix}key_env=NAME")
        return f"{endpoint}: the server refuses the request (HTTP {code}); {fix}"
    if code == 404:
        return (f"{endpoint}: not found (HTTP 404: {detail or 'no detail'}); check the URL (it ends in /v1) and "
                f"--set {s.option_prefix}model={s.model}")
    if code == 429:  # the run asks faster than the server allows, each try of a request refused
        return (f"{endpoint}: HTTP 429 ({detail or 'no detail'}) on {s.retries + 1} "
                f"{'try' if s.retries == 0 else 'tries'}; the server limits the requests: ask fewer at once "
                f"(--set {s.option_prefix}concurrency=N, now {s.concurrency}) or retry more "
                f"(--set {s.option_prefix}retries=N, now {s.retries})")
    return f"{endpoint}: HTTP {code} ({detail or 'no detail'}){_hint(code, detail, s, answered, asked)}"
