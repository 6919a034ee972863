"""`kbc serve`'s JSON API: every side's answers to one query, the run browser, and bad input as 4xx."""

from __future__ import annotations

import json
import math
from collections import Counter

import pandas as pd
import pytest
import serve_support

from eval.corpora import load_corpus

# the session fixtures shared by the explorer tests
client = serve_support.client
serve_app = serve_support.serve_app
serve_explorer = serve_support.serve_explorer
serve_run = serve_support.serve_run
RELATIONS = serve_support.RELATIONS


@pytest.fixture(scope="module")
def p19(lama_dir):
    return [f for f in load_corpus("trex", lama_dir, ["P19"]).facts]


def _unique_subject(facts):
    counts = Counter(f.subject.label for f in facts)
    return next(f for f in facts if counts[f.subject.label] == 1)


def _col(body: dict, name: str) -> dict:
    return next(c for c in body["columns"] if c["name"] == name)


def test_query_gold_freq_and_lm_side_by_side(client, p19):
    fact = _unique_subject(p19)
    r = client.get("/api/query", params={"subject": fact.subject.label, "relation": "P19", "k": 5})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["query"]["prompt"] == f"{fact.subject.label} was born in [MASK] ."
    assert body["subject"]["ids"] == [fact.subject.id]
    gold = _col(body, "gold KB")
    assert gold["status"] == "ok" and gold["graph"] == "gold-trex-P19"
    assert [(a["label"], a["id"], a["gold"]) for a in gold["answers"]] == [(fact.object.label, fact.object.id, True)]
    assert body["gold"] == [fact.object.label]
    # every column carries its gold rank: the gold KB's objects are all true, so its gold object is at rank 1
    assert gold["gold_rank"] == {"rank": 1, "exact": False, "of": 1}
    assert all("gold_rank" in c for c in body["columns"])
    counts = Counter(f.object.label for f in p19)
    freq = _col(body, "freq")
    assert [a["label"] for a in freq["answers"]] == [label for label, _ in counts.most_common(5)]
    assert freq["answers"][0]["score"] == counts.most_common(1)[0][1]
    assert all(a["gold"] == (a["label"] == fact.object.label) for a in freq["answers"])
    bert = _col(body, "bert")
    assert bert["status"] == "ok" and bert["side"] == "lm" and len(bert["answers"]) == 5
    probs = [a["probability"] for a in bert["answers"]]
    assert all(0 < p <= 1 for p in probs) and probs == sorted(probs, reverse=True)
    assert math.isclose(probs[0], math.exp(bert["answers"][0]["score"]))


def test_same_answers_as_a_run_records(client, serve_run):
    """The page asks the predictors `kbc run` asks: the tiny BERT's top answers equal the run's records."""
    frame = pd.read_parquet(serve_run / "instances.parquet")
    row = frame[(frame["predictor"] == "bert") & frame["dropped"].isna()].iloc[0]
    subjects = frame[frame["relation"] == row["relation"]]["subject"]
    if (subjects == row["subject"]).sum() > 3:  # the run asked it once per predictor
        pytest.skip("subject label shared by several facts")
    body = client.get("/api/query", params={"subject": row["subject"], "relation": row["relation"], "k": 3}).json()
    recorded = [a[0] for a in json.loads(row["answers"])[:3]]
    assert [a["label"] for a in _col(body, "bert")["answers"]] == recorded


def test_unconfigured_sides_say_so(client, p19):
    body = client.get("/api/query", params={"subject": p19[0].subject.label, "relation": "P19"}).json()
    inferred = _col(body, "inferred graph")
    assert inferred["status"] == "not configured" and "kbc kb infer" in inferred["message"]
    assert body["evidence"]["status"] == "not configured" and "--text-index" in body["evidence"]["message"]
    co = body["coherency"]
    assert co["status"] == "ok" and co["name"] == "freq"
    assert co["object"]["label"] == Counter(f.object.label for f in p19).most_common(1)[0][0]
    assert isinstance(co["round_trip"], bool)


def test_cloze_asks_only_the_lms(client):
    body = client.get("/api/query", params={"cloze": "Dante was born in [MASK] .", "k": 4}).json()
    assert body["query"]["prompt"] == "Dante was born in [MASK] ."
    assert _col(body, "gold KB")["status"] == "not applicable"
    assert _col(body, "freq")["status"] == "not applicable"
    assert _col(body, "bert")["status"] == "ok" and len(_col(body, "bert")["answers"]) == 4


