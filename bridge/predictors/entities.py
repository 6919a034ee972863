"""Factories for the E-BERT predictors: `ebert`, `ebert-concat`, `ebert-avg`, `ebert-entity`, `bert-entity`.

Options (`--set KEY=VALUE`):
  model=PATH          a BERT-family masked LM (local directory or hub id)            required
  wikipedia2vec=PATH  wikipedia2vec model, `.npz` or word2vec text (a `.pkl` is refused)  required
  map=PATH            a saved map (`kbc entities map`); else fitted and cached
  map_kind=lstsq|procrustes                                                           default lstsq
  titles=PATH         `Q-id<TAB>title` TSV, to link subjects by Wikidata id
  redirects=PATH      dump DB (`<model>.db`) or TSV; default: the table stored in the `.npz`
  mentions=PATH       TSV `text<TAB>title<TAB>commonness`; default: the table stored in the `.npz`
  vocab_file=PATH     candidate vocabulary; default LAMA's common vocabulary (lowercased for uncased models)
  entity_index=flat|ivf|hnsw  entity index of the entity-level predictors             default flat
  cache=on|off        on-disk cache of token-level results (keyed by model, map, mode, input)  default on
Heavy parts (model, vectors, map, linker, index) are loaded once per process and shared.
Token-level predictors drop facts whose object is not one candidate token, as the BERT
predictors do (the runner counts them); entity-level predictors keep every fact.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bridge.predictors.lm import CACHE_OPTION, MASKED_LM_OPTIONS, check_common_vocab, check_scoring_options
from bridge.predictors.registry import PredictorContext
from bridge.run.options import Option, declares
from eval.errors import ConfigError, DataError
from eval.types import ASKED_PROMPT, Answer, Entity, Prediction, Query
from lm.finite import NonFiniteScores

log = logging.getLogger("kbc")
_CACHE: dict[tuple, object] = {}
MODES = {"ebert": "replace", "ebert-concat": "concat", "ebert-avg": "avg", "ebert-entity": "replace",
         "bert-entity": "bert"}


def _cached(key: tuple, make):
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def _require(ctx: PredictorContext, key: str) -> str:
    value = ctx.options.get(key)
    if not value:
        raise ConfigError(f"E-BERT predictors need --set {key}=PATH (e.g. --set model=models/bert-base-cased "
                          "--set wikipedia2vec=models/enwiki.npz)")
    return value


@dataclass
class Resources:
    lm: object
    emb: object
    lmap: object
    mapped: np.ndarray
    linker: object
    coverage: dict = field(default_factory=dict)


def _map_for(ctx: PredictorContext, lm, emb, model: str, w2v: str):
    from lm.entities.mapping import FIT_RULE, LinearMap, fit_to_embeddings
    from lm.loading import files_fingerprint

    if ctx.options.get("map"):
        return LinearMap.load(ctx.options["map"])
    kind = ctx.options.get("map_kind", "lstsq")
    # keyed by what the model and the vectors hold, so a map of edited or replaced files is never reused, and by
    # the fitting rule, so neither is one an earlier kbc fitted otherwise
    key = f"{lm.fingerprint}|{files_fingerprint(w2v)}|{kind}|rule{FIT_RULE}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = Path(ctx.cache_dir) / "entities" / f"map-{digest}.npz"
    if path.exists():
        try:
            return LinearMap.load(path, checked=True)
        except DataError:
            log.warning("%s: a cached entity map that is damaged, edited or of an earlier kbc version; fitted "
                        "again", path)
    lmap = fit_to_embeddings(emb.word_vectors, emb.words, emb.lowercase, lm.tokenizer.get_vocab(),
                             lm.input_embeddings(), kind, {"model": model, "wikipedia2vec": w2v})
    lmap.save(path)
    return lmap


def _linker(ctx: PredictorContext, emb, w2v: str):
    from lm.entities.linking import build_linker

    return build_linker(emb, *(ctx.options.get(k) for k in ("titles", "redirects", "mentions")))


def resources(ctx: PredictorContext) -> Resources:
    from lm.entities.embeddings import load_embeddings
    from lm.entities.entity_answers import mapped_entities
    from lm.entities.model import load_masked_lm

    model, w2v = _require(ctx, "model"), _require(ctx, "wikipedia2vec")
    emb = _cached(("w2v", w2v), lambda: load_embeddings(w2v))
    lm = _cached(("lm", model, ctx.device, ctx.dtype), lambda: load_masked_lm(model, ctx.device, ctx.dtype))
    keys = tuple(sorted((k, v) for k, v in ctx.options.items() if k in {"map", "map_kind"}))
    lmap = _cached(("map", model, w2v, keys), lambda: _map_for(ctx, lm, emb, model, w2v))
    if lmap.W.shape != (emb.dim, lm.model.get_input_embeddings().weight.shape[1]):
        raise ConfigError(f"the map has shape {lmap.W.shape}; this model and wikipedia2vec need "
                          f"({emb.dim}, {lm.model.get_input_embeddings().weight.shape[1]})")
    mapped = _cached(("mapped", model, w2v, keys), lambda: mapped_entities(emb.entity_vectors, lmap.W))
    link_keys = tuple(ctx.options.get(k) for k in ("titles", "redirects", "mentions"))
    linker = _cached(("linker", w2v, link_keys), lambda: _linker(ctx, emb, w2v))
    return Resources(lm, emb, lmap, mapped, linker)


class LinkCache:
    """Subject -> link, computed once per subject."""

    def __init__(self, linker) -> None:
        self.linker = linker
        self._seen: dict[str, object] = {}

    def __call__(self, entity: Entity):
        if entity.key not in self._seen:
            self._seen[entity.key] = self.linker.link(entity)
        return self._seen[entity.key]


def _corpus_coverage(ctx: PredictorContext, links: LinkCache) -> dict:
    """Distinct subjects of the corpus's chosen relations with an entity vector, by method (`make_ebert` adds under
    `asked` the facts of the run's sample it scores whose subject has one: those it answers otherwise than plain
    BERT)."""
    from lm.entities.linking import Coverage

    cov = Coverage()
    for subject in {f.subject.key: f.subject for f in ctx.corpus.facts}.values():
        cov.total += 1
        link = links(subject)
        if link:
            cov.by_method[link.method] += 1
    out = cov.to_dict()
    return out


def coverage_line(corpus: str, name: str, coverage: dict) -> str:
    """The stderr line on what share of the questions E-BERT asks with an entity vector."""
    subjects = (f"subjects of the chosen relations with an entity vector {coverage['linked']}/{coverage['subjects']} "
                f"({coverage['coverage_percent']:.2f}%)")
    asked = coverage.get("asked")
    if asked is None:
        return f"{corpus} {name}: {subjects}; the rest are asked as plain BERT"
    dropped = asked["sampled"] - asked["facts"]
    left = f" ({dropped} of the {asked['sampled']} sampled left out: their object is no candidate)" if dropped else ""
    return (f"{corpus} {name}: facts scored whose subject has an entity vector {asked['linked']}/{asked['facts']} "
            f"({asked['coverage_percent']:.2f}%){left}, the rest asked as plain BERT; {subjects}")


class EBertPredictor:
    """E-BERT (REPLACE), the CONCAT input, or the AVG ensemble of BERT and E-BERT probabilities.

    Every candidate token is scored: `Query.targets` get exact ranks (ties by candidate position).
    """

    ranks = "exact"
    score_scale = "probability"  # softmax outputs (AVG: their mean), not plain BERT's log-probabilities

    def __init__(self, name: str, mode: str, res: Resources, cand_ids, labels, missing: int,
                 coverage: dict, links: LinkCache, batch_size: int, device: str, cache=None) -> None:
        from lm.entities.ebert import InputBuilder, MaskedScorer

        self.name = name
        self.mode = mode
        self.res = res
        from lm.vocab import is_uncased

        self.cand_ids, self.labels, self.missing = cand_ids, labels, missing
        self.answer_space_size = lambda relation: len(self.labels)
        self._label_set = set(labels)
        self._pos_of = {label: i for i, label in enumerate(labels)}
        self.uncased = is_uncased(res.lm.tokenizer)  # uncased models: candidates and gold compared lower-cased
        self.coverage = coverage
        self.links = links
        self.builder = InputBuilder(res.lm.tokenizer)
        pad = res.lm.tokenizer.pad_token_id
        self.scorer = MaskedScorer(res.lm.model, res.mapped, 0 if pad is None else int(pad), batch_size, device)
        self.cache = cache
        digest = hashlib.sha256(np.ascontiguousarray(res.lmap.W).tobytes())
        digest.update(",".join(map(str, cand_ids)).encode())
        self._fingerprint = f"{res.lm.fingerprint}|{next(res.lm.model.parameters()).dtype}|{digest.hexdigest()[:16]}"

    def filter_facts(self, facts):
        """As the BERT predictors: only facts whose object is one candidate token can be scored."""
        from lm.entities.model import token_for_word
        from lm.vocab import NOT_CANDIDATE, NOT_SINGLE_TOKEN, normalize

        kept, dropped = [], {}
        for fact in facts:
            label = normalize(fact.object.label, self.uncased)
            if label in self._label_set:
                kept.append(fact)
                continue
            reason = NOT_CANDIDATE if token_for_word(self.res.lm.tokenizer, label) is not None else NOT_SINGLE_TOKEN
            dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def describe(self) -> dict:
        return {"predictor": self.name, "mode": self.mode, "model": self.res.lm.name,
                "wikipedia2vec": self.res.emb.describe(), "map": self.res.lmap.describe(),
                "candidates": len(self.cand_ids), "vocab_words_not_single_tokens": self.missing,
                "coverage": self.coverage, "ranks": self.ranks, "ties": "candidate order (vocabulary file order)"}

    def _inputs(self, queries: Sequence[Query], mode: str):
        """The encoded inputs, and per query what its record says of them: the entity used (or the fallback to
        plain BERT) and, where an entity was put in, the input scored as text (`prompt`)."""
        from lm.entities.ebert import shown_input

        encoded, extras = [], []
        for q in queries:
            link = self.links(q.known)
            enc = self.builder.build(q, mode, link.row if link else None)
            encoded.append(enc)
            used = link is not None and enc.entity_pos is not None
            if mode == "bert":
                extras.append({"entity": None, "link": "bert input"})
            elif used:
                extras.append({"entity": link.title, "link": link.method,
                               ASKED_PROMPT: shown_input(q, mode, link.title)})
            else:
                extras.append({"entity": None, "link": "fallback"})
        return encoded, extras

    def _vector_digest(self, row: int | None) -> str:
        """The cache keys the entity by its mapped vector, so another wikipedia2vec model never hits."""
        return "-" if row is None else hashlib.sha256(self.res.mapped[row].tobytes()).hexdigest()[:16]

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        """Top `depth` candidates and exact target ranks; the cache holds both, keyed with the targets."""
        from lm.cache import ResultCache
        from lm.entities.ebert import candidate_ranks, top_positions
        from lm.vocab import normalize

        depth = min(depth, len(self.cand_ids))
        enc, extras = self._inputs(queries, "replace" if self.mode == "avg" else self.mode)
        where = [{t: p for t in q.targets if (p := self._pos_of.get(normalize(t, self.uncased))) is not None}
                 for q in queries]
        wanted = [tuple(sorted(set(w.values()))) for w in where]
        keys = [ResultCache.key("ebert-v2", self.mode, self._fingerprint, str(e.ids), str(e.entity_pos),
                                self._vector_digest(e.entity_row), ",".join(map(str, t))) for e, t in zip(enc, wanted)]
        found: dict[str, tuple] = {}
        if self.cache is not None:
            by_size: dict[int, list[str]] = {}
            for k, t in zip(keys, wanted):
                by_size.setdefault(len(t), []).append(k)
            for size, group in by_size.items():
                found.update(self.cache.get_many(list(dict.fromkeys(group)), size + depth))
        first = {k: i for i, k in reversed(list(enumerate(keys)))}  # each key computed once
        todo = sorted(i for k, i in first.items() if k not in found)
        if todo:
            probs = self.scorer.run([enc[i] for i in todo])[0]
            if self.mode == "avg":
                plain = self.scorer.run([self.builder.build(queries[i], "bert", None) for i in todo])[0]
                probs = 0.5 * (plain + probs)
            self._check_finite(probs, [queries[i] for i in todo])
            tops = top_positions(probs, self.cand_ids, depth)
            asked = candidate_ranks(probs, self.cand_ids, [wanted[i] for i in todo])
            new = []
            for i, (pos, val), (ranks, scores) in zip(todo, tops, asked):
                row = (np.concatenate([np.asarray(ranks, np.int32), pos]),
                       np.concatenate([np.asarray(scores, np.float32), val]), 0)
                found[keys[i]] = row
                new.append((keys[i], *row))
            if self.cache is not None:
                self.cache.put_many(new)
        out = []
        for q, k, x, t, w in zip(queries, keys, extras, wanted, where):
            packed, values, _ = found[k]
            n = len(t)
            rank_of = dict(zip(t, packed[:n].tolist()))
            answers = tuple(Answer(self.labels[p], float(v)) for p, v in zip(packed[n:], values[n:]))
            out.append(Prediction(q.uid, answers, lowercased=self.uncased, extra=x,
                                  target_ranks={label: rank_of[p] for label, p in w.items()}))
        return out

    def _check_finite(self, rows: np.ndarray, queries: Sequence[Query]) -> None:
        """NaN or infinity in a row is an error naming the model or the fact (`lm.finite`), never a rank."""
        finite = np.isfinite(rows).all(axis=1) if len(rows) else np.ones(0, bool)
        if not finite.all():
            bad = [q for q, ok in zip(queries, finite) if not ok]
            exc = NonFiniteScores(self.res.lm.name, [q.uid for q in bad], len(queries))
            raise exc.for_fact(f"{bad[0].fact_uid} ({bad[0].relation})")


class EntityLevelPredictor(EBertPredictor):
    """Answers are entities (title, Wikidata id where known), ranked by the [MASK] output (entity_answers).

    Ranks count within the returned list only (the entity index returns its top entities).
    """

    ranks = "list"
    score_scale = "logit"  # the [MASK] output's dot product with each entity vector, unnormalised

    def __init__(self, *args, answerer, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.answerer = answerer
        self.answer_space_size = lambda relation: int(answerer.index.size)

    def filter_facts(self, facts):
        """Entity-level answers keep every fact, multi-token objects included."""
        return list(facts), {}

    def describe(self) -> dict:
        d = super().describe()
        d.update({"answers": "entities", "ranks": self.ranks, "ties": "entity row",
                  "entities": self.answerer.index.size,
                  "index": self.answerer.index.spec.kind})
        return d

    def predict(self, queries: Sequence[Query], depth: int) -> list[Prediction]:
        enc, extras = self._inputs(queries, self.mode)
        _, hidden = self.scorer.run(enc, want_hidden=True)
        self._check_finite(hidden, queries)
        exclude = [link.row if (link := self.links(q.known)) else None for q in queries]
        ranked = self.answerer.answer(hidden, depth, exclude)
        return [Prediction(q.uid, tuple(r), extra=x) for q, r, x in zip(queries, ranked, extras)]


def _labeler(ctx: PredictorContext, emb):
    """Entity row -> (label, Wikidata id): the corpus's own label for that id where the title map knows it."""
    titles = {}
    if ctx.options.get("titles"):
        from lm.entities.linking import read_title_map

        titles = {t: q for q, t in read_title_map(ctx.options["titles"]).items()}
    corpus_labels = {}
    for f in ctx.corpus.facts:
        for ent in (f.subject, f.object):
            if ent.id:
                corpus_labels.setdefault(ent.id, ent.label)

    def label(row: int) -> tuple[str, str | None]:
        title = emb.titles[row]
        qid = titles.get(title)
        return (corpus_labels.get(qid, title) if qid else title), qid

    return label


