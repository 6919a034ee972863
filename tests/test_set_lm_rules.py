"""Set rules for causal and seq2seq LMs: the softmax of their scores over the answers they rank, cut by the rule."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from cli_support import run_kbc
from lm_fixtures import tiny_models, tiny_t5_dir  # noqa: F401  (fixture)

from bridge.predictors.lm import _set_objects
from eval.lmkbc import load_lmkbc
from eval.set_answers import label_set
from eval.set_rules import LOG_NORM, log_norm, parse_set_rule
from eval.types import Answer, Prediction

REL = "companyTradesAtStockExchange"


def _records(out, name):
    path = out / "predictions" / "lmkbc2024" / name / f"{REL}.jsonl"
    return {r["subject"]: r for r in map(json.loads, path.read_text().splitlines())}


def _sentence_logliks(model_dir, sentences):
    """Each sentence's log-likelihood after GPT-2's <|endoftext|>, one plain forward pass per sentence."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    with torch.inference_mode():
        for text in sentences:
            ids = torch.tensor([[tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]]])
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
            out.append(float(logp.gather(-1, ids[0, 1:, None]).sum()))
    return out


def test_causal_and_seq2seq_lms_answer_sets(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    gpt, t5 = tiny_models("gpt2"), tiny_t5_dir(tmp_path)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--relations", REL, "--limit", "3", "--predictors", f"g={gpt}",
                            f"t={t5}", "--set", "g.set=threshold:0.1", "--set", "t.set=threshold:0.2", "--data-dir",
                            str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    g, t = _records(out, "g"), _records(out, "t")
    # GPT-2 ranks the relation's 36 stock exchanges (train and val, labels and surface forms) by the likelihood of
    # the filled template; the softmax over all of them is cut at 0.1
    assert {s: r["predicted"] for s, r in g.items()} == {
        "United Wire Factories Co.": ["Q2509254", "Q82059", "Q2632892"],
        "Toei Animation": ["Q82059", "Q2632892"],
        "McAfee, LLC": ["Q2632892", "Q82059"]}
    assert all(r["set_rule"] == "threshold:0.1" for r in g.values())
    corpus = load_lmkbc(lama_dir, "val", [REL])
    candidates = _set_objects(SimpleNamespace(corpus=corpus, data_dir=lama_dir))[REL]
    assert len(candidates) == 36 and candidates[:3] == ["New York Stock Exchange", "London Stock Exchange",
                                                        "Tokyo Stock Exchange"]
    template = corpus.relations[REL].template
    mcafee = g["McAfee, LLC"]
    ll = _sentence_logliks(gpt, [template.replace("[X]", "McAfee, LLC").replace("[Y]", c) for c in candidates])
    norm = log_norm(ll)
    probs = sorted((math.exp(x - norm) for x in ll), reverse=True)
    assert [p for _, p in mcafee["ranked"][:3]] == pytest.approx(probs[:3], abs=1e-5)
    assert [p > 0.1 for p in probs[:3]] == [True, True, False]
    # McAfee's gold is Nasdaq (Q82059): P 1/2, R 1, F1 2/3; the other two miss
    rows = {r["metric"]: r["value"] for r in json.loads((out / "summary.json").read_text())
            if r["predictor"] == "g" and r["scope"] == "own" and r["group"] == "all"}
    assert rows["macro-f1"] == pytest.approx(2 / 9, abs=1e-12) and rows["avg-preds"] == pytest.approx(7 / 3)

    # the tiny T5 writes byte noise: a span's probability is the softmax over the distinct spans of its beams
    assert {s: r["predicted"] for s, r in t.items()} == {
        "United Wire Factories Co.": [], "Toei Animation": ["\x18"], "McAfee, LLC": []}
    for record in t.values():
        if record["ranked"]:
            assert sum(p for _, p in record["ranked"]) == pytest.approx(1.0, abs=1e-9)
        assert record["predicted"] == [item for item, p in record["ranked"] if p > 0.2]
    assert t["McAfee, LLC"]["ranked"][0][1] == pytest.approx(0.193, abs=1e-3)
    lines = [json.loads(x) for x in (out / "submission" / "t.partial.jsonl").read_text().splitlines()]
    assert [x["ObjectEntitiesID"] for x in lines] == [t[x["SubjectEntity"]]["predicted"] for x in lines]


def test_normalised_scores_in_lama_set_answers():
    """`--answers set` reads an LM's normaliser too: log scores -1, -2, -3 of a ranking whose answers sum to
    e^-1 + e^-2 + e^-3 give probabilities 0.665, 0.245, 0.090."""
    answers = (Answer("a", -1.0), Answer("b", -2.0), Answer("c", -3.0))
    pred = Prediction("q", answers, extra={LOG_NORM: log_norm([-1.0, -2.0, -3.0])})
    assert label_set(pred, parse_set_rule("threshold:0.2")) == ["a", "b"]
    assert label_set(pred, parse_set_rule("threshold:0.5")) == ["a"]
    # without the normaliser the same scores read as probabilities e^-1 = 0.37, e^-2 = 0.14, e^-3 = 0.05
    assert label_set(Prediction("q", answers), parse_set_rule("threshold:0.2")) == ["a"]
    assert log_norm([]) is None


def test_causal_lm_sets_on_lama(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    """`kbc run lama --answers set`: GPT-2's typed querying over P1412's 51 languages, softmax cut at 0.16."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P1412", "--limit", "3", "--predictors",
                            f"g={tiny_models('gpt2')}", "--set", "g.set=threshold:0.16", "--answers", "set",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    path = out / "predictions" / "trex" / "g" / "P1412.jsonl"
    records = {r["subject"]: r for r in map(json.loads, path.read_text().splitlines())}
    assert {s: (r["set"], r["set_gold"]) for s, r in records.items()} == {
        "Jacques Poulin": (["Czech", "French"], ["French"]), "Jorge Arvizu": ([], ["Spanish"]),
        "Pentti Linkola": (["French", "Finnish"], ["Finnish"])}
    for r in records.values():
        assert r["extra"]["n_candidates"] == 51
        assert r["set"] == [a[0] for a in r["answers"] if math.exp(a[1] - r["extra"][LOG_NORM]) > 0.16]
    rows = {r["metric"]: r["value"] for r in json.loads((out / "summary.json").read_text())
            if (r["scope"], r["setting"], r["group"]) == ("own", "raw", "P1412") and r["metric"].startswith("set")}
    # P 1/2, 1 (nothing predicted), 1/2; R 1, 0, 1; F1 2/3, 0, 2/3
    assert rows == pytest.approx({"set-p": 200 / 3, "set-r": 200 / 3, "set-f1": 400 / 9}, abs=1e-9)
