"""The OpenAI-compatible client against a scripted localhost server: retries, refusals, garbage, timeouts,
bounded concurrency, and whole runs whose answers the test chooses (exact match and LM-KBC scores)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import threading

import pytest
from cli_support import Bar, run_kbc
from served_support import Scripted, completion

from bridge.run.usage_log import FOLDER as USAGE_FOLDER
from bridge.run.usage_log import read_usage
from lm.generation import GenerationParams
from lm.served import ServedGenerator, ServerError, ServerSettings

PARAMS = GenerationParams(max_new_tokens=8)


def ok(text: str = "Paris", api: str = "chat"):
    return lambda path, body, n: (200, completion(text, api))


@pytest.fixture(autouse=True)
def ctrl_c_as_a_terminal_sends_it():
    """SIGINT handled by Python's own handler and not blocked, as in a terminal: a test run earlier in the same
    process (libraries that start helper processes) may leave it ignored or blocked, and a Ctrl-C test would then
    see no Ctrl-C at all."""
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    signal.signal(signal.SIGINT, handler)


@pytest.fixture
def serve():
    started = []

    def start(script, delay: float = 0.0, models: list[dict] | None = None) -> Scripted:
        started.append(Scripted(script, delay, models))
        return started[-1]

    yield start
    for server in started:
        server.close()


def client(url: str, sleeps: list | None = None, **kw) -> ServedGenerator:
    # the top of each jittered backoff: the doubled wait itself
    return ServedGenerator(ServerSettings(url, "tiny", **kw), sleep=(sleeps.append if sleeps is not None else None),
                           uniform=lambda: 1.0)


def test_chat_and_completions_requests_and_usage(serve):
    server = serve(lambda path, body, n: (200, completion(f"{path} {n}", "chat" if "chat" in path else "c", 5, 1)))
    chat = client(server.url).generate([[{"role": "user", "content": "Q?"}]], PARAMS)
    plain = client(server.url, api="completions").generate(["Dante was born in"],
                                                            GenerationParams(max_new_tokens=4, stop=("\n",)))
    assert [(g.text, g.prompt_tokens, g.completion_tokens) for g in chat + plain] == [
        ("/v1/chat/completions 1", 5, 1), ("/v1/completions 2", 5, 1)]
    first, second = server.bodies
    assert first["messages"] == [{"role": "user", "content": "Q?"}] and first["model"] == "tiny"
    assert (first["max_tokens"], first["temperature"], first["_auth"]) == (8, 0.0, None)
    assert second["prompt"] == "Dante was born in" and second["stop"] == ["\n"] and second["max_tokens"] == 4


@pytest.mark.parametrize("usage", [[3, 2], "3", {"prompt_tokens": "n/a", "completion_tokens": 2.5},
                                   {"prompt_tokens": None, "completion_tokens": -1}, {"prompt_tokens": True}])
def test_usage_a_server_writes_oddly_counts_no_tokens_and_keeps_the_answer(serve, usage):
    """The answer's text stands whatever the server's bookkeeping says: usage no count can be read from is 0
    tokens, never a stopped run."""
    server = serve(lambda path, body, n: (200, {"choices": [{"index": 0, "text": " Paris"}], "usage": usage}))
    (answer,) = client(server.url, api="completions").generate(["Dante was born in"], PARAMS)
    assert (answer.text, answer.prompt_tokens, answer.completion_tokens, answer.usage_reported) == (" Paris", 0, 0,
                                                                                                   False)


def test_usage_counts_written_as_whole_numbers_in_text_or_floats_are_read(serve):
    server = serve(lambda path, body, n: (200, {"choices": [{"index": 0, "text": " Paris"}],
                                                "usage": {"prompt_tokens": "12", "completion_tokens": 3.0}}))
    (answer,) = client(server.url, api="completions").generate(["Dante was born in"], PARAMS)
    assert (answer.prompt_tokens, answer.completion_tokens) == (12, 3)


def test_429_and_503_are_retried_with_backoff(serve):
    server = serve(lambda path, body, n: (429, {"error": "slow down"}) if n < 3 else (200, completion("Rome", "chat")))
    sleeps: list[float] = []
    gen = client(server.url, sleeps, retries=3)
    assert [g.text for g in gen.generate(["q"], PARAMS)] == ["Rome"]
    assert sleeps == [1.0, 2.0] and (gen.sent, gen.retried, gen.failed) == (3, 2, 0)
    broken = serve(lambda path, body, n: (503, {"error": "down for maintenance"}))
    gen = client(broken.url, [], retries=2)
    with pytest.raises(ServerError, match=r"/v1/chat/completions: HTTP 503 \(down for maintenance\)$"):
        gen.generate(["q"], PARAMS)
    assert len(broken.bodies) == 3 and gen.failed == 1


@pytest.mark.parametrize(("status", "reply", "message"), [
    (401, {"error": "bad key"}, r"the server refuses the request \(HTTP 401\); give the key's environment variable "
                                r"with --set key_env=NAME"),
    (404, {"detail": "no model tiny"}, r"not found \(HTTP 404: no model tiny\); check the URL"),
    (200, b"<html>hello</html>", r"the answer is not JSON \(b'<html>hello</html>'\); is this an OpenAI-compatible"),
    (200, {"object": "list", "data": []}, r"the answer holds no completion text: the reply has no choices \("),
    (200, {"choices": [{"message": {"role": "assistant"}}]},
     r"holds no completion text: the reply has no choices\[0\]\.message\.content \("),
    (200, {"choices": [{"message": {"content": 7}}]},
     r"holds no completion text: its choices\[0\]\.message\.content is a number, not text \("),
])
def test_refusals_and_garbage_are_one_server_error(serve, status, reply, message):
    server = serve(lambda path, body, n: (status, reply))
    with pytest.raises(ServerError, match=message):
        client(server.url, []).generate(["q"], PARAMS)
    assert len(server.bodies) == 1  # never retried


@pytest.mark.parametrize(("api", "reply", "said"), [
    ("chat", {"choices": [{"index": 0, "text": "Paris"}]}, "the reply has no choices[0].message"),
    ("chat", {"choices": [{"index": 0, "message": "Paris"}]}, "its choices[0].message is a string, not an object"),
    ("chat", {"choices": [{"index": 1, "message": {"content": "Rome"}}, {"index": 0, "delta": {}}]},
     "the reply has no choices[1].message"),
    ("chat", {"choices": {"0": {"message": {"content": "Paris"}}}}, "its choices is an object, not a list"),
    ("chat", {"choices": ["Paris"]}, "its choices[0] is a string, not an object"),
    ("completions", {"choices": [{"index": 0, "message": {"content": "Paris"}}]}, "the reply has no choices[0].text"),
    ("completions", {"choices": [{"index": 0, "text": None}]}, "its choices[0].text is null, not text"),
])
def test_a_reply_without_its_text_names_the_field_it_lacks(serve, api, reply, said):
    """A reply of another shape (the other API's, a stream's `delta`) says in words which field is not there."""
    server = serve(lambda path, body, n: (200, reply))
    with pytest.raises(ServerError) as caught:
        client(server.url, [], api=api).generate(["q"], PARAMS)
    assert str(caught.value) == (f"{server.url}: the answer holds no completion text: {said} "
                                 f"({json.dumps(reply)[:120]}); is this an OpenAI-compatible server?")


def test_an_error_answered_with_http_200_says_the_servers_message_and_that_a_rerun_resumes(serve):
    """Some gateways answer a failed upstream call with HTTP 200 and an OpenAI error object, no choices."""
    from lm.served import ServerUnavailable

    server = serve(lambda path, body, n: (200, {"error": {"message": "upstream overloaded", "code": 503}}))
    with pytest.raises(ServerUnavailable) as caught:
        client(server.url, []).generate(["q"], PARAMS)
    assert str(caught.value) == f"{server.url}/chat/completions: the server answered with an error: upstream " \
        "overloaded (HTTP 200, no completion)"


def test_of_several_choices_the_answer_is_choice_0_wherever_it_is_listed(serve):
    """The run asks for one completion (no `n`): a server that sends more is read by the `index` of each."""
    def script(path, body, n):
        answer = completion("Berlin", "chat")
        answer["choices"] = [dict(answer["choices"][0], index=1),
                             {"index": 0, "message": {"role": "assistant", "content": "Paris"}}]
        return 200, answer

    assert client(serve(script).url).generate(["q"], PARAMS)[0].text == "Paris"


def test_answers_from_a_model_other_than_the_one_asked_are_named_once_per_name(serve, caplog):
    """A proxy may answer with a fallback model, a server with the one it has loaded whatever was asked: the scores
    are then that model's, which stderr says once per name (an answer naming no model, or the one asked, says
    nothing)."""
    import logging

    names = iter(["tiny", None, "backup-7b", "backup-7b", "gpt-x"])

    def script(path, body, n):
        answer = completion("Paris", "chat")
        if (name := next(names)) is not None:
            answer["model"] = name
        return 200, answer

    server = serve(script)
    with caplog.at_level(logging.WARNING, logger="kbc"):
        client(server.url, concurrency=1).generate([f"q{i}" for i in range(5)], PARAMS)
    assert [r.getMessage() for r in caplog.records] == [
        f"{server.url}/chat/completions answered as model {name!r}, not 'tiny' as asked: the scores are that model's "
        "(a proxy's fallback, an alias or a dated snapshot of it)" for name in ("backup-7b", "gpt-x")]


def test_a_content_written_as_typed_parts_is_its_text_parts_without_the_thoughts(serve):
    """Mistral's reasoning models send `content` as a list: a `thinking` part, then the answer's `text` parts."""
    parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "Berlin? No."}]},
             {"type": "text", "text": "Paris"}, {"type": "text", "text": ", France"}]

    def script(path, body, n):
        answer = completion("", "chat")
        answer["choices"][0]["message"]["content"] = parts if n == 1 else [{"type": "image_url", "image_url": "x"}]
        return 200, answer

    gen = client(serve(script).url, concurrency=1)
    assert gen.generate(["q"], PARAMS)[0].text == "Paris, France"
    with pytest.raises(ServerError, match=r"holds no completion text: its choices\[0\]\.message\.content holds parts "
                       r"other than text \("):
        gen.generate(["q"], PARAMS)


def test_an_answer_with_no_choices_says_so(serve):
    server = serve(lambda path, body, n: (200, {"id": "x", "choices": []}))
    with pytest.raises(ServerError, match=r"/chat/completions: the answer holds no choice \(\{\"id\""):
        client(server.url).generate(["q"], PARAMS)


TEMPLATE_ERROR = ("Cannot use chat template functions because tokenizer.chat_template is not set and no template "
                  "argument was passed! For information about writing templates and setting the\n"
                  "tokenizer.chat_template attribute, please see the documentation")


@pytest.mark.parametrize(("reply", "api", "message"), [
    # transformers serve: its log says why, its answer does not
    (b"Internal Server Error", "chat", "HTTP 500 (Internal Server Error); the server's log says why (a model without "
     "a chat template fails so on chat turns: then use api=completions; else a prompt and answer longer than the "
     "model's context are a common cause; this prompt is 1 character: fewer shots, a shorter prompt or a smaller "
     "max_new_tokens)"),
    # a prompt longer than gpt2's 256 positions on /v1/completions: the same bare answer
    (b"Internal Server Error", "completions", "HTTP 500 (Internal Server Error); the server's log says why (a prompt "
     "and answer longer than the model's context are a common cause; this prompt is 1 character: fewer shots, a "
     "shorter prompt or a smaller "
     "max_new_tokens)"),
    ({"message": "CUDA out of memory", "code": 500}, "completions", "HTTP 500 (CUDA out of memory)"),
    # OpenAI's error shape (vLLM): the message on one line, cut at 200 characters
    ({"error": {"message": TEMPLATE_ERROR, "type": "BadRequestError"}}, "chat",
     "HTTP 500 (" + " ".join(TEMPLATE_ERROR.split())[:199] + "…); the model has no chat template: use "
     "api=completions (plain text)"),
    # a message of its own is the cause: no guess beside it
    ({"message": "CUDA out of memory", "code": 500}, "chat", "HTTP 500 (CUDA out of memory)"),
    ({"error": {"message": "simulated failure"}}, "chat", "HTTP 500 (simulated failure)"),
])
def test_an_internal_error_is_not_retried_and_says_what_the_server_said(serve, reply, api, message):
    server = serve(lambda path, body, n: (500, reply))
    gen = client(server.url, [], api=api)
    with pytest.raises(ServerError) as caught:
        gen.generate(["q"], PARAMS)
    endpoint = "chat/completions" if api == "chat" else "completions"
    assert str(caught.value) == f"{server.url}/{endpoint}: {message}"
    assert (len(server.bodies), gen.sent, gen.retried, gen.failed) == (1, 1, 0, 1)


def test_the_counts_line_says_which_requests_were_retries_and_which_prompts_failed(serve, lama_dir, tmp_path,
                                                                                  capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (503, {"error": "busy"}) if n in (2, 3) else
                   (200, completion("Paris", "chat")) if n < 6 else (500, b"Internal Server Error"))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1", "--set", "llm.retries=3")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {server.url}/chat/completions: HTTP 500 (Internal Server Error); the server's log says why (3 chat "
        "requests of this run were answered, so the chat template works; a prompt and answer longer than the model's "
        "context are a common cause; this prompt is 49 characters: fewer shots, a shorter prompt or a smaller "
        "max_new_tokens)")
    # prompts 1 to 3 answered (the second after two 503s), the fourth fails at once: 6 requests, 2 of them retries;
    # the five prompts after it were never sent
    assert ("google_re / llm: 9 queries: 3 asked, 0 from the cache, 0 sharing another query's prompt, 1 unanswered, "
            "5 not asked before the stop; requests sent 6 (2 of them retries), failed 1; tokens used ") in err, err


def test_a_server_that_is_down_or_too_slow(serve):
    with socket.socket() as down:  # bound, never listening: refused, and no other process can take the port meanwhile
        down.bind(("127.0.0.1", 0))
        with pytest.raises(ServerError, match=r"cannot reach the server \(.*\); start it, or check the URL"):
            client(f"http://127.0.0.1:{down.getsockname()[1]}/v1", []).generate(["q"], PARAMS)
    slow = serve(ok(), delay=1.0)
    with pytest.raises(ServerError, match=r"no answer within 0.2 s \(2 tries\); raise --set timeout=SECONDS"):
        client(slow.url, [], timeout=0.2, retries=1).generate(["q"], PARAMS)
    with pytest.raises(ServerError, match=r"no answer within 0.2 s \(1 try\); raise --set llm.timeout=SECONDS"):
        client(slow.url, [], timeout=0.2, retries=0, option_prefix="llm.").generate(["q"], PARAMS)


def test_the_key_comes_from_the_environment_and_a_missing_one_is_named(serve, monkeypatch):
    server = serve(ok())
    monkeypatch.setenv("TINY_KEY", "sk-secret")
    client(server.url, key_env="TINY_KEY").generate(["q"], PARAMS)
    assert server.bodies[0]["_auth"] == "Bearer sk-secret"
    monkeypatch.delenv("TINY_KEY")
    with pytest.raises(ServerError, match="key_env=TINY_KEY: that environment variable is not set"):
        client(server.url, key_env="TINY_KEY")


def test_concurrency_is_bounded_and_answers_keep_their_order(serve):
    """The first three requests are answered only once all three are in flight (however slowly the client's
    threads start), so three at once is seen on any machine; the rest are held a while, so that a fourth sent too
    early would be seen beside them."""
    three = threading.Barrier(3)

    def script(path, body, n):
        if n <= 3:
            three.wait(30)  # a deadlock guard: breaks (and fails the request) where fewer than three come
        return 200, completion(body["messages"][-1]["content"].upper(), "chat")

    server = serve(script, 0.3)
    gen = client(server.url, concurrency=3, retries=0)
    prompts = [f"q{i}" for i in range(7)]
    assert [g.text for g in gen.generate(prompts, PARAMS)] == [p.upper() for p in prompts]
    assert server.peak == 3 and not three.broken


ALL_ASKED = ("9 queries: 9 asked, 0 from the cache, 0 sharing another query's prompt, 0 unanswered; requests sent 9, "
             "failed 0")  # the counts line of a fresh run of `lama_args`


def test_every_answer_that_came_back_reaches_the_caller_when_another_request_fails(serve):
    """Requests in flight when one fails are awaited and handed over; those not yet sent are never sent."""
    server = serve(lambda path, body, n: (500, b"Internal Server Error") if n == 2 else
                   (200, completion(body["messages"][-1]["content"].upper(), "chat")), 0.2)
    kept: dict[int, str] = {}
    with pytest.raises(ServerError, match="HTTP 500"):
        client(server.url, concurrency=3).generate([f"q{i}" for i in range(12)], PARAMS,
                                                   lambda i, g: kept.setdefault(i, g.text))
    answered = [b["messages"][-1]["content"] for n, b in enumerate(server.bodies, 1) if n != 2]
    assert 2 <= len(answered) < 11 and sorted(kept.values()) == sorted(a.upper() for a in answered)
    assert all(kept[i] == f"Q{i}" for i in kept)


def lama_args(url: str, lama_dir, out, *extra) -> list[str]:
    return ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors", f"llm={url}",
            "--set", "llm.model=tiny", "--limit", "9", "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
            "--bootstrap", "50", *extra]


def test_a_lama_run_scores_exact_match_abstention_and_unlinked_answers(serve, lama_dir, google_re, tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gold = {f.subject.label: f.object for f in google_re.facts if f.relation == "place_of_birth"}
    keys_of: dict[str, set[str]] = {}
    for f in google_re.facts:
        for e in (f.subject, f.object):
            keys_of.setdefault(e.label, set()).add(e.key)
    plan: dict[str, str] = {}

    def script(path, body, n):
        subject = body["messages"][-1]["content"].removeprefix("Fill in the blank: ").split(" was born in")[0]
        kind = ("gold", "alias", "abstain", "unknown-place")[len(plan) % 4] if subject not in plan else plan[subject]
        plan[subject] = kind
        obj = gold[subject]
        text = {"gold": f"{obj.label}.", "alias": obj.aliases[0] if obj.aliases else obj.label,
                "abstain": "I don't know", "unknown-place": "Atlantis"}[kind]
        return 200, completion(text + "\nQ: more", "chat")

    server = serve(script)
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0, err
    assert (f"google_re / llm: {ALL_ASKED}; tokens used 27 prompt + 18 completion") in err
    recs = [json.loads(line) for line in
            (tmp_path / "run" / "predictions" / "google_re" / "llm" / "place_of_birth.jsonl").read_text().splitlines()]
    assert len(recs) == 9 and len(plan) == 9
    for r in recs:
        assert r["prompt"] == [{"role": "user", "content": f"Fill in the blank: {r['subject']} was born in ___."}]
        kind = plan[r["subject"]]
        assert r["abstained"] == (kind == "abstain")
        assert r["em_raw"] == (kind in ("gold", "alias")), (kind, r)
        if kind == "unknown-place":
            assert r["unlinked"] == ["Atlantis"]
        elif r["unlinked"]:  # a label several entities of the corpus carry names none of them: kept as text
            assert kind == "gold" and r["unlinked"] == [r["gold"]] and len(keys_of[r["gold"]]) > 1
    rows = {(r["metric"], r["setting"]): r for r in json.loads((tmp_path / "run" / "summary.json").read_text())
            if r["scope"] == "own" and r["group"] == "all"}
    kinds = list(plan.values())
    assert rows[("em", "raw")]["value"] == 100.0 * sum(k in ("gold", "alias") for k in kinds) / 9
    assert rows[("abstain", "raw")]["value"] == 100.0 * kinds.count("abstain") / 9
    assert rows[("unlinked", "raw")]["value"] == 100.0 * sum(len(r["unlinked"]) for r in recs) / 9
    assert rows[("em", "raw")]["ci_low"] < rows[("em", "raw")]["value"] < rows[("em", "raw")]["ci_high"]
    assert not any(m in ("p@1", "p@10", "mrr") for m, _ in rows)
    # the rerun into the same directory asks nothing; `kbc show` prints the prompt and the raw generation
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0 and "requests sent" not in err and len(server.bodies) == 9
    code, shown, _ = run_kbc(["show", str(tmp_path / "run"), "--uid", recs[0]["uid"]], capsys)
    assert code == 0
    assert f"prompt:     [user] Fill in the blank: {recs[0]['subject']} was born in ___." in shown
    assert f"generation: {recs[0]['generation'].splitlines()[0]}" in shown


def test_one_answer_scores_alike_as_a_bullet_list_a_comma_list_an_and_or_in_lower_case(serve, lama_dir, trex,
                                                                                         tmp_path, capsys, monkeypatch):
    """The gold written six ways: alone, first of a comma list, of bullets, of "A and B", in lower case, and second
    of bullets (then the first answer, London, is the one scored)."""
    import re

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    golds: dict[tuple[str, str], str] = {}
    for f in trex.facts:
        if f.relation in ("P19", "P36"):
            golds.setdefault((f.relation, f.subject.label), f.object.label)
    forms = ("{}", "{}, Berlin", "- {}\n- Berlin", "{} and London", "lower", "- London\n- {}")
    plan: dict[tuple[str, str], tuple[int, str]] = {}

    def script(path, body, n):
        asked = body["messages"][-1]["content"]
        born = re.fullmatch(r"Fill in the blank: (.*) was born in ___\.", asked)
        key = ("P19", born.group(1)) if born else \
            ("P36", re.fullmatch(r"Fill in the blank: The capital of (.*) is ___\.", asked).group(1))
        plan.setdefault(key, (len(plan) % len(forms), golds[key]))
        form, gold = plan[key]
        return 200, completion(gold.lower() if forms[form] == "lower" else forms[form].format(gold), "chat")

    server = serve(script)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--predictors",
                            f"llm={server.url}", "--set", "llm.model=tiny", "--limit", "15", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    recs = [json.loads(line) for rel in ("P19", "P36")
            for line in (out / "predictions" / "trex" / "llm" / f"{rel}.jsonl").read_text().splitlines()]
    assert len(recs) == 30 and sorted(form for form, _ in plan.values()) == sorted(list(range(6)) * 5)
    for r in recs:
        form, gold = plan[(r["relation"], r["subject"])]
        written = gold.lower() if form == 4 else "London" if form == 5 else gold
        assert r["parsed"] == [written], (form, r)
        assert r["em_raw"] == (r["gold"] == gold and (form < 5 or gold == "London")), (form, r)
    rows = {(r["metric"], r["group"]): r["value"] for r in json.loads((out / "summary.json").read_text())
            if r["scope"] == "own" and r["setting"] == "raw"}
    for rel in ("P19", "P36"):
        hits = [r["em_raw"] for r in recs if r["relation"] == rel]
        assert rows[("em", rel)] == 100.0 * sum(hits) / len(hits)
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_specs"]["llm"]["answer_rule"] == 7


def test_a_relations_answers_link_and_score_the_same_whichever_other_relations_the_run_loads(
        serve, lama_dir, trex, tmp_path, capsys, monkeypatch):
    """Each place of birth answered by an alias of the gold that names it among P19's entities but another entity
    (or several) among P19's and P138's together ("Wien": Vienna, and the river Vienna is named after): the P19
    records of a run of P19 alone and of P19 with P138 are the same, and every answer names its gold."""
    import re

    from bridge.predictors.generation import RelationIndexes
    from bridge.run.config import sample
    from eval.disambiguate import load_aliases
    from eval.lmkbc import alias_file

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    p19 = [f for f in trex.facts if f.relation == "P19"]
    listed = load_aliases(alias_file(lama_dir))
    alone = RelationIndexes(p19, listed).of("P19")
    together = RelationIndexes([f for f in trex.facts if f.relation in ("P19", "P138")], listed).of("neither")
    assert together.ids("Wien") == {"Q702289"} and alone.ids("Wien") == {"Q1741"}
    written: dict[str, str] = {}
    for f in sample(p19, 12, 3):
        forms = sorted(set(listed.get(f.object.key, [])) | set(f.object.aliases))
        moved = [a for a in forms if alone.ids(a) == {f.object.key} != together.ids(a) and a != f.object.label]
        written[f.subject.label] = moved[0] if moved else f.object.label
    # three aliases, and two labels another entity of P138 carries too ("London": London, Ontario)
    assert sorted(written.values())[:5] == ["Antwerpen", "Cologne", "Dortmund", "Dublin", "London"]
    assert {text for text in written.values() if together.ids(text) != alone.ids(text)} == {
        "Antwerpen", "Wien", "Venezia", "London", "Melbourne"}

    def script(path, body, n):
        born = re.fullmatch(r"Fill in the blank: (.*) was born in ___\.", body["messages"][-1]["content"])
        return 200, completion(written[born.group(1)] if born else "Wien", "chat")

    server = serve(script)
    records = []
    for relations in (["P19"], ["P19", "P138"]):
        out = tmp_path / "-".join(relations)
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors",
                                f"llm={server.url}", "--set", "llm.model=tiny", "--limit", "12", "--seed", "3",
                                "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
        assert code == 0, err
        records.append((out / "predictions" / "trex" / "llm" / "P19.jsonl").read_text())
    assert records[0] == records[1]
    recs = [json.loads(line) for line in records[0].splitlines()]
    assert len(recs) == 12 and all(r["em_raw"] for r in recs), [r for r in recs if not r["em_raw"]]
    assert sorted(r["parsed"][0] for r in recs) == sorted(written.values())


def test_an_lmkbc_run_scores_the_sets_a_server_writes(serve, lama_dir, tmp_path, capsys, monkeypatch):
    from eval.lmkbc import load_lmkbc
    from eval.question_prompts import LMKBC_SYSTEM

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    rel = "companyTradesAtStockExchange"
    val = {f.subject.label: f for f in load_lmkbc(lama_dir, "val", [rel]).facts}
    answered: dict[str, str] = {}

    def script(path, body, n):
        subject = body["messages"][-1]["content"].removeprefix("Where do shares of ").removesuffix(" trade?")
        labels = val[subject].labels
        plain = labels and not any("," in x for x in labels) and len(answered) % 3 != 2
        answered[subject] = ", ".join(labels) if plain else "None"
        return 200, completion(answered[subject], "chat")

    server = serve(script)
    out = tmp_path / "kbc"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", rel, "--predictors", f"llm={server.url}", "--set",
                            "llm.model=tiny", "--set", "llm.prompt=lmkbc2024", "--set", "llm.shots=5", "--limit", "12",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in (out / "predictions" / "lmkbc2024" / "llm" / f"{rel}.jsonl").read_text()
            .splitlines()]
    assert len(recs) == 12
    for r in recs:
        turns = r["prompt"]
        assert turns[0] == {"role": "system", "content": LMKBC_SYSTEM} and len(turns) == 12
        assert turns[-1] == {"role": "user", "content": f"Where do shares of {r['subject']} trade?"}
        assert all(t["content"].startswith("Where do shares of ") for t in turns[1:-1:2])
        assert len(r["shots"]) == 5 and all(s.startswith("train:") for s in r["shots"])
        assert r["abstained"] == (answered[r["subject"]] == "None")
    expected = [1.0 if answered[s] != "None" or not val[s].objects else 0.0 for s in answered]
    rows = {r["metric"]: r["value"] for r in json.loads((out / "summary.json").read_text())
            if r["scope"] == "own" and r["group"] == "all"}
    assert rows["macro-f1"] == pytest.approx(sum(expected) / 12, abs=1e-12)
    abstained = 100.0 * sum(a == "None" for a in answered.values()) / 12  # percent, as LAMA's rates
    assert rows["abstain"] == pytest.approx(abstained, abs=1e-12)
    assert "## Abstentions (%), generated answers, own facts" in (out / "summary.md").read_text()
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    assert f"| lmkbc2024 | llm | all | {abstained:.2f} | {rows['unlinked']:.2f} |" in (
        tmp_path / "report" / "report.md").read_text()
    submission = [json.loads(line) for line in (out / "submission" / "llm.partial.jsonl").read_text().splitlines()]
    assert len(submission) == 12
    # `kbc show` prints the exact turns sent beside the generation, as the LAMA view does
    code, shown, err = run_kbc(["show", str(out), "--subject", recs[0]["subject"], "--relation", rel], capsys)
    assert code == 0, err
    lines = shown.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("prompt:") and "[system]" in line)
    assert lines[at].strip() == f"prompt:     [system] {LMKBC_SYSTEM.splitlines()[0]}"
    assert f"[user] Where do shares of {recs[0]['subject']} trade?" in {x.strip() for x in lines[at:]}
    assert any(x.strip() == f"generation: {recs[0]['generation']}" for x in lines[at:])


def test_empty_answers_on_lm_kbc_are_said_to_be_empty_sets_not_wrong_answers(serve, lama_dir, tmp_path, capsys,
                                                                            monkeypatch):
    """An empty set is an answer there: evaluate.py scores it 1 where the gold set is empty too."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "kbc"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "companyTradesAtStockExchange", "--predictors",
                            f"llm={serve(ok('')).url}", "--set", "llm.model=tiny", "--limit", "12", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith("lmkbc2024 / llm: 12 queries"))
    assert line.endswith("; 12 answers were empty text (read as empty sets: right only where the gold set is empty)")
    f1 = next(r["value"] for r in json.loads((out / "summary.json").read_text())
              if (r["scope"], r["group"], r["metric"]) == ("own", "all", "macro-f1"))
    assert 0 < f1 < 1


