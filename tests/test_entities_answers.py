"""Entity-level answers: the [MASK] output scored against mapped entity vectors ranks a planted
entity first, so a multi-token object ("Barack Obama") is answered as one item."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from record_compare import assert_same_answers
from test_entities_support import tiny_bert, trained_w2v

from eval.metrics import gold_rank
from eval.types import Entity, Query
from lm.entities.ebert import InputBuilder, MaskedScorer
from lm.entities.embeddings import load_embeddings
from lm.entities.entity_answers import EntityAnswerer, mapped_entities
from lm.entities.faiss_index import EntityIndex, IndexSpec, brute_force
from lm.entities.mapping import fit_to_embeddings
from lm.entities.model import load_masked_lm


@pytest.fixture(scope="module")
def setup(shared_data):
    lm = load_masked_lm(str(tiny_bert(shared_data)))
    emb = load_embeddings(trained_w2v(shared_data))
    lmap = fit_to_embeddings(emb.word_vectors, emb.words, emb.lowercase, lm.tokenizer.get_vocab(),
                             lm.input_embeddings(), "procrustes")
    return lm, emb, lmap


def test_mapped_entities_is_the_map_applied_to_every_row(setup):
    _, emb, lmap = setup
    mapped = mapped_entities(emb.entity_vectors, lmap.W, chunk=1000)
    assert np.allclose(mapped, emb.entity_vectors @ lmap.W, atol=1e-5)


def test_planted_multi_token_entity_ranks_first(setup):
    lm, emb, lmap = setup
    builder = InputBuilder(lm.tokenizer)
    query = Query("q", "q", "trex", "P6", Entity("Alaska"), "object", "The head of [X] is [Y] .")
    subject = emb.entity_row("Alaska")
    vectors = emb.entity_vectors.copy()
    mapped0 = mapped_entities(vectors, lmap.W)
    scorer = MaskedScorer(lm.model, mapped0, lm.tokenizer.pad_token_id)
    _, hidden = scorer.run([builder.build(query, "replace", subject)], want_hidden=True)
    h = hidden[0]
    # the output layer scores word pieces as <h, E_B(t)>: check the captured vector is that input
    logits = lm.model.get_output_embeddings()(torch.from_numpy(hidden)).detach().numpy()[0]
    assert np.allclose(logits, lm.input_embeddings() @ h + lm.model.get_output_embeddings().bias.detach().numpy(),
                       atol=1e-4)
    planted = emb.entity_row("Barack Obama")
    vectors[planted] = 50.0 * h @ lmap.W.T  # Procrustes W is orthogonal: W·F(e) = 50 h
    mapped = mapped_entities(vectors, lmap.W)
    assert np.allclose(mapped[planted], 50.0 * h, atol=1e-3)
    index = EntityIndex.build(mapped, IndexSpec("flat"))
    answerer = EntityAnswerer(index, lambda row: (emb.titles[row], "Q76" if row == planted else None))
    answers = answerer.answer(hidden, 10, [subject])[0]
    assert answers[0].label == "Barack Obama" and answers[0].id == "Q76"
    assert gold_rank(answers, "Barack Obama") == 1  # the runner scores a multi-token object as one answer
    assert "Alaska" not in [a.label for a in answers]  # the subject itself is excluded
    # the index's sums and NumPy's are grouped otherwise, and the vectors trained in parallel differ from run to
    # run: two entities whose scores float32 cannot tell apart may come in either order, or either at the cut
    ref_scores, ref_rows = brute_force(mapped, hidden, 12)
    ref = [[emb.titles[r], float(v), "Q76" if r == planted else None]
           for v, r in zip(ref_scores[0], ref_rows[0]) if r != subject][:10]
    assert_same_answers([[a.label, a.score, a.id] for a in answers], ref, "entity answers")
    without = answerer.answer(hidden, 10, [planted])[0]
    assert "Barack Obama" not in [a.label for a in without] and len(without) == 10
