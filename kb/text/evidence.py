"""Evidence paragraphs for queries (coherency paper §3.4): gold LAMA evidences or retrieved ones.

The paragraph goes into `Query.context`, which LM predictors append to their input. Gold
evidence is the fact's own aligned text (T-REx sentences with the object restored, Google-RE
snippets), as the coherency paper appends LAMA's evidence paragraphs; `masked=True` gives the
T-REx sentences with the object replaced by `mask` instead. Retrieved evidence is the BM25
top-k of an index for the query's words. Queries without evidence keep `context=None` and are
counted.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.corpora import load_corpus
from eval.lama import MASK
from eval.types import Fact, Query
from kb.text.index import ES_TIMEOUT, TextIndex, build_index, open_index
from kb.text.paragraphs import IngestReport, evidence_paragraphs
from kb.text.retrieval import retrieval_text

EVIDENCE_CORPORA = ("trex", "google_re")
SOURCE = "lama-evidences"

log = logging.getLogger("kbc")


@dataclass
class Attached:
    """Queries with context attached, and how many had none to attach."""

    queries: list[Query]
    missing: int


def gold_context(fact: Fact, k: int = 1, masked: bool = False, mask: str = MASK) -> str | None:
    """The first `k` distinct evidence texts of `fact`, joined; None when it has none."""
    texts: list[str] = []
    for ev in fact.evidences:
        text = ev.masked.replace(MASK, mask) if masked and ev.masked else ev.text
        if text not in texts:
            texts.append(text)
        if len(texts) == k:
            break
    return " ".join(texts) or None


def attach_gold(queries: Sequence[Query], facts: Mapping[str, Fact], k: int = 1, masked: bool = False,
                mask: str = MASK) -> Attached:
    out, missing = [], 0
    for q in queries:
        fact = facts.get(q.fact_uid)
        context = gold_context(fact, k, masked, mask) if fact else None
        missing += context is None
        out.append(dataclasses.replace(q, context=context))
    return Attached(out, missing)


def attach_retrieved(queries: Sequence[Query], index: TextIndex, k: int = 1,
                     exclude_gold: bool = False) -> Attached:
    """Top-k BM25 paragraphs for each query's words; `exclude_gold` skips the fact's own evidence."""
    out, missing = [], 0
    for q in queries:
        hits = index.search(retrieval_text(q), k * 3 + 10 if exclude_gold else k)
        if exclude_gold:
            hits = [h for h in hits if q.fact_uid not in h.paragraph.facts]
        context = " ".join(h.paragraph.text for h in hits[:k]) or None
        missing += context is None
        out.append(dataclasses.replace(q, context=context))
    return Attached(out, missing)


def evidence_index(location: str | Path, data_dir: str | Path | None, backend: str = "tantivy",
                   es_url: str | None = None, progress: bool = False,
                   corpora: Sequence[str] = EVIDENCE_CORPORA, es_timeout: float = ES_TIMEOUT,
                   force: bool = False) -> TextIndex:
    """The LAMA evidence index at `location`, built (aside, then switched in) when missing, damaged or stale.

    Stale means built from other data files: the data versions are kept in the index metadata. A rebuild over
    an index of other data says so in one warning (the one cache slot then serves this data: a run on another
    copy of LAMA rebuilds it, about 20 s). `force`: rebuild even an index of the same data. A tantivy build
    waits for another one of the same folder and uses the index it made, where that holds this data.
    """
    from eval.datadir import resolve_data_dir
    from eval.errors import DataError

    loaded = [load_corpus(name, data_dir) for name in corpora]
    versions = {c.name: c.version for c in loaded}
    where = str(resolve_data_dir(data_dir))

    def same(meta: dict) -> bool:
        return not force and meta.get("source") == SOURCE and meta.get("data_versions") == versions

    def reuse(meta: dict) -> bool:
        if same(meta):
            return True
        if not force and meta.get("source") == SOURCE and isinstance(meta.get("data_versions"), dict):
            before = meta.get("data_dir")
            differ = sorted(c for c in versions if meta["data_versions"].get(c) != versions[c])
            log.warning("the LAMA evidence index %s was built from other %s data%s; rebuilding it from %s",
                        location, " and ".join(differ), f" ({before})" if isinstance(before, str) else "", where)
        return False

    if not force:
        try:
            index = open_index(backend, location, es_url, es_timeout)
            if same(index.stats()):
                return index
            index.close()
        except DataError:  # a missing index is the expected case on first use; a damaged one is built again
            pass
    report = IngestReport("LAMA evidences")
    paragraphs = evidence_paragraphs(loaded, report)
    meta = {"source": SOURCE, "data_versions": versions, "data_dir": where, "ingest": report.summary()}
    return build_index(paragraphs, backend, location, es_url, meta=meta, progress=progress, es_timeout=es_timeout,
                       reuse=reuse)