def test_unknown_subject_gives_empty_gold_not_an_error(client):
    body = client.get("/api/query", params={"subject": "Nobody Anywhere 12345", "relation": "P36"}).json()
    gold = _col(body, "gold KB")
    assert gold["status"] == "ok" and gold["answers"] == [] and "no object" in gold["message"]
    assert gold["gold_rank"] is None  # no gold object to rank


@pytest.mark.parametrize("params,status,needle", [
    ({"subject": "Dante", "relation": "P999"}, 400, "unknown relation 'P999'"),
    ({"subject": "Dante", "relation": "P1"}, 400, "unknown relation"),
    ({"subject": "   ", "relation": "P19"}, 400, "empty subject"),
    ({"subject": "Dante"}, 400, "no relation"),
    ({"cloze": "Dante was born in Florence ."}, 400, "exactly one [MASK]"),
    ({"cloze": "[MASK] was born in [MASK] ."}, 400, "exactly one [MASK]"),
    ({"subject": "Dante", "relation": "P19", "k": 0}, 400, "k=0"),
    ({"subject": "Dante", "relation": "P19", "k": 101}, 400, "k=101"),
    ({"subject": "Dante", "relation": "P19", "k": "ten"}, 422, "k:"),
    ({"subject": "Dante", "relation": "P19", "k": " 3"}, 422, "k: Value error, not a whole number: ' 3'"),
    ({"subject": "Dante", "relation": "P19", "k": "1_0"}, 422, "k: Value error, not a whole number: '1_0'"),
    ({"subject": "Dante", "relation": "P19", "k": "+3"}, 422, "k: Value error, not a whole number: '+3'"),
])
def test_bad_query_is_4xx_with_a_message(client, params, status, needle):
    r = client.get("/api/query", params=params)
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and needle in detail


def test_suggestions_come_from_the_store_labels(client, p19):
    label = _unique_subject(p19).subject.label
    r = client.get("/api/suggest", params={"prefix": label[:4].lower()})
    labels = r.json()["labels"]
    assert r.status_code == 200 and 0 < len(labels) <= 10
    assert all(x.lower().startswith(label[:4].lower()) for x in labels)
    assert label in client.get("/api/suggest", params={"prefix": label}).json()["labels"]
    assert client.get("/api/suggest", params={"prefix": ""}).json()["labels"] == []
    assert client.get("/api/suggest", params={"prefix": "a", "limit": 0}).status_code == 400


def test_relations_status_and_openapi(client):
    rels = client.get("/api/relations").json()["relations"]
    assert [r["id"] for r in rels] == RELATIONS and rels[0]["template"] == "[X] was born in [Y] ."
    status = client.get("/api/status").json()
    assert [p["name"] for p in status["predictors"]] == ["freq", "bert"] and status["runs"] == ["lama-small"]
    schema = client.get("/openapi.json").json()
    assert {"/api/query", "/api/runs", "/api/runs/{name}", "/api/runs/{name}/facts"} <= set(schema["paths"])


def test_page_renders_the_same_answers(client, p19):
    fact = _unique_subject(p19)
    r = client.get("/", params={"subject": fact.subject.label, "relation": "P19", "k": 3})
    assert r.status_code == 200 and 'data-name="gold KB"' in r.text and fact.object.label in r.text
    bad = client.get("/", params={"subject": "Dante", "relation": "P999"})
    assert bad.status_code == 400 and "unknown relation" in bad.text
    assert client.get("/").status_code == 200


# --- the run browser -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def instances(serve_run):
    return pd.read_parquet(serve_run / "instances.parquet")


