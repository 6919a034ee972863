"""The explorer fits what it shows: subjects found whatever their case, each predictor's gold rank, upper bounds
marked, causal scores as log-probabilities, and run pages for every experiment with their scopes labelled."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd
import pytest
import serve_support

from bridge.serve.sides import _answer
from eval.corpora import load_corpus
from eval.types import Answer

client = serve_support.client
serve_app = serve_support.serve_app
serve_explorer = serve_support.serve_explorer
serve_run = serve_support.serve_run


def _col(body: dict, name: str) -> dict:
    return next(c for c in body["columns"] if c["name"] == name)


@pytest.fixture(scope="module")
def unique_fact(lama_dir):
    """A P19 fact whose subject label is the only one of its spelling, whatever the case."""
    facts = load_corpus("trex", lama_dir, ["P19"]).facts
    folded = Counter(f.subject.label.casefold() for f in facts)
    return next(f for f in facts if folded[f.subject.label.casefold()] == 1 and f.subject.label.lower()
                != f.subject.label and len(f.subject.label) > 8)


def test_subject_is_looked_up_case_insensitively(client, unique_fact):
    typed = unique_fact.subject.label.lower()
    body = client.get("/api/query", params={"subject": typed, "relation": "P19", "k": 3}).json()
    assert body["subject"]["label"] == unique_fact.subject.label and body["subject"]["typed"] == typed
    assert body["gold"] == [unique_fact.object.label]
    assert body["query"]["prompt"] == f"{unique_fact.subject.label} was born in [MASK] ."
    page = client.get("/", params={"subject": typed, "relation": "P19", "k": 3}).text
    assert "the corpus&#39;s spelling" in page or "the corpus's spelling" in page


def test_unknown_subject_gets_suggestions(client, unique_fact):
    typed = unique_fact.subject.label[:-1]  # one letter short
    body = client.get("/api/query", params={"subject": typed, "relation": "P19", "k": 3}).json()
    assert body["subject"]["in_corpus"] is False and body["gold"] == []
    assert unique_fact.subject.label in body["subject"]["suggestions"]
    page = client.get("/", params={"subject": typed, "relation": "P19", "k": 3}).text
    assert 'class="suggestion"' in page and "did you mean" in page


def test_live_gold_rank_is_the_rank_the_run_recorded(client, serve_run):
    frame = pd.read_parquet(serve_run / "instances.parquet")
    bert = frame[(frame["predictor"] == "bert") & frame["rank_exact_raw"].notna()]
    per_subject = frame[frame["predictor"] == "gold"].groupby(["relation", "subject"]).size()
    labels = frame.drop_duplicates("uid").groupby("subject")["subject_id"].nunique()
    row = next(r for r in bert.itertuples() if per_subject[(r.relation, r.subject)] == 1 and labels[r.subject] == 1)
    body = client.get("/api/query", params={"subject": row.subject, "relation": row.relation, "k": 5}).json()
    assert body["gold"] == [row.gold]
    assert _col(body, "bert")["gold_rank"] == {"rank": int(row.rank_exact_raw), "exact": True, "of": None}
    recorded = frame[(frame["predictor"] == "freq") & (frame["uid"] == row.uid)].iloc[0]
    freq = _col(body, "freq")["gold_rank"]
    exact = recorded["rank_exact_raw"]
    want = int(exact) if pd.notna(exact) else (None if pd.isna(recorded["rank_raw"]) else int(recorded["rank_raw"]))
    assert freq["rank"] == want and freq["exact"] is pd.notna(exact)
    assert _col(body, "bert")["scores"] == "probability" and _col(body, "bert")["upper_bound"] is None


def test_causal_scores_are_log_probabilities():
    sentence = Answer("Paris", -31.25)
    assert _answer(sentence, {"Paris"}, prob=True, causal=True) == {
        "label": "Paris", "score": -31.25, "id": None, "gold": True, "log_probability": -31.25}
    token = _answer(Answer("Paris", -0.5), set(), prob=True)
    assert "log_probability" not in token and token["probability"] == pytest.approx(0.60653066)


def test_coherency_run_page_is_browsed(serve_explorer, serve_run, tmp_path):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    other = tmp_path / "coh"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({
        "experiment": "coherency", "corpora": ["trex"], "predictors": ["freq", "oracle"],
        "predictor_specs": {"oracle": {"spec": "re-oracle"}},
        "relation_types": {"trex": {"P19": "N-1", "P36": "1-1"}}}))
    rows = [{"corpus": "trex", "predictor": p, "scope": scope, "setting": "raw", "group": g, "metric": m,
             "value": v, "n_facts": n}
            for p, base in (("freq", 10.0), ("oracle", 40.0))
            for scope, n in (("own", 8), ("shared", 6))
            for g in ("all", "N-1", "P19")
            for m, v in (("coherency", base), ("coherency_round1", base + 1), ("coherency_round2", base - 1))]
    rows[0] = {**rows[0], "ci_low": 5.0, "ci_high": 15.0}
    (other / "summary.json").write_text(json.dumps(rows))
    serve_support.seal(other)
    with TestClient(create_app(serve_explorer, Runs([serve_run, other]))) as c:
        body = c.get("/api/runs/coh").json()
        assert body["metric"] == "coherency" and body["groups"] == ["all", "N-1"]
        table = {r["predictor"]: r for r in body["table"]}
        assert table["freq"]["coherency"] == {"all": 10.0, "N-1": 10.0}
        assert table["freq"]["ci"]["all"] == [5.0, 15.0] and table["freq"]["shared"]["facts"] == 6
        assert table["oracle"]["upper_bound"] and table["freq"]["upper_bound"] is None
        page = c.get("/runs/coh")
        assert page.status_code == 200
        text = page.text
        assert "shared facts" in text and "own facts" in text and 'id="no-facts"' in text
        assert text.count("upper bound</span>") == 1 and "[5.00, 15.00]" in text
        assert c.get("/api/runs/coh/facts").status_code == 400  # the per-fact table stays a LAMA view


def test_leaderboard_of_the_browsed_runs(client, serve_run):
    summary = json.loads((serve_run / "summary.json").read_text())
    want = {r["predictor"]: r for r in summary if r["scope"] == "shared" and r["setting"] == "raw"
            and r["group"] == "all" and r["metric"] == "p@1" and not r.get("prompt")}
    body = client.get("/api/leaderboard").json()
    assert body["metric"] == "p@1" and body["scope"] == "shared"
    assert [r["predictor"] for r in body["rows"]] == sorted(want, key=lambda p: (-want[p]["value"], p))
    for row in body["rows"]:
        assert row["run"] == "lama-small" and row["value"] == pytest.approx(want[row["predictor"]]["value"])
        assert row["n_facts"] == want[row["predictor"]]["n_facts"]
    page = client.get("/leaderboard")
    assert page.status_code == 200 and 'id="leaderboard"' in page.text and "shared facts" in page.text
    bad = client.get("/api/leaderboard", params={"scope": "bogus"})
    assert (bad.status_code, bad.json()) == (400, {"detail": "scope='bogus': use shared or own"})
    page = client.get("/leaderboard", params={"scope": "bogus"})
    assert page.status_code == 400 and '<p class="error" id="error">scope=&#39;bogus&#39;: use shared or own</p>' \
        in page.text


def test_runs_of_other_experiments_get_their_own_board_and_lmkbc_pages_show_set_scores(
        serve_explorer, serve_run, lama_dir, tmp_path, monkeypatch, capsys):
    from cli_support import run_kbc
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    lmkbc = tmp_path / "sets"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", "personHasCityOfDeath", "--predictors", "gold", "freq",
                            "--set", "freq.set=top:1", "--data-dir", str(lama_dir), "--out", str(lmkbc), "--quiet"],
                           capsys)
    assert code == 0, err
    summary = json.loads((lmkbc / "summary.json").read_text())
    want = {r["predictor"]: r["value"] for r in summary if r["scope"] == "own" and r["setting"] == "raw"
            and r["group"] == "all" and r["metric"] == "macro-f1"}
    with TestClient(create_app(serve_explorer, Runs([serve_run, lmkbc, tmp_path / "." / "sets"]))) as c:
        assert [r["name"] for r in c.get("/api/runs").json()["runs"]] == ["lama-small", "sets"]
        page = c.get("/leaderboard")  # the first run's experiment, with a link to the other's board
        assert page.status_code == 200 and 'id="leaderboard"' in page.text
        assert 'id="experiments"' in page.text and '<a href="?experiment=lmkbc">lmkbc</a>' in page.text
        body = c.get("/api/leaderboard", params={"experiment": "lmkbc", "scope": "own"}).json()
        assert body["experiments"] == {"lama": ["lama-small"], "lmkbc": ["sets"]} and body["metric"] == "macro-f1"
        assert {r["predictor"]: r["value"] for r in body["rows"]} == want
        assert c.get("/leaderboard", params={"experiment": "lmkbc"}).status_code == 200
        bad = c.get("/api/leaderboard", params={"experiment": "kmir"})
        assert bad.status_code == 400 and "no browsed run is of it" in bad.json()["detail"]
        info = c.get("/api/runs/sets").json()
        assert info["metric"] == "macro-f1" and info["extra_metrics"] == ["macro-p", "macro-r", "micro-f1"]
        assert {r["predictor"]: r["macro-f1"]["all"] for r in info["table"]} == want
        text = c.get("/runs/sets").text
        assert "macro F1 all" in text and "(subject, relation) pairs by their answer sets" in text
        assert "round trips" not in text and f"{want['gold']:.3f}" in text and f"{want['freq']:.3f}" in text


def test_kmir_run_page_puts_kinds_and_relations_in_their_own_tables(serve_explorer, lama_dir, tmp_path, monkeypatch,
                                                                   capsys):
    """A derived relation only reasoning questions ask (schema:birthPlace) is a relation, as summary.md lists it: a
    row of the per-relation tables, never a column beside the question kinds; and KMIR's exact match is no table of
    answers written by generation (every predictor here ranks, and all have F1)."""
    from cli_support import run_kbc
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "kmir"
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--predictors", "freq", "kb", "kb-inferred", "random",
                            "--relations", "P19", "P47", "--questions-per-relation", "10", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    derived = {r["predictor"]: (r["value"], r["n_facts"]) for r in summary if r["scope"] == "own"
               and r["setting"] == "raw" and r["group"] == "schema:birthPlace" and r["metric"] == "f1"}
    assert derived == {"kb": (0.0, 10), "kb-inferred": (100.0, 10), "random": (10.0, 10)}
    assert "| trex | schema:birthPlace birth place | - | 10 |" in (out / "summary.md").read_text()
    with TestClient(create_app(serve_explorer, Runs([out]))) as c:
        info = c.get("/api/runs/kmir").json()
        assert info["groups"] == ["all", "triple_completion", "entity_distinction", "predicate_reasoning",
                                  "statement_checking"]
        assert info["relations"] == ["P19", "P47", "schema:birthPlace"]
        tables = {t["scope"]: t["rows"] for t in info["relation_tables"]}
        assert [r["relation"] for r in tables["shared"]] == ["P19", "P47"]
        own = {r["relation"]: r for r in tables["own"]}
        assert list(own) == ["P19", "P47", "schema:birthPlace"]
        assert own["schema:birthPlace"]["f1"] == {p: v for p, (v, _) in derived.items()}
        assert own["schema:birthPlace"]["n"] == {"kb": 10, "kb-inferred": 10, "random": 10}
        assert (info["written"], info["written_table"]) == ([], [])
        text = c.get("/runs/kmir").text
        assert "F1 schema:birthPlace" not in text and "answers written by generation" not in text
        assert "<td>schema:birthPlace" in text


def test_landing_page_offers_examples_and_the_runs(client, lama_dir):
    """The first page is somewhere to go: one example query per relation (its first fact's subject), each a link
    that answers, and the finished runs being browsed."""
    import html
    import re

    page = client.get("/")
    assert page.status_code == 200
    facts = load_corpus("trex", lama_dir, serve_support.RELATIONS).facts
    first = {rel: next(f for f in facts if f.relation == rel) for rel in serve_support.RELATIONS}
    links = re.findall(r'<li><a href="/\?([^"]+)">([^<]+)</a>', page.text.split('id="examples"')[1].split("</ul>")[0])
    assert [html.unescape(text) for _, text in links] == [
        f"{first['P19'].subject.label} was born in … .", f"The capital of {first['P36'].subject.label} is … ."]
    answered = client.get("/?" + html.unescape(links[0][0]))
    assert answered.status_code == 200 and 'id="result"' in answered.text
    assert '<ul id="recent-runs"><li><a href="/runs/lama-small">lama-small</a>' in page.text


def test_the_board_of_runs_over_different_corpora_ranks_the_runs_holding_the_chosen_one(
        serve_explorer, lama_dir, shared_data, tmp_path, monkeypatch, capsys):
    """A T-REx run and a BEAR run share no corpus: the board defaults to the first run's corpus and ranks the runs
    that hold it, `?corpus=bear` ranks the BEAR run; each names the run left out, and the picker what each holds."""
    from cli_support import one_sample_note, run_kbc
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    lm, bear = tmp_path / "lm", tmp_path / "bear"
    for argv in (["--corpus", "trex", "--relations", "P19", "--data-dir", str(lama_dir), "--out", str(lm)],
                 ["--corpus", "bear", "--relations", "P30", "--data-dir", str(shared_data / "bear"), "--out",
                  str(bear)]):
        code, _, err = run_kbc(["run", "lama", *argv, "--predictors", "freq", "random", "--limit", "4", "--quiet"],
                               capsys)
        assert code == 0, err
    totals = {}
    for run, corpus in ((lm, "trex"), (bear, "bear")):
        totals[corpus] = {r["predictor"]: r["value"] for r in json.loads((run / "summary.json").read_text())
                          if r["scope"] == "shared" and r["setting"] == "raw" and r["group"] == "all"
                          and r["metric"] == "p@1"}
    with TestClient(create_app(serve_explorer, Runs([lm, bear]))) as c:
        for params, corpus, run, left in (({}, "trex", "lm", "bear"), ({"corpus": "bear"}, "bear", "bear", "lm")):
            body = c.get("/api/leaderboard", params=params).json()
            assert body["corpus"] == corpus and body["corpus_runs"] == {"trex": ["lm"], "bear": ["bear"]}
            assert {(r["run"], r["corpus"], r["predictor"]): r["value"] for r in body["rows"]} == {
                (run, corpus, p): v for p, v in totals[corpus].items()}
            assert body["notes"] == [f"{corpus}: left out {left} (no {corpus} results; the corpus picker shows what "
                                     "each run holds)", one_sample_note(4)]
            page = c.get("/leaderboard", params=params)
            assert page.status_code == 200 and 'id="leaderboard"' in page.text
            assert f'<option value="{corpus}" selected>{corpus} ({run})</option>' in page.text
        body = c.get("/api/leaderboard", params={"run": "lm"}).json()  # one run: its own board, nothing left out
        assert body["corpus"] is None and body["notes"] == [one_sample_note(4)]
        assert {r["run"] for r in body["rows"]} == {"lm"}
        bad = c.get("/api/leaderboard", params={"corpus": "bear", "run": "lm"})
        assert (bad.status_code, bad.json()["detail"]) == (400, "corpus='bear': no chosen run holds it; pick one of "
                                                                 "trex")


def test_default_board_of_runs_sharing_no_relation_ranks_the_first_and_says_how_to_pick(serve_explorer, lama_dir,
                                                                                          tmp_path):
    """Runs of one corpus over different relations cannot be ranked together: the default board (page and API)
    ranks those sharing relations with the first run and names the others; ticking one ranks it."""
    from fastapi.testclient import TestClient

    from bridge.run.runner import RunConfig, run_lama
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    runs = {}
    for name, relations in (("born", ["P19"]), ("capital", ["P36"]), ("both", ["P19", "P36"])):
        runs[name] = tmp_path / name
        run_lama(RunConfig(corpora=["trex"], predictors=["freq"], out=runs[name], data_dir=str(lama_dir),
                           relations=relations, limit=3, cache_dir=tmp_path / "cache"), progress=False)
    note = ("left out capital: it shares no relation with born, both (runs are ranked over the relations they "
            "share); tick it in the run picker to rank it apart")
    with TestClient(create_app(serve_explorer, Runs([runs["born"], runs["capital"], runs["both"]]))) as c:
        body = c.get("/api/leaderboard").json()
        assert body["chosen"] == ["born", "both"] and {r["run"] for r in body["rows"]} == {"born", "both"}
        assert body["notes"][0] == note
        page = c.get("/leaderboard")
        assert page.status_code == 200 and 'id="leaderboard"' in page.text
        assert f'<p class="note" id="board-note-1">{note}</p>' in page.text
        assert '<input type="checkbox" name="run" value="capital"> capital' in page.text
        assert '<input type="checkbox" name="run" value="born" checked> born' in page.text
        picked = c.get("/api/leaderboard", params={"run": ["capital", "both"]}).json()
        assert {r["run"] for r in picked["rows"]} == {"capital", "both"} and not any("left out" in n and "shares"
                                                                                   in n for n in picked["notes"])
        bad = c.get("/api/leaderboard", params={"run": ["born", "capital"]})  # chosen so: refused, as kbc leaderboard
        assert bad.status_code == 400 and "no relation is held by every run" in bad.json()["detail"]


def test_run_page_per_relation_table_leads_with_the_shared_scope_and_names_scope_n_and_relation(
        serve_explorer, serve_run, tmp_path):
    """summary.md, `kbc report` and the leaderboard lead with shared facts: the run page's per-relation table
    shows those values first, with their scope, facts and relation names, then each predictor's own facts."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    other = tmp_path / "rel"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({
        "experiment": "coherency", "corpora": ["trex"], "predictors": ["freq", "oracle"],
        "predictor_specs": {"oracle": {"spec": "re-oracle"}},
        "relation_types": {"trex": {"P19": "N-1"}}, "relation_labels": {"trex": {"P19": "place of birth"}}}))
    rows = [{"corpus": "trex", "predictor": p, "scope": scope, "setting": "raw", "group": g, "metric": "coherency",
             "value": v + (0 if scope == "own" else 2.82), "n_facts": n[p] if scope == "own" else 68}
            for p, v in (("freq", 6.0), ("oracle", 40.0))
            for scope, n in (("own", {"freq": 100, "oracle": 90}), ("shared", {}))
            for g in ("all", "N-1", "P19")]
    (other / "summary.json").write_text(json.dumps(rows))
    serve_support.seal(other)
    with TestClient(create_app(serve_explorer, Runs([serve_run, other]))) as c:
        body = c.get("/api/runs/rel").json()
        shared, own = body["relation_tables"]
        assert shared == {"scope": "shared", "rows": [{
            "corpus": "trex", "relation": "P19", "label": "place of birth",
            "coherency": {"freq": 8.82, "oracle": 42.82}, "n": {"freq": 68, "oracle": 68}, "facts": 68}]}
        assert own["scope"] == "own" and own["rows"][0]["coherency"] == {"freq": 6.0, "oracle": 40.0}
        assert own["rows"][0]["n"] == {"freq": 100, "oracle": 90} and own["rows"][0]["facts"] is None
        assert body["relation_table"] == shared["rows"]
        text = c.get("/runs/rel").text
        first = text[text.index('<table id="per-relation"'):]
        first = first[:first.index("</table>")]
        assert 'data-scope="shared"' in first and "<td>8.82</td>" in first and "<td>68</td>" in first
        assert "P19</a> place of birth" in first or "P19 place of birth" in first
        second = text[text.index('<table id="per-relation-own"'):]
        second = second[:second.index("</table>")]
        assert "<td>6.00 <small>n=100</small></td>" in second and "<td>40.00 <small>n=90</small></td>" in second


