"""A browsed run made from other data than the explorer reads is said so on its page, its fact pages and the live
view reached from them, by the data versions `kbc run` records and checks on a rerun."""

from __future__ import annotations

import json

import pytest
import serve_support

serve_explorer = serve_support.serve_explorer
serve_run = serve_support.serve_run


@pytest.fixture(scope="module")
def edited_run(lama_dir, tmp_path_factory):
    """A Freq run over a copy of T-REx P19 whose first fact (Allan Peiper) was born in London, not Alexandra."""
    from bridge.run.runner import RunConfig, run_lama

    root = tmp_path_factory.mktemp("other-data")
    data = root / "lama"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text((lama_dir / "relations.jsonl").read_text(encoding="utf-8"),
                                          encoding="utf-8")
    lines = (lama_dir / "TREx" / "P19.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert first["sub_label"] == "Allan Peiper" and first["obj_label"] == "Alexandra"
    lines[0] = json.dumps({**first, "obj_label": "London", "obj_uri": "Q84"})
    (data / "TREx" / "P19.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "edited"
    run_lama(RunConfig(corpora=["trex"], predictors=["freq"], out=out, data_dir=str(data), relations=["P19"],
                       limit=5, cache_dir=root / "cache"), progress=False)
    return out


@pytest.fixture(scope="module")
def client(serve_explorer, serve_run, edited_run):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    with TestClient(create_app(serve_explorer, Runs([serve_run, edited_run]))) as c:
        yield c


def _message(serve_explorer) -> str:
    return (f"run edited was made from other trex data than the live view reads ({serve_explorer.data_dir}): it "
            "holds results of other data for P19 (the data files changed); there the live gold and answers are not "
            "what the run recorded")


def test_run_page_and_api_say_the_run_was_made_from_other_data(client, serve_explorer):
    body = client.get("/api/runs/edited").json()
    assert body["other_data"] == {"corpus": "trex", "relations": ["P19"], "message": _message(serve_explorer)}
    page = client.get("/runs/edited").text
    assert f'<p class="note" id="other-data">{_message(serve_explorer)}</p>' in page
    assert '/?subject=' in page and '&amp;run=edited"' in page  # each subject opens the live view for this run
    # a run of the data served says nothing
    assert client.get("/api/runs/lama-small").json()["other_data"] is None
    assert 'id="other-data"' not in client.get("/runs/lama-small").text


def test_fact_page_and_live_view_reached_from_it_say_so(client, serve_explorer):
    uid = client.get("/api/runs/edited/facts").json()["facts"][0]["uid"]
    fact = client.get(f"/api/runs/edited/facts/{uid}").json()
    assert fact["relation"] == "P19" and fact["other_data"]["relations"] == ["P19"]
    page = client.get(f"/runs/edited/facts/{uid}").text
    assert f'<p class="note" id="other-data">{_message(serve_explorer)}</p>' in page
    assert 'relation=P19&amp;run=edited">ask it live' in page
    live = client.get("/api/query", params={"subject": "Allan Peiper", "relation": "P19", "run": "edited"}).json()
    assert live["gold"] == ["Alexandra"]
    assert live["run"] == {"name": "edited", "other_data": {"corpus": "trex", "relations": ["P19"],
                                                            "message": _message(serve_explorer)},
                           "prompts": None}
    html = client.get("/", params={"subject": "Allan Peiper", "relation": "P19", "run": "edited"}).text
    assert f'<p class="note" id="other-data">{_message(serve_explorer)}</p>' in html
    assert '<input type="hidden" name="run" value="edited">' in html
    # another relation, a run of the data served, or no run: nothing to say
    other = client.get("/api/query", params={"subject": "France", "relation": "P36", "run": "edited"}).json()
    assert other["run"] == {"name": "edited", "other_data": None, "prompts": None}
    same = client.get("/api/query", params={"subject": "Allan Peiper", "relation": "P19", "run": "lama-small"})
    assert same.json()["run"] == {"name": "lama-small", "other_data": None, "prompts": None}
    plain = client.get("/api/query", params={"subject": "Allan Peiper", "relation": "P19"}).json()
    assert "run" not in plain
    assert 'id="other-data"' not in client.get("/", params={"subject": "Allan Peiper", "relation": "P19"}).text
    missing = client.get("/api/query", params={"subject": "Allan Peiper", "relation": "P19", "run": "nope"})
    assert missing.status_code == 404 and missing.json() == {"detail": "no run 'nope' (known: lama-small, edited)"}


def test_versions_follow_the_runs_compat(serve_explorer, lama_dir):
    """Under `--compat lama` a run records the versions of the facts left after label deduplication: the live
    versions it is compared with are those."""
    from eval.compat import lama_dedup
    from eval.corpora import load_corpus
    from eval.lama import relation_versions

    corpus = load_corpus("trex", lama_dir, ["P19", "P36"])
    plain = relation_versions(corpus)
    corpus.facts, removed = lama_dedup(corpus.facts)
    assert removed == {"P36": 2}
    assert serve_explorer.data_versions(None) == plain
    deduplicated = relation_versions(corpus)
    assert deduplicated["P19"] == plain["P19"] and deduplicated["P36"] != plain["P36"]
    assert serve_explorer.data_versions("lama") == deduplicated


def test_a_negated_run_is_compared_with_the_sentences_of_its_misprimes_files(shared_data, tmp_path, monkeypatch,
                                                                              capsys):
    """A negated run's data versions cover the sentences of its `--misprimes` files: the live view over the same
    files finds it made from this data, and from other data once one of those files is edited."""
    import shutil

    from cli_support import run_kbc

    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs, other_data

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "lama").symlink_to(shared_data / "lama")
    copy = tmp_path / "negated_misprimed_lama" / "TREx"
    for variant in ("random", "high_ranked"):
        shutil.copytree(shared_data / "negated_misprimed_lama" / "TREx" / variant, copy / variant)
    out = tmp_path / "neg"
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--relations", "P19", "--predictors", "freq",
                            "--misprimes", "high_ranked", "--limit", "5", "--data-dir", str(tmp_path / "lama"),
                            "--out", str(out), "--quiet"], capsys)
    assert code == 0, err

    def live_other_data():
        explorer = Explorer.start(ExplorerConfig(data_dir=str(tmp_path / "lama"), corpus="negated-trex",
                                                 relations=["P19"], predictors=["freq"], cache_dir=tmp_path / "cache"))
        try:
            return other_data(Runs([out]).get("neg"), explorer)
        finally:
            explorer.close()

    assert live_other_data() is None
    path = copy / "high_ranked" / "P19.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("Christina Rossetti was not born in",
                                                             "Christina Rossetti was never born in"), encoding="utf-8")
    assert live_other_data()["message"] == (
        f"run neg was made from other negated-trex data than the live view reads ({tmp_path / 'lama'}): it holds "
        "results of other data for P19 (the data files changed); there the live gold and answers are not what the "
        "run recorded")
