"""Factories for `retrieval` and `retrieval-oracle` (BM25 over a text index, then a reader).

`retrieval` leaves out the queried fact's own evidence paragraphs (the leak-free number);
`retrieval-oracle` reads them too, an upper bound: on the LAMA evidence index it reads the gold
evidence.

Options (`--set KEY=VALUE`):
  text_index=PATH|NAME   an existing index (default: the LAMA evidence index in the cache, built on
                    first use); for Elasticsearch, the index name
  backend=tantivy|elasticsearch, es_url=URL (default $KBC_ES_URL), es_timeout=SECONDS (default 30)
  k=5               paragraphs read per query
  reader=vocab|entities|qa, model=PATH (qa), vocab_file=PATH (default: LAMA's common cased vocabulary)
  exclude_gold=0|1  drop the queried fact's own evidence paragraphs (default 1; retrieval-oracle: 0)

On a corpus with closed answer spaces (BEAR) the LAMA evidence index and vocabulary come from the LAMA copy
(`eval.answer_space.lama_data_for`) and the answers are cut to each relation's answer space; leaving out the
gold evidence then leaves out every paragraph that is evidence of a LAMA fact with the asked fact's subject and
object (by Wikidata id), since BEAR facts are not the index's facts.
"""

from __future__ import annotations

import os
from pathlib import Path

from bridge.predictors.registry import PredictorContext
from bridge.run.options import Option, declares, number_option, truthy
from eval.answer_space import AnswerSpacePredictor, has_closed_spaces, lama_data_for
from eval.errors import ConfigError
from eval.user_values import strict_float
from kb.text.index import ES_TIMEOUT

EVIDENCE_INDEX = "lama-evidence"


@declares(
    Option("text_index", "an existing text index (path, or index name for Elasticsearch)",
           default="the LAMA evidence index in the cache"),
    Option("backend", "text index backend", "choice", ("tantivy", "elasticsearch"), "tantivy"),
    Option("es_url", "Elasticsearch URL", default="$KBC_ES_URL"),
    Option("es_timeout", "seconds one Elasticsearch request may take in all (answer included)", "float",
           default=f"{ES_TIMEOUT:g}", minimum=0.1, identity=False),
    Option("k", "paragraphs read per query", "int", default="5", minimum=1, maximum=10_000),
    Option("reader", "how answers are read from the paragraphs", "choice", ("vocab", "entities", "qa"), "vocab"),
    Option("model", "extractive QA model (reader=qa): local directory or hub id"),
    Option("vocab_file", "answer vocabulary, one word per line", "path", default="LAMA's common cased vocabulary"),
    Option("exclude_gold", "drop the queried fact's own evidence paragraphs (0: an upper bound that reads them)",
           "bool", default="1"),
    Option("context_bonus", "weight of matching words around the slot (reader=vocab)", "float", default="1.0"),
)
def make_retrieval(name: str, ctx: PredictorContext):
    """Leak-free unless `exclude_gold=0`."""
    return _retrieval(ctx, default_exclude=True)


@declares(*[o for o in make_retrieval.options.values() if o.key != "exclude_gold"],
          Option("exclude_gold", "drop the queried fact's own evidence paragraphs (1: the leak-free retrieval)",
                 "bool", default="0"))
def make_retrieval_oracle(name: str, ctx: PredictorContext):
    """Reads the fact's own evidence paragraphs unless `exclude_gold=1`: an upper bound, not a baseline."""
    return _retrieval(ctx, default_exclude=False)


# `exclude_gold` is part of the identity even when left at its default, which once was 0 for `retrieval`:
# a rerun into a directory of the leaky default is refused instead of mixing both.
make_retrieval.pinned = make_retrieval_oracle.pinned = ("exclude_gold",)


def _index_fingerprint(opts: dict[str, str]) -> str:
    """What the index `text_index` names holds: an index rebuilt or edited under the same name is another input,
    as an edited vocabulary file is, so a rerun into the same directory never mixes answers from both."""
    from kb.text.index import check_backend, open_index
    from lm.loading import FILES_PREFIX

    es_timeout = number_option(opts, "es_timeout", ES_TIMEOUT, strict_float, minimum=0.1)
    with open_index(check_backend(opts.get("backend", "tantivy")), opts["text_index"],
                    opts.get("es_url") or os.environ.get("KBC_ES_URL"), es_timeout) as index:
        return FILES_PREFIX + index.fingerprint()[:16]