def test_a_causal_lm_asked_a_free_cloze_says_why_it_does_not_answer(lama_dir, tmp_path):
    """A causal LM ranks a relation's candidate objects, which a free cloze does not name: its column says so
    ("not applicable") rather than "ok" with no answer, and a subject and relation it answers."""
    from lm_fixtures import tiny_model_dir

    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.sides import Ask, answer_many

    gpt2 = str(tiny_model_dir("gpt2", tmp_path / "gpt2"))
    explorer = Explorer.start(ExplorerConfig(data_dir=str(lama_dir), relations=["P36"], predictors=[f"gpt2={gpt2}"],
                                             cache_dir=tmp_path / "cache"))
    try:
        cloze, asked = explorer.call(answer_many, explorer, [Ask(cloze="Paris is the capital of [MASK] .", k=3),
                                                             Ask(subject="France", relation="P36", k=3)])
    finally:
        explorer.close()
    column = next(c for c in cloze["columns"] if c["name"] == "gpt2")
    assert (column["status"], column["answers"]) == ("not applicable", [])
    assert "a cloze names no relation" in column["message"]
    answered = next(c for c in asked["columns"] if c["name"] == "gpt2")
    assert answered["status"] == "ok" and len(answered["answers"]) == 3


def _hand_run(root, corpora: dict[str, dict[str, str]], rows: list[dict]):
    """A coherency run directory written by hand (its relation types per corpus, its summary rows), sealed."""
    root.mkdir()
    (root / "config.json").write_text(json.dumps({
        "experiment": "coherency", "corpora": list(corpora), "predictors": ["freq"],
        "predictor_specs": {"freq": {"spec": "freq"}}, "relation_types": corpora}))
    (root / "summary.json").write_text(json.dumps(rows))
    serve_support.seal(root)
    return root


