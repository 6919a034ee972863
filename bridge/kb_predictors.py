"""Factories for the KB-side predictors."""

from __future__ import annotations

from bridge.options import declares
from bridge.registry import PredictorContext
from kb.freq import FreqPredictor


@declares()
def make_freq(name: str, ctx: PredictorContext) -> FreqPredictor:
    return FreqPredictor(ctx.corpus.facts)
