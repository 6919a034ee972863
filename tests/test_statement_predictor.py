"""StatementPredictor: BEAR queries ranked over the relation's answer space, gold ranks as lm-pub-quiz's scores give."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lm_fixtures import build_model, tokenizer_for

from eval.bear import load_bear
from eval.queries import make_queries
from lm.causal import CausalLMScorer
from lm.masked import MaskedLMScorer
from lm.statement import CausalStatementScorer, MaskedStatementScorer
from lm.statement_predictor import NOT_IN_SPACE, StatementPredictor

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"


@pytest.fixture(scope="module")
def corpus():
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    return load_bear("bear", BEAR, ["P30", "P412"])


def _queries(corpus, n: int = 3):
    out = []
    for pairs in make_queries(corpus).values():
        out += [(dataclasses.replace(q, targets=(f.object.label,)), f) for q, f in pairs[:n]]
    return out


def _lpq_rank(evaluator, query, answers, gold: int) -> tuple[int, str]:
    """Gold rank (1 + options scoring higher + equal options before it) and top option, from lm-pub-quiz."""
    scores = evaluator.evaluate_instance(template=query.template, answers=answers, subject=query.known.label,
                                         reduction="sum", batch_size=64)
    higher = sum(s > scores[gold] for s in scores) + sum(s == scores[gold] for s in scores[:gold])
    return 1 + higher, answers[scores.index(max(scores))]


@pytest.mark.parametrize("kind", ["bert-cased", "gpt2"])
def test_gold_ranks_match_lm_pub_quiz(corpus, kind):
    from lm_pub_quiz import Evaluator

    tokenizer = tokenizer_for(kind)
    model = build_model(kind, tokenizer).eval()
    if kind == "gpt2":
        scorer = CausalStatementScorer(CausalLMScorer(model, tokenizer, fingerprint="tiny"))
    else:
        scorer = MaskedStatementScorer(MaskedLMScorer(model, tokenizer, fingerprint="tiny"))
    answers = {r: [e.label for e in rel.answer_space] for r, rel in corpus.relations.items()}
    predictor = StatementPredictor("tiny", scorer, answers, compat="lm-pub-quiz")
    evaluator = Evaluator.from_model(model, model_type="CLM" if kind == "gpt2" else "MLM",
                                     tokenizer=tokenizer_for(kind))
    pairs = _queries(corpus)
    predictions = predictor.predict([q for q, _ in pairs], depth=100)
    for (query, fact), pred in zip(pairs, predictions):
        options = answers[fact.relation]
        assert len(pred.answers) == len(options) and pred.extra["n_candidates"] == len(options)
        assert [a.score for a in pred.answers] == sorted((a.score for a in pred.answers), reverse=True)
        rank, top = _lpq_rank(evaluator, query, options, fact.answer_idx)
        assert pred.target_ranks == {fact.object.label: rank}
        assert pred.answers[0].label == top
    assert len({p.answers[0].label for p in predictions}) > 1 or len(predictions) == 1


def test_objects_outside_the_answer_space_are_dropped(corpus):
    tokenizer = tokenizer_for("bert-cased")
    scorer = MaskedStatementScorer(MaskedLMScorer(build_model("bert-cased", tokenizer).eval(), tokenizer,
                                                  fingerprint="tiny"))
    predictor = StatementPredictor("tiny", scorer, {"P30": ["Asia", "Europe"]})
    kept, dropped = predictor.filter_facts(corpus.facts, "object")
    expected = sum(f.relation == "P30" and f.object.label in ("Asia", "Europe") for f in corpus.facts)
    assert len(kept) == expected and expected > 0
    assert dropped == {NOT_IN_SPACE: len(corpus.facts) - expected}
    assert (predictor.answer_space_size("P30"), predictor.answer_space_size("P412")) == (2, 0)


@pytest.mark.parametrize(("compat", "prompts"), [
    (None, ["Crazy was performed by [MASK].", "My Only Wish was performed by [MASK].",
            "[MASK] is the performer of Crazy."]),
    ("lm-pub-quiz", [" Crazy was performed by [MASK].", "My Only Wish  was performed by [MASK].",
                     "[MASK] is the performer of  Crazy."]),
])
def test_the_record_prompt_is_the_statement_scored(compat, prompts):
    """Labels with stray spaces (P175's " Crazy", "My Only Wish ") are stripped in the statements scored, so the
    record's prompt is stripped too; lm-pub-quiz's way keeps them in both."""
    from eval.types import asked_prompt
    from lm.statement import Statement

    tokenizer = tokenizer_for("gpt2")
    scorer = CausalStatementScorer(CausalLMScorer(build_model("gpt2", tokenizer).eval(), tokenizer,
                                                  fingerprint="tiny"))
    corpus = load_bear("bear", BEAR, ["P175"])
    answers = {r: [e.label for e in rel.answer_space] for r, rel in corpus.relations.items()}
    pairs = [(q, f) for q, f in make_queries(corpus)["P175"] if f.uid in ("P175:15", "P175:17")]
    second = load_bear("bear", BEAR, ["P175"], template=1)
    pairs += [(q, f) for q, f in make_queries(second)["P175"] if f.uid == "P175:15"]
    predictor = StatementPredictor("tiny", scorer, answers, compat=compat)
    predictions = predictor.predict([q for q, _ in pairs], depth=100)
    assert [asked_prompt(q, p) for (q, _), p in zip(pairs, predictions)] == prompts
    for prompt, pred in zip(prompts, predictions):
        top = pred.answers[0]
        again = scorer.score([Statement(prompt.replace("[MASK]", top.label), (0, 0))])[0]
        assert again == pytest.approx(top.score, abs=1e-4)  # one statement alone, not in the token tree
