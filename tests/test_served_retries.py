"""How the server client waits and retries: a 429's `Retry-After`, connections dropped without an answer, and what
a bare HTTP 500 on chat turns is said to mean once others were answered."""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cli_support import run_kbc
from served_support import DROP, Scripted, completion

from lm.generation import GenerationParams
from lm.served import RETRY_AFTER_MAX, ServedGenerator, ServerError, ServerSettings, ServerUnavailable, retry_after

PARAMS = GenerationParams(max_new_tokens=8)


@pytest.fixture
def serve():
    started = []

    def start(script) -> Scripted:
        started.append(Scripted(script))
        return started[-1]

    yield start
    for server in started:
        server.close()


def client(url: str, sleeps: list, uniform: Callable[[], float] = lambda: 1.0, **kw) -> ServedGenerator:
    """A generator whose backoffs are recorded, not waited; by default each at the top of its jitter (the doubled
    wait itself)."""
    return ServedGenerator(ServerSettings(url, "tiny", **kw), sleep=sleeps.append, uniform=uniform)


def test_a_429_waits_as_long_as_its_retry_after_asks_within_a_bound_and_says_so_once(serve, caplog):
    after = iter(["7", "600", None])
    server = serve(lambda path, body, n: (429, {"error": "slow down"}, {"Retry-After": a} if (a := next(after)) else {})
                   if n < 4 else (200, completion("Rome", "chat")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=3)
    with caplog.at_level(logging.WARNING, logger="kbc"):
        assert [g.text for g in gen.generate(["q"], PARAMS)] == ["Rome"]
    # 7 s as asked, 600 s cut to the bound, then a 429 naming no wait: the backoff of the third try (1 s * 2 ** 2)
    assert sleeps == [7.0, RETRY_AFTER_MAX, 4.0] and RETRY_AFTER_MAX == 60.0
    assert (gen.sent, gen.retried, gen.failed) == (4, 3, 0)
    assert [r.getMessage() for r in caplog.records] == [
        f"{server.url}/chat/completions: HTTP 429 asks to retry after 7 s; its retries wait as asked"]


def test_a_far_off_retry_after_is_said_in_days_not_in_exponent_notation(serve, caplog):
    after = iter(["259200", None])  # three days, as a gateway's date far off comes out
    server = serve(lambda path, body, n: (429, {"error": "quota"}, {"Retry-After": a} if (a := next(after)) else {})
                   if n < 2 else (200, completion("Rome", "chat")))
    gen = client(server.url, [], retries=1)
    with caplog.at_level(logging.WARNING, logger="kbc"):
        assert [g.text for g in gen.generate(["q"], PARAMS)] == ["Rome"]
    assert [r.getMessage() for r in caplog.records] == [
        f"{server.url}/chat/completions: HTTP 429 asks to retry after 3 days (waiting at most 60 s); its retries "
        "wait as asked"]


def test_retries_after_429s_stay_bounded_and_the_last_failure_says_the_run_resumes(serve):
    server = serve(lambda path, body, n: (429, {"error": "rate limited"}, {"Retry-After": "1"}))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=2)
    with pytest.raises(ServerUnavailable) as caught:
        gen.generate(["q"], PARAMS)
    assert str(caught.value) == (
        f"{server.url}/chat/completions: HTTP 429 (rate limited) on 3 tries; the server limits the requests: "
        "ask fewer at once (--set concurrency=N, now 4) or retry more (--set retries=N, now 2)")
    assert caught.value.resumable and sleeps == [1.0, 1.0] and len(server.bodies) == 3


def test_requests_failing_together_retry_after_different_waits_within_the_doubled_one(serve):
    """Four threads hit by one 503 draw four waits between half and all of the first backoff, not four equal ones."""
    seen: set[str] = set()
    lock = threading.Lock()

    def script(path, body, n):
        with lock:
            first = body["messages"][0]["content"] not in seen
            seen.add(body["messages"][0]["content"])
        return (503, {"error": "busy"}) if first else (200, completion(body["messages"][0]["content"], "chat"))

    server = serve(script)
    sleeps: list[float] = []
    gen = client(server.url, sleeps, uniform=random.Random(7).random, retries=2, concurrency=4)
    assert [g.text for g in gen.generate(["a", "b", "c", "d"], PARAMS)] == ["a", "b", "c", "d"]
    draws = random.Random(7)
    assert sorted(sleeps) == sorted(0.5 + 0.5 * draws.random() for _ in range(4))
    assert len(set(sleeps)) == 4 and all(0.5 <= s < 1.0 for s in sleeps)
    assert (gen.sent, gen.retried, gen.failed) == (8, 4, 0)