def test_run_overview(client, instances):
    body = client.get("/api/runs/lama-small").json()
    assert body["predictors"] == ["freq", "gold", "bert"]
    assert body["sides"] == {"freq": "kb", "gold": "kb", "bert": "lm"} and body["default_pair"] == ["freq", "bert"]
    assert body["relations"] == RELATIONS
    assert {r["group"] for r in body["per_relation"]} == set(RELATIONS)
    p1 = {(r["predictor"], r["group"]): r["value"] for r in body["per_relation"] if r["metric"] == "p@1"}
    for (pred, rel), value in p1.items():
        facts = instances[(instances["predictor"] == pred) & (instances["relation"] == rel)]
        assert value == pytest.approx(100 * facts["correct_raw"].fillna(False).mean())
    assert {(r["predictor"], r["group"]) for r in body["summary"] if r["metric"] == "p@1"} >= {
        ("freq", "all"), ("gold", "all"), ("bert", "all")}
    per_rel = {r["relation"]: r["p@1"] for r in body["relation_table"]}
    assert set(per_rel) == set(RELATIONS)
    for row in body["table"]:  # P@1 over all facts is the macro average over relations
        mean = sum(per_rel[rel][row["predictor"]] for rel in RELATIONS) / len(RELATIONS)
        assert row["p@1"]["all"] == pytest.approx(mean)
    assert {r["predictor"]: r["p@1"]["all"] for r in body["table"]}["gold"] == pytest.approx(100)
    listing = client.get("/api/runs").json()["runs"]
    assert [r["name"] for r in listing] == ["lama-small"]