make_retrieval.fingerprints = make_retrieval_oracle.fingerprints = {"text_index": _index_fingerprint}


def _same_entities(corpus, data_dir: Path) -> dict[str, frozenset[str]]:
    """Fact uid -> uids of the LAMA evidence facts with the same subject and object ids (any relation)."""
    from eval.corpora import load_corpus
    from kb.text.evidence import EVIDENCE_CORPORA

    lama: dict[tuple[str, str], set[str]] = {}
    for name in EVIDENCE_CORPORA:
        for fact in load_corpus(name, data_dir).facts:
            if fact.subject.id and fact.object.id:
                lama.setdefault((fact.subject.id, fact.object.id), set()).add(fact.uid)
    return {f.uid: frozenset(lama.get((f.subject.id, f.object.id), ())) for f in corpus.facts}


def _closed_retrieval(base: type, same: dict[str, frozenset[str]]):
    """`base` whose leak-free retrieval leaves out the evidence of the LAMA facts matching the asked one."""
    from kb.text.retrieval import retrieval_text

    class ClosedRetrieval(base):
        def retrieve(self, query):
            if not self.exclude_gold:
                return super().retrieve(query)
            gold = query.own_facts.union(*(same.get(uid, ()) for uid in query.own_facts))
            hits = self.index.search(retrieval_text(query), self.k * 3 + 10)
            return [h for h in hits if not gold.intersection(h.paragraph.facts)][:self.k]

    return ClosedRetrieval


def _retrieval(ctx: PredictorContext, default_exclude: bool):
    from kb.text.evidence import evidence_index
    from kb.text.index import check_backend, open_index
    from kb.text.retrieval import EntityReader, QAReader, RetrievalPredictor, VocabReader, load_vocab

    opts = ctx.options
    closed = has_closed_spaces(ctx.corpus.relations)
    data_dir = lama_data_for(ctx.data_dir) if closed else ctx.data_dir
    backend = check_backend(opts.get("backend", "tantivy"))
    es_url = opts.get("es_url") or os.environ.get("KBC_ES_URL")
    es_timeout = number_option(opts, "es_timeout", ES_TIMEOUT, strict_float, minimum=0.1)
    top_k = number_option(opts, "k", 5, minimum=1)
    if "text_index" in opts:
        index = open_index(backend, opts["text_index"], es_url, es_timeout)
    else:
        location = EVIDENCE_INDEX if backend == "elasticsearch" else ctx.cache_dir / "index" / EVIDENCE_INDEX
        index = evidence_index(location, data_dir, backend, es_url, progress=ctx.progress, es_timeout=es_timeout)
    reader_name = opts.get("reader", "vocab")
    vocab_path = Path(opts.get("vocab_file") or data_dir / "common_vocab_cased.txt")
    if reader_name == "vocab":
        bonus = number_option(opts, "context_bonus", 1.0, strict_float)
        reader = VocabReader(load_vocab(vocab_path), index, bonus)
    elif reader_name == "entities":
        reader = EntityReader()
    elif reader_name == "qa":
        if "model" not in opts:
            raise ConfigError("--set reader=qa needs --set model=PATH_OR_HF_ID (an extractive QA model)")
        reader = QAReader(opts["model"], load_vocab(vocab_path), device=ctx.device)
    else:
        raise ConfigError(f"--set reader={reader_name!r}: choose vocab, entities or qa")
    exclude = truthy(opts.get("exclude_gold", "1" if default_exclude else "0"))
    stats = index.stats()
    info = {k: stats.get(k) for k in ("backend", "location", "paragraphs", "source", "data_versions")}
    if not closed:
        return RetrievalPredictor(index, reader, top_k, exclude, info)
    info["text"] = "LAMA evidences (the corpus has no evidence sentences)"
    kind = _closed_retrieval(RetrievalPredictor, _same_entities(ctx.corpus, data_dir))
    return AnswerSpacePredictor(kind(index, reader, top_k, exclude, info), ctx.corpus.relations)
