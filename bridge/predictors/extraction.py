"""Factories for `re-naive` and `re-oracle` (LAMA's RE_n and RE_o): the extracted KB, built on first use.

The KB is always built from the whole corpus of the data version (not the `--relations` or
`--limit` subset of a run), so every run over the same data reads the same graphs. A corpus with closed
answer spaces (BEAR) has no evidence sentences: its facts are asked of the KB extracted from LAMA's T-REx
(`eval.answer_space.lama_data_for`), by Wikidata id, and the answers are cut to each relation's answer space.
LM-KBC (sets, no text either) asks the same KB each relation's Wikidata property (`eval.lmkbc.WIKIDATA`); a
property the KB holds no triple of (one outside LAMA's T-REx relations, or one whose T-REx facts have no evidence
sentences) answers empty sets there, which the run log says once.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from bridge.predictors.kb import is_set_corpus
from bridge.predictors.registry import PredictorContext
from bridge.run.options import SET_OPTION, declares
from eval.answer_space import AnswerSpacePredictor, has_closed_spaces, lama_data_for
from eval.corpora import load_corpus
from eval.datadir import resolve_data_dir
from eval.errors import DataError
from eval.lmkbc import WIKIDATA
from kb.extraction.kb_build import ensure_re_kb
from kb.extraction.predictor import ExtractedKBPredictor
from kb.set_predictors import ExtractedSetPredictor
from kb.store import entity_iri

log = logging.getLogger("kbc")
Made = ExtractedKBPredictor | AnswerSpacePredictor | ExtractedSetPredictor
# said after the build notice: a run asking a few facts still waits for the whole corpus's extraction
WHY_WHOLE = "; --relations and --limit do not shrink it: every run over this data reads the same graphs"


def _lama_for_sets(ctx: PredictorContext, name: str) -> Path:
    """The LAMA copy whose T-REx sentences the KB of an LM-KBC run is extracted from: the run's data folder when
    it is one (LM-KBC beside it), else one beside it or in $KBC_DATA."""
    try:
        return resolve_data_dir(ctx.data_dir)
    except DataError:
        pass
    try:
        return lama_data_for(ctx.data_dir)
    except DataError:
        raise DataError(f"{name} on {ctx.corpus.name} asks the KB extracted from LAMA T-REx: no LAMA data in "
                        f"{ctx.data_dir}, beside it or in $KBC_DATA; pass --data-dir the LAMA copy (with "
                        f"{ctx.corpus.name}/ beside it)") from None


def _make(name: str, ctx: PredictorContext, graph: str) -> Made:
    sets = is_set_corpus(ctx.corpus)
    closed = not sets and has_closed_spaces(ctx.corpus.relations)
    if sets or closed:
        full = load_corpus("trex", _lama_for_sets(ctx, name) if sets else lama_data_for(ctx.data_dir))
    else:
        full = load_corpus(ctx.corpus.name, ctx.data_dir)
    report = ensure_re_kb(ctx.store, full, ctx.cache_dir, progress=ctx.progress, why=WHY_WHOLE)
    if report.get("built"):
        print(f"{ctx.corpus.name}: extracted KB built in {report.get('seconds_total')} s "
              f"(extraction {report.get('seconds_extract')} s)", file=sys.stderr, flush=True)
    labels = {}
    for fact in full.facts:
        labels.setdefault(str(entity_iri(fact.subject)), fact.subject.label)
        labels.setdefault(str(entity_iri(fact.object)), fact.object.label)
    info = {"build": report.get("tag"), "extractor": report.get("settings")}
    if sets or closed:
        info["text"] = "LAMA T-REx (the corpus has no evidence sentences)"
    kb = ExtractedKBPredictor(name, ctx.store, graph, labels, info)
    if sets:
        # what the graph holds, not what T-REx lists: a relation without evidence sentences yields no triple
        predictor = ExtractedSetPredictor(kb, WIKIDATA, ctx.store.relations(graph))
        uncovered = predictor.uncovered(ctx.corpus.relations)
        if uncovered:
            log.warning("%s / %s: the KB extracted from LAMA T-REx holds no %s: %s answer empty sets",
                        ctx.corpus.name, name, ", ".join(WIKIDATA[rel][0] for rel in uncovered), ", ".join(uncovered))
        return predictor
    return AnswerSpacePredictor(kb, ctx.corpus.relations) if closed else kb


@declares(SET_OPTION)
def make_re_naive(name: str, ctx: PredictorContext) -> Made:
    """LAMA's RE_n; on a set-valued corpus (LM-KBC), every object its graph holds for the pair."""
    return _make(name, ctx, "re-naive")


@declares(SET_OPTION)
def make_re_oracle(name: str, ctx: PredictorContext) -> Made:
    """LAMA's RE_o; on a set-valued corpus (LM-KBC), every object its graph holds for the pair."""
    return _make(name, ctx, "re-oracle")


# records before "answers" kept one answer per label, carrying the smaller id compared as a string (Lisbon, New
# Hampshire Q2310637 for Lisbon Q597), and ordered namesakes so: a rerun must never mix them
RE_IDENTITY = {"answers": "one per entity"}
make_re_naive.identity_extra = make_re_oracle.identity_extra = RE_IDENTITY  # type: ignore[attr-defined]