def test_run_facts_paginate_and_filter(client, instances):
    uids = instances["uid"].nunique()
    page1 = client.get("/api/runs/lama-small/facts", params={"per_page": 25}).json()
    assert page1["total"] == uids and page1["pages"] == -(-uids // 25) and len(page1["facts"]) == 25
    last = client.get("/api/runs/lama-small/facts", params={"per_page": 25, "page": page1["pages"]}).json()
    assert len(last["facts"]) == uids - 25 * (page1["pages"] - 1)
    seen = {f["uid"] for p in range(1, page1["pages"] + 1)
            for f in client.get("/api/runs/lama-small/facts", params={"per_page": 25, "page": p}).json()["facts"]}
    assert len(seen) == uids
    p36 = client.get("/api/runs/lama-small/facts", params={"relation": "P36", "per_page": 500}).json()
    assert p36["total"] == instances[instances["relation"] == "P36"]["uid"].nunique()
    assert {f["relation"] for f in p36["facts"]} == {"P36"}
    right = instances.pivot_table(index="uid", columns="predictor", values="correct_raw", aggfunc="first")
    for outcome, a_ok, b_ok in (("a-right-b-wrong", True, False), ("b-right-a-wrong", False, True),
                                ("both-wrong", False, False)):
        body = client.get("/api/runs/lama-small/facts", params={"outcome": outcome, "a": "gold", "b": "bert",
                                                                 "per_page": 500}).json()
        expected = right[(right["gold"] == a_ok) & (right["bert"] == b_ok)]
        assert body["total"] == len(expected)
        assert all(f["predictors"]["gold"]["correct"] is a_ok and f["predictors"]["bert"]["correct"] is b_ok
                   for f in body["facts"])
    assert client.get("/api/runs/lama-small/facts", params={"outcome": "a-right-b-wrong", "a": "gold",
                                                           "b": "bert"}).json()["total"] > 0


def test_run_fact_detail(client, instances):
    row = instances[(instances["predictor"] == "freq")].iloc[0]
    body = client.get(f"/api/runs/lama-small/facts/{row['uid']}").json()
    assert (body["uid"], body["relation"], body["gold"]) == (row["uid"], row["relation"], row["gold"])
    assert body["predictors"]["freq"]["answers"][0]["label"] == row["top1"]
    page = client.get(f"/runs/lama-small/facts/{row['uid']}")
    assert page.status_code == 200 and "ask it live" in page.text


def test_fact_page_shows_the_exact_rank_of_a_gold_outside_the_saved_answers(client, instances):
    """An LM ranks every candidate: a gold below its saved top 10 still has a rank, which the page says as
    `kbc show` does, not "-"."""
    bert = instances[(instances["predictor"] == "bert") & instances["rank_raw"].isna()
                     & instances["rank_exact_raw"].notna()]
    row = bert.iloc[0]
    exact_raw, exact_filtered = int(row["rank_exact_raw"]), int(row["rank_exact_filtered"])
    assert exact_raw > 10
    page = client.get(f"/runs/lama-small/facts/{row['uid']}").text
    bert_column = page.split("<h3>bert</h3>")[1].split("</div>")[0]
    assert (f"gold not among the answers; exact raw {exact_raw}, filtered {exact_filtered}"
            in bert_column), bert_column


@pytest.mark.parametrize("url,status,needle", [
    ("/api/runs/nope", 404, "no run 'nope'"),
    ("/api/runs/nope/facts", 404, "no run 'nope'"),
    ("/api/runs/lama-small/facts/not-a-uid", 404, "no fact with uid"),
    ("/api/runs/lama-small/facts?outcome=kb-wins", 400, "outcome="),
    ("/api/runs/lama-small/facts?page=0", 400, "page=0"),
    ("/api/runs/lama-small/facts?page=999", 400, "page=999: past the last page"),
    ("/api/runs/lama-small/facts?relation=P36&per_page=500&page=2", 400, "fill 1 page of 500"),
    ("/api/runs/lama-small/facts?per_page=100000", 400, "per_page="),
    ("/api/runs/lama-small/facts?per_page=1_0", 422, "per_page: Value error, not a whole number: '1_0'"),
    ("/api/runs/lama-small/facts?relation=P999", 400, "no relation 'P999'"),
    ("/api/runs/lama-small/facts?a=nobody", 400, "no predictor 'nobody'"),
    ("/api/runs/lama-small?setting=both", 400, "setting="),
])
def test_run_bad_input_is_4xx(client, url, status, needle):
    r = client.get(url)
    assert r.status_code == status, r.text
    assert needle in r.json()["detail"]


@pytest.mark.parametrize("url,message", [
    ("/runs/lama-small?page=%203", "page: Value error, not a whole number: &#39; 3&#39;"),
    ("/?subject=Dante&relation=P19&k=ten", "k: Value error, not a whole number: &#39;ten&#39;"),
])
def test_pages_answer_a_malformed_number_with_an_html_422(client, url, message):
    """An edited URL a page cannot read answers with a page holding the message, as the API answers with JSON."""
    r = client.get(url)
    assert (r.status_code, r.headers["content-type"]) == (422, "text/html; charset=utf-8")
    assert f'<p class="error" id="error">{message}</p>' in r.text


@pytest.mark.parametrize("url,message", [
    ("/runs/nope", "no run &#39;nope&#39;"),
    ("/runs/nope/facts/x", "no run &#39;nope&#39;"),
    ("/runs/lama-small/facts/not-a-uid", "run lama-small has no fact with uid &#39;not-a-uid&#39;"),
    ("/runs/lama-small?relation=P999", "the run has no relation &#39;P999&#39;"),
])
def test_pages_answer_an_unknown_name_with_an_html_404(client, url, message):
    r = client.get(url)
    assert (r.status_code, r.headers["content-type"]) == (404, "text/html; charset=utf-8")
    assert f'<p class="error" id="error">{message}' in r.text and "<h2>Not found</h2>" in r.text


def test_run_page_renders_and_filters(client, instances):
    r = client.get("/runs/lama-small", params={"relation": "P19", "outcome": "a-right-b-wrong", "a": "gold",
                                                  "b": "bert"})
    assert r.status_code == 200 and 'id="facts"' in r.text
    assert 'data-relation="P36"' not in r.text and 'data-relation="P19"' in r.text


def test_run_page_past_the_last_page_says_so(client, instances):
    pages = -(-instances["uid"].nunique() // 50)
    r = client.get("/runs/lama-small", params={"page": pages + 1})
    assert (r.status_code, r.headers["content-type"]) == (400, "text/html; charset=utf-8")
    assert f"page={pages + 1}: past the last page; these {instances['uid'].nunique()} rows fill {pages} page" in r.text
    assert '<a id="run-start" href="/runs/lama-small">' in r.text  # a way on from the message, not a dead end
    assert client.get("/runs/lama-small", params={"page": pages}).status_code == 200


def test_concurrent_queries_are_batched_and_isolated(serve_explorer, p19):
    """Queries arriving together share one LM batch; the answers equal those asked one by one (scores up to
    float32's reduction order), and a subject holding the mask token fails only its own bert column."""
    from concurrent.futures import ThreadPoolExecutor

    from bridge.serve.sides import Ask, answer_many

    subjects = [f.subject.label for f in p19[:6]] + ["The [MASK] Singer"]
    alone = {s: serve_explorer.call(answer_many, serve_explorer, [Ask(subject=s, relation="P19", k=5)])[0]
             for s in subjects}
    batcher = serve_support.holding_batcher(serve_explorer, lambda asks: answer_many(serve_explorer, asks),
                                            len(subjects))
    with ThreadPoolExecutor(len(subjects)) as pool:
        together = list(pool.map(lambda s: batcher.ask(Ask(subject=s, relation="P19", k=5)), subjects))
    assert max(body["batch"] for body in together) > 1
    for s, body in zip(subjects, together):
        for name in ("gold KB", "freq", "bert"):
            serve_support.assert_same_answers_in_any_batch(_col(body, name)["answers"], _col(alone[s], name)["answers"],
                                                           f"{s} {name}")
    bad = _col(together[-1], "bert")
    assert bad["status"] == "error" and "[MASK]" in bad["message"]
    assert all(_col(b, "bert")["status"] == "ok" for b in together[:-1])


def test_a_run_of_another_experiment_is_browsed_without_facts(serve_explorer, serve_run, tmp_path):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    other = tmp_path / "coh"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"experiment": "coherency", "corpora": ["trex"],
                                                   "predictors": ["freq"], "relation_types": {"trex": {"P19": "N-1"}}}))
    (other / "summary.json").write_text(json.dumps([
        {"corpus": "trex", "predictor": "freq", "scope": "own", "setting": "raw", "group": "all",
         "metric": "coherency", "value": 12.5, "n_facts": 8}]))
    serve_support.seal(other)
    with TestClient(create_app(serve_explorer, Runs([serve_run, other]))) as c:
        assert [r["name"] for r in c.get("/api/runs").json()["runs"]] == ["lama-small", "coh"]
        body = c.get("/api/runs/coh").json()
        assert body["summary"][0]["value"] == 12.5 and body["relations"] == ["P19"]
        r = c.get("/api/runs/coh/facts")
        assert r.status_code == 400 and "kbc run coherency" in r.json()["detail"]
        assert c.get("/runs/coh").status_code == 200