def test_a_written_count_is_a_number_standing_as_a_word_of_its_own(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """LM-KBC's episode counts: "52 episodes" answers 52; digits glued to letters ("179trotro") are noise, no count."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    rel = "seriesHasNumberOfEpisodes"
    written = ["52 episodes", "179trotro Erin cue", "Career035, then 70"]
    server = serve(lambda path, body, n: (200, completion(written[n % 3], "chat")))
    out = tmp_path / "kbc"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", rel, "--predictors", f"llm={server.url}", "--set",
                            "llm.model=tiny", "--set", "concurrency=1", "--limit", "3", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    recs = [json.loads(line) for line in (out / "predictions" / "lmkbc2024" / "llm" / f"{rel}.jsonl").read_text()
            .splitlines()]
    got = {r["generation"]: r["predicted"] for r in recs}
    assert got == {"52 episodes": ["52"], "179trotro Erin cue": [], "Career035, then 70": ["70"]}


def test_compare_and_the_fact_table_judge_a_written_answer_by_exact_match(serve, lama_dir, google_re, tmp_path,
                                                                          capsys, monkeypatch):
    import pandas as pd

    from bridge.cli.compare import paired, table_pairs
    from bridge.run.directory import open_run

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gold = {f.subject.label: f.object.label for f in google_re.facts if f.relation == "place_of_birth"}

    def script(path, body, n):
        subject = body["messages"][-1]["content"].removeprefix("Fill in the blank: ").split(" was born in")[0]
        return 200, completion(gold[subject] if n % 2 else "Atlantis", "chat")

    server = serve(script)
    out = tmp_path / "run"
    argv = lama_args(server.url, lama_dir, out)
    code, _, err = run_kbc([*argv[:7], "freq", *argv[7:]], capsys)
    assert code == 0, err
    recs = {r["uid"]: r for r in map(json.loads, (out / "predictions" / "google_re" / "llm" / "place_of_birth.jsonl")
                                     .read_text().splitlines())}
    frame = pd.read_parquet(out / "instances.parquet")
    mine = frame[frame.predictor == "llm"].set_index("uid")
    assert {u: bool(mine.loc[u, "correct_raw"]) for u in recs} == {u: r["em_raw"] for u, r in recs.items()}
    assert {u: mine.loc[u, "generation"] for u in recs} == {u: r["generation"] for u, r in recs.items()}
    pairs, _, _, _ = paired(open_run(out), "google_re", "freq", "llm", "raw")
    assert {p.uid: p.b for p in pairs} == {u: r["em_raw"] for u, r in recs.items()}
    from_table = table_pairs(out / "instances.parquet", "google_re", "freq", "llm", "raw")[0]
    assert [(p.uid, p.a, p.b) for p in from_table] == [(p.uid, p.a, p.b) for p in pairs]
    assert sum(r["em_raw"] for r in recs.values()) == 5  # the gold for requests 1, 3, 5, 7, 9


def test_the_fact_table_holds_what_was_parsed_unlinked_and_abstained_so_the_rates_recompute(serve, lama_dir,
                                                                                              tmp_path, capsys,
                                                                                              monkeypatch):
    """`load_run(...).facts` of a LAMA run with a generating predictor: its abstention and unlinked rates per relation
    are those of summary.json; a ranking predictor's rows hold none of the three."""
    import pandas as pd

    import kbcompare

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    texts = ("I don't know", "Atlantis", "Atlantis, Berlin", "Berlin")

    def script(path, body, n):  # each subject gets one answer whatever order the requests come in
        subject = body["messages"][-1]["content"].removeprefix("Fill in the blank: ").split(" was ")[0]
        return 200, completion(texts[len(subject) % 4], "chat")

    server = serve(script)
    out = tmp_path / "run"
    argv = lama_args(server.url, lama_dir, out)
    argv[argv.index("place_of_birth") + 1:argv.index("place_of_birth") + 1] = ["place_of_death"]
    argv[argv.index("--predictors") + 1:argv.index("--predictors") + 1] = ["freq"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    facts = kbcompare.load_run(out).facts
    assert {c: str(facts[c].dtype) for c in ("parsed", "unlinked", "abstained")} == {
        "parsed": "string", "unlinked": "string", "abstained": "boolean"}
    assert facts[facts.predictor == "freq"][["parsed", "unlinked", "abstained"]].isna().all().all()
    mine = facts[facts.predictor == "llm"].set_index("uid")
    recs = {r["uid"]: r for rel in ("place_of_birth", "place_of_death") for r in map(
        json.loads, (out / "predictions" / "google_re" / "llm" / f"{rel}.jsonl").read_text().splitlines())}
    assert {u: (json.loads(mine.loc[u, "parsed"]), json.loads(mine.loc[u, "unlinked"]), bool(mine.loc[u, "abstained"]))
            for u in recs} == {u: (r["parsed"], r["unlinked"], r["abstained"]) for u, r in recs.items()}
    parsed, unlinked = mine["parsed"].map(json.loads), mine["unlinked"].map(json.loads)
    share = pd.Series([len(u) / len(p) if p else 0.0 for p, u in zip(parsed, unlinked)], index=mine.index)
    recomputed = pd.DataFrame({"relation": mine["relation"], "abstain": 100.0 * mine["abstained"].astype(float),
                               "unlinked": 100.0 * share}).groupby("relation").mean()
    summary = {(r["group"], r["metric"]): r["value"] for r in json.loads((out / "summary.json").read_text())
               if r["predictor"] == "llm" and r["scope"] == "own" and r["setting"] == "raw"}
    for rel in ("place_of_birth", "place_of_death"):
        for metric in ("abstain", "unlinked"):
            assert recomputed.loc[rel, metric] == summary[(rel, metric)], (rel, metric)
    assert recomputed.to_dict() == {"abstain": {"place_of_birth": 0.0, "place_of_death": 100 * 3 / 9},
                                    "unlinked": {"place_of_birth": 100 * 8 / 9, "place_of_death": 100 * 6 / 9}}
    by_text = {r["generation"]: (r["abstained"], len(r["unlinked"]), len(r["parsed"])) for r in recs.values()}
    assert by_text == {"I don't know": (True, 0, 0), "Atlantis": (False, 1, 1), "Atlantis, Berlin": (False, 1, 1),
                       "Berlin": (False, 0, 1)}


def test_a_run_stopped_by_the_server_resumes_from_the_responses_it_cached(serve, lama_dir, tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (400, {"error": "context too long"}) if n == 6 else
                   (200, completion("Paris", "chat")))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and err.splitlines()[-1].startswith("error: ") and "HTTP 400" in err
    assert ("google_re / llm: 9 queries: 5 asked, 0 from the cache, 0 sharing another query's prompt, 1 unanswered, "
            "3 not asked before the stop; requests sent 6, failed 1") in err
    # each response is cached as it comes: the five answered are not asked again, the one that failed is
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    # and the run's first prompt is asked once more: the server still answers as it did (see the next test)
    assert ("google_re / llm: 9 queries: 4 asked, 5 from the cache (5 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered; requests sent 5, failed 0") in err and len(server.bodies) == 11


# -- the response cache serves no answer the server would not give now --

TRANSFORMERS_SERVE = {"id": "tiny", "object": "model", "created": 0, "owned_by": "", "status": {"value": "loaded"}}


def records(out) -> list[dict]:
    path = out / "predictions" / "google_re" / "llm" / "place_of_birth.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


class Weights:
    """What a fake server answers with, as swapped weights would change it: its text, and what it says of itself."""

    def __init__(self, text: str, system_fingerprint: str | None = None) -> None:
        self.text, self.system_fingerprint = text, system_fingerprint

    def __call__(self, path, body, n):
        answer = completion(self.text, "chat")
        if self.system_fingerprint:
            answer["system_fingerprint"] = self.system_fingerprint
        return 200, answer


def test_a_new_run_asks_a_server_again_whose_weights_were_swapped_under_the_same_name(serve, lama_dir, tmp_path,
                                                                                       capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    weights = Weights("Rome")
    server = serve(weights, models=[dict(TRANSFORMERS_SERVE)])  # as `transformers serve` lists it: nothing changes
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "sv1"), capsys)
    assert code == 0 and f"google_re / llm: {ALL_ASKED}" in err, err
    weights.text = "Paris"
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "sv2"), capsys)
    assert code == 0 and f"google_re / llm: {ALL_ASKED}" in err, err
    assert [r["generation"] for r in records(tmp_path / "sv2")] == ["Paris"] * 9
    # the first run keeps its own records; resumed, it asks nothing
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "sv1"), capsys)
    assert code == 0 and "requests sent" not in err and len(server.bodies) == 18
    assert [r["generation"] for r in records(tmp_path / "sv1")] == ["Rome"] * 9
    assert server.listed == 0  # a run's own cache needs nothing the server says of itself


