"""A generating predictor in the explorer: the exact prompt and the raw generation beside the parsed and linked
answers, live (side by side with the gold KB and Freq) and on a run's fact page, every text HTML-escaped."""

from __future__ import annotations

import html
import json

import pytest
import serve_support
from lm_fixtures import tiny_model_dir
from served_support import Scripted, completion

from eval.answer_text import parse_generation

SCRIPT = '<script>alert("x")</script>'
ASKED = "Allan Peiper"  # T-REx P19: born in Alexandra (Q2643563)


def reply(path: str, body: dict, n: int):
    """Alexandra (linked, gold) for Allan Peiper, then a hostile line; for anyone else a hostile first line."""
    asked = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
    first = "Alexandra" if ASKED in asked else SCRIPT
    return 200, completion(f"{first}\n{SCRIPT} & more", "chat" if "chat" in path else "completions")


@pytest.fixture(scope="module")
def world(lama_dir, tmp_path_factory):
    """A scripted server, the tiny GPT-2 asked by generate, an explorer over T-REx P19 and a finished run."""
    from fastapi.testclient import TestClient

    from bridge.run.runner import RunConfig, run_lama
    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.runs import Runs

    root = tmp_path_factory.mktemp("serve-gen")
    gpt2 = str(tiny_model_dir("gpt2", root / "gpt2"))
    server = Scripted(reply)
    predictors = ["freq", f"llm={gpt2}", f"srv={server.url}"]
    options = {"llm.answer": "generate", "llm.max_new_tokens": "5", "srv.model": "tiny"}
    out = root / "gen-run"
    run_lama(RunConfig(corpora=["trex"], predictors=predictors, out=out, data_dir=str(lama_dir), relations=["P19"],
                       limit=6, cache_dir=root / "run-cache", options=dict(options), bootstrap=50), progress=False)
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=predictors,
                                             options=dict(options), cache_dir=root / "cache"))
    app = create_app(explorer, Runs([out]))
    with TestClient(app) as client:
        yield {"client": client, "server": server, "gpt2": gpt2, "explorer": explorer, "app": app}
    explorer.close()
    server.close()


def shown(page: str) -> str:
    """The page with quotes as the escaped texts compare them (markupsafe also escapes quotes)."""
    return page.replace("&#34;", '"').replace("&#39;", "'")


def columns(body: dict) -> dict[str, dict]:
    return {c["name"]: c for c in body["columns"]}


def test_live_columns_show_the_prompt_sent_and_the_raw_generation(world):
    client, server = world["client"], world["server"]
    body = client.get("/api/query", params={"subject": ASKED, "relation": "P19"}).json()
    cols = columns(body)
    assert body["gold"] == ["Alexandra"]
    assert "generated" not in cols["freq"] and "generated" not in cols["gold KB"]
    srv = cols["srv"]
    sent = next(b for b in server.bodies if ASKED in b["messages"][-1]["content"])
    assert srv["generated"] == {"prompt": sent["messages"], "generation": f"Alexandra\n{SCRIPT} & more",
                                "parsed": ["Alexandra"], "unlinked": [], "abstained": False}
    assert srv["answers"] == [{"label": "Alexandra", "score": None, "id": "Q2643563", "gold": True}]
    assert srv["gold_rank"] is None and srv["scores"] == "none"

    from lm.generation import GenerationParams, LocalGenerator
    from lm.loading import load

    llm = cols["llm"]["generated"]
    loaded = load(world["gpt2"], "causal")
    gen = LocalGenerator(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, name="m", seq2seq=False)
    written = gen.generate([llm["prompt"]], GenerationParams(max_new_tokens=5))[llm["prompt"]].text
    assert isinstance(llm["prompt"], str) and ASKED in llm["prompt"]
    assert llm["generation"] == written
    assert llm["parsed"] == list(parse_generation(written, False).items)
    assert [a["label"] for a in cols["llm"]["answers"]] == llm["parsed"][:1]


def test_live_page_escapes_generations_prompts_and_unlinked_answers(world):
    client = world["client"]
    subject = next(s for s in world["explorer"].subjects if s != ASKED)
    page = shown(client.get("/", params={"subject": subject, "relation": "P19"}).text)
    assert SCRIPT not in page
    assert page.count(html.escape(SCRIPT, quote=False)) >= 3  # the answer, the generation, the unlinked item
    assert '<span class="unlinked">&lt;script&gt;' in page
    escaped = html.escape(SCRIPT, quote=False)
    assert f'<pre class="generation">{escaped}\n{escaped} &amp; more' in page
    assert html.escape(subject, quote=False) in page  # inside the prompt turns