def test_run_page_of_a_prompt_set_names_each_rows_prompt(serve_explorer, lama_dir, tmp_path, monkeypatch, capsys):
    """A run over a prompt file asks each fact once per prompt: every row of its fact table (the page and
    `/api/runs/NAME/facts`) says which prompt it is, so the same fact twice reads as two prompts; a run of one
    prompt per relation gets no prompt column."""
    import re

    from cli_support import run_kbc
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    prompts = tmp_path / "two.jsonl"
    prompts.write_text(json.dumps({"relation": "P36", "template": "The capital of [X] is [Y] .", "id": "cap"}) + "\n"
                       + json.dumps({"relation": "P36", "template": "[Y] is the capital of [X] ."}) + "\n",
                       encoding="utf-8")
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    runs = {}
    for name, extra in (("pp", ["--prompts", str(prompts)]), ("plain", [])):
        runs[name] = tmp_path / name
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P36", "--limit", "2", "--predictors",
                                "freq", *extra, "--data-dir", str(lama_dir), "--out", str(runs[name]), "--quiet"],
                               capsys)
        assert code == 0, err
    with TestClient(create_app(serve_explorer, Runs(list(runs.values())))) as c:
        body = c.get("/api/runs/pp/facts").json()
        page = c.get("/runs/pp").text
        plain = c.get("/api/runs/plain/facts").json()
        plain_page = c.get("/runs/plain").text
    rows = [(f["subject"], f["prompt_id"], f["prompt"]) for f in body["facts"]]
    subjects = sorted({s for s, _, _ in rows})
    assert body["prompted"] is True and len(subjects) == 2
    assert sorted(rows) == sorted((s, p, text.replace("[X]", s).replace("[Y]", "[MASK]"))
                                  for s in subjects for p, text in (("cap", "The capital of [X] is [Y] ."),
                                                                    ("two:1", "[Y] is the capital of [X] .")))
    assert '<th>relation</th><th>prompt</th><th>subject</th>' in page
    cells = re.findall(r'<td class="prompt"><code>([^<]+)</code> ([^<]*)</td>', page)
    assert sorted(cells) == sorted((p, text) for _, p, text in rows)
    assert plain["prompted"] is False and {f["prompt_id"] for f in plain["facts"]} == {None}
    assert '<th>prompt</th>' not in plain_page and 'class="prompt"' not in plain_page
    # a prompt set's rows are queries: the page counts them and the facts they ask, never queries as facts
    assert (body["total"], body["queries"], body["n_facts"]) == (4, 4, 2)
    assert (plain["total"], plain["queries"], plain["n_facts"]) == (2, 2, 2)
    assert '<p class="meta" id="fact-count">4 queries (2 facts, each asked once per prompt) &middot; page 1 of 1' \
        in page
    assert '<p class="meta" id="fact-count">2 facts &middot; page 1 of 1' in plain_page


