"""Statement scoring matches lm-pub-quiz (0.3.3) on the same tiny models, instance by instance.

Both run on tiny random BERT, RoBERTa and GPT-2 models with the real tokenizers over a BEAR subset (one
relation whose answers are one-word country names, one with multi-word person names, an [X]-first and a
[Y]-first template): every option's score agrees within 1e-4 (float32), and the predicted option and the
accuracy are identical, for every PLL variant and reduction lm-pub-quiz offers.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from lm_fixtures import build_model, tokenizer_for

from eval.bear import load_bear
from lm.causal import CausalLMScorer
from lm.masked import MaskedLMScorer
from lm.statement import PLL_VARIANTS, REDUCTIONS, CausalStatementScorer, MaskedStatementScorer, fill

BEAR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bear"
# relation -> (instance indices, templates): P412's labels are lower-case and hyphenated ("bass-baritone"),
# P30's span two words, P162's template opens with [Y] (lm-pub-quiz upper-cases the answer there) and its
# labels hold quotes ('"Weird Al" Yankovic'), P175's instance 15 has the subject " Crazy" (a leading space)
SUBSET = {"P412": ([0, 1], (0, 2)), "P30": ([0, 1], (0,)), "P162": ([0], (1,)), "P175": ([15], (0,))}


@pytest.fixture(scope="module")
def subset():
    if not (BEAR / "BEAR" / "metadata_relations.json").is_file():
        pytest.fail(f"BEAR data not staged at {BEAR}")
    corpus = load_bear("bear", BEAR, list(SUBSET))
    by_rel = corpus.by_relation()
    out = []
    for rel_id, (indices, templates) in SUBSET.items():
        rel = corpus.relations[rel_id]
        facts = [by_rel[rel_id][i] for i in indices]
        out += [(rel.templates[t], [e.label for e in rel.answer_space], facts) for t in templates]
    return out


def _lpq(model, kind: str, **kw):
    from lm_pub_quiz import Evaluator

    logging.getLogger("lm_pub_quiz").setLevel(logging.ERROR)
    return Evaluator.from_model(model, model_type="CLM" if kind == "gpt2" else "MLM", tokenizer=tokenizer_for(kind),
                                **kw)


def _lpq_scores(evaluator, template: str, answers: list[str], facts) -> dict[str, list[list[float]]]:
    """lm-pub-quiz's option scores per reduction: its token scores (one pass), reduced by its own functions."""
    tokens = [evaluator.evaluate_instance(template=template, answers=answers, subject=f.subject.label,
                                          reduction=None, batch_size=64) for f in facts]
    return {red: [[evaluator._get_reduction_function(red)([s for _, s in scored]) for scored, _ in row]
                  for row in tokens] for red in REDUCTIONS}


def _compare(ref: list[list[float]], got: list[list[float]], gold: list[int]) -> None:
    assert len(ref) == len(got)
    for r, g in zip(ref, got):
        assert len(r) == len(g)
        np.testing.assert_allclose(g, r, atol=1e-4, rtol=0)
        assert r.index(max(r)) == g.index(max(g))  # lm-pub-quiz's prediction: the first best option
    acc_ref = np.mean([r.index(max(r)) == a for r, a in zip(ref, gold)])
    acc_got = np.mean([g.index(max(g)) == a for g, a in zip(got, gold)])
    assert acc_ref == acc_got


def test_subset_has_both_orders(subset):
    templates = [t for t, _, _ in subset]
    assert any(t.startswith("[X]") for t in templates) and any(t.startswith("[Y]") for t in templates)
    assert any(f.subject.label == " Crazy" for _, _, facts in subset for f in facts)


@pytest.mark.parametrize(("kind", "variants"), [("bert-cased", PLL_VARIANTS), ("roberta", ("within_word_l2r",))])
def test_masked_pll_matches_lm_pub_quiz(subset, kind, variants):
    tokenizer = tokenizer_for(kind)
    model = build_model(kind, tokenizer).eval()
    engine = MaskedLMScorer(model, tokenizer, fingerprint=f"tiny-{kind}")
    totals = {}
    for pll in variants:
        evaluator = _lpq(model, kind, pll_metric=pll)
        ours = MaskedStatementScorer(engine, pll)
        for template, answers, facts in subset:
            ref = _lpq_scores(evaluator, template, answers, facts)
            for reduction in REDUCTIONS:
                got = [ours.score([fill(template, f.subject.label, a, "lm-pub-quiz") for a in answers], reduction)
                       for f in facts]
                _compare(ref[reduction], got, [f.answer_idx for f in facts])
                totals[pll] = totals.get(pll, 0.0) + float(np.sum(got))
        if pll == "answer_l2r+word_l2r":
            assert ours.copies_run < ours.copies_asked  # copies with the whole answer masked are shared
    # the variants mask differently, so they score differently
    assert len({round(v, 3) for v in totals.values()}) == len(variants), totals


def test_causal_matches_lm_pub_quiz(subset):
    tokenizer = tokenizer_for("gpt2")
    model = build_model("gpt2", tokenizer).eval()
    evaluator = _lpq(model, "gpt2")
    ours = CausalStatementScorer(CausalLMScorer(model, tokenizer, fingerprint="tiny-gpt2"))
    assert ours.scorer.path == "shared-prefix"
    for template, answers, facts in subset:
        ref = _lpq_scores(evaluator, template, answers, facts)
        for reduction in REDUCTIONS:
            # one token tree for all instances of the relation and template
            got = ours.score_groups([[fill(template, f.subject.label, a, "lm-pub-quiz") for a in answers]
                                     for f in facts], reduction)
            _compare(ref[reduction], got, [f.answer_idx for f in facts])


def test_fill_keeps_labels_unless_compat():
    assert fill("[Y] served as the head of government for [X].", "Kosovo", "de Gaulle").text == (
        "de Gaulle served as the head of government for Kosovo.")
    assert fill("[Y] served as the head of government for [X].", "Kosovo", "de Gaulle", "lm-pub-quiz").text == (
        "De Gaulle served as the head of government for Kosovo.")
    statement = fill("the capital of [X] is [Y].", "Chile", "[X] City")
    assert (statement.text, statement.answer) == ("The capital of Chile is [X] City.", (24, 32))
    # a label with a leading space (BEAR P175 " Crazy"): kept verbatim only under compat
    assert fill("[X] is performed by [Y].", " Crazy", "Gnarls Barkley").text == "Crazy is performed by Gnarls Barkley."
    assert fill("[Y] is the performer of [X].", " Crazy", "Gnarls Barkley", "lm-pub-quiz").text == (
        "Gnarls Barkley is the performer of  Crazy.")