def test_a_runs_fact_page_shows_each_generation_escaped(world):
    client = world["client"]
    run = client.get("/api/runs").json()["runs"][0]["name"]
    facts = client.get(f"/api/runs/{run}/facts", params={"per_page": 50}).json()["facts"]
    assert len(facts) == 6
    for f in facts:
        detail = client.get(f"/api/runs/{run}/facts/{f['uid']}").json()
        srv, llm = detail["predictors"]["srv"], detail["predictors"]["llm"]
        first = "Alexandra" if f["subject"] == ASKED else SCRIPT
        assert srv["generation"] == f"{first}\n{SCRIPT} & more" and srv["parsed"] == [first]
        assert f["predictors"]["srv"]["top1"] == first
        page = shown(client.get(f"/runs/{run}/facts/{f['uid']}").text)
        assert SCRIPT not in page
        for text in (llm["generation"], llm["prompt"], srv["generation"], *(m["content"] for m in srv["prompt"])):
            assert html.escape(text, quote=False) in page, text
        assert "exact match raw" in page and "generation" in detail["predictors"]["srv"]
        assert "generation" not in detail["predictors"]["freq"]


browser = serve_support.browser


def test_a_browser_shows_the_generation_as_text(world, browser):
    """Chromium renders the hostile generation as text: no script element is made of it."""
    with serve_support.served(world["app"]) as url:
        page = browser.new_page()
        page.goto(url + "/?" + f"subject={ASKED}&relation=P19".replace(" ", "+"))
        column = '.column[data-name="srv"]'
        assert page.text_content(f"{column} pre.generation") == f"Alexandra\n{SCRIPT} & more"
        assert page.text_content(f"{column} li .label") == "Alexandra"
        assert page.eval_on_selector_all("main script", "els => els.length") == 0
        page.click(f"{column} details.prompt summary")
        assert ASKED in page.inner_text(f"{column} details.prompt")
        page.close()


def test_a_run_page_of_a_generating_predictor_leads_with_exact_match(world, lama_dir, tmp_path):
    """A run whose only predictor answered by generation has no P@k or MRR: the run page shows its exact match,
    abstention and unlinked rates instead, and says why in summary.md's words."""
    from fastapi.testclient import TestClient

    from bridge.run.runner import RunConfig, run_lama
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    out = tmp_path / "written"
    run_lama(RunConfig(corpora=["trex"], predictors=[f"srv={world['server'].url}"], out=out, data_dir=str(lama_dir),
                       relations=["P19"], limit=3, cache_dir=tmp_path / "cache", options={"srv.model": "tiny"},
                       bootstrap=0), progress=False)
    why = ("trex: P@k and MRR are not applicable to srv (answers written by generation, no ranking); see exact "
           "match, abstention and unlinked rates.")
    assert f"- {why}" in (out / "summary.md").read_text()
    with TestClient(create_app(world["explorer"], Runs([out]))) as c:
        body = c.get("/api/runs/written").json()
        page = shown(c.get("/runs/written").text)
    assert body["notes"] == [why]
    assert f'<p class="note" id="scope-note-1">{html.escape(why, quote=False)}</p>' in page
    assert (body["metric"], body["extra_metrics"]) == ("em", ["abstain", "unlinked"])
    rows = {(r["scope"], r["metric"]): r for r in json.loads((out / "summary.json").read_text())
            if r["group"] == "all" and r["setting"] == "raw"}
    row = body["table"][0]
    assert (row["em"]["all"], row["abstain"], row["unlinked"], row["facts"]) == (
        rows[("own", "em")]["value"], rows[("own", "abstain")]["value"], rows[("own", "unlinked")]["value"], 3)
    assert (row["shared"]["value"], row["shared"]["facts"]) == (rows[("shared", "em")]["value"], 3)
    assert "p@10" not in row and "<th>EM all <small>own</small></th>" in page


