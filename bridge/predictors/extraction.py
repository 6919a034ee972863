"""Factories for `re-naive` and `re-oracle` (LAMA's RE_n and RE_o): the extracted KB, built on first use.

The KB is always built from the whole corpus of the data version (not the `--relations` or
`--limit` subset of a run), so every run over the same data reads the same graphs. A corpus with closed
answer spaces (BEAR) has no evidence sentences: its facts are asked of the KB extracted from LAMA's T-REx
(`eval.answer_space.lama_data_for`), by Wikidata id, and the answers are cut to each relation's answer space.
"""

from __future__ import annotations

import sys

from bridge.predictors.registry import PredictorContext
from bridge.run.options import declares
from eval.answer_space import AnswerSpacePredictor, lama_data_for
from eval.corpora import load_corpus
from kb.extraction.kb_build import ensure_re_kb
from kb.extraction.predictor import ExtractedKBPredictor
from kb.store import entity_iri


def _closed(ctx: PredictorContext) -> bool:
    """Every relation has its own answer space (BEAR)."""
    rels = ctx.corpus.relations
    return bool(rels) and all(r.answer_space for r in rels.values())


def _make(name: str, ctx: PredictorContext, graph: str) -> ExtractedKBPredictor | AnswerSpacePredictor:
    closed = _closed(ctx)
    full = load_corpus("trex", lama_data_for(ctx.data_dir)) if closed else load_corpus(ctx.corpus.name, ctx.data_dir)
    report = ensure_re_kb(ctx.store, full, ctx.cache_dir, progress=ctx.progress)
    if report.get("built"):
        print(f"{ctx.corpus.name}: extracted KB built in {report.get('seconds_total')} s "
              f"(extraction {report.get('seconds_extract')} s)", file=sys.stderr, flush=True)
    labels = {}
    for fact in full.facts:
        labels.setdefault(str(entity_iri(fact.subject)), fact.subject.label)
        labels.setdefault(str(entity_iri(fact.object)), fact.object.label)
    info = {"build": report.get("tag"), "extractor": report.get("settings")}
    if closed:
        info["text"] = "LAMA T-REx (the corpus has no evidence sentences)"
        return AnswerSpacePredictor(ExtractedKBPredictor(name, ctx.store, graph, labels, info), ctx.corpus.relations)
    return ExtractedKBPredictor(name, ctx.store, graph, labels, info)


@declares()
def make_re_naive(name: str, ctx: PredictorContext) -> ExtractedKBPredictor | AnswerSpacePredictor:
    return _make(name, ctx, "re-naive")


@declares()
def make_re_oracle(name: str, ctx: PredictorContext) -> ExtractedKBPredictor | AnswerSpacePredictor:
    return _make(name, ctx, "re-oracle")
