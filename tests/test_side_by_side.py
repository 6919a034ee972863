"""Side-by-side runs: named predictors with scoped options, shared-fact scoring, reruns that add, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from re_kb_support import seed_extraction
from test_entities_support import tiny_bert, trained_w2v

tiny_models = lm_fixtures.tiny_models

RELATIONS = ["P30", "P140", "date_of_birth"]  # small answer spaces keep typed querying quick


def _base(lama_dir: Path, tmp_path: Path, out: Path) -> list[str]:
    return ["run", "lama", "--corpus", "trex", "google_re", "--relations", *RELATIONS, "--limit", "6",
            "--data-dir", str(lama_dir), "--out", str(out), "--store", str(tmp_path / "store"), "--quiet"]


def _summary(out: Path) -> list[dict]:
    return json.loads((out / "summary.json").read_text())


def _assert_shared_counts_equal(rows: list[dict]) -> None:
    shared: dict[tuple, set[int]] = {}
    for r in rows:
        if r["scope"] == "shared":
            shared.setdefault((r["corpus"], r["setting"], r["group"], r["metric"]), set()).add(r["n_facts"])
    assert shared and all(len(ns) == 1 for ns in shared.values()), shared


def test_named_predictors_scopes_and_adding_a_predictor(tiny_models, shared_data, lama_dir, tmp_path, capsys,
                                                        monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    bert, gpt2 = tiny_models("bert-cased"), tiny_models("gpt2")
    code, stdout, err = run_kbc(_base(lama_dir, tmp_path, out) + [
        "--predictors", "freq", f"bert={bert}", f"gpt2={gpt2}", "--set", "bert.candidates=common",
        "--set", "cache=off"], capsys)
    assert code == 0, err
    rows = _summary(out)
    assert {r["predictor"] for r in rows} == {"freq", "bert", "gpt2"}
    assert sorted(p.name for p in (out / "predictions" / "trex").iterdir()) == ["bert", "freq", "gpt2"]
    assert {r["scope"] for r in rows} == {"own", "shared"}
    _assert_shared_counts_equal(rows)
    get = {(r["corpus"], r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]): r for r in rows}
    assert get[("trex", "freq", "own", "raw", "all", "p@1")]["n_facts"] == 12
    for corpus in ("trex", "google_re"):  # shared = the facts with an answer (not a dropped record) from everyone
        answered = []
        for name in ("freq", "bert", "gpt2"):
            lines = [json.loads(x) for f in (out / "predictions" / corpus / name).iterdir()
                     for x in f.read_text().splitlines()]
            answered.append({r["uid"] for r in lines if "dropped" not in r})
        assert get[(corpus, "gpt2", "shared", "raw", "all", "p@1")]["n_facts"] == len(set.intersection(*answered))
    # answer spaces beside the scores: the LAMA common vocabulary vs the relation's objects
    assert get[("trex", "bert", "own", "raw", "P140", "answer_space")]["value"] == 21018
    assert get[("trex", "gpt2", "own", "raw", "P30", "answer_space")]["value"] == 6  # the 6 continents
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_specs"]["bert"]["options"] == {"candidates": "common"}  # cache=off is no identity
    assert config["runs"][-1]["versions"]["kbcompare"] == "0.1.0" and "torch" in config["runs"][-1]["versions"]
    assert config["runs"][-1]["finished"] >= config["runs"][-1]["started"]
    assert set(config["seconds"]["trex"]) == {"freq", "bert", "gpt2"}
    assert "| trex | bert | 21,018 |" in stdout

    md = (out / "summary.md").read_text()
    per_rel = md.split("## P@1 (%) per relation")[1].split("##")[0]
    keys = re.findall(r"^\| (\w+) \| (\w+)[^|]* \|", per_rel, flags=re.M)  # relation cells: "P30 continent"
    body = [k for k in keys if k[0] != "corpus"]
    assert sorted(body) == sorted(set(body)) and len(body) == 3  # one row per (corpus, relation)
    tables = [t for t in md.split("\n## ")[1:] if t.startswith(("P@1 (%)", "P@10", "MRR")) and "per relation" not in t]
    assert len(tables) == 6  # 3 metrics x 2 scopes
    for table in tables:  # one row per (corpus, predictor), groups as columns
        pairs = [p for p in re.findall(r"^\| (\w+) \| ([\w.-]+) \|", table, flags=re.M) if p[1] != "predictor"]
        assert sorted(pairs) == sorted({(c, n) for c in ("trex", "google_re") for n in ("freq", "bert", "gpt2")})

    # adding ebert with its own scoped options runs only ebert
    before = {p: p.read_bytes() for p in (out / "predictions").rglob("*.jsonl")}
    w2v = trained_w2v(shared_data)
    code, _, err = run_kbc(_base(lama_dir, tmp_path, out) + [
        "--predictors", "freq", f"bert={bert}", f"gpt2={gpt2}", "ebert", "--set", "bert.candidates=common",
        "--set", "cache=off", "--set", f"ebert.model={tiny_bert(shared_data)}", "--set", f"ebert.wikipedia2vec={w2v}",
        "--batch-size", "4"], capsys)
    assert code == 0, err
    assert all(p.read_bytes() == data for p, data in before.items())
    assert err.count("queries done, skipped") == 6  # freq, bert, gpt2 in both corpora
    rows = _summary(out)
    assert {r["predictor"] for r in rows} == {"freq", "bert", "gpt2", "ebert"}
    _assert_shared_counts_equal(rows)
    assert json.loads((out / "config.json").read_text())["predictor_specs"]["ebert"]["options"]["wikipedia2vec"]

    # the per-fact views work on the real run
    code, text, err = run_kbc(["compare", str(out), "freq", "gpt2", "--corpus", "trex", "--json"], capsys)
    assert code == 0, err
    uid = json.loads((out / "predictions/trex/freq/P140.jsonl").read_text().splitlines()[0])["uid"]
    code, text, err = run_kbc(["show", str(out), "--uid", uid, "--corpus", "trex"], capsys)
    assert code == 0, err
    assert all(name in text for name in ("freq", "bert", "gpt2", "ebert"))
    import pandas as pd

    table = pd.read_parquet(out / "instances.parquet")
    assert set(table["predictor"]) == {"freq", "bert", "gpt2", "ebert"}
    assert len(table[(table.corpus == "trex") & (table.predictor == "freq")]) == 12


def test_limit_keeps_the_answer_space_and_reruns_add_corpora(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    base = ["run", "lama", "--predictors", "freq", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, _, err = run_kbc(base + ["--corpus", "google_re", "--limit", "3", "--seed", "7"], capsys)
    assert code == 0, err
    rows = _summary(out)
    space = {r["group"]: r["value"] for r in rows if r["metric"] == "answer_space" and r["scope"] == "own"
             and r["setting"] == "raw"}
    # Freq still ranks every object of the relation in the data, not the 3 sampled ones
    assert space["place_of_death"] > 100
    records = (out / "predictions" / "google_re" / "freq" / "place_of_death.jsonl").read_text().splitlines()
    again = tmp_path / "again"
    run_kbc(base[:-3] + ["--out", str(again), "--quiet", "--corpus", "google_re", "--limit", "3", "--seed", "7"],
            capsys)
    assert (again / "predictions" / "google_re" / "freq" / "place_of_death.jsonl").read_text().splitlines() == records
    code, _, err = run_kbc(base + ["--corpus=google_re", "squad"], capsys)  # another corpus, into the same --out
    assert code == 0, err
    assert {r["corpus"] for r in _summary(out)} == {"google_re", "squad"}
    code, _, err = run_kbc(base + ["--corpus", "squad"], capsys)  # fewer corpora: the others stay summarised
    assert code == 0, err
    assert {r["corpus"] for r in _summary(out)} == {"google_re", "squad"}


def test_config_file_holds_the_same_as_the_flags(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run_file = tmp_path / "run.toml"
    run_file.write_text(f'corpus = ["google_re"]\nrelations = ["place_of_death"]\ndata_dir = "{lama_dir}"\n'
                        f'out = "{tmp_path / "from-file"}"\n[predictors]\nbaseline = "freq"\n')
    code, _, err = run_kbc(["run", "lama", "--config", str(run_file), "--quiet"], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "place_of_death", "--predictors",
                            "baseline=freq", "--data-dir", str(lama_dir), "--out", str(tmp_path / "from-flags"),
                            "--quiet"], capsys)
    assert code == 0, err
    assert _summary(tmp_path / "from-file") == _summary(tmp_path / "from-flags")
    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text("corpus: google_re\nrelations: place_of_death\npredictors: {b: freq}\nset: {k: '3'}\n")
    code, _, err = run_kbc(["run", "lama", "--config", str(yaml_file), "--data-dir", str(lama_dir), "--out",
                            str(tmp_path / "y")], capsys)
    assert code == 2 and f"--config {yaml_file}: set.k: no predictor of this run takes this option" in err


def test_ls_shows_each_predictors_options(tiny_models, capsys):
    code, out, _ = run_kbc(["ls", "retrieval"], capsys)
    assert code == 0 and "--set retrieval.text_index=" in out and "--set retrieval.k=INT" in out
    path = tiny_models("bert-cased")
    code, out, _ = run_kbc(["ls", str(path)], capsys)
    assert code == 0 and "--set tiny-bert-cased-0.candidates=common|full|relation" in out
    assert out.splitlines()[1] == (f"  (as `--predictors {path}` it is named tiny-bert-cased-0; as `--predictors "
                                   f"NAME={path}`, --set NAME.…)")
    code, out, _ = run_kbc(["ls", "ebert"], capsys)
    assert "wikipedia2vec=PATH" in out and "[required]" in out and "entity_index=flat|ivf|hnsw" in out


@pytest.mark.parametrize("extra,message", [
    (["--predictors", "freq", "--set", "candidatez=common"], "--set candidatez: no predictor of this run takes"),
    (["--predictors", "freq", "b=BERT", "--set", "b.candidatez=common"], "did you mean b.candidates?"),
    (["--predictors", "freq", "--set", "freq.k=3"], "predictor freq (freq) does not take 'k'"),
    (["--predictors", "freq", "--set", "fre.k=3"], "no predictor of this run is named 'fre'; did you mean 'freq'?"),
    (["--predictors", "a=freq", "a=retrieval"], "two predictors are named 'a'"),
    (["--predictors", "freq=", "x"], "expected NAME=SPEC with both parts"),
    (["--predictors", "freq", "--relations", "P19"], "--relations P19: no chosen corpus (google_re) has"),
    (["--predictors", "freq", "--limit", "0"], "--limit"),
    (["--predictors", "freq", "--limit", "-5"], "--limit"),
    (["--predictors", "freq", "--batch-size", "0"], "--batch-size"),
    (["--predictors", "freq", "--depth", "0"], "--depth"),
    (["--predictors", "b=/no/such/model"], "/no/such/model"),
    (["--predictors", "ebert", "--set", "ebert.model=/no/such/dir"], "ebert.model=/no/such/dir: no such directory"),
])
def test_bad_run_input_is_one_line_before_any_work(tiny_models, lama_dir, tmp_path, capsys, extra, message):
    extra = [x.replace("BERT", str(tiny_models("bert-cased"))) for x in extra]
    capsys.readouterr()  # building the tiny model on first use prints its own progress
    out = tmp_path / "o"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet", *extra], capsys)
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], err
    assert not out.exists()  # refused before any work


def test_second_run_into_the_same_out_is_refused(lama_dir, tmp_path):
    import json
    import os

    from bridge.run.runner import RunConfig, RunLock, run_lama
    from eval.errors import ConfigError
    from kb.writer_lock import command_line

    out = tmp_path / "o"
    out.mkdir()
    with RunLock(out), pytest.raises(ConfigError) as caught:
        since = json.loads((out / ".kbc.lock").read_text())["since"]
        run_lama(RunConfig(["google_re"], ["freq"], out, str(lama_dir), cache_dir=tmp_path / "c"), progress=False)
    assert str(caught.value) == (f"another kbc run is writing to {out}: process {os.getpid()} (`{command_line()}`, "
                                 f"since {since}), in another thread of this process; wait for it or use another --out")
    assert (out / ".kbc.lock").read_text() == ""  # released: no holder named


@pytest.mark.heavy
def test_kb_and_lm_predictors_over_the_same_facts(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """The full line-up: freq, re-oracle (its KB built from the whole Google-RE corpus) and a BERT; then coherency
    over the same store and cache, where the extraction KB is read, not built again, and a GPT-2 and a T5 beside
    them. The cache starts with the run's one Google-RE extraction (`re_kb_support`): the first run fills the store
    from it, which is what the second must find."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    seed_extraction(lama_dir, tmp_path / "cache")
    store = ["--store", str(tmp_path / "store"), "--data-dir", str(lama_dir), "--quiet"]
    models = [f"bert={tiny_models('bert-cased')}", f"gpt2={tiny_models('gpt2')}"]
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--relations", "date_of_birth", "place_of_birth",
                            "--out", str(out), *store, "--limit", "6", "--predictors", "freq", "re-oracle", models[0]],
                           capsys)
    assert code == 0, err
    assert "google_re: extracted KB built in" in err
    rows = _summary(out)
    assert {r["predictor"] for r in rows} == {"freq", "re-oracle", "bert"}
    _assert_shared_counts_equal(rows)

    # two beams of a few bytes: these runs check the groups each predictor holds, not what the T5 writes
    t5 = [f"t5={lm_fixtures.tiny_t5_dir(tmp_path)}", "--set", "t5.beams=2", "--set", "t5.max_new_tokens=4"]
    coherent = tmp_path / "coherency"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "google_re", "--out", str(coherent), *store, "--limit", "6",
                            "--predictors", "freq", "gold", "re-oracle", *t5], capsys)
    assert code == 0, err
    assert "extracted KB built" not in err  # read from the store the run above filled
    rows = _summary(coherent)
    assert {r["predictor"] for r in rows} == {"freq", "gold", "re-oracle", "t5"}
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r["value"] for r in rows}
    assert get[("gold", "own", "all", "coherency")] == 100.0
    _assert_shared_counts_equal(rows)

    # coherency's relation groups over T-REx, every kind of predictor (two facts a relation: typed querying ranks
    # every subject of P140, N-1, in the second round, every object of P530, N-M and symmetric, in both: few
    # entities to rank beside T-REx's other relations of these groups)
    coherent = tmp_path / "coherency-trex"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P140", "P530", "--out",
                            str(coherent), *store, "--limit", "2", "--predictors", "freq", "gold", *models, *t5],
                           capsys)
    assert code == 0, err
    rows = _summary(coherent)
    metrics = {"coherency_round1", "coherency_round2", "coherency", "c1", "c2", "all_correct", "n_instances"}
    for name in ("freq", "gold", "bert", "gpt2", "t5"):
        own = {(r["group"], r["metric"]) for r in rows if r["predictor"] == name and r["scope"] == "own"}
        held = {r["group"] for r in rows if r["predictor"] == name and r["scope"] == "own"
                and r["metric"] == "n_instances" and r["value"] > 0}
        # a masked LM holds only the instances whose two ends are single tokens; the others hold them all
        assert "all" in held and (name == "bert" or {"N-1", "N-M", "symmetric"} <= held), name
        assert {(group, m) for group in held for m in metrics} <= own, name
    get = {(r["predictor"], r["scope"], r["group"], r["metric"]): r["value"] for r in rows}
    assert get[("gold", "own", "all", "coherency")] == 100.0
    _assert_shared_counts_equal(rows)


def test_an_unreachable_hub_model_fails_before_any_work(lama_dir, tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "o"
    for extra in (["freq", "bert-base-cased"], ["freq", "ebert", "--set", "ebert.model=bert-base-cased",
                                                "--set", f"ebert.wikipedia2vec={lama_dir / 'relations.jsonl'}"]):
        code, _, err = run_kbc(["run", "lama", "--corpus", "google_re", "--data-dir", str(lama_dir), "--out",
                                str(out), "--quiet", "--predictors", *extra], capsys)
        assert code == 2 and "cannot load model 'bert-base-cased'" in err, err
        assert not out.exists() and not (tmp_path / "cache" / "store").exists()
