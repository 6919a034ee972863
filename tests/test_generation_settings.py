"""A generating predictor's settings: one default for local and served models, every setting as applied recorded
in config.json (and told apart by `kbc compare --b-run` and the leaderboard), runs recorded by an earlier kbc
version resumed under the settings they were made with, and a server's URL read alike with or without its trailing
slash."""

from __future__ import annotations

import json

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_model_dir
from served_support import Scripted, completion

GENERATING = {"chat": "auto", "max_new_tokens": "64", "prompt": "question", "seed": "0", "shots": "0",
              "shots_seed": "0", "temperature": "0", "top_p": "1"}


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return tiny_model_dir("gpt2", tmp_path_factory.mktemp("gpt2"))


@pytest.fixture
def server():
    started = Scripted(lambda path, body, n: (200, completion("Paris", "chat" if "chat" in path else "c")))
    yield started
    started.close()


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))


def args(spec: str, lama_dir, out, *extra: str, limit: int = 2) -> list[str]:
    return ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors", f"llm={spec}",
            *extra, "--limit", str(limit), "--data-dir", str(lama_dir), "--out", str(out), "--quiet",
            "--bootstrap", "20"]


def config(out) -> dict:
    return json.loads((out / "config.json").read_text())


def test_a_local_and_a_served_model_write_as_many_tokens_by_default_and_the_run_records_every_setting(
        gpt2_dir, server, lama_dir, tmp_path, capsys):
    local, served = tmp_path / "local", tmp_path / "served"
    code, _, err = run_kbc(args(str(gpt2_dir), lama_dir, local, "--set", "llm.answer=generate"), capsys)
    assert code == 0, err
    code, _, err = run_kbc(args(server.url, lama_dir, served, "--set", "llm.model=tiny"), capsys)
    assert code == 0, err
    assert {body["max_tokens"] for body in server.bodies} == {64}
    assert config(local)["predictor_configs"]["google_re"]["llm"]["max_new_tokens"] == 64
    assert config(local)["predictor_specs"]["llm"]["options"] == {"answer": "generate", "beams": "1", **GENERATING}
    assert config(served)["predictor_specs"]["llm"]["options"] == {"api": "chat", "model": "tiny", **GENERATING}
    code, text, _ = run_kbc(["ls", str(gpt2_dir)], capsys)
    assert ".max_new_tokens=INT: answer=generate: longest text written, in tokens (default 64)\n" in text


