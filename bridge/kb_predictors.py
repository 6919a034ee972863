"""Factories for the KB-side predictors."""

from __future__ import annotations

from bridge.options import declares
from bridge.registry import PredictorContext
from kb.freq import FreqPredictor
from kb.gold import GoldKBPredictor


@declares()
def make_freq(name: str, ctx: PredictorContext) -> FreqPredictor:
    return FreqPredictor(ctx.corpus.facts)


@declares()
def make_gold(name: str, ctx: PredictorContext) -> GoldKBPredictor:
    """Reads the per-relation graphs the runner filters by (`gold-<corpus>-<relation>`), loading any missing."""
    from bridge.run_config import relation_versions

    corpus = ctx.corpus
    if corpus.facts and corpus.facts[0].cloze:
        return GoldKBPredictor(name, ctx.store, {})
    versions = relation_versions(corpus)
    graphs = {rel: ctx.store.ensure_corpus(f"{corpus.name}-{rel}", versions[rel], facts)
              for rel, facts in corpus.by_relation().items()}
    return GoldKBPredictor(name, ctx.store, graphs)
