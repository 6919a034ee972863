"""Runs named predictors over LAMA corpora: validated first, resumable, written as produced.

Layout of an output directory:
  config.json                                       what ran, with which identity, data versions, timings
  predictions/<corpus>/<name>/<relation>.jsonl      one line per query, appended as produced
  summary.json / summary.md / curves.json / dropped.json / instances.parquet   rebuilt from all files
A rerun skips every query already written; a rerun with more predictors, corpora or relations adds them.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from tqdm import tqdm

from bridge.registry import PredictorContext
from bridge.results import TOP_SAVED, predictions_path, read_done
from bridge.run_config import (
    Plan,
    PlannedPredictor,
    RunConfig,
    default_cache_dir,
    merge_config,
    plan_run,
    read_config,
)
from bridge.summaries import collect, write_json
from eval.datadir import resolve_data_dir
from eval.errors import ConfigError
from eval.jsonl import write_jsonl_line
from eval.lama import Corpus
from eval.metrics import filtered_exact_rank, gold_rank
from eval.queries import make_queries
from kb.store import GraphStore, open_store

__all__ = ["CHUNK", "RunConfig", "collect", "default_cache_dir", "run_lama"]

CHUNK = 512  # queries per predict call (predictors may ask for less with `chunk_size`)
log = logging.getLogger("kbc")


class RunLock:
    """One writer per output directory: a second run into it is refused, not interleaved."""

    def __init__(self, out: Path) -> None:
        self.path = out / ".kbc.lock"
        self.handle = None

    def __enter__(self) -> RunLock:
        import fcntl

        self.handle = self.path.open("a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self.handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise ConfigError(f"another kbc run is writing to {self.path.parent}; wait for it or use another --out"
                                  ) from None
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.handle.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in ("kbcompare", "torch", "transformers", "rdflib", "pyoxigraph", "tantivy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def run_lama(cfg: RunConfig, progress: bool = True, setting: str = "raw") -> list[dict]:
    """Validate, run what is not done yet, and rebuild the summaries of the whole directory."""
    data_dir = resolve_data_dir(cfg.data_dir)
    plan = plan_run(cfg, data_dir)
    for name, corpus in plan.corpora.items():
        asked = len(plan.asked[name])
        sampled = f"; asking a sample of {asked} (--limit {cfg.limit}, seed {cfg.seed})" if cfg.limit else ""
        log.info("%s%s", corpus.summary(), sampled)
        if plan.removed.get(name):
            per_rel = ", ".join(f"{rel} {n}" for rel, n in plan.removed[name].items())
            log.info("%s: --compat lama removed %d facts with the labels of an earlier fact (%s)", name,
                     sum(plan.removed[name].values()), per_rel)
    out = cfg.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create --out {out}: {exc.strerror}") from None
    cache = cfg.cache_dir or default_cache_dir()
    with RunLock(out):
        config_path = out / "config.json"
        config = merge_config(read_config(config_path), cfg, plan)
        run = {"argv": sys.argv, "started": _now(), "device": cfg.device, "batch_size": cfg.batch_size,
               "limit": cfg.limit, "seed": cfg.seed, "relations": cfg.relations, "corpora": list(plan.corpora),
               "predictors": [p.name for p in plan.predictors], "versions": package_versions()}
        config["runs"].append(run)
        config["data_dir"] = str(data_dir)
        if cfg.compat:
            config.setdefault("compat_removed", {}).update(plan.removed)
        config.setdefault("load_reports", {}).update(
            {n: [r.to_dict() for r in c.reports] for n, c in plan.corpora.items()})
        write_json(config_path, config)
        try:
            with open_store(cfg.store, cfg.store_update, cache / "store", cfg.store_timeout) as store:
                for name, corpus in plan.corpora.items():
                    valid = _valid_objects(store, corpus, plan.versions[name])
                    queries = _queries(corpus, plan, valid)
                    for p in plan.predictors:
                        _run_one(p, corpus, queries, valid, cfg, store, cache, data_dir, config, progress)
                        write_json(config_path, config)
        finally:
            run["finished"] = _now()
            write_json(config_path, config)
        return collect(out, setting)


def _valid_objects(store: GraphStore, corpus: Corpus, versions: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """Per relation, subject key -> all valid object labels, from a graph holding exactly that relation's data."""
    if corpus.facts and corpus.facts[0].cloze:
        return {}  # cloze corpora (SQuAD, ConceptNet) have no subject identity to filter by
    by_rel = corpus.by_relation()
    valid = {}
    for rel, facts in by_rel.items():
        graph = store.ensure_corpus(f"{corpus.name}-{rel}", versions[rel], facts)
        valid[rel] = store.valid_objects(rel, graph)
    return valid


def _queries(corpus: Corpus, plan: Plan, valid: dict) -> dict[str, list[tuple]]:
    """Queries of the asked facts, uids as in the full corpus; targets = gold, then the other valid objects."""
    asked = {id(f) for f in plan.asked[corpus.name]}
    out = {}
    for rel, pairs in make_queries(corpus).items():
        rel_valid = valid.get(rel, {})
        out[rel] = [(dataclasses.replace(q, targets=_targets(f, rel_valid)), f) for q, f in pairs if id(f) in asked]
    return out


def _targets(fact, rel_valid: dict[str, set[str]]) -> tuple[str, ...]:
    gold = fact.object.label
    return (gold, *sorted(rel_valid.get(fact.subject.key, set()) - {gold}))