def test_pages_of_a_run_edited_while_served_answer_an_html_page(serve_explorer, lama_dir, tmp_path):
    """A served run whose records are edited is refused on its next page: a page says so in HTML (400), the API in
    JSON."""
    from fastapi.testclient import TestClient

    from bridge.run.runner import RunConfig, run_lama
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    out = tmp_path / "small"
    run_lama(RunConfig(corpora=["trex"], predictors=["freq"], out=out, data_dir=str(lama_dir), relations=["P36"],
                       limit=3, cache_dir=tmp_path / "cache"), progress=False)
    with TestClient(create_app(serve_explorer, Runs([out]))) as c:
        uid = c.get("/api/runs/small/facts").json()["facts"][0]["uid"]
        assert c.get("/runs/small").status_code == 200
        path = out / "predictions" / "trex" / "freq" / "P36.jsonl"
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        records[1]["gold"] = "Nowhere"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        message = (f"{path}:2: not the record this run wrote there (changed since); delete that file so that the run "
                   "recomputes it, or use a new --out")
        api = c.get("/api/runs/small")
        assert (api.status_code, api.json()) == (400, {"detail": message})
        for url in ("/runs/small", f"/runs/small/facts/{uid}", "/leaderboard"):
            r = c.get(url)
            assert (r.status_code, r.headers["content-type"]) == (400, "text/html; charset=utf-8"), url
            assert f'<p class="error" id="error">{message}</p>' in r.text, url


def test_docs_name_every_top_level_key_of_a_query_answer(client, p19):
    """docs/explorer.md's `/api/query` row names the answer's keys as they are (the prompt under `query`), and an
    exact LM rank has no `of` (it is over every candidate)."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "explorer.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| `GET /api/query?subject="))
    text = row.split("|")[2]
    depth, top = 0, []
    for part in re.split(r"([()])", text):
        if part in "()" and part:
            depth += 1 if part == "(" else -1
        elif depth == 0:
            top += re.findall(r"`([a-z_]+)`", part)
    fact = _unique_subject(p19)
    body = client.get("/api/query", params={"subject": fact.subject.label, "relation": "P19", "run": "lama-small"})
    assert sorted(top) == sorted(body.json())
    assert body.json()["query"]["prompt"] == f"{fact.subject.label} was born in [MASK] ."
    rank = _col(body.json(), "bert")["gold_rank"]
    assert rank["exact"] is True and rank["of"] is None and rank["rank"] >= 1


def _narrow_rules(css: str) -> dict[str, dict[str, str]]:
    """selector -> declarations of the rules inside `@media (max-width: N px)` blocks with N at most 600."""
    import re

    rules: dict[str, dict[str, str]] = {}
    for width, body in re.findall(r"@media \(max-width: (\d+)px\) \{((?:[^{}]*\{[^{}]*\})*)\s*\}", css):
        if int(width) > 600:
            continue
        for selectors, declarations in re.findall(r"([^{}]+)\{([^{}]*)\}", body):
            pairs = dict(d.split(":", 1) for d in declarations.split(";") if ":" in d)
            for selector in selectors.split(","):
                rules.setdefault(selector.strip(), {}).update({k.strip(): v.strip() for k, v in pairs.items()})
    return rules


def test_the_leaderboards_checkboxes_are_a_touch_size_on_a_phone(client):
    import re

    page = client.get("/leaderboard")
    assert page.status_code == 200 and 'id="run-picker"' in page.text and 'type="checkbox"' in page.text
    sheet = re.search(r'<link rel="stylesheet" href="([^"]+)"', page.text).group(1)
    rules = _narrow_rules(client.get(sheet).text)
    box = rules.get('input[type="checkbox"]', {})
    assert {"width", "height"} <= set(box), rules
    assert int(box["width"].removesuffix("px")) >= 24 and int(box["height"].removesuffix("px")) >= 24, box
    assert int(rules.get("#run-picker label", {}).get("min-height", "0px").removesuffix("px")) >= 44, rules