def _result_cache(ctx: PredictorContext):
    from lm.cache import ResultCache

    value = ctx.options.get("cache", "on")
    if value not in ("on", "off"):
        raise ConfigError(f"--set cache={value}: use on or off")
    if value == "off":
        return None
    return _cached(("cache", str(ctx.cache_dir)), lambda: ResultCache(Path(ctx.cache_dir) / "lm" / "ebert.sqlite"))


MODEL_OPTION = Option("model", "a BERT-family masked LM: local model directory (or hub id)", "model", required=True)
EBERT_OPTIONS = (
    MODEL_OPTION,
    Option("wikipedia2vec", "wikipedia2vec entity vectors", "path", required=True),
    Option("map", "a saved E-BERT map (`kbc entities map`); default: fitted and cached", "path"),
    Option("map_kind", "how the map is fitted", "choice", ("lstsq", "procrustes"), "lstsq"),
    Option("titles", "`Q-id<TAB>title` TSV, to link subjects by Wikidata id", "path"),
    Option("redirects", "redirect table (dump DB or TSV)", "path"),
    Option("mentions", "wikipedia2vec mention DB", "path"),
    Option("vocab_file", "candidate vocabulary, one word per line", "path", default="LAMA's common vocabulary"),
    Option("entity_index", "entity index of the entity-level predictors", "choice", ("flat", "ivf", "hnsw"),
           "flat"),
    CACHE_OPTION,
)


