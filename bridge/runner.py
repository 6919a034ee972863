"""Runs predictors over LAMA corpora: resumable, written as produced, scored raw and filtered.

Layout of an output directory:
  config.json                           everything needed to rerun (and data versions)
  predictions/<corpus>/<predictor>/<relation>.jsonl   one line per query, appended as produced
  summary.json / summary.md / curves.json             rebuilt from the prediction files
A rerun of the same command skips every query already in the prediction files.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from bridge.registry import PredictorContext, build, resolve
from bridge.results import TOP_SAVED, predictions_path, read_done, to_ranked
from eval.datadir import resolve_data_dir
from eval.errors import ConfigError
from eval.jsonl import write_jsonl_line
from eval.lama import Corpus, load_corpus
from eval.metrics import gold_rank, pk_curve, summarize
from eval.queries import make_queries
from eval.report import markdown
from kb.store import GraphStore

CHUNK = 512  # queries per predict call: the unit of progress, flushing and resuming


def default_cache_dir() -> Path:
    return Path(os.environ.get("KBC_CACHE", Path.home() / ".cache" / "kbcompare"))


@dataclass
class RunConfig:
    corpora: list[str]
    predictors: list[str]
    out: Path
    data_dir: str | None = None
    relations: list[str] = field(default_factory=list)
    depth: int = 100
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 32
    options: dict[str, str] = field(default_factory=dict)
    cache_dir: Path | None = None
    store: str | None = None  # graph store path, or a SPARQL endpoint URL
    limit: int | None = None  # at most this many facts per relation (quick looks)

    def settings(self) -> dict:
        """The settings that change answers; a rerun into the same directory must match them."""
        return {
            "depth": self.depth,
            "dtype": self.dtype,
            "relations": self.relations,
            "options": self.options,
            "limit": self.limit,
        }


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _open_store(cfg: RunConfig, cache: Path) -> GraphStore:
    if cfg.store and cfg.store.startswith(("http://", "https://")):
        return GraphStore.remote(cfg.store)
    return GraphStore.open(cfg.store or cache / "store")


def _check_config(cfg: RunConfig, path: Path, versions: dict[str, str]) -> dict:
    """Merge with an existing config of the same directory, refusing incompatible reruns."""
    config = {"settings": cfg.settings(), "corpora": [], "predictors": [], "data_versions": {}, "runs": []}
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("settings") != cfg.settings():
            raise ConfigError(
                f"{path.parent} holds results made with other settings ({old.get('settings')}); "
                "use another --out or the same settings"
            )
        for corpus, version in versions.items():
            seen = old.get("data_versions", {}).get(corpus)
            if seen and seen != version:
                raise ConfigError(
                    f"{path.parent} holds {corpus} results from other data (version {seen}, now {version}); "
                    "use another --out"
                )
        config = old
    return config


def run_lama(cfg: RunConfig, progress: bool = True) -> list[dict]:
    out = cfg.out
    for spec in cfg.predictors:
        resolve(spec)  # unknown names fail before any data is loaded
    data_dir = resolve_data_dir(cfg.data_dir)
    cache = cfg.cache_dir or default_cache_dir()
    corpora: dict[str, Corpus] = {}
    for name in cfg.corpora:
        corpus = load_corpus(name, data_dir, _relations_for(cfg, name))
        if cfg.limit:
            corpus.facts = _limit(corpus, cfg.limit)
        _log(corpus.summary())
        corpora[name] = corpus
    versions = {name: c.version for name, c in corpora.items()}
    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "config.json"
    config = _check_config(cfg, config_path, versions)
    config["corpora"] = list(dict.fromkeys(config["corpora"] + cfg.corpora))
    config["predictors"] = list(dict.fromkeys(config["predictors"] + cfg.predictors))
    config["data_versions"].update(versions)
    config["data_dir"] = str(data_dir)
    config["load_reports"] = {n: [r.to_dict() for r in c.reports] for n, c in corpora.items()}
    config["runs"].append({"argv": sys.argv, "device": cfg.device, "batch_size": cfg.batch_size})
    config.setdefault("predictor_configs", {})
    _write_json(config_path, config)

    with _open_store(cfg, cache) as store:
        for name, corpus in corpora.items():
            valid = _valid_objects(store, corpus)
            queries = make_queries(corpus)
            for spec in cfg.predictors:
                ctx = PredictorContext(corpus, store, cache, data_dir, cfg.device, cfg.dtype, cfg.batch_size,
                                       dict(cfg.options), progress)
                described = _run_one(spec, ctx, queries, valid, cfg, progress)
                if described is not None:
                    config["predictor_configs"].setdefault(name, {})[spec] = described
                    _write_json(config_path, config)
    rows = collect(out, config["corpora"], config["predictors"], corpora)
    return rows


def _relations_for(cfg: RunConfig, corpus: str) -> list[str] | None:
    """`--relations` applies to the corpora that know those ids (T-REx P-ids, Google-RE names)."""
    if not cfg.relations:
        return None
    from eval.lama import GOOGLE_RE_RELATIONS

    if corpus == "google_re":
        return [r for r in cfg.relations if r in GOOGLE_RE_RELATIONS] or None
    if corpus == "trex":
        return [r for r in cfg.relations if r not in GOOGLE_RE_RELATIONS] or None
    return None


def _limit(corpus: Corpus, n: int) -> list:
    kept, count = [], {}
    for fact in corpus.facts:
        count[fact.relation] = count.get(fact.relation, 0) + 1
        if count[fact.relation] <= n:
            kept.append(fact)
    return kept


def _valid_objects(store: GraphStore, corpus: Corpus) -> dict[str, dict[str, set[str]]]:
    """Per relation, subject key -> all valid object labels (from the gold graph, by SPARQL)."""
    if corpus.facts and corpus.facts[0].cloze:
        return {}  # cloze corpora (SQuAD, ConceptNet) have no subject identity to filter by
    store.ensure_facts(corpus.facts, f"{corpus.name}@{corpus.version}")
    return {rel: store.valid_objects(rel) for rel in corpus.relations}


def _run_one(spec, ctx, queries, valid, cfg: RunConfig, progress: bool) -> dict | None:
    corpus = ctx.corpus.name
    todo: list[tuple[str, list, Path]] = []
    dropped: dict[str, Counter] = {}  # per relation, dropped facts by reason (earlier runs and this one)
    for rel, pairs in queries.items():
        path = predictions_path(cfg.out, corpus, spec, rel)
        done = read_done(path)
        earlier = Counter(r["dropped"] for r in done.values() if "dropped" in r)
        if earlier:
            dropped[rel] = earlier
        rest = [(q, f) for q, f in pairs if q.uid not in done]
        if rest:
            todo.append((rel, rest, path))
    if not todo:
        _log(f"{corpus} / {spec}: all {sum(len(p) for p in queries.values())} queries done, skipped")
        return None
    predictor = build(spec, ctx)
    todo, gone = _drop_unsupported(predictor, todo)
    for rel, items in gone.items():
        path = predictions_path(cfg.out, corpus, spec, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            for query, fact, reason in items:
                write_jsonl_line(handle, _dropped_record(query, fact, reason))
    now = {rel: Counter(reason for _, _, reason in items) for rel, items in gone.items()}
    if now:
        _log(_dropped_line(f"{corpus} / {spec}", now))
    for rel, counts in now.items():
        dropped.setdefault(rel, Counter()).update(counts)
    total = sum(len(rest) for _, rest, _ in todo)
    bar = tqdm(total=total, desc=f"{corpus} {spec}", unit="fact", disable=not progress, file=sys.stderr)
    try:
        for rel, rest, path in todo:
            rel_valid = valid.get(rel, {})
            depth = cfg.depth + max((len(v) for v in rel_valid.values()), default=0)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                for start in range(0, len(rest), CHUNK):
                    chunk = rest[start:start + CHUNK]
                    preds = list(predictor.predict([q for q, _ in chunk], depth))
                    if len(preds) != len(chunk):
                        raise ConfigError(f"predictor {spec} gave {len(preds)} predictions for {len(chunk)} queries")
                    for (query, fact), pred in zip(chunk, preds):
                        write_jsonl_line(handle, _record(query, fact, pred, rel_valid))
                    handle.flush()
                    bar.update(len(chunk))
    finally:
        bar.close()
    described = predictor.describe()
    if dropped:
        described = {**described, "dropped_facts": {rel: dict(c) for rel, c in dropped.items()}}
    return described


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
        kept, reasons = filter_facts([f for _, f in rest])
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
            "gold": fact.object.label, "dropped": reason}


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
    if pred.extra:
        record["extra"] = pred.extra
    return record


def collect(out: Path, corpora: list[str], predictors: list[str], loaded: dict[str, Corpus]) -> list[dict]:
    """Score every prediction file of the directory and write the summaries."""
    rows: list[dict] = []
    curves: list[dict] = []
    dropped: list[dict] = []
    for corpus_name in corpora:
        corpus = loaded.get(corpus_name)
        for spec in predictors:
            ranked = []
            types: dict[str, str | None] = {}
            rels = corpus.relations if corpus else {}
            for rel in rels:
                records = read_done(predictions_path(out, corpus_name, spec, rel)).values()
                ranked += [to_ranked(r) for r in records if "dropped" not in r]
                types[rel] = rels[rel].type
                reasons = Counter(r["dropped"] for r in records if "dropped" in r)
                dropped += [{"corpus": corpus_name, "predictor": spec, "relation": rel, "reason": why, "n": n}
                            for why, n in reasons.items()]
            if not ranked:
                continue
            for row in summarize(ranked, types):
                rows.append({"corpus": corpus_name, "predictor": spec, **row})
            for row in pk_curve(ranked):
                curves.append({"corpus": corpus_name, "predictor": spec, **row})
    _write_json(out / "summary.json", rows)
    _write_json(out / "curves.json", curves)
    _write_json(out / "dropped.json", dropped)
    (out / "summary.md").write_text(markdown(rows) + _dropped_markdown(dropped))
    return rows


def _dropped_markdown(dropped: list[dict]) -> str:
    if not dropped:
        return ""
    lines = ["## Facts a predictor could not answer (not scored)", "",
             "| corpus | predictor | relation | reason | facts |", "|---|---|---|---|---|"]
    lines += [f"| {d['corpus']} | {d['predictor']} | {d['relation']} | {d['reason']} | {d['n']} |" for d in dropped]
    return "\n".join(lines) + "\n"


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str))
    os.replace(tmp, path)
