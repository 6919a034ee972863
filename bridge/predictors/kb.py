"""Factories for the KB-side predictors."""

from __future__ import annotations

from bridge.predictors.registry import PredictorContext
from bridge.run.options import SET_OPTION, declares
from eval.lmkbc import load_lmkbc
from kb.freq import FreqPredictor
from kb.gold import GoldKBPredictor
from kb.set_predictors import FreqSetPredictor, GoldSetPredictor


@declares(SET_OPTION)
def make_freq(name: str, ctx: PredictorContext) -> FreqPredictor | FreqSetPredictor:
    """LAMA's Freq; on a set-valued corpus (LM-KBC), Freq over its train split."""
    if is_set_corpus(ctx.corpus):
        return FreqSetPredictor(load_lmkbc(ctx.data_dir, "train", list(ctx.corpus.relations)).facts)
    return FreqPredictor(ctx.corpus.facts)


def is_set_corpus(corpus) -> bool:
    """Whether the corpus holds gold sets (`SetFact`) rather than one gold object per fact."""
    return bool(corpus.facts) and getattr(corpus.facts[0], "objects", None) is not None


@declares(SET_OPTION)
def make_gold(name: str, ctx: PredictorContext) -> GoldKBPredictor | GoldSetPredictor:
    """Reads the per-relation graphs the runner filters by (`gold-<corpus>-<relation>`), loading any missing;
    on a set-valued corpus, the gold set of each subject and relation."""
    from eval.lama import relation_versions

    corpus = ctx.corpus
    if is_set_corpus(corpus):
        return GoldSetPredictor(corpus.facts)
    if corpus.facts and corpus.facts[0].cloze:
        return GoldKBPredictor(name, ctx.store, {})
    versions = relation_versions(corpus)
    graphs = {rel: ctx.store.ensure_corpus(f"{corpus.name}-{rel}", versions[rel], facts)
              for rel, facts in corpus.by_relation().items()}
    return GoldKBPredictor(name, ctx.store, graphs)