def _run_one(p: PlannedPredictor, corpus: Corpus, queries: dict, valid: dict, cfg: RunConfig, store, cache: Path,
             data_dir: Path, config: dict, progress: bool) -> None:
    todo: list[tuple[str, list, Path]] = []
    for rel, pairs in queries.items():
        path = predictions_path(cfg.out, corpus.name, p.name, rel)
        done = read_done(path)
        rest = [(q, f) for q, f in pairs if q.uid not in done]
        if rest:
            todo.append((rel, rest, path))
    if not todo:
        log.info("%s / %s: all %d queries done, skipped", corpus.name, p.name, sum(len(x) for x in queries.values()))
        return
    started = time.monotonic()
    ctx = PredictorContext(corpus, store, cache, data_dir, cfg.device, cfg.dtype, cfg.batch_size, dict(p.options),
                           progress, cfg.compat)
    predictor = p.factory(p.spec, ctx)
    described = predictor.describe()
    configs = config["predictor_configs"].setdefault(corpus.name, {})
    spaces = config["answer_space"].setdefault(corpus.name, {}).setdefault(p.name, {})
    size = getattr(predictor, "answer_space_size", None)
    for rel in corpus.relations:
        spaces[rel] = size(rel) if size else None
    todo, gone = _drop_unsupported(predictor, todo)
    for rel, items in gone.items():
        path = predictions_path(cfg.out, corpus.name, p.name, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            for query, fact, reason in items:
                write_jsonl_line(handle, _dropped_record(query, fact, reason))
    if gone:
        now = {rel: Counter(reason for _, _, reason in items) for rel, items in gone.items()}
        log.info(_dropped_line(f"{corpus.name} / {p.name}", now))
    total = sum(len(rest) for _, rest, _ in todo)
    cost = getattr(predictor, "cost", None)
    if cost and total:
        log.info("%s / %s: %s", corpus.name, p.name, cost([q for _, rest, _ in todo for q, _ in rest]))
    chunk_size = getattr(predictor, "chunk_size", CHUNK)
    bar = tqdm(total=total, desc=f"{corpus.name} {p.name}", unit="query", disable=not progress, file=sys.stderr)
    try:
        for rel, rest, path in todo:
            rel_valid = valid.get(rel, {})
            depth = cfg.depth + max((len(v) for v in rel_valid.values()), default=0)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                for start in range(0, len(rest), chunk_size):
                    chunk = rest[start:start + chunk_size]
                    n = 0
                    for (query, fact), pred in zip(chunk, predictor.predict([q for q, _ in chunk], depth)):
                        write_jsonl_line(handle, _record(query, fact, pred, rel_valid))
                        handle.flush()
                        bar.update(1)
                        n += 1
                    if n != len(chunk):
                        raise ConfigError(f"predictor {p.name} gave {n} predictions for {len(chunk)} queries")
    finally:
        bar.close()
        seconds = config["seconds"].setdefault(corpus.name, {})
        seconds[p.name] = round(seconds.get(p.name, 0.0) + time.monotonic() - started, 3)
        configs[p.name] = described


def _drop_unsupported(predictor, todo: list) -> tuple[list, dict[str, list]]:
    """Split off facts a predictor cannot answer (optional `filter_facts(facts) -> (kept, {reason: n})`).

    Returns the remaining work and, per relation, (query, fact, reason) of each dropped fact. The
    runner writes dropped facts as records too, so a rerun skips them and the counts stay exact.
    """
    filter_facts = getattr(predictor, "filter_facts", None)
    if filter_facts is None:
        return todo, {}
    kept_todo, gone = [], {}
    for rel, rest, path in todo:
        kept, _reasons = filter_facts([f for _, f in rest])
        keep = {id(f) for f in kept}
        dropped = [(q, f) for q, f in rest if id(f) not in keep]
        if dropped:
            # one reason per fact; asked one by one only for the (few) dropped facts
            gone[rel] = [(q, f, next(iter(filter_facts([f])[1]), "unsupported")) for q, f in dropped]
        rest = [(q, f) for q, f in rest if id(f) in keep]
        if rest:
            kept_todo.append((rel, rest, path))
    return kept_todo, gone


def _dropped_line(where: str, dropped: dict[str, Counter]) -> str:
    reasons: Counter = Counter()
    for counts in dropped.values():
        reasons.update(counts)
    per_rel = ", ".join(f"{rel} {sum(c.values())}" for rel, c in dropped.items())
    why = "; ".join(f"{reason}: {n}" for reason, n in reasons.items())
    return f"{where}: dropped {sum(reasons.values())} facts it cannot answer ({why}); per relation: {per_rel}"


def _dropped_record(query, fact, reason: str) -> dict:
    return {"uid": query.uid, "relation": query.relation, "subject": fact.subject.label,
            "subject_id": fact.subject.id, "gold": fact.object.label, "gold_id": fact.object.id, "dropped": reason}


def _record(query, fact, pred, rel_valid: dict[str, set[str]]) -> dict:
    gold = fact.object.label
    others = rel_valid.get(fact.subject.key, set())
    record = {
        "uid": query.uid,
        "relation": query.relation,
        "subject": fact.subject.label,
        "subject_id": fact.subject.id,
        "gold": gold,
        "gold_id": fact.object.id,
        "prompt": query.text("[MASK]"),
        "other_valid": sorted(others - {gold}),
        "rank_raw": gold_rank(pred.answers, gold, (), pred.lowercased),
        "rank_filtered": gold_rank(pred.answers, gold, others, pred.lowercased),
        "answers": [[a.label, round(a.score, 6), a.id] for a in pred.answers[:TOP_SAVED]],
    }
    if pred.target_ranks is not None:
        record["rank_exact_raw"] = pred.target_ranks.get(gold)
        record["rank_exact_filtered"] = filtered_exact_rank(pred.target_ranks, gold, others, pred.lowercased)
    if pred.extra:
        record["extra"] = pred.extra
    return record

