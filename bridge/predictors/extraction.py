"""Factories for `re-naive` and `re-oracle` (LAMA's RE_n and RE_o): the extracted KB, built on first use.

The KB is always built from the whole corpus of the data version (not the `--relations` or
`--limit` subset of a run), so every run over the same data reads the same graphs.
"""

from __future__ import annotations

import sys

from bridge.predictors.registry import PredictorContext
from bridge.run.options import declares
from eval.corpora import load_corpus
from kb.extraction.kb_build import ensure_re_kb
from kb.extraction.predictor import ExtractedKBPredictor
from kb.store import entity_iri


def _make(name: str, ctx: PredictorContext, graph: str) -> ExtractedKBPredictor:
    full = load_corpus(ctx.corpus.name, ctx.data_dir)
    report = ensure_re_kb(ctx.store, full, ctx.cache_dir, progress=ctx.progress)
    if report.get("built"):
        print(f"{ctx.corpus.name}: extracted KB built in {report.get('seconds_total')} s "
              f"(extraction {report.get('seconds_extract')} s)", file=sys.stderr, flush=True)
    labels = {}
    for fact in full.facts:
        labels.setdefault(str(entity_iri(fact.subject)), fact.subject.label)
        labels.setdefault(str(entity_iri(fact.object)), fact.object.label)
    info = {"build": report.get("tag"), "extractor": report.get("settings")}
    return ExtractedKBPredictor(name, ctx.store, graph, labels, info)


@declares()
def make_re_naive(name: str, ctx: PredictorContext) -> ExtractedKBPredictor:
    return _make(name, ctx, "re-naive")


@declares()
def make_re_oracle(name: str, ctx: PredictorContext) -> ExtractedKBPredictor:
    return _make(name, ctx, "re-oracle")