def test_a_jittered_wait_never_drops_below_half_the_doubled_one_nor_a_retry_after(serve):
    """At the bottom of the jitter a backoff still waits half its doubled wait, and a server's Retry-After is
    waited in full."""
    after = iter([None, "3", None])
    server = serve(lambda path, body, n: (503, {"error": "busy"}, {"Retry-After": a} if (a := next(after)) else {})
                   if n < 4 else (200, completion("Rome", "chat")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, uniform=lambda: 0.0, retries=3, backoff=2.0)
    assert [g.text for g in gen.generate(["q"], PARAMS)] == ["Rome"]
    assert sleeps == [1.0, 3.0, 4.0]  # 2 s halved, 3 s as asked, 8 s halved


@pytest.mark.parametrize(("value", "seconds"), [("3", 3.0), (" 2.5 ", 2.5), ("0", 0.0), ("-4", 0.0), ("", None),
                                                ("soon", None), ("nan", None),
                                                ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)])  # a date past: at once
def test_retry_after_reads_seconds_or_a_date(value, seconds):
    assert retry_after(value) == seconds


def test_a_connection_dropped_without_an_answer_is_retried_like_a_timeout(serve):
    server = serve(lambda path, body, n: (DROP, None) if n < 3 else (200, completion("Rome", "chat")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=3)
    assert [g.text for g in gen.generate(["q"], PARAMS)] == ["Rome"]
    assert sleeps == [1.0, 2.0] and (gen.sent, gen.retried, gen.failed) == (3, 2, 0)


def test_a_server_that_keeps_dropping_the_connection_stops_the_run_resumably(serve, lama_dir, tmp_path, capsys,
                                                                           monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(ServedGenerator.__init__, "__defaults__", (lambda seconds: None, None))  # no real waits
    server = serve(lambda path, body, n: (200, completion("Paris", "chat")) if n < 3 else (DROP, None))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors",
                            f"llm={server.url}", "--set", "llm.model=tiny", "--set", "llm.concurrency=1", "--set",
                            "llm.retries=2", "--limit", "9", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet", "--bootstrap", "50"], capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        f"error: {server.url}/chat/completions: the server closed the connection without an answer (Remote end "
        "closed connection without response; 3 tries); check that it is still running; results written so far are "
        "kept; rerun the same command to resume"), err
    assert len(server.bodies) == 2 + 3


def test_a_bare_500_after_answered_chat_turns_blames_the_prompts_length_not_the_template(serve):
    long_turn = "Q: " + "x" * 997
    server = serve(lambda path, body, n: (200, completion("Rome", "chat")) if n < 3 else
                   (500, b"Internal Server Error"))
    gen = client(server.url, [])
    assert [g.text for g in gen.generate(["short", "short too"], PARAMS)] == ["Rome", "Rome"]
    with pytest.raises(ServerError) as caught:  # a fix named: not one a rerun gets past
        gen.generate([[{"role": "system", "content": "Answer."}, {"role": "user", "content": long_turn}]], PARAMS)
    assert str(caught.value) == (
        f"{server.url}/chat/completions: HTTP 500 (Internal Server Error); the server's log says why (2 chat requests "
        "of this run were answered, so the chat template works; a prompt and answer longer than the model's context "
        "are a common cause; this prompt is 1,007 characters: fewer shots, a shorter prompt or a smaller "
        "max_new_tokens)")
    assert type(caught.value) is ServerError


def test_a_bare_500_on_the_first_chat_turn_names_both_causes(serve):
    server = serve(lambda path, body, n: (500, b"Internal Server Error"))
    with pytest.raises(ServerError) as caught:
        client(server.url, []).generate(["Q: where?"], PARAMS)
    assert str(caught.value) == (
        f"{server.url}/chat/completions: HTTP 500 (Internal Server Error); the server's log says why (a model "
        "without a chat template fails so on chat turns: then use api=completions; else a prompt and answer longer "
        "than the model's context are a common cause; this prompt is 9 characters: fewer shots, a shorter prompt or "
        "a smaller max_new_tokens)")


def test_a_429_with_an_empty_json_body_names_no_empty_message(serve):
    server = serve(lambda path, body, n: (429, {}))
    with pytest.raises(ServerUnavailable) as caught:
        client(server.url, [], retries=0).generate(["q"], PARAMS)
    assert str(caught.value).startswith(f"{server.url}/chat/completions: HTTP 429 (no detail) on 1 try; ")


@pytest.mark.parametrize("stop", ["ctrl-c", "failure"])
def test_a_request_in_flight_when_the_run_stops_gets_no_retry(serve, monkeypatch, stop):
    """A request in flight when the run stops ends with the try it is on: retrying it would send requests after
    the stop and keep a Ctrl-C waiting through every backoff and timeout."""
    stopped = threading.Event()  # the run is awaiting its requests in flight
    script = {"a": (200, completion("Rome", "chat")) if stop == "ctrl-c" else (500, {"error": "broken"}),
              "b": (503, {"error": "busy"})}

    def reply(path, body, n):
        prompt = body["messages"][-1]["content"]
        if prompt == "b":
            assert stopped.wait(5)
        return script[prompt]

    server = serve(reply)
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=3, concurrency=2)
    awaiting = gen._await_in_flight
    monkeypatch.setattr(gen, "_await_in_flight", lambda *a: (stopped.set(), awaiting(*a)))
    kept: list[int] = []

    def keep(i, response) -> None:
        kept.append(i)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt if stop == "ctrl-c" else ServerError):
        gen.generate(["a", "b"], PARAMS, kept=keep)
    assert sorted(body["messages"][-1]["content"] for body in server.bodies) == ["a", "b"]
    assert sleeps == [] and gen.retried == 0 and kept == ([0] if stop == "ctrl-c" else [])


