"""`kbc run coherency` on the shared runner: KBs and LMs, both rounds, a predictor without the subject slot."""

from __future__ import annotations

import json

import lm_fixtures
from cli_support import run_kbc

from bridge.predictors import registry
from kb.freq import FreqPredictor

tiny_models = lm_fixtures.tiny_models


class ObjectsOnly(FreqPredictor):
    slots = ("object",)


def make_objects_only(name, ctx):
    return ObjectsOnly(ctx.corpus.facts)


def test_coherency_run(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(registry.ENTRIES, "objects-only", (f"{__name__}:make_objects_only", "test"))
    out = tmp_path / "run"
    argv = ["run", "coherency", "--corpus", "trex", "google_re", "--relations", "P36", "P47", "place_of_death",
            "--limit", "8", "--predictors", "freq", "gold", "objects-only", f"bert={tiny_models('bert-cased')}",
            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"]
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "objects-only / first: does not answer the subject slot" in err
    rows = json.loads((out / "summary.json").read_text())
    get = {(r["corpus"], r["predictor"], r["scope"], r["group"], r["metric"]): r["value"] for r in rows}
    for corpus in ("trex", "google_re"):  # the gold KB is coherent on every instance it holds
        assert get[(corpus, "gold", "own", "all", "coherency")] == 100.0
    assert get[("trex", "gold", "own", "symmetric", "coherency")] == 100.0  # P47 is symmetric in the data
    # round 2 starts from the subject slot: a predictor without it scores 0 there, reported, not hidden
    assert get[("trex", "objects-only", "own", "all", "coherency_round2")] == 0.0
    assert get[("trex", "objects-only", "own", "all", "c2")] == 0.0
    assert ("trex", "objects-only", "own", "all", "c1") in get
    md = (out / "summary.md").read_text()  # the warning on stderr is in the summary too, naming what it zeroes
    assert ("\n- trex: `objects-only` does not answer the subject slot: its queries there get no answer and are scored "
            "wrong, so coherency, both rounds, c2 and all four steps right are 0 by construction.\n") in md
    # the answer space beside coherency, as in a LAMA run: Freq's P36 and P47 objects (380, 372), the model's vocabulary
    assert "| trex | freq | 375.5 | 3 |" in md and "| trex | bert | 21,018 | 3 |" in md
    n = {r["n_facts"] for r in rows if r["scope"] == "shared" and r["group"] == "all" and r["corpus"] == "trex"
         and r["metric"] == "coherency"}
    assert len(n) == 1  # the same instances for every predictor in the shared scope
    record = json.loads((out / "predictions/trex/gold/second/P36.jsonl").read_text().splitlines()[0])
    assert {"first_answer", "second_answer", "excluded", "coherent", "round"} <= set(record)
    # a masked LM keeps an instance only when both its ends are single tokens: one instance set per round
    fates: dict[str, set] = {}
    for name in ("P36", "P47"):
        for line in (out / f"predictions/trex/bert/first/{name}.jsonl").read_text().splitlines():
            r = json.loads(line)
            fates.setdefault(r["uid"].split(":coherency:")[0], set()).add("dropped" in r)
    assert fates and all(len(f) == 1 for f in fates.values())
    assert {True, False} <= set().union(*fates.values())  # some kept, some dropped
    import pandas as pd

    table = pd.read_parquet(out / "instances.parquet")  # one row per (corpus, predictor, fact, round)
    gold = table[(table.predictor == "gold") & (table.corpus == "google_re")]
    assert len(gold) == 2 * 8 and gold["coherent"].all()
    code, _, err = run_kbc(argv, capsys)  # a rerun asks nothing again
    assert code == 0 and err.count("queries done, skipped") == 2 * 2 * 4 - 1
    # the tiny model drops every Google-RE instance: its second step asks nothing and says nothing
    assert "google_re / bert / first: all 16 queries done, skipped" in err and "google_re / bert / second" not in err


def test_second_step_asks_past_every_excluded_answer(lama_dir, tmp_path, capsys, monkeypatch):
    """Antarctica has hundreds of T-REx subjects: all are excluded but the truth, which must still be reached."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P30", "P140", "--limit", "4",
                            "--predictors", "gold", "--depth", "10", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 0, err
    records = [json.loads(line) for name in ("P30", "P140")
               for line in (out / f"predictions/trex/gold/second/{name}.jsonl").read_text().splitlines()]
    assert max(len(r["excluded"]) for r in records) > 100  # far more than --depth answers are barred
    # each record holds the answer its verdict names, first among the equally true answers it was tied with
    assert [r["answers"][0][0] == r["second_answer"] and r["second_correct"] for r in records] == [True] * 16
    rows = json.loads((out / "summary.json").read_text())
    got = {r["metric"]: r["value"] for r in rows if r["group"] == "all" and r["scope"] == "own"}
    assert got["coherency"] == got["coherency_round1"] == got["coherency_round2"] == 100.0


def test_one_fact_relations_have_no_interval_and_every_row_names_its_fact(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--predictors", "gold", "freq", "--relations",
                            "P19", "P47", "--limit", "1", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    rows = json.loads((out / "summary.json").read_text())
    assert all(r["stderr"] is None and r["ci_low"] is None for r in rows)  # one fact (two rounds) per relation
    md = (out / "summary.md").read_text()
    assert "| trex | gold | open | 2 | 100.00 | 100.00 | 100.00 | 100.00 | - |" in md
    import pandas as pd

    table = pd.read_parquet(out / "instances.parquet")
    gold = table[table.predictor == "gold"]
    assert gold[["relation", "round", "subject", "subject_id", "gold", "gold_id"]].values.tolist() == [
        ["P19", 1, "W. T. Cosgrave", "Q465770", "Dublin", "Q1761"],
        ["P19", 2, "W. T. Cosgrave", "Q465770", "Dublin", "Q1761"],
        ["P47", 1, "Regional Municipality of Peel", "Q50811", "Toronto", "Q172"],
        ["P47", 2, "Regional Municipality of Peel", "Q50811", "Toronto", "Q172"]]


def test_the_instance_rule_counts_the_facts_it_leaves_out(lama_dir, tmp_path, capsys, monkeypatch):
    """P36's 170 facts whose labels are equal or contain each other (Colombo District/Colombo,
    Carlisle/Carlisle) are no instances: the load line, dropped.json, summary.md and instances.parquet
    count them; the scores stay those of the 533 instances."""
    import pandas as pd

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "--predictors", "freq",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert ("trex: 1 relation, read 703, kept 703, dropped 0; coherency leaves out 170 of them (one label "
            "contains the other: 155; subject and object labels are equal: 15), dropped for every predictor: "
            "533 facts remain") in err
    dropped = json.loads((out / "dropped.json").read_text())
    assert dropped == [
        {"corpus": "trex", "predictor": "freq", "relation": "P36", "reason": "one label contains the other",
         "n": 155, "unit": "facts"},
        {"corpus": "trex", "predictor": "freq", "relation": "P36", "reason": "subject and object labels are equal",
         "n": 15, "unit": "facts"}]
    summary = (out / "summary.md").read_text()
    assert ("- trex: 170 facts are no coherency instances (one label contains the other: 155; subject and object "
            "labels are equal: 15): every predictor drops them, not scored (see the dropped facts below).") in summary
    assert "| trex | freq | P36 | one label contains the other | 155 |" in summary
    rows = json.loads((out / "summary.json").read_text())
    got = {r["metric"]: r["value"] for r in rows if r["scope"] == "own" and r["group"] == "all"}
    # 12 of the 1066 rounds; Freq's subject "England" names Q21 and Q179876, so the fact of Q21 counts too
    assert got["n_instances"] == 533 and round(got["coherency"], 2) == 1.13
    table = pd.read_parquet(out / "instances.parquet")
    ruled = table[table["dropped"].notna()]
    assert len(ruled) == 170 and len(table) == 170 + 2 * 533
    carlisle = ruled[ruled["subject"] == "Carlisle"]
    assert list(zip(carlisle["gold"], carlisle["dropped"])) == [("Carlisle", "subject and object labels are equal")]


def test_a_sample_says_how_many_of_it_the_instance_rule_leaves_out(lama_dir, tmp_path, capsys, monkeypatch):
    """`--limit 20` asks 20 facts; the rule leaves out 6 of them, so the tables count 14."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "--predictors", "freq",
                            "--limit", "20", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert ("asking a sample of 20 (--limit 20, seed 0); coherency leaves out 6 of them (one label contains the "
            "other: 6), dropped for every predictor: 14 facts remain") in err
    assert [d["n"] for d in json.loads((out / "dropped.json").read_text())] == [6]
    assert "| trex | freq | 380 | 14 |" in (out / "summary.md").read_text()  # its answer space: P36's 380 objects


def test_second_step_records_repeat_the_first_steps_verdict_on_shared_ties(lama_dir, tmp_path, capsys, monkeypatch):
    """The gold KB answers Monaco's capital with La Colle, La Condamine and Larvotto tied: its first step is
    right (the truth is among them) and the second-step record, asked back from La Colle, says so too."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "--limit", "20",
                            "--predictors", "gold", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    seconds = [json.loads(line) for line in (out / "predictions/trex/gold/second/P36.jsonl").read_text().splitlines()]
    assert (len(seconds), sum(r["first_correct"] for r in seconds)) == (28, 28)
    monaco = next(r for r in seconds if r["first_answer"] == "La Colle")
    assert (monaco["first_truth"], monaco["first_correct"], monaco["coherent"]) == ("La Condamine", True, True)


def test_records_hold_the_extended_prompt_a_causal_lm_was_asked(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """With prompt=extended a causal LM scores "The capital of [X] is [Y]" and "[Y] is the capital of [X]": its
    records show those sentences, not the LAMA template "The capital of [X] is [Y] ." (also under `kbc run lama`)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "coherency", "--corpus", "trex", "--relations", "P36", "--limit", "5",
                            "--predictors", f"gpt2={tiny_models('gpt2')}", "--set", "gpt2.prompt=extended",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    records = [json.loads(line) for stage in ("first", "second")
               for line in (out / f"predictions/trex/gpt2/{stage}/P36.jsonl").read_text().splitlines()]
    asked = [r for r in records if "dropped" not in r]
    first = next(r for r in asked if r["uid"].endswith(":r1s1") and r["subject"] == "Achaemenid Empire")
    assert first["prompt"] == "The capital of Achaemenid Empire is [MASK]"
    back = next(r for r in asked if r["uid"] == first["uid"].replace(":r1s1", ":r1s2"))
    assert back["prompt"] == f"{first['answers'][0][0]} is the capital of [MASK]"
    assert len(asked) == 16 and not [r["prompt"] for r in asked if r["prompt"].endswith(" .")]
    lama = tmp_path / "lama"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P36", "--limit", "2", "--predictors",
                            f"gpt2={tiny_models('gpt2')}", "--set", "gpt2.prompt=extended", "--data-dir",
                            str(lama_dir), "--out", str(lama), "--quiet"], capsys)
    assert code == 0, err
    lines = (lama / "predictions/trex/gpt2/P36.jsonl").read_text().splitlines()
    prompts = [json.loads(line)["prompt"] for line in lines]
    assert all(p.startswith("The capital of ") and p.endswith(" is [MASK]") for p in prompts) and len(prompts) == 2