def test_a_local_run_recorded_before_the_settings_were_resumes_under_its_own_max_new_tokens(gpt2_dir, lama_dir,
                                                                                            tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_kbc(args(str(gpt2_dir), lama_dir, out, "--set", "llm.answer=generate", "--set",
                                "llm.max_new_tokens=32", limit=1), capsys)
    assert code == 0, err
    written = config(out)
    written["predictor_specs"]["llm"]["options"] = {"answer": "generate"}  # as an earlier kbc version recorded it
    (out / "config.json").write_text(json.dumps(written))
    # today's default is not the one its answers were written with: named, with the fix
    code, _, err = run_kbc(args(str(gpt2_dir), lama_dir, out, "--set", "llm.answer=generate"), capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        f"error: {out}: predictor 'llm' wrote its answers there with max_new_tokens=32, the default of an earlier kbc "
        "version (now 64); add --set llm.max_new_tokens=32 to resume it, or use another --out")
    code, _, err = run_kbc(args(str(gpt2_dir), lama_dir, out, "--set", "llm.answer=generate", "--set",
                                "llm.max_new_tokens=32"), capsys)
    assert code == 0, err
    assert config(out)["predictor_specs"]["llm"]["options"] == {"answer": "generate", "beams": "1", **GENERATING,
                                                                 "max_new_tokens": "32"}
    assert len((out / "predictions" / "google_re" / "llm" / "place_of_birth.jsonl").read_text().splitlines()) == 2
    # another setting than the old default is refused as before
    code, _, err = run_kbc(args(str(gpt2_dir), lama_dir, out, "--set", "llm.answer=generate", "--set",
                                "llm.max_new_tokens=32", "--set", "llm.shots=1"), capsys)
    assert code == 2 and "predictor 'llm' was run with options.shots 0, now 1;" in err, err


def test_a_served_run_recorded_before_the_settings_were_resumes_as_it_is(server, lama_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_kbc(args(server.url, lama_dir, out, "--set", "llm.model=tiny", limit=1), capsys)[0] == 0
    written = config(out)
    written["predictor_specs"]["llm"]["options"] = {"model": "tiny"}  # a server's default was 64 then too
    (out / "config.json").write_text(json.dumps(written))
    code, _, err = run_kbc(args(server.url, lama_dir, out, "--set", "llm.model=tiny"), capsys)
    assert code == 0, err
    assert config(out)["predictor_specs"]["llm"]["options"] == {"api": "chat", "model": "tiny", **GENERATING}


def test_compare_and_the_leaderboard_tell_two_runs_of_one_served_model_apart_by_their_api(server, lama_dir, tmp_path,
                                                                                        capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_kbc(args(server.url, lama_dir, a, "--set", "llm.model=tiny"), capsys)[0] == 0
    code, _, err = run_kbc(args(server.url, lama_dir, b, "--set", "llm.model=tiny", "--set", "llm.api=completions",
                                "--set", "llm.temperature=0.5"), capsys)
    assert code == 0, err
    code, table, err = run_kbc(["compare", str(a), "llm", "llm", "--b-run", str(b)], capsys)
    assert code == 0, err
    assert [line for line in table.splitlines() if line.startswith("note: A and B differ")] == [
        "note: A and B differ in chat: on against off", "note: A and B differ in temperature: 0 against 0.5",
        "note: A and B differ in api: chat against completions"]
    code, board, err = run_kbc(["leaderboard", str(a), str(b), "--metric", "em", "--sort", "run"], capsys)
    assert code == 0, err
    assert [line.split(" | ")[4] for line in board.splitlines() if line.startswith("| 1 |")] == [
        f"tiny at {server.url} (chat=on, temperature=0, api=chat)",
        f"tiny at {server.url} (chat=off, temperature=0.5, api=completions)"]


def test_a_server_url_with_and_without_its_trailing_slash_is_one_predictor(server, lama_dir, tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_kbc(args(server.url + "/", lama_dir, out, "--set", "llm.model=tiny", limit=1), capsys)
    assert code == 0, err
    assert config(out)["predictor_specs"]["llm"]["spec"] == server.url
    code, _, err = run_kbc(args(server.url, lama_dir, out, "--set", "llm.model=tiny"), capsys)
    assert code == 0, err
    # a run recorded with the slash (an earlier kbc version wrote the URL as given) resumes without it
    written = config(out)
    written["predictor_specs"]["llm"]["spec"] = server.url + "/"
    (out / "config.json").write_text(json.dumps(written))
    code, _, err = run_kbc(args(server.url + "/chat/completions", lama_dir, out, "--set", "llm.model=tiny",
                                limit=3), capsys)
    assert code == 0, err
    assert config(out)["predictor_specs"]["llm"]["spec"] == server.url


@pytest.mark.parametrize(("value", "sequences"), [
    (".|\\n", (".", "\n")), ("a\\|b|c", ("a|b", "c")), ("\\\\|x", ("\\", "x")), ("\\t", ("\t",)), ("|", ("", "")),
    ("Antwort:|Ende", ("Antwort:", "Ende"))])
def test_stop_sequences_split_at_each_bar_but_an_escaped_one(value, sequences):
    from bridge.predictors.generation import stop_sequences

    assert stop_sequences(value) == sequences


def test_a_stop_sequence_holding_a_bar_reaches_the_server_and_a_broken_escape_is_one_error_line(server, lama_dir,
                                                                                              tmp_path, capsys):
    code, _, err = run_kbc(args(server.url, lama_dir, tmp_path / "run", "--set", "llm.model=tiny", "--set",
                                "llm.stop=A\\|B|\\n", limit=1), capsys)
    assert code == 0, err
    assert [body["stop"] for body in server.bodies] == [["A|B", "\n"]]
    code, _, err = run_kbc(args(server.url, lama_dir, tmp_path / "other", "--set", "llm.model=tiny", "--set",
                                "llm.stop=end\\"), capsys)
    assert (code, err.splitlines()[-1]) == (2, "error: --set llm.stop=end\\: \\ at end of string (write a backslash "
                                               "as \\\\, a | within a stop sequence as \\|)"), err