@pytest.mark.parametrize("says", ["system_fingerprint", "created"])
def test_the_shared_cache_is_keyed_by_what_the_server_says_of_its_model(serve, lama_dir, tmp_path, capsys,
                                                                       monkeypatch, says):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    weights = Weights("Rome", "fp_1" if says == "system_fingerprint" else None)
    entry = {**TRANSFORMERS_SERVE, "created": 1700000000 if says == "created" else 0}
    server = serve(weights, models=[entry])
    shared = ("--set", "llm.cache=shared")
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "a", *shared), capsys)
    assert code == 0 and f"google_re / llm: {ALL_ASKED}" in err, err
    # another run: the first question is asked again (what the server says now), the rest come from the cache
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "b", *shared), capsys)
    assert code == 0 and ("google_re / llm: 9 queries: 1 asked, 8 from the cache, 0 sharing another query's prompt, "
                          "0 unanswered; requests sent 1, failed 0") in err, err
    assert records(tmp_path / "b") == records(tmp_path / "a") and "cache=shared:" not in err
    weights.text = "Paris"
    if says == "system_fingerprint":
        weights.system_fingerprint = "fp_2"
    else:
        entry["created"] = 1700000500
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "c", *shared), capsys)
    assert code == 0 and f"google_re / llm: {ALL_ASKED}" in err, err
    assert [r["generation"] for r in records(tmp_path / "c")] == ["Paris"] * 9
    assert server.listed == 3  # once a run