@declares(*EBERT_OPTIONS, settings=("dtype",))
def make_ebert(name: str, ctx: PredictorContext):
    from lm.entities.faiss_index import EntityIndex, IndexSpec
    from lm.entities.model import candidates

    if name not in MODES:
        raise ConfigError(f"unknown E-BERT predictor {name!r}; known: {', '.join(MODES)}")
    res = resources(ctx)
    from lm.vocab import common_vocab_path, is_uncased

    vocab = ctx.options.get("vocab_file") or str(common_vocab_path(ctx.data_dir, is_uncased(res.lm.tokenizer),
                                                                   EBERT_OTHER_VOCAB))
    cand = _cached(("cand", res.lm.name, vocab), lambda: candidates(res.lm.tokenizer, vocab))
    links = _cached(("links", id(res.linker)), lambda: LinkCache(res.linker))
    coverage = _corpus_coverage(ctx, links)
    args = (name, MODES[name], res, *cand, coverage, links, ctx.batch_size, ctx.device, _result_cache(ctx))
    if name in ("ebert-entity", "bert-entity"):
        from lm.entities.entity_answers import EntityAnswerer

        kind = ctx.options.get("entity_index", "flat")
        index = _cached(("index", id(res.mapped), kind), lambda: EntityIndex.build(res.mapped, IndexSpec(kind)))
        predictor = EntityLevelPredictor(*args, answerer=EntityAnswerer(index, _labeler(ctx, res.emb)))
    else:
        predictor = EBertPredictor(*args)
    if ctx.asked is not None:  # the facts it scores: those whose object it can answer, of the run's sample
        scored = predictor.filter_facts(ctx.asked)[0]
        linked = sum(1 for f in scored if links(f.subject))
        coverage["asked"] = {"facts": len(scored), "linked": linked, "sampled": len(ctx.asked),
                             "coverage_percent": round(100.0 * linked / len(scored), 2) if scored else 0.0}
    if MODES[name] != "bert":
        print(coverage_line(ctx.corpus.name, name, coverage), file=sys.stderr)
    return predictor