def test_the_left_out_note_counts_every_fact_of_the_directory(lama_dir, tmp_path, capsys, monkeypatch):
    """All of P36 with freq, then a predictor added with --limit 20: the scores still cover P36's 533 instances, so
    summary.md's note counts its 170 left-out facts, not the 6 of the last sample."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    argv = ["run", "coherency", "--corpus", "trex", "--relations", "P36", "--data-dir", str(lama_dir), "--out",
            str(out), "--quiet"]
    assert run_kbc([*argv, "--predictors", "freq"], capsys)[0] == 0
    code, _, err = run_kbc([*argv, "--predictors", "late=freq", "--limit", "20"], capsys)
    assert code == 0, err
    notes = [line for line in (out / "summary.md").read_text().splitlines() if "no coherency instances" in line]
    assert notes == ["- trex: 170 facts are no coherency instances (one label contains the other: 155; subject and "
                     "object labels are equal: 15): every predictor drops them, not scored (see the dropped facts "
                     "below)."]
    assert [(d["predictor"], d["n"]) for d in json.loads((out / "dropped.json").read_text())] == [
        ("freq", 155), ("freq", 15), ("late", 6)]


def test_one_fact_left_out_is_counted_in_the_singular():
    from types import SimpleNamespace

    from bridge.run.summaries import left_out_notes

    experiment = SimpleNamespace(name="coherency", left_out_record=lambda unit: "one label contains the other")
    units = [{"corpus": "trex", "uid": "P19:1", "dropped": "one label contains the other"},
             {"corpus": "trex", "uid": "P19:2", "dropped": None}]
    assert left_out_notes(experiment, units) == [
        "trex: 1 fact is no coherency instance (one label contains the other: 1): every predictor drops it, not scored "
        "(see the dropped facts below)."]