def test_a_shared_cache_of_a_server_that_says_nothing_of_its_weights_is_named_in_a_warning(serve, lama_dir, tmp_path,
                                                                                           capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(Weights("Rome"), models=[dict(TRANSFORMERS_SERVE)])
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "a", "--set", "llm.cache=shared"), capsys)
    assert code == 0, err
    assert (f"cache=shared: {server.url} reports no system_fingerprint and no creation time of model tiny "
            '(GET /v1/models: {"created": 0, "id": "tiny", "object": "model", "owned_by": ""}): answers cached from '
            "other weights served there under this name are used as this model's; use cache=on to ask again") in err


def test_what_a_server_lists_of_its_model(serve):
    server = serve(ok(), models=[{"id": "other", "created": 5}, {**TRANSFORMERS_SERVE, "root": "/m/tiny"}])
    gen = client(server.url)
    assert gen.listed() == {"id": "tiny", "object": "model", "created": 0, "owned_by": "", "root": "/m/tiny"}
    assert gen.listed() == gen.listed() and server.listed == 1 and gen.sent == 0  # asked once, never counted
    assert ServedGenerator(ServerSettings(server.url, "absent")).listed() is None
    assert client(serve(ok()).url).listed() is None  # no GET /v1/models: 404


def test_kbc_ls_says_what_the_response_cache_of_a_server_keeps(capsys):
    code, out, _ = run_kbc(["ls", "http://127.0.0.1:8766/v1"], capsys)
    line = next(x for x in out.splitlines() if ".cache=" in x)
    assert code == 0 and line.startswith("  --set v1.cache=on|shared|off: on-disk response cache. on: this run's own")
    assert "never changes answers" not in line and line.endswith("off: none (default on)")


def test_empty_answers_are_counted_where_the_rates_cannot_show_them(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """An empty generation parses to no answer: wrong, yet neither abstained nor unlinked, so the counts line says
    how many there were."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (200, completion("" if n % 3 else "Paris", "chat")))
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith(f"google_re / llm: {ALL_ASKED}"))
    assert line.endswith("; 6 answers were empty text (scored wrong)"), line



@pytest.mark.parametrize("api", ["chat", "completions"])
def test_answers_cut_at_the_token_limit_are_counted_with_the_option_that_gives_more(serve, lama_dir, tmp_path, capsys,
                                                                                    monkeypatch, api):
    """A reply the server stopped at `max_tokens` (`finish_reason: "length"`) is scored as written, cut mid-way: the
    counts line says how many, and the option to raise; a rerun reading them from the cache says the same."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def cut(body: dict) -> bool:  # the same prompts cut whichever request asks them
        return len(body["messages"][-1]["content"] if api == "chat" else body["prompt"]) % 2 == 0

    def script(path, body, n):
        answer = completion("Par" if cut(body) else "Paris", api)
        answer["choices"][0]["finish_reason"] = "length" if cut(body) else "stop"
        return 200, answer

    server = serve(script)
    shared = ("--set", f"llm.api={api}", "--set", "llm.max_new_tokens=3", "--set", "llm.cache=shared")
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "a", *shared), capsys)
    assert code == 0, err
    n = sum(map(cut, server.bodies))
    assert 0 < n < 9
    said = (f"; {n} answers were cut at max_new_tokens=3 before they ended (scored as written): raise it with --set "
            "llm.max_new_tokens=N")
    line = next(x for x in err.splitlines() if x.startswith(f"google_re / llm: {ALL_ASKED}"))
    assert line.endswith(said), line
    assert read_usage(tmp_path / "a")["google_re"]["llm"]["cut"] == n
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "b", *shared), capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith("google_re / llm: 9 queries: 1 asked, 8 from the cache"))
    assert line.endswith(said), line


def test_a_reply_stopped_at_the_token_limit_after_a_stop_sequence_it_wrote_is_not_cut(serve):
    """A server that does not apply `stop` writes on past it: the answer ends there all the same."""
    def script(path, body, n):
        answer = completion("Paris\nRome was", "chat")
        answer["choices"][0]["finish_reason"] = "length"
        return 200, answer

    gen = client(serve(script).url)
    assert [gen.generate(["q"], GenerationParams(max_new_tokens=4, stop=stop))[0].cut for stop in ((), ("\n",))] \
        == [True, False]