def test_the_coherency_round_trip_of_a_generating_predictor_shows_both_prompts_and_generations(world, lama_dir,
                                                                                               tmp_path):
    """Asked there and back by generation: the box shows each way's exact prompt and raw generation, escaped."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.explorer import Explorer, ExplorerConfig

    server = world["server"]
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"],
                                             predictors=[f"srv={server.url}"], options={"srv.model": "tiny"},
                                             cache_dir=tmp_path / "cache", coherency="srv"))
    try:
        with TestClient(create_app(explorer)) as c:
            co = c.get("/api/query", params={"subject": ASKED, "relation": "P19"}).json()["coherency"]
            page = shown(c.get("/", params={"subject": ASKED, "relation": "P19"}).text)
    finally:
        explorer.close()
    there, back = co["generated"], co["generated_back"]
    sent = [b["messages"] for b in server.bodies if b.get("messages") and ASKED in b["messages"][-1]["content"]]
    assert there["prompt"] == sent[-1] and there["generation"] == f"Alexandra\n{SCRIPT} & more"
    assert co["object"]["label"] == "Alexandra" and co["subject_back"] == SCRIPT
    assert "Alexandra" in back["prompt"][-1]["content"] and back["generation"] == f"{SCRIPT}\n{SCRIPT} & more"
    assert SCRIPT not in page
    escaped = html.escape(SCRIPT, quote=False)
    box = page.split('data-side="coherency"', 1)[1]
    assert '<div class="way" id="coherency-there">' in box and '<div class="way" id="coherency-back">' in box
    assert f'<pre class="generation">Alexandra\n{escaped} &amp; more</pre>' in box.split('id="coherency-back"')[0]
    assert f'<pre class="generation">{escaped}\n{escaped} &amp; more</pre>' in box.split('id="coherency-back"')[1]
    assert html.escape(ASKED, quote=False) in box.split('id="coherency-back"')[0]  # the prompt sent there


def test_a_run_page_says_why_a_relation_type_is_dash_for_one_corpus(world, lama_dir, tmp_path, capsys, monkeypatch):
    """T-REx P36 is 1-1, Google-RE has no 1-1 relation: its rows' 1-1 column is `-`, and the page says why."""
    from cli_support import run_kbc
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "two"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "google_re", "--predictors", "freq", "--limit", "3",
                            "--relations", "P19", "P36", "place_of_birth", "--data-dir", str(lama_dir), "--out",
                            str(out), "--quiet"], capsys)
    assert code == 0, err
    with TestClient(create_app(world["explorer"], Runs([out]))) as c:
        body = c.get("/api/runs/two").json()
    assert body["groups"] == ["all", "1-1", "N-1"]
    assert [r["p@1"]["1-1"] is None for r in body["table"]] == [False, True]
    assert body["notes"] == ["google_re: `-` under P@1 1-1 own for every predictor: no relation of google_re is in "
                             "that group"]


def test_the_live_view_shows_a_server_urls_query_values_as_stars(lama_dir, tmp_path):
    """A query parameter's value (a key, say) shows as `***` on the page and in its JSON, as a run's files show it."""
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.sides import Ask, answer

    server = Scripted(reply)
    spec = f"{server.url}?tenant=hunter9&api-version=2024"
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P19"], predictors=[f"srv={spec}"],
                                             options={"srv.model": "tiny"}, cache_dir=tmp_path / "cache"))
    try:
        described = json.dumps(explorer.describe())
        body = json.dumps(answer(explorer, Ask(ASKED, "P19")))
    finally:
        explorer.close()
        server.close()
    assert f"{server.url}?tenant=***&api-version=2024" in described
    assert "hunter9" not in described and "hunter9" not in body
    assert [b["model"] for b in server.bodies] == ["tiny"]


def test_a_runs_fact_list_shows_each_predictors_own_prompt(world):
    """The cloze for Freq, the question sent for the generating predictors: what each record holds."""
    client = world["client"]
    facts = client.get("/api/runs/gen-run/facts", params={"per_page": 50}).json()["facts"]
    assert len(facts) == 6
    for fact in facts:
        subject = fact["subject"]
        detail = client.get(f"/api/runs/gen-run/facts/{fact['uid']}").json()["predictors"]
        prompts = {p: v["prompt"] for p, v in fact["predictors"].items()}
        assert prompts["freq"] == fact["prompt"] == f"{subject} was born in [MASK] ."
        assert prompts["llm"] == detail["llm"]["prompt"] == f"Q: Fill in the blank: {subject} was born in ___.\nA:"
        assert json.loads(prompts["srv"]) == detail["srv"]["prompt"] == [
            {"role": "user", "content": f"Fill in the blank: {subject} was born in ___."}]  # the chat messages sent


def test_a_runs_pages_say_what_the_run_asked_and_the_live_page_what_it_asks(world):
    client = world["client"]
    header = '<span class="meta" id="asked">'
    uid = client.get("/api/runs/gen-run/facts").json()["facts"][0]["uid"]
    for path in ("/runs/gen-run", f"/runs/gen-run/facts/{uid}"):
        assert f"{header}run gen-run: kbc run lama, trex: 1 relation, a sample (--limit 6, seed 0)</span>" in \
            client.get(path).text, path
    facts = len(world["explorer"].corpus.facts)
    assert f"{header}trex: 1 relation, {facts} facts</span>" in client.get("/").text


def test_the_header_of_a_bear_or_coherency_run_names_its_corpus_and_relations():
    from types import SimpleNamespace

    from bridge.serve.runs import asked_line

    def loaded(experiment: str, corpora: list[str], attempts: list[dict]):
        return SimpleNamespace(run=SimpleNamespace(corpora=corpora, config={"experiment": experiment,
                                                                            "runs": attempts}))

    bear = loaded("lama", ["bear"], [{"asked": {"bear": ["P6", "P19"]}, "limit": 20, "seed": 0},
                                     {"asked": {"bear": ["P19", "P20"]}, "limit": 20, "seed": 0}])
    assert asked_line(bear) == "kbc run lama, bear: 3 relations, a sample (--limit 20, seed 0)"
    coherency = loaded("coherency", ["trex", "google_re"], [{"asked": {"trex": ["P36"]}}])
    assert asked_line(coherency) == "kbc run coherency, trex: 1 relation, google_re"
