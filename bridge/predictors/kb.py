"""Factories for the KB-side predictors."""

from __future__ import annotations

import logging

from bridge.predictors.registry import PredictorContext
from bridge.run.options import SET_OPTION, declares
from eval.answer_space import has_closed_spaces
from eval.lmkbc import load_lmkbc
from kb.freq import ANSWER_IDS, ANSWER_IDS_NOW, ID_SCORED, RELATIONLESS, FreqPredictor
from kb.gold import GoldKBPredictor
from kb.set_predictors import FreqSetPredictor, GoldSetPredictor

log = logging.getLogger("kbc")


@declares(SET_OPTION)
def make_freq(name: str, ctx: PredictorContext) -> FreqPredictor | FreqSetPredictor:
    """LAMA's Freq; on a set-valued corpus (LM-KBC), Freq over its train split."""
    if is_set_corpus(ctx.corpus):
        return FreqSetPredictor(load_lmkbc(ctx.data_dir, "train", list(ctx.corpus.relations)).facts)
    predictor = FreqPredictor(ctx.corpus.facts)
    # on LAMA, ties broken by file order are Freq's own definition; on closed answer spaces they are all it has
    flat = predictor.flat_relations() if has_closed_spaces(ctx.corpus.relations) else []
    if flat:
        log.warning("%s / %s: in %d of %d relations every object is equally frequent (%s): Freq's ranking there is "
                    "the data file's order, a chance-level baseline, not a frequency prior", ctx.corpus.name, name,
                    len(flat), len(ctx.corpus.relations), ", ".join(flat[:5]) + (", ..." if len(flat) > 5 else ""))
    return predictor


# records before "unasked" ranked SQuAD's cloze questions under its placeholder relation: a rerun must never mix them
# records before "answer_ids" gave an answer the id of the first entity of its label only (P1376's "England": Q21, not
# Q179876 it counts four times of five): coherency, which scores by id, must never mix them
make_freq.identity_extra = {"unasked": "dropped", ANSWER_IDS: ANSWER_IDS_NOW}  # type: ignore[attr-defined]
make_freq.ids_scored = (ID_SCORED, "gave each answer the id of the first entity of its label only (P1376's "  # type: ignore[attr-defined]
                        "\"England\": Q21, although Q179876 holds four of its five counts), so a first step was "
                        "judged against that one entity")
make_freq.unasked = (RELATIONLESS, "ranked each SQuAD question's answers by frequency under one placeholder "  # type: ignore[attr-defined]
                     "relation; use another --out to leave them out as not applicable, as LAMA's Freq")


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
    graphs = ctx.store.ensure_relations(corpus.name, versions, corpus.by_relation())
    return GoldKBPredictor(name, ctx.store, graphs)