def test_the_counts_line_says_how_many_responses_gave_no_token_count(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """A server that sends no usage would otherwise read as one that spent 0 tokens."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def script(path, body, n):
        answer = completion("Paris", "chat", 4, 2)
        if n % 3 == 0:
            del answer["usage"]
        return 200, answer

    code, _, err = run_kbc(lama_args(serve(script).url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith(f"google_re / llm: {ALL_ASKED}"))
    assert line.endswith("; tokens used 24 prompt + 12 completion (3 of the responses said no token count: not "
                         "counted)"), line


def test_a_chat_answer_whose_content_is_null_is_an_empty_answer_not_a_stopped_run(serve, lama_dir, tmp_path, capsys,
                                                                                   monkeypatch):
    """The chat API allows `content: null` (a refusal; a reasoning model whose tokens ran out before it answered)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def script(path, body, n):
        answer = completion("Paris", "chat")
        if n % 3 == 0:
            answer["choices"][0]["message"]["content"] = None
        return 200, answer

    code, _, err = run_kbc(lama_args(serve(script).url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith(f"google_re / llm: {ALL_ASKED}"))
    assert line.endswith("; 3 answers were empty text (scored wrong)"), line


def test_a_reasoning_models_answer_is_read_after_its_thoughts_and_one_cut_while_thinking_is_empty(
        serve, lama_dir, tmp_path, capsys, monkeypatch):
    """A server without a reasoning parser leaves `<think>…</think>` in the content: the answer follows it, and one
    whose tokens ran out inside it has none (counted with the empty answers, as a null content is)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    golds = {r["sub_label"]: r["obj_label"] for r in map(json.loads, (
        lama_dir / "Google_RE" / "place_of_birth_test.jsonl").read_text().splitlines())}

    def script(path, body, n):
        gold = golds[asked_of(body).removeprefix("Fill in the blank: ").split(" was born in")[0]]
        text = f"<think>\nMaybe Berlin.\n</think>\n\n{gold}" if n % 3 else "<think>\nMaybe Berlin, or"
        return 200, completion(text, "chat")

    code, _, err = run_kbc(lama_args(serve(script).url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1"),
                           capsys)
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith(f"google_re / llm: {ALL_ASKED}"))
    assert line.endswith("; 3 answers were empty text (scored wrong)"), line
    em = [r["value"] for r in json.loads((tmp_path / "run" / "summary.json").read_text())
          if (r["metric"], r["scope"], r["setting"], r["group"]) == ("em", "own", "raw", "place_of_birth")]
    assert em == [pytest.approx(100 * 6 / 9)]


def test_a_resumed_run_refuses_a_server_that_now_answers_otherwise(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """A server may serve other weights under the same URL and model name: a run resumed against it would score
    two models as one. The run's first answer is asked again when it goes on; a different one stops it."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    now = {"text": "Melbourne", "fail_at": 6}
    server = serve(lambda path, body, n: (500, {"error": "down"}) if n == now["fail_at"] else
                   (200, completion(now["text"], "chat")))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and "HTTP 500" in err
    now.update(text="Paris", fail_at=0)  # other weights behind the same URL and name
    code, _, err = run_kbc(argv, capsys)
    first = server.bodies[0]["messages"][-1]["content"]
    assert code == 2 and server.bodies[6]["messages"][-1]["content"] == first and len(server.bodies) == 7
    # the five answers cached before are counted as such; the other four were never sent
    assert ("google_re / llm: 9 queries: 0 asked, 5 from the cache (5 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered, 4 not asked before the stop; requests sent 1, failed 0") in err, err
    assert err.splitlines()[-1] == (
        f"error: {server.url}: model tiny answers differently than when this run started (\"Melbourne\" then, "
        "\"Paris\" now, to the run's first prompt): it may serve other weights under this name, and the run would "
        "score two models as one; start a new --out")
    assert records(tmp_path / "run") == []  # nothing of the other model was written
    now.update(text="Melbourne")  # the same weights again: the run goes on
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert [r["generation"] for r in records(tmp_path / "run")] == ["Melbourne"] * 9



@pytest.mark.parametrize("cache", ["deleted", "another", "kept there by an earlier version"])
def test_a_run_keeps_its_first_answer_itself_so_a_cache_deleted_or_changed_still_checks(serve, lama_dir, tmp_path,
                                                                                         capsys, monkeypatch, cache):
    """The first answer that tells other weights is the run's own: kept in its folder, a resume adding relations
    after the cache was deleted (or under another KBC_CACHE) still asks it again and refuses other weights, where
    it would have answered the new relations with them and scored two models as one."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    now = {"text": "Melbourne"}
    server = serve(lambda path, body, n: (200, completion(now["text"], "chat")))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1")
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert len(list((tmp_path / "run" / "served_first_answers").glob("*.json"))) == 1
    if cache == "deleted":
        shutil.rmtree(tmp_path / "cache")
    elif cache.startswith("kept"):  # where runs kept it before: the cache alone
        shutil.move(tmp_path / "run" / "served_first_answers", tmp_path / "cache" / "lm" / "served_first_answers")
    else:
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / "another-cache"))
    now["text"] = "Paris"  # other weights behind the same URL and name
    more = [w for a in argv for w in (["place_of_birth", "place_of_death"] if a == "place_of_birth" else [a])]
    code, _, err = run_kbc(more, capsys)
    assert code == 2 and "answers differently than when this run started" in err, err
    death = tmp_path / "run" / "predictions" / "google_re" / "llm" / "place_of_death.jsonl"
    assert not death.is_file() or death.read_text() == ""  # nothing of the other model was written
    now["text"] = "Melbourne"  # the same weights again: the run goes on
    code, _, err = run_kbc(more, capsys)
    assert code == 0, err


def test_a_run_stopped_before_its_first_prompt_was_answered_still_checks_the_answers_it_kept(serve, lama_dir,
                                                                                              tmp_path, capsys,
                                                                                              monkeypatch):
    """The run's first request fails while the next two are answered and cached: those answers are the run's, and
    a resume against other weights under the same name must not score them with the new model's."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    whole = serve(by_prompt)
    assert run_kbc(lama_args(whole.url, lama_dir, tmp_path / "whole", "--set", "llm.concurrency=3"), capsys)[0] == 0
    first = records(tmp_path / "whole")[0]["prompt"][-1]["content"]
    now = {"fail": first, "place": " town"}

    def script(path, body, n):
        if asked_of(body) == now["fail"]:
            return 500, {"error": "down"}
        return 200, completion(by_prompt(path, body, n)[1]["choices"][0]["message"]["content"].replace(
            " town", now["place"]), "chat")

    server = serve(script)
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=3")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and "HTTP 500" in err
    kept = [asked_of(b) for b in server.bodies if asked_of(b) != first]
    assert kept and records(tmp_path / "run") == []
    now.update(fail=None, place=" city")  # other weights behind the same URL and name
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and "answers differently than when this run started" in err, err
    assert asked_of(server.bodies[-1]) in kept and records(tmp_path / "run") == []


# -- every response paid for is kept: an interrupted run resumed asks only what was never answered --

def asked_of(body: dict) -> str:
    return body["messages"][-1]["content"]


def by_prompt(path, body, n):
    """A fixed answer per prompt, whichever request asks it."""
    return 200, completion(asked_of(body).removeprefix("Fill in the blank: ").split(" was born in")[0] + " town",
                           "chat")


@pytest.mark.parametrize("stop", ["server error", "interrupt"])
def test_a_run_stopped_mid_slice_resumes_asking_only_what_was_never_answered(serve, lama_dir, tmp_path, capsys,
                                                                              monkeypatch, stop):
    """Requests in flight together (one slice, concurrency 3): a failure or a Ctrl-C on the fifth loses none of
    the answers that came back, before it or while it was handled; the resumed run asks the rest (and the run's
    first prompt once more, `_same_server`), and its records and totals are those of a run never stopped."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    whole = serve(by_prompt)
    code, _, err = run_kbc(lama_args(whole.url, lama_dir, tmp_path / "whole", "--set", "llm.concurrency=3"), capsys)
    assert code == 0, err
    prompts = [r["prompt"][-1]["content"] for r in records(tmp_path / "whole")]  # in query order
    assert sorted(prompts) == sorted(asked_of(b) for b in whole.bodies) and len(set(prompts)) == 9

    failing = {"at": 5 if stop == "server error" else 0}
    server = serve(lambda path, body, n: (500, {"error": "down"}) if n == failing["at"] else by_prompt(path, body, n))
    calls = {"n": 0}
    real_one = ServedGenerator._one

    def one(self, prompt, params, *rest):
        with server.lock:
            calls["n"] += 1
            now = calls["n"]
        if stop == "interrupt" and now == 5:
            raise KeyboardInterrupt
        return real_one(self, prompt, params, *rest)

    monkeypatch.setattr(ServedGenerator, "_one", one)
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=3")
    code, _, err = run_kbc(argv, capsys)
    assert code == (2 if stop == "server error" else 130), err
    answered = [asked_of(b) for n, b in enumerate(server.bodies, 1) if n != failing["at"]]
    k, tried = len(answered), len(server.bodies)
    assert 4 <= k < 9 and records(tmp_path / "run") == []
    rest = f", {8 - k} not asked before the stop" if k < 8 else ""  # the fifth request was handed over, unanswered
    assert (f"google_re / llm: 9 queries: {k} asked, 0 from the cache, 0 sharing another query's prompt, "
            f"1 unanswered{rest}; requests sent {tried}, failed {tried - k}") in err, err
    failing["at"] = 0
    calls["n"] = 100
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    again = [asked_of(b) for b in server.bodies[tried:]]
    assert sorted(again) == sorted([prompts[0], *(p for p in prompts if p not in answered)])
    assert (f"google_re / llm: 9 queries: {9 - k} asked, {k} from the cache ({k} asked before the run was resumed), "
            f"0 sharing another query's prompt, 0 unanswered; requests sent {10 - k}, failed 0") in err, err
    assert records(tmp_path / "run") == records(tmp_path / "whole")
    usage = read_usage(tmp_path / "run")
    assert usage == {"google_re": {"llm": {
        "asked": 9, "cached": 0, "shared": 0, "sent": tried + 10 - k, "retried": 0, "failed": tried - k,
        "prompt_tokens": 3 * 10, "completion_tokens": 2 * 10, "damaged": 0, "empty": 0, "cut": 0}}}
    assert read_usage(tmp_path / "whole")["google_re"]["llm"] == {
        "asked": 9, "cached": 0, "shared": 0, "sent": 9, "retried": 0, "failed": 0, "prompt_tokens": 27,
        "completion_tokens": 18, "damaged": 0, "empty": 0, "cut": 0}


def test_queries_sharing_a_prompt_are_counted_so_that_the_counts_add_up(serve, lama_dir, tmp_path, capsys,
                                                                        monkeypatch):
    """T-REx P190 and P530 ask some subjects twice in a sample of 10: one request answers both queries."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (200, completion("Paris", "chat")))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P190", "--relations", "P530",
                            "--predictors", f"llm={server.url}", "--set", "llm.model=tiny", "--limit", "10",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    assert ("trex / llm: 20 queries: 17 asked, 0 from the cache, 3 sharing another query's prompt, 0 unanswered; "
            "requests sent 17, failed 0; tokens used 51 prompt + 34 completion") in err, err
    assert len(server.bodies) == 17
    recs = [json.loads(line) for rel in ("P190", "P530")
            for line in (out / "predictions" / "trex" / "llm" / f"{rel}.jsonl").read_text().splitlines()]
    assert len(recs) == 20 and len({json.dumps(r["prompt"]) for r in recs}) == 17
    assert read_usage(out)["trex"]["llm"]["shared"] == 3


# -- the report and the leaderboard name the served model and say what asking it cost --

def test_the_report_and_the_leaderboard_name_the_served_model_and_what_a_resumed_run_cost(serve, lama_dir, tmp_path,
                                                                                          capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    failing = {"at": 6}
    server = serve(lambda path, body, n: (500, {"error": "down"}) if n == failing["at"] else
                   (200, completion("Paris", "chat")))
    out = tmp_path / "run"
    argv = lama_args(server.url + "/chat/completions", lama_dir, out, "--set", "llm.concurrency=1")
    assert run_kbc(argv, capsys)[0] == 2
    failing["at"] = 0
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert len(server.bodies) == 11  # 5 answered and 1 failed, then 4 and the first prompt checked again
    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"| llm | LM | tiny at {server.url} |" in md
    assert ("| predictor | corpus | queries answered | asked | from the cache | sharing a prompt | "
            "requests sent (local: generations) | retried | failed | prompt tokens | completion tokens | empty text | "
            "cut at max_new_tokens |") in md
    assert "| llm | google_re | 9 | 9 | 0 | 0 | 11 | 0 | 1 | 30 | 20 | 0 | 0 |" in md
    code, board, err = run_kbc(["leaderboard", str(out), "--metric", "em"], capsys)
    assert code == 0, err
    assert f"| 1 | {out} | llm | lm | tiny at {server.url} | - | - | - | " in board


def test_the_report_counts_the_answers_that_were_empty_text_or_cut_at_the_token_limit(serve, lama_dir, tmp_path,
                                                                                     capsys, monkeypatch):
    """Each is scored as written, so the rates hide both: the usage table counts them, as config.json keeps them."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def script(path, body, n):  # requests 3, 6, 9 empty; 1, 4, 7 cut at max_tokens; the rest whole
        answer = completion("" if n % 3 == 0 else "Par" if n % 3 == 1 else "Paris", "chat")
        answer["choices"][0]["finish_reason"] = "length" if n % 3 == 1 else "stop"
        return 200, answer

    server = serve(script)
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run"), capsys)
    assert code == 0, err
    usage = read_usage(tmp_path / "run")["google_re"]["llm"]
    assert (usage["sent"], usage["empty"], usage["cut"]) == (9, 3, 3)
    code, _, err = run_kbc(["report", str(tmp_path / "run"), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| llm | google_re | 9 | 9 | 0 | 0 | 9 | 0 | 0 | 27 | 18 | 3 | 3 |" in md


def test_a_report_of_a_run_that_kept_no_empty_or_cut_count_shows_zeros(serve, lama_dir, tmp_path, capsys,
                                                                       monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (200, completion("" if n % 3 == 0 else "Paris", "chat")))
    run = tmp_path / "run"
    code, _, err = run_kbc(lama_args(server.url, lama_dir, run), capsys)
    assert code == 0, err
    config = json.loads((run / "config.json").read_text())  # as a run made before they were counted, which
    config["usage"] = read_usage(run)  # added its counts to config.json as each attempt ended
    for key in ("empty", "cut"):
        del config["usage"]["google_re"]["llm"][key]
    for attempt in config["runs"]:
        del attempt["usage_log"]
    shutil.rmtree(run / USAGE_FOLDER)
    (run / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    md = (tmp_path / "report/report.md").read_text()
    assert "| llm | google_re | 9 | 9 | 0 | 0 | 9 | 0 | 0 | 27 | 18 | 0 | 0 |" in md


def test_runs_of_one_served_model_asked_otherwise_are_told_apart_by_those_settings(serve, lama_dir, tmp_path,
                                                                                   capsys, monkeypatch):
    """Two runs of one model and server, the second with another prompt, shots and max_new_tokens: the leaderboard
    (table and JSON), the report of both runs and `kbc compare` name the settings they differ in, and only those."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (200, completion("Paris" if "Q:" in str(body) else "Rome", "chat")))
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_kbc(lama_args(server.url, lama_dir, a), capsys)[0] == 0
    code, _, err = run_kbc(lama_args(server.url, lama_dir, b, "--set", "llm.prompt=lama", "--set", "llm.shots=2",
                                     "--set", "llm.max_new_tokens=8"), capsys)
    assert code == 0, err
    code, board, err = run_kbc(["leaderboard", str(a), str(b), "--metric", "em", "--sort", "run"], capsys)
    assert code == 0, err
    specs = [line.split(" | ")[4] for line in board.splitlines() if line.startswith("| 1 |")]
    assert specs == [f"tiny at {server.url} (prompt=question, shots=0, max_new_tokens=64)",
                     f"tiny at {server.url} (prompt=lama, shots=2, max_new_tokens=8)"], board
    code, board, err = run_kbc(["leaderboard", str(a), str(b), "--metric", "em", "--sort", "run", "--format", "json"],
                               capsys)
    assert code == 0, err
    assert [r["spec"] for r in json.loads(board)["rows"]] == specs
    code, _, err = run_kbc(["report", str(a), "--compare", str(b), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"| a:llm | LM | {specs[0]} | {a} |" in md and f"| b:llm | LM | {specs[1]} | {b} |" in md
    code, table, err = run_kbc(["compare", str(a), "llm", "llm", "--b-run", str(b)], capsys)
    assert code == 0, err
    assert [line for line in table.splitlines() if line.startswith("note: A and B differ")] == [
        "note: A and B differ in prompt: question against lama", "note: A and B differ in shots: 0 against 2",
        "note: A and B differ in max_new_tokens: 64 against 8"]
    # one run alone, or runs asked alike, name the model only
    code, board, err = run_kbc(["leaderboard", str(a), "--metric", "em"], capsys)
    assert code == 0 and f"| tiny at {server.url} |" in board, err


def test_a_served_model_is_named_with_its_server_without_credentials():
    from bridge.predictors.registry import shown_spec

    def shown(spec: str, options: dict) -> str:
        return shown_spec({"predictor_specs": {"llm": {"spec": spec, "options": options}}}, "llm")

    assert shown("https://me:sk-secret@api.example.com/v1/chat/completions?api-key=sk-2", {"model": "gpt-x"}) == \
        "gpt-x at https://api.example.com/v1"
    assert shown("http://[::1]:8000", {"model": "tiny"}) == "tiny at http://[::1]:8000/v1"
    assert shown("bert-base-cased", {}) == "bert-base-cased"


def test_a_server_url_holding_a_password_is_refused_before_any_work_without_showing_it(serve, lama_dir, tmp_path,
                                                                                        capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    with_password = server.url.replace("http://", "http://user:secretpw@")
    out = tmp_path / "run"
    code, stdout, err = run_kbc(lama_args(with_password, lama_dir, out), capsys)
    assert code == 2 and stdout == ""
    assert err.splitlines() == [
        f"error: --predictors llm: the server URL holds a user name or password, which a run would record and print; "
        f"give the URL without it ({server.url}) and the key in an environment variable: --set llm.key_env=VAR "
        "(sent as a Bearer token)"]
    assert not out.exists() and not (tmp_path / "cache").exists() and server.bodies == []


@pytest.mark.parametrize("query", ["api-key=secretpw", "api-version=2024-06-01&access_token=secretpw"])
def test_a_server_url_holding_a_key_in_its_query_is_refused_without_showing_it(serve, lama_dir, tmp_path, capsys,
                                                                              monkeypatch, query):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    out = tmp_path / "run"
    code, stdout, err = run_kbc(lama_args(f"{server.url}?{query}", lama_dir, out), capsys)
    param = query.rsplit("&", 1)[-1].split("=")[0]
    assert code == 2 and stdout == "" and "secretpw" not in err
    assert err.splitlines() == [
        f"error: --predictors llm: the server URL holds a key ({param}=...), which a run would record and print; "
        f"give the URL without it ({server.url}) and the key in an environment variable: --set llm.key_env=VAR "
        "(sent as a Bearer token)"]
    assert not out.exists() and not (tmp_path / "cache").exists() and server.bodies == []


# -- a Ctrl-C at any point keeps every answer the server gave: a request sent is a response handed over --

def stopped_after_two_requests(workers: int):
    """A thread pool whose second request is followed by a Ctrl-C (a signal, as the terminal sends it)."""
    from concurrent.futures import ThreadPoolExecutor

    class Pool(ThreadPoolExecutor):
        submitted = 0

        def submit(self, *args, **kwargs):
            future = super().submit(*args, **kwargs)
            Pool.submitted += 1
            if Pool.submitted == 2:
                signal.raise_signal(signal.SIGINT)
            return future

    return Pool(workers)


@pytest.mark.parametrize(("where", "answered"), [("submit", 3), ("callback", 4), ("result", 4)])
def test_a_ctrl_c_while_responses_are_handed_over_loses_none(serve, monkeypatch, where, answered):
    """Ctrl-C right after the second request went out, inside the second `kept` (before it keeps anything), or
    between the second response and its `kept`: every response the server gave reaches `kept`, and no request goes
    out after the Ctrl-C but those in flight (concurrency 3: after the second response, the third and fourth)."""
    from concurrent.futures import Future

    import lm.served

    server = serve(lambda path, body, n: (200, completion(body["messages"][-1]["content"].upper(), "chat")), 0.05)
    got: dict[int, str] = {}

    def kept(i: int, g) -> None:
        if where == "callback" and len(got) == 1:
            signal.raise_signal(signal.SIGINT)
        got[i] = g.text

    if where == "submit":
        monkeypatch.setattr(lm.served, "ThreadPoolExecutor", stopped_after_two_requests)
    if where == "result":
        real, calls = Future.result, []

        def result(self, timeout=None):
            value = real(self, timeout)
            calls.append(1)
            if len(calls) == 2:
                signal.raise_signal(signal.SIGINT)
            return value

        monkeypatch.setattr(Future, "result", result)
    with pytest.raises(KeyboardInterrupt):
        client(server.url, concurrency=3).generate([f"q{i}" for i in range(12)], PARAMS, kept)
    asked = sorted(b["messages"][-1]["content"] for b in server.bodies)
    assert len(asked) == answered and sorted(got.values()) == [a.upper() for a in asked]
    assert all(got[i] == f"Q{i}" for i in got)


def test_a_second_ctrl_c_while_the_requests_in_flight_are_awaited_loses_none_of_their_answers(serve, caplog):
    """The requests in flight at a Ctrl-C are awaited (the process would wait for them anyway): a second Ctrl-C in
    that wait changes nothing but is no reason to drop the answers paid for; stderr says what it waits for."""
    import logging
    import os
    import time

    def script(path, body, n):
        if n == 2:  # both requests are in flight: Ctrl-C, then Ctrl-C again while they are awaited
            def twice() -> None:
                for _ in range(2):
                    time.sleep(0.2)
                    os.kill(os.getpid(), signal.SIGINT)

            threading.Thread(target=twice, daemon=True).start()
        time.sleep(1.5)
        return 200, completion(asked_of(body).upper(), "chat")

    kept: dict[int, str] = {}
    gen = client(serve(script).url, concurrency=2, timeout=30)
    with caplog.at_level(logging.WARNING, logger="kbc"), pytest.raises(KeyboardInterrupt):
        gen.generate([[{"role": "user", "content": f"q{i}"}] for i in range(4)], PARAMS,
                     lambda i, g: kept.setdefault(i, g.text))
    assert kept == {0: "Q0", 1: "Q1"} and gen.sent == 2
    assert [r.getMessage() for r in caplog.records] == [
        "stopping: waiting for the 2 requests in flight (a try waits at most 30 s), whose answers are kept"]


def interrupt_at_cache_write(monkeypatch, n: int, signum: int = signal.SIGINT) -> None:
    """A Ctrl-C (a real SIGINT), or the SIGTERM `kill` sends, while the `n`-th response is being written to the
    response cache."""
    from lm.response_cache import ResponseCache

    real, puts = ResponseCache.put, []

    def put(self, key, response, run=None):
        puts.append(key)
        if len(puts) == n:
            signal.raise_signal(signum)
        real(self, key, response, run)

    monkeypatch.setattr(ResponseCache, "put", put)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_ctrl_c_while_a_response_is_cached_keeps_it_and_the_resume_asks_only_the_rest(serve, lama_dir, tmp_path,
                                                                                        capsys, monkeypatch, signum,
                                                                                        status):
    """Ctrl-C (or SIGTERM) while the third response is being written to the cache: it is written whole, the two
    requests in flight are awaited and cached too, nothing more is sent; resumed, the run asks the four never
    answered and its first prompt once more."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(by_prompt, 0.05)
    interrupt_at_cache_write(monkeypatch, 3, signum)
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=3")
    code, _, err = run_kbc(argv, capsys)
    assert code == status, err
    assert ("google_re / llm: 9 queries: 5 asked, 0 from the cache, 0 sharing another query's prompt, 0 unanswered, "
            "4 not asked before the stop; requests sent 5, failed 0") in err, err
    first = [asked_of(b) for b in server.bodies]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert ("google_re / llm: 9 queries: 4 asked, 5 from the cache (5 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered; requests sent 5, failed 0") in err, err
    prompts = [r["prompt"][-1]["content"] for r in records(tmp_path / "run")]
    again = [asked_of(b) for b in server.bodies[5:]]
    assert again[0] == prompts[0] and sorted(again[1:]) == sorted(set(prompts) - set(first))


def test_a_wrong_model_name_is_answered_with_the_names_the_server_lists(serve):
    server = serve(lambda path, body, n: (400, {"error": {"message": "Server is pinned to '/m/gpt2'; requested "
                                                                      f"'{body['model']}'."}}),
                   models=[{"id": "/m/gpt2", "object": "model"}, {"id": "/m/other", "object": "model"}])
    with pytest.raises(ServerError) as caught:
        client(server.url, api="completions").generate(["q"], PARAMS)
    assert str(caught.value) == (f"{server.url}/completions: HTTP 400 (Server is pinned to '/m/gpt2'; requested "
                                 "'tiny'.); the server lists no model tiny, it serves /m/gpt2, /m/other: "
                                 "--set model=NAME")
    listed = ServedGenerator(ServerSettings(server.url, "/m/gpt2", api="completions"))
    with pytest.raises(ServerError) as caught:  # a name it lists: the 400 is about something else
        listed.generate(["q"], PARAMS)
    assert str(caught.value) == (f"{server.url}/completions: HTTP 400 (Server is pinned to '/m/gpt2'; requested "
                                 "'/m/gpt2'.)")
    unlisted = serve(lambda path, body, n: (400, {"error": "bad request"}))  # no GET /v1/models: nothing to add
    with pytest.raises(ServerError) as caught:
        client(unlisted.url).generate(["q"], PARAMS)
    assert str(caught.value) == f"{unlisted.url}/chat/completions: HTTP 400 (bad request)"


# -- each corpus of a run is one more predictor: the first answer is checked once per attempt, the counts line adds
# up to the attempt's sample --

def two_corpora_args(url: str, lama_dir, out) -> list[str]:
    return ["run", "lama", "--corpus", "google_re", "--corpus", "trex", "--relations", "place_of_birth",
            "--relations", "P19", "--predictors", f"llm={url}", "--set", "llm.model=tiny", "--set",
            "llm.concurrency=1", "--limit", "4", "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
            "--bootstrap", "0"]


def test_a_run_of_two_corpora_sends_one_request_per_prompt_and_a_resume_checks_its_first_answer_once(
        serve, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(by_prompt)
    code, _, err = run_kbc(two_corpora_args(server.url, lama_dir, tmp_path / "fresh"), capsys)
    assert code == 0, err
    for corpus in ("google_re", "trex"):
        assert (f"{corpus} / llm: 4 queries: 4 asked, 0 from the cache, 0 sharing another query's prompt, "
                "0 unanswered; requests sent 4, failed 0") in err, err
    assert len(server.bodies) == 8 and len({asked_of(b) for b in server.bodies}) == 8
    # stopped at the third request; resumed, the first corpus asks its first prompt again, the second nothing more
    failing = serve(lambda path, body, n: (500, {"error": "down"}) if n == 3 else by_prompt(path, body, n))
    argv = two_corpora_args(failing.url, lama_dir, tmp_path / "resumed")
    assert run_kbc(argv, capsys)[0] == 2
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert ("google_re / llm: 4 queries: 2 asked, 2 from the cache (2 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered; requests sent 3, failed 0") in err, err
    assert ("trex / llm: 4 queries: 4 asked, 0 from the cache, 0 sharing another query's prompt, 0 unanswered; "
            "requests sent 4, failed 0") in err, err
    assert len(failing.bodies) == 3 + 3 + 4


def test_the_counts_line_of_a_stopped_run_adds_up_to_its_sample(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """Ctrl-C at the second answer of the second relation of three (concurrency 1): the two prompts of the second
    relation after it and the third relation's four were never sent; resumed, the first relation's are on record.
    Both lines count the whole sample of 12."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(by_prompt)
    interrupt_at_cache_write(monkeypatch, 6)
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "P1376", "--predictors",
            f"llm={server.url}", "--set", "llm.model=tiny", "--set", "llm.concurrency=1", "--limit", "4",
            "--data-dir", str(lama_dir), "--out", str(tmp_path / "run"), "--quiet", "--bootstrap", "0"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 130, err
    assert "asking a sample of 12" in err and (
        "trex / llm: 12 queries: 6 asked, 0 from the cache, 0 sharing another query's prompt, 0 unanswered, 6 not "
        "asked before the stop; requests sent 6, failed 0") in err, err
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert ("trex / llm: 12 queries: 6 asked, 2 from the cache (2 asked before the run was resumed), 0 sharing "
            "another query's prompt, 0 unanswered, 4 recorded before the run was resumed; requests sent 7, failed 0"
            ) in err, err
    assert len(server.bodies) == 13


def test_a_warning_given_while_a_progress_bar_is_shown_is_a_line_of_its_own(serve, lama_dir, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(Weights("Rome"), models=[dict(TRANSFORMERS_SERVE)])
    argv = [a for a in lama_args(server.url, lama_dir, tmp_path / "a", "--set", "llm.cache=shared") if a != "--quiet"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    lines = err.split("\n")  # as a log filter reads them: a bar's redraws ("\r") stay on the bar's line
    warned = [line for line in lines if "reports no system_fingerprint" in line]
    assert [line.startswith("cache=shared: ") for line in warned] == [True], warned
    assert lines[lines.index(warned[0]) - 1].lstrip("\r").startswith("google_re llm:"), err  # the bar's, ended
    assert any(line.lstrip("\r").startswith("google_re llm:") for line in lines[lines.index(warned[0]) + 1:]), err


# -- the progress bar moves as each answer comes, from the server or the cache --

def test_the_progress_bar_moves_per_answer_and_sets_apart_what_the_cache_holds(serve, lama_dir, tmp_path, capsys,
                                                                             monkeypatch):
    import bridge.run.runner

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(bridge.run.runner, "tqdm", Bar)
    failing = {"at": 6}
    server = serve(lambda path, body, n: (500, {"error": "down"}) if n == failing["at"] else
                   (200, completion("Paris", "chat")))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1")
    assert run_kbc(argv, capsys)[0] == 2
    assert Bar.moves == [1, 1, 1, 1, 1]
    failing["at"] = 0
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert Bar.moves == ["5 queries from the cache", 1, 1, 1, 1]  # the cache's answers leave the total, at once


def _evaluate_py(predictions: list[dict], gold: list[dict]) -> dict[str, dict[str, float]]:
    """lm-kbc/dataset2024's evaluate.py on its two files, restated: per relation and over all pairs (`all`)."""
    def keyed(rows):
        return {(r["SubjectEntity"], r["Relation"]): list(set(r["ObjectEntitiesID"])) for r in rows}

    preds, gts = keyed(predictions), keyed(gold)
    per: dict[str, list[tuple[float, float, float, int, int, int]]] = {}
    for key, gt in gts.items():
        pred = preds[key]
        tp = sum(1 for x in pred if x in gt)
        p = min(tp / len(pred), 1.0) if pred else 1
        r = min(tp / len(gt), 1.0) if gt else 1.0
        per.setdefault(key[1], []).append((p, r, 2 * p * r / (p + r) if p + r else 0.0, tp, len(pred), len(gt)))
    per["all"] = [x for rel in list(per) for x in per[rel]]
    out = {}
    for rel, scores in per.items():
        tp, n_pred, n_gt = (sum(s[i] for s in scores) for i in (3, 4, 5))
        micro_p, micro_r = tp / n_pred if n_pred else 1.0, tp / n_gt if n_gt else 1.0
        out[rel] = {"macro-p": sum(s[0] for s in scores) / len(scores), "macro-r": sum(s[1] for s in scores) /
                    len(scores), "macro-f1": sum(s[2] for s in scores) / len(scores), "micro-p": micro_p,
                    "micro-r": micro_r, "micro-f1": 2 * micro_p * micro_r / (micro_p + micro_r) if micro_p + micro_r
                    else 0.0, "avg-preds": n_pred / len(scores), "empty-preds": sum(1 for s in scores if not s[4])}
    return out


def test_lmkbc_scores_are_evaluate_py_on_the_submission_file(serve, lama_dir, tmp_path, capsys, monkeypatch):
    """A server answering each awardWonBy question with the gold labels: most name no id the data ties to them,
    so they are submitted as labels, which evaluate.py never matches; the challenge's table is evaluate.py's
    figures on that file, and kbc's label-matching figures are a table of their own. Every gold label is read as
    written ("Adela Rogers St. Johns" among them, and "Sr." beside the data's "Sr", each its own answer): kbc's
    label-matching recall is 1."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    val = [json.loads(line) for line in (lama_dir.parent / "lmkbc2024" / "val.jsonl").read_text().splitlines()]

    def script(path, body, n):
        last = body["prompt"].strip().splitlines()[-2]  # "Q: Who won the ...?", then "A:"
        row = max((r for r in val if r["SubjectEntity"] in last), key=lambda r: len(r["SubjectEntity"]))
        return 200, completion(" " + (", ".join(row["ObjectEntities"]) or "None"), "completions")

    server = serve(script)
    out = tmp_path / "kbc"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "awardWonBy", "--predictors", f"llm={server.url}",
                            "--set", "llm.model=tiny", "--set", "llm.api=completions", "--data-dir", str(lama_dir),
                            "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    submitted = [json.loads(line) for line in (out / "submission" / "llm.partial.jsonl").read_text().splitlines()]
    expected = _evaluate_py(submitted, [r for r in val if r["Relation"] == "awardWonBy"])
    rows = {(r["group"], r["metric"]): r["value"] for r in json.loads((out / "summary.json").read_text())
            if r["scope"] == "shared"}
    for group in ("awardWonBy", "all"):
        assert {m: rows[group, m] for m in expected[group]} == pytest.approx(expected[group], abs=1e-15)
    assert round(expected["all"]["macro-f1"], 3) == 0.068
    summary = (out / "summary.md").read_text()
    assert ("| lmkbc2024 | llm | all (over pairs) | 10 | 0.067 | 0.069 | 0.068 | 0.054 | 0.055 | 0.055 | 149.000 | "
            "0 |") in summary
    # kbc's own figure, where an answer left a label matches a gold label, is named so and kept apart
    label = summary.split("## kbc's label matching, shared pairs (not evaluate.py's)\n")[1].split("\n## ")[0]
    assert ("| corpus | predictor | relation | #pairs | kbc macro-p | kbc macro-r | kbc macro-f1 | answers matched by "
            "label only |") in label
    assert "| lmkbc2024 | llm | all (over pairs) | 10 | 0.983 | 1.000 | 0.991 | 1397 |" in label
    assert rows["all", "label-hits"] == 1397.0


def test_a_query_in_the_server_url_stays_after_the_endpoint_it_asks(serve, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    paths: list[str] = []

    def script(path, body, n):
        paths.append(path)
        return 200, completion("Paris", "completions")

    server = serve(script, models=[{"id": "tiny", "object": "model", "created": 1, "owned_by": ""}])
    for given in (f"{server.url}?api-version=1", f"{server.url}/completions?api-version=1",
                  server.url.removesuffix("/v1") + "/?api-version=1"):
        paths.clear()
        code, _, err = run_kbc(lama_args(given, lama_dir, tmp_path / "run", "--set", "llm.api=completions"), capsys)
        assert code == 0, err
        assert set(paths) == {"/v1/completions?api-version=1"} and len(paths) == 9
        shutil.rmtree(tmp_path / "run")


def test_a_fragment_in_the_server_url_is_refused_in_one_line(serve, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    code, stdout, err = run_kbc(lama_args(f"{server.url}#x", lama_dir, tmp_path / "run"), capsys)
    assert code == 2 and stdout == "" and server.bodies == []
    assert err.splitlines() == ["error: --predictors llm: the server URL holds a fragment (#...), which a server "
                                "never sees; give the URL without it"]


def written_under(*folders) -> str:
    return "\n".join(p.read_text(errors="replace") for f in folders if f.exists() for p in f.rglob("*") if p.is_file())


def test_no_query_value_of_a_server_url_is_written_or_shown_but_the_run_tells_two_queries_apart(
        serve, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (500, {"error": "boom"}) if n == 4 else (200, completion("Paris", "chat")),
                   models=[{"id": "tiny", "object": "model", "created": 1, "owned_by": ""}])
    out = tmp_path / "run"
    argv = lama_args(f"{server.url}?tenant=hunter3&api-version=2024-06-01", lama_dir, out, "--set",
                     "llm.concurrency=1", "--set", "llm.cache=shared")
    monkeypatch.setattr("sys.argv", ["kbc", *argv])  # what the runs log records
    code, _, stopped = run_kbc(argv, capsys)
    assert code == 2 and stopped.splitlines()[-1].startswith(
        f"error: {server.url}/chat/completions?tenant=***&api-version=2024-06-01: HTTP 500 (boom)")
    code, _, resumed = run_kbc(argv, capsys)
    assert code == 0, resumed
    code, report, err = run_kbc(["report", str(out)], capsys)
    assert code == 0, err
    shown = stopped + resumed + err + report + written_under(out, tmp_path / "cache")
    assert "hunter3" not in shown and "tenant=***&api-version=2024-06-01" in shown
    config = json.loads((out / "config.json").read_text())
    spec = config["predictor_specs"]["llm"]
    assert spec["spec"] == f"{server.url}?tenant=***&api-version=2024-06-01"
    assert len(spec["query_digest"]) == 16
    assert f"llm={server.url}?tenant=***&api-version=2024-06-01" in config["runs"][0]["argv"]
    # another value under the same name is another run: refused in that folder, asked again in another
    code, _, err = run_kbc(lama_args(f"{server.url}?tenant=other7&api-version=2024-06-01", lama_dir, out), capsys)
    assert code == 2 and "predictor 'llm' was run with" in err and "other7" not in err
    asked = len(server.bodies)
    code, _, err = run_kbc(lama_args(f"{server.url}?tenant=other7&api-version=2024-06-01", lama_dir,
                                     tmp_path / "other", "--set", "llm.cache=shared"), capsys)
    assert code == 0 and len(server.bodies) == asked + 9, err


@pytest.mark.parametrize("query", ["code=hunter3", "sig=hunter3"])
def test_azure_functions_code_and_a_sig_are_refused_as_keys(serve, lama_dir, tmp_path, capsys, monkeypatch, query):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    code, _, err = run_kbc(lama_args(f"{server.url}?{query}", lama_dir, tmp_path / "run"), capsys)
    assert code == 2 and "hunter3" not in err and server.bodies == []
    assert err.startswith(f"error: --predictors llm: the server URL holds a key ({query.split('=')[0]}=...)")


def test_plain_text_asked_of_a_chat_endpoint_is_recorded_as_the_turn_the_server_received(serve, lama_dir, tmp_path,
                                                                                         capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.api=chat", "--set",
                                     "llm.chat=off"), capsys)
    assert code == 0, err
    recs = records(tmp_path / "run")
    sent = {b["messages"][0]["content"]: b["messages"] for b in server.bodies}
    assert len(recs) == 9 and len(sent) == 9
    for r in recs:
        assert isinstance(r["prompt"], list) and len(r["prompt"]) == 1
        assert r["prompt"] == sent[r["prompt"][0]["content"]]
        assert r["prompt"][0]["role"] == "user" and r["prompt"][0]["content"].startswith("Q: ")
        assert r["prompt"][0]["content"].endswith("\nA:") and r["subject"] in r["prompt"][0]["content"]


def test_a_run_stopped_by_a_server_failure_says_that_rerunning_it_resumes(serve, lama_dir, tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (500, {"error": "out of memory"}) if n == 4 else
                   (200, completion("Paris", "chat")))
    argv = lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=1", "--set", "llm.retries=0")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {server.url}/chat/completions: HTTP 500 (out of memory); results written so far are kept; rerun the "
        "same command to resume")
    code, _, err = run_kbc(argv, capsys)
    assert code == 0 and "3 from the cache" in err, err


def test_an_option_error_names_the_server_url_without_its_query_values(serve, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(ok())
    argv = lama_args(f"{server.url}?tenant=hunter3", lama_dir, tmp_path / "run", "--set", "llm.tempreature=0")
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and "hunter3" not in err
    assert err.startswith(f"error: --set llm.tempreature: predictor llm ({server.url}?tenant=***) does not take "
                          "'tempreature'; did you mean llm.temperature?")


def test_a_server_error_names_the_answers_that_came_while_it_was_handled(serve, lama_dir, tmp_path, capsys,
                                                                          monkeypatch):
    """A bare 500 while other requests are in flight: those answer after the failure (held until its message is
    first made), are kept and counted, and the error line says as many requests were answered as the counts line."""
    import lm.served

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    failed = threading.Event()
    made = lm.served._http_message

    def message(*args, **kw):
        failed.set()
        return made(*args, **kw)

    monkeypatch.setattr(lm.served, "_http_message", message)

    fourth = threading.Event()  # the 500 waits for a third request in flight, however slow the machine

    def script(path, body, n):
        if n == 4:
            fourth.set()
        if n == 3:
            fourth.wait(30)
            return 500, b"Internal Server Error"
        if n > 1:  # the first is the run's first prompt, asked alone
            failed.wait(30)
        return 200, completion("Paris", "chat")

    server = serve(script)
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=3"), capsys)
    assert code == 2, err
    asked = int(re.search(r"google_re / llm: 9 queries: (\d+) asked", err).group(1))
    said = int(re.search(r"\((\d+) chat requests? of this run (?:was|were) answered", err.splitlines()[-1]).group(1))
    assert asked == said == len(server.bodies) - 1 >= 3, err


def test_a_stop_under_cache_off_says_the_answers_in_flight_are_not_kept(serve, lama_dir, tmp_path, capsys,
                                                                        monkeypatch):
    """With cache=off the answers of the requests awaited at a stop are not kept (records are written per chunk):
    the stop line says they are asked again on resume, not that they are kept."""
    import time

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    server = serve(lambda path, body, n: (time.sleep(0.3), by_prompt(path, body, n))[1])
    real_one = ServedGenerator._one
    calls = {"n": 0}

    def one(self, prompt, params, *rest):
        with server.lock:
            calls["n"] += 1
            now = calls["n"]
        if now == 3:
            raise KeyboardInterrupt
        return real_one(self, prompt, params, *rest)

    monkeypatch.setattr(ServedGenerator, "_one", one)
    code, _, err = run_kbc(lama_args(server.url, lama_dir, tmp_path / "run", "--set", "llm.concurrency=3",
                                     "--set", "llm.cache=off"), capsys)
    assert code == 130, err
    said = [line for line in err.splitlines() if line.startswith("stopping: waiting for")]
    assert len(said) == 1 and said[0].endswith("whose answers are not kept (cache=off: a resumed run asks them "
                                               "again)"), err