def test_run_page_intervals_keep_the_digits_of_its_values(serve_explorer, serve_run, tmp_path):
    """summary.md prints `[5.00, 12.01]`; the run page beside its `8.50` showed `[5.0, 12.0]`, another upper
    bound than every other view gives."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    rows = [{"corpus": "trex", "predictor": "freq", "scope": scope, "setting": "raw", "group": g,
             "metric": "coherency", "value": 8.5, "n_facts": 40, "ci_low": 5.0, "ci_high": 12.0125}
            for scope in ("own", "shared") for g in ("all", "N-1", "P19")]
    run = _hand_run(tmp_path / "ci", {"trex": {"P19": "N-1"}}, rows)
    with TestClient(create_app(serve_explorer, Runs([serve_run, run]))) as c:
        text = c.get("/runs/ci").text
    summary = text[text.index('<table id="summary"'):]
    summary = summary[:summary.index("</table>")]
    assert "[5.00, 12.01]" in summary and "[5.0, 12.0]" not in summary


def test_run_page_lists_relations_in_the_order_of_summary_md(serve_explorer, serve_run, tmp_path):
    """summary.md and `kbc compare` list a run's corpora in run order and its relations by type, then by id with
    numbers as numbers (P36 1-1, P19 N-1, P47, P530, P1303 N-M); the run page's per-relation tables too."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    types = {"trex": {"P1303": "N-M", "P19": "N-1", "P36": "1-1", "P530": "N-M", "P47": "N-M"},
             "google_re": {"place_of_birth": "N-1", "date_of_birth": "N-1"}}
    rows = [{"corpus": corpus, "predictor": "freq", "scope": scope, "setting": "raw", "group": g,
             "metric": "coherency", "value": 1.0, "n_facts": 4}
            for corpus, rels in types.items() for scope in ("own", "shared") for g in ("all", *rels)]
    run = _hand_run(tmp_path / "order", types, rows)
    with TestClient(create_app(serve_explorer, Runs([serve_run, run]))) as c:
        body = c.get("/api/runs/order").json()
    for table in body["relation_tables"]:
        assert [(r["corpus"], r["relation"]) for r in table["rows"]] == [
            ("trex", "P36"), ("trex", "P19"), ("trex", "P47"), ("trex", "P530"), ("trex", "P1303"),
            ("google_re", "date_of_birth"), ("google_re", "place_of_birth")]