def test_a_server_trickling_its_answer_is_timed_out_as_a_whole():
    """A socket timeout bounds each read only: a gateway that sends a byte now and then (whitespace keeping the
    connection open) must not hold a request past `timeout`."""
    answer = json.dumps(completion("Rome", "chat")).encode() + b" " * 60

    class Trickling(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            try:
                for i in range(len(answer)):  # 0.05 s a byte: each read well within the timeout, the whole not
                    self.wfile.write(answer[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:  # the client gave up
                pass

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        gen = client(f"http://127.0.0.1:{server.server_address[1]}/v1", [], retries=0, timeout=0.5)
        with pytest.raises(ServerUnavailable) as caught:
            gen.generate(["q"], PARAMS)
    finally:
        server.shutdown()
        server.server_close()
    assert str(caught.value).endswith(
        "/completions: no answer within 0.5 s (1 try); raise --set timeout=SECONDS, or send fewer requests at once "
        "(--set concurrency=N, now 4): a server answering fewer at a time keeps the others waiting")
    assert caught.value.resumable


@pytest.mark.parametrize("reply", [b"<html><body>Sign in to continue</body></html>", b'{"choices": [{"index": 0, "te',
                                   {"choices": []}, {"choices": [{"index": 0, "text": None}]}])
def test_an_answer_that_is_no_completion_after_others_were_answered_stops_the_run_resumably(serve, reply):
    """Hours into a run, a gateway's login page or a reply cut short is the server failing, not a URL naming no
    OpenAI-compatible server: the run says that its answers are kept and that rerunning resumes it."""
    server = serve(lambda path, body, n: (200, completion("Rome", "completions")) if n < 3 else (200, reply))
    gen = client(server.url, [], api="completions", concurrency=1)
    kept: list[int] = []
    with pytest.raises(ServerUnavailable) as caught:
        gen.generate(["a", "b", "c"], PARAMS, kept=lambda i, response: kept.append(i))
    assert caught.value.resumable and kept == [0, 1]
    assert str(caught.value).startswith((f"{server.url}/completions: the answer ", f"{server.url}: the answer "))
    assert str(caught.value).endswith(", though 2 requests of this run were answered: the server, or a gateway or "
                                      "proxy before it, failed")
    with pytest.raises(ServerError) as first:  # no request answered yet: the URL may name another kind of server
        client(server.url, [], api="completions").generate(["d"], PARAMS)
    assert type(first.value) is ServerError and str(first.value).endswith("; is this an OpenAI-compatible server?")


@pytest.mark.parametrize("ended", ["error", "abort"])
def test_a_generation_the_server_ended_as_failed_is_asked_again_never_scored_as_an_empty_answer(serve, ended):
    """A gateway ends a failed upstream generation with `finish_reason: "error"` (vLLM an aborted one with
    "abort"), its text empty or cut: recorded, it would be scored as a wrong answer."""
    failed = {"choices": [{"index": 0, "text": "", "finish_reason": ended}]}
    server = serve(lambda path, body, n: (200, failed) if n in (1, 3, 4) else (200, completion("Rome", "completions")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, api="completions", concurrency=1, retries=1)
    assert [g.text for g in gen.generate(["a"], PARAMS)] == ["Rome"]  # asked again, as after a 503
    assert sleeps == [1.0] and (gen.sent, gen.retried, gen.failed) == (2, 1, 0)
    with pytest.raises(ServerUnavailable) as caught:  # failed on every try: the run stops, resumably
        gen.generate(["b"], PARAMS)
    assert str(caught.value) == (f"{server.url}/completions: the server ended the generation with finish_reason "
                                 f"{ended!r} (2 tries): it failed, and wrote no answer to score")
    assert caught.value.resumable and gen.failed == 1


@pytest.mark.parametrize("reply", [(400, {"error": {"message": "invalid key sk-live-7f3a9c2e for this model"}}),
                                   (503, {"error": {"message": "upstream refused sk-live-7f3a9c2e"}}),
                                   (200, {"error": {"message": "key sk-live-7f3a9c2e has no quota"}}),
                                   (200, b"<html>key sk-live-7f3a9c2e expired</html>")])
def test_a_server_message_quoting_the_api_key_is_shown_without_it(serve, monkeypatch, lama_dir, tmp_path, capsys,
                                                                   reply):
    """A proxy may quote the key it refuses in its message: the error line, which the run also keeps in its
    `config.json`, never holds it."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SERVED_KEY", "sk-live-7f3a9c2e")
    monkeypatch.setattr(ServedGenerator.__init__, "__defaults__", (lambda seconds: None, None))  # no real waits
    server = serve(lambda path, body, n: (200, completion("Paris", "chat")) if n < 2 else reply)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors",
                            f"llm={server.url}", "--set", "llm.model=tiny", "--set", "llm.key_env=SERVED_KEY",
                            "--set", "llm.concurrency=1", "--limit", "3", "--data-dir", str(lama_dir), "--out",
                            str(out), "--quiet", "--bootstrap", "50"], capsys)
    assert code == 2 and server.bodies[0]["_auth"] == "Bearer sk-live-7f3a9c2e"
    assert "***" in err.splitlines()[-1] and "7f3a9c2e" not in err, err
    assert not [f for f in out.rglob("*") if f.is_file() and b"7f3a9c2e" in f.read_bytes()]


@pytest.mark.parametrize("code", [408, 520, 524, 529])
def test_a_gateways_timeout_or_overload_is_asked_again_and_stops_the_run_resumably(serve, code):
    """A proxy's 408, Cloudflare's 520-524 (524: the origin took more than its 100 s) and an overloaded API's 529
    say nothing of the request: the same request may well be answered a moment later."""
    server = serve(lambda path, body, n: (code, {"error": "try later"}) if n in (1, 3, 4) else
                   (200, completion("Rome", "chat")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=1)
    assert [g.text for g in gen.generate(["a"], PARAMS)] == ["Rome"]
    assert sleeps == [1.0] and (gen.sent, gen.retried, gen.failed) == (2, 1, 0)
    with pytest.raises(ServerUnavailable) as caught:
        gen.generate(["b"], PARAMS)
    assert caught.value.resumable and str(caught.value).startswith(f"{server.url}/chat/completions: HTTP {code} (")


def test_a_call_that_stops_leaves_the_retries_of_another_call_alone(serve):
    """The explorer asks one generator from several request threads at once: one query's failure stops its own
    requests' retries, never those of another query."""
    a_failed = threading.Event()
    tries_of_b: list[int] = []

    def reply(path, body, n):
        prompt = body["messages"][-1]["content"]
        if prompt == "a":
            return 500, {"error": "broken"}
        tries_of_b.append(n)
        if len(tries_of_b) == 1:  # b's first try, answered once a's call has stopped
            assert a_failed.wait(5)
            return 503, {"error": "busy"}
        return 200, completion("Rome", "chat")

    server = serve(reply)
    gen = client(server.url, [], retries=1)
    answers: list = []
    other = threading.Thread(target=lambda: answers.extend(g.text for g in gen.generate(["b"], PARAMS)))
    other.start()
    with pytest.raises(ServerError):
        gen.generate(["a"], PARAMS)
    a_failed.set()
    other.join(10)
    assert answers == ["Rome"] and gen.retried == 1 and len(tries_of_b) == 2


@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_said_with_its_address_never_followed_with_a_get(serve, code):
    """urllib would ask a POST's new address with a GET and no body (an http:// URL of an https-only server), and the
    run would then stop on that GET's 404 or 405, naming the URL it was given as not found."""
    server = serve(lambda path, body, n: (code, b"", {"Location": "https://user:pw@llm.example/v1/completions?k=s"}))
    with pytest.raises(ServerError) as caught:
        client(server.url, [], api="completions").generate(["q"], PARAMS)
    assert str(caught.value) == (
        f"{server.url}/completions: the server redirects the request (HTTP {code}) to "
        "https://llm.example/v1/completions: give the URL it names as the predictor's spec")
    assert len(server.bodies) == 1
