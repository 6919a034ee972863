"""A real `transformers serve` on a localhost port, serving a tiny GPT-2: its records equal the local `generate`
predictor's on the same model and prompts, over `/v1/completions` (the model as it is) and `/v1/chat/completions`
(the fixture gives the tokenizer a chat template)."""

from __future__ import annotations

import json
import shutil

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_model_dir

pytestmark = pytest.mark.heavy

CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


@pytest.fixture(scope="module")
def chat_gpt2(tmp_path_factory):
    """The tiny GPT-2 with a chat template in its tokenizer files."""
    from transformers import AutoTokenizer

    path = tmp_path_factory.mktemp("chat") / "tiny-gpt2-chat"
    shutil.copytree(tiny_model_dir("gpt2", tmp_path_factory.mktemp("gpt2")), path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def server(chat_gpt2):
    from lm.local_server import LocalServer

    with LocalServer(chat_gpt2) as running:
        yield running


def run(lama_dir, tmp_path, capsys, spec: str, out_name: str, *sets: str) -> list[dict]:
    out = tmp_path / out_name
    argv = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors", f"llm={spec}",
            "--set", "llm.max_new_tokens=6", *[x for s in sets for x in ("--set", s)], "--limit", "4",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0", "--batch-size", "3"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    # each side asked its model itself
    cost = "requests sent 4, failed 0" if spec.startswith("http") else "; generations 4;"  # a local model sends none
    assert "google_re / llm: 4 queries: 4 asked, 0 from the cache" in err and cost in err
    path = out / "predictions" / "google_re" / "llm" / "place_of_birth.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_completions_records_equal_the_local_generate_predictor(server, chat_gpt2, lama_dir, tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    local = run(lama_dir, tmp_path, capsys, str(chat_gpt2), "local", "llm.answer=generate", "llm.prompt=lama",
                "llm.chat=off")
    served = run(lama_dir, tmp_path, capsys, server.url, "served", f"llm.model={chat_gpt2}", "llm.api=completions",
                 "llm.prompt=lama")
    assert served == local
    assert [r["prompt"] for r in served] == [f"{r['subject']} was born in" for r in served]
    assert any(r["generation"].strip() for r in served)


def test_chat_records_equal_the_local_generate_predictor_with_its_chat_template(server, chat_gpt2, lama_dir, tmp_path,
                                                                               capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    local = run(lama_dir, tmp_path, capsys, str(chat_gpt2), "local", "llm.answer=generate", "llm.prompt=question")
    served = run(lama_dir, tmp_path, capsys, server.url, "served", f"llm.model={chat_gpt2}", "llm.api=chat",
                 "llm.prompt=question")
    for r in local:  # the local record also keeps the text its chat template rendered
        question = f"Fill in the blank: {r['subject']} was born in ___."
        assert r["prompt"] == [{"role": "user", "content": question}]
        assert r.pop("prompt_text") == f"user: {question}\nassistant:"
    assert served == local


def test_weights_swapped_behind_the_same_url_and_name_are_asked_again(chat_gpt2, lama_dir, tmp_path, capsys,
                                                                      monkeypatch):
    """`model.safetensors` replaced and the server restarted: it lists the model as before (`created` 0, no
    system_fingerprint), so a new run sends every request again and records what the new weights write."""
    from lm.local_server import LocalServer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "served"
    shutil.copytree(chat_gpt2, served)
    sets = (f"llm.model={served}", "llm.api=completions", "llm.prompt=lama")
    with LocalServer(served) as first:
        before = run(lama_dir, tmp_path, capsys, first.url, "sv1", *sets)
        port = first.port
    other = tiny_model_dir("gpt2", tmp_path / "other", seed=1)
    shutil.copyfile(other / "model.safetensors", served / "model.safetensors")
    with LocalServer(served, port=port) as second:
        after = run(lama_dir, tmp_path, capsys, second.url, "sv2", *sets)  # asserts: 4 asked, 0 from the cache
    local = run(lama_dir, tmp_path, capsys, str(served), "local", "llm.answer=generate", "llm.prompt=lama",
                "llm.chat=off")
    assert after == local
    assert [r["generation"] for r in after] != [r["generation"] for r in before]


def test_transformers_serve_answers_a_sampled_request_greedily(server, chat_gpt2):
    """docs/generation.md: `transformers serve` takes a temperature without turning sampling on (gpt2's generation
    config does not sample), so a seed changes nothing either."""
    from lm.generation import GenerationParams
    from lm.served import ServedGenerator, ServerSettings

    gen = ServedGenerator(ServerSettings(server.url, str(chat_gpt2), api="completions"))
    prompt = ["Dante was born in"]
    greedy = gen.generate(prompt, GenerationParams(max_new_tokens=8))[0].text
    sampled = [gen.generate(prompt, GenerationParams(max_new_tokens=8, temperature=1.5, seed=seed))[0].text
               for seed in (1, 2, 3)]
    assert greedy.strip() and sampled == [greedy] * 3


def test_a_prompt_longer_than_the_context_and_a_wrong_model_name_say_the_fix(server, chat_gpt2):
    """`transformers serve` answers a prompt past gpt2's 256 positions with a bare HTTP 500, and a model name it is
    not pinned to with a 400."""
    from lm.generation import GenerationParams
    from lm.served import ServedGenerator, ServerError, ServerSettings

    params = GenerationParams(max_new_tokens=8)
    with pytest.raises(ServerError) as caught:
        ServedGenerator(ServerSettings(server.url, str(chat_gpt2), api="completions", retries=0)).generate(
            ["word " * 300], params)
    assert str(caught.value) == (
        f"{server.url}/completions: HTTP 500 (Internal Server Error); the server's log says why (a prompt and answer "
        "longer than the model's context are a common cause; this prompt is 1,500 characters: fewer shots, a shorter "
        "prompt or a smaller max_new_tokens)")
    with pytest.raises(ServerError) as caught:
        ServedGenerator(ServerSettings(server.url, "gpt-x", api="completions")).generate(["q"], params)
    assert str(caught.value) == (
        f"{server.url}/completions: HTTP 400 (Server is pinned to '{chat_gpt2}'; requested 'gpt-x'.); the server "
        f"lists no model gpt-x, it serves {chat_gpt2}: --set model=NAME")