def test_run_page_lists_knowledge_domains_as_summary_md_does(serve_explorer, serve_run, tmp_path):
    """BEAR's domain columns in summary.md and `kbc report` go by name (Arts, ..., Sports); the run page listed
    them in the order summary.json happened to hold them."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    groups = ("all", "domain:Political", "domain:Arts", "domain:Sports", "domain:Biographical", "P6")
    rows = [{"corpus": "bear", "predictor": "freq", "scope": scope, "setting": "raw", "group": g,
             "metric": "coherency", "value": 1.0, "n_facts": 4} for scope in ("own", "shared") for g in groups]
    run = _hand_run(tmp_path / "domains", {"bear": {"P6": None}}, rows)
    with TestClient(create_app(serve_explorer, Runs([serve_run, run]))) as c:
        body = c.get("/api/runs/domains").json()
    assert body["groups"] == ["all", "domain:Arts", "domain:Biographical", "domain:Political", "domain:Sports"]


def test_run_page_facts_follow_the_setting_of_its_summary(serve_explorer, serve_run, tmp_path):
    """`/runs/RUN?setting=filtered` shows filtered P@1 above a fact table whose right and wrong were the raw
    setting's: "A right, B wrong" then counted other facts than the P@1 beside it. The table follows the setting,
    and its filter and page links keep it."""
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    run = tmp_path / "filtered"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({
        "experiment": "lama", "corpora": ["trex"], "predictors": ["freq", "bert"],
        "predictor_specs": {"freq": {"spec": "freq"}, "bert": {"spec": "bert"}},
        "relation_types": {"trex": {"P530": "N-M"}}}))
    (run / "summary.json").write_text(json.dumps([
        {"corpus": "trex", "predictor": p, "scope": scope, "setting": setting, "group": g, "metric": "p@1",
         "value": 50.0 if (p, setting) == ("freq", "filtered") else 0.0, "n_facts": 2}
        for p in ("freq", "bert") for scope in ("own", "shared") for setting in ("raw", "filtered")
        for g in ("all", "N-M", "P530")]))
    # Iceland: freq's first answer, Germany, is another valid object: wrong raw, right filtered
    pd.DataFrame([{"corpus": "trex", "predictor": p, "relation": "P530", "uid": uid, "subject": subject,
                   "subject_id": None, "gold": gold, "prompt": f"{subject} maintains diplomatic relations with "
                   "[MASK] .", "top1": top1, "correct_raw": False, "correct_filtered": p == "freq" and uid == "u1"}
                  for p in ("freq", "bert")
                  for uid, subject, gold, top1 in (("u1", "Iceland", "Italy", "Germany"),
                                                   ("u2", "Chad", "Niger", "Germany"))]
                 ).to_parquet(run / "instances.parquet")
    serve_support.seal(run)
    with TestClient(create_app(serve_explorer, Runs([serve_run, run]))) as c:
        ask = {"outcome": "a-right-b-wrong", "a": "freq", "b": "bert"}
        assert c.get("/api/runs/filtered/facts", params=ask).json()["total"] == 0
        body = c.get("/api/runs/filtered/facts", params={**ask, "setting": "filtered"}).json()
        assert body["total"] == 1 and body["setting"] == "filtered" and body["facts"][0]["uid"] == "u1"
        assert body["facts"][0]["predictors"]["freq"]["correct"] is True
        text = c.get("/runs/filtered", params={**ask, "setting": "filtered", "per_page": 1}).text
    assert '1 facts' in text or "1 fact " in text or "1 fact<" in text
    form = text[text.index('<form id="filter"'):]
    assert '<input type="hidden" name="setting" value="filtered">' in form[:form.index("</form>")]