EBERT_OTHER_VOCAB = "--set vocab_file=PATH"  # E-BERT ranks one candidate vocabulary: the common one, or this file


def check_ebert_vocab(spec: str, options: dict[str, str], corpora: list[str], data_dir: Path) -> None:
    """The common vocabulary the E-BERT predictors rank unless `vocab_file` is set, found before any predictor runs."""
    check_common_vocab(spec, {"model": options.get("model", spec), "vocab_file": options.get("vocab_file", "")},
                       corpora, data_dir, EBERT_OTHER_VOCAB)


make_ebert.check_inputs = check_ebert_vocab
EBERT_PROMPT = "the input scored"  # records' `prompt`: the E-BERT input (an earlier kbc version wrote the template)


def _identity_extra(spec: str) -> dict:
    """How its records read and link, where an earlier kbc version did otherwise (the `bert` baseline links none)."""
    from lm.entities.linking import LINK_RULE

    if spec not in MODES:
        return {}
    return {"link_rule": LINK_RULE, **({} if MODES[spec] == "bert" else {"prompt": EBERT_PROMPT})}


make_ebert.identity_extra = _identity_extra


@declares(MODEL_OPTION, *MASKED_LM_OPTIONS, settings=("dtype",))
def make_bert(name: str, ctx: PredictorContext):
    """Plain BERT on the same `--set model=PATH` as the E-BERT predictors (the paper's baseline)."""
    from bridge.predictors.lm import make_masked

    return make_masked(_require(ctx, "model"), ctx)


make_bert.check_inputs = check_common_vocab  # its model's common vocabulary, as `make_masked`'s
make_bert.check_options = check_scoring_options  # as `make_masked`'s
