"""What the explorer holds from start-up to shutdown: corpus, graph store, the gold KB and every predictor.

Everything is built once, through the same registry, options and graph store `kbc run` uses, so an
answer on the page is the answer a run would record. A part that cannot be built is kept as a
message in its column: the page still serves every other side.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bridge.predictors.registry import PredictorContext, side_of
from bridge.run.config import RunConfig, default_cache_dir, plan_predictors
from bridge.run.options import shown
from eval.corpora import load_corpus, resolve_run_data_dir
from eval.errors import ConfigError, KbcError
from eval.types import Entity, Fact
from kb.store import GraphStore, open_store

log = logging.getLogger("kbc")


@dataclass
class ExplorerConfig:
    data_dir: str | None = None
    corpus: str = "trex"
    relations: list[str] = field(default_factory=list)
    predictors: list[str] = field(default_factory=list)  # NAME=SPEC or SPEC, as `kbc run --predictors`
    options: dict[str, str] = field(default_factory=dict)  # --set [NAME.]KEY=VALUE
    cache_dir: Path | None = None
    store: str | None = None
    store_timeout: float = 30.0  # seconds per request to a SPARQL endpoint
    text_index: str | None = None  # "lama" (the cached evidence index, built on first use) or a tantivy path
    coherency: str | None = None  # the predictor whose round trip is shown
    runs: list[Path] = field(default_factory=list)
    device: str = "cpu"
    batch_size: int = 32


def refuse_unaskable(corpus: str) -> None:
    """A corpus the live view cannot ask, refused in one line before anything loads: FewRel asks which relation a
    sentence states, which no subject and relation (nor a cloze) put to the gold KB and the predictors."""
    from eval.fewrel import CORPUS as FEWREL

    if corpus == FEWREL:
        raise ConfigError("fewrel asks which relation a sentence states (relation classification), not the object "
                          "of a subject and relation: the live view cannot ask it; `kbc run fewrel` scores the "
                          "classifiers, and `kbc show RUN --uid UID` (or `kbc serve --run RUN`: /runs/RUN/facts/UID) "
                          "shows each sentence with every classifier's answer")


@dataclass
class Column:
    """One configured predictor: built (`predictor`) or failed at start-up (`error`)."""

    name: str
    spec: str
    kind: str  # "kb", "lm" or "baseline" (a chance floor)
    predictor: object = None
    error: str | None = None
    set_rule: str | None = None  # a set-valued corpus's `set=` option: how its ranking becomes a set (None: all)


class Explorer:
    """Built and asked on one worker thread: the LM result caches (SQLite) and the store stay on the thread
    that opened them, and queries never interleave inside a predictor."""

    worker: ThreadPoolExecutor | None = None

    @classmethod
    def start(cls, cfg: ExplorerConfig) -> Explorer:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbc-serve")
        try:
            explorer = worker.submit(cls, cfg).result()
        except BaseException:
            worker.shutdown(wait=False)
            raise
        explorer.worker = worker
        return explorer

    def call(self, fn: Callable, *args):
        """`fn(*args)` on the explorer's thread (directly when it has none)."""
        return self.submit(fn, *args).result()

    def submit(self, fn: Callable, *args) -> Future:
        if self.worker is not None:
            return self.worker.submit(fn, *args)
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def __init__(self, cfg: ExplorerConfig) -> None:
        started = time.perf_counter()
        self.cfg = cfg
        refuse_unaskable(cfg.corpus)
        self.data_dir = resolve_run_data_dir([cfg.corpus], cfg.data_dir)  # as `kbc run` finds the corpus
        self.cache = Path(cfg.cache_dir) if cfg.cache_dir else default_cache_dir()
        run_cfg = RunConfig(corpora=[cfg.corpus], predictors=list(cfg.predictors), out=Path("."),
                            data_dir=str(self.data_dir), relations=list(cfg.relations), device=cfg.device,
                            batch_size=cfg.batch_size, options=dict(cfg.options), cache_dir=self.cache,
                            store=cfg.store)
        planned = plan_predictors(run_cfg)
        names = [p.name for p in planned]
        if cfg.coherency and cfg.coherency not in names:
            raise ConfigError(f"--coherency {cfg.coherency}: no predictor of --predictors is named so "
                              f"(predictors: {', '.join(names) or 'none'})")
        corpus = load_corpus(cfg.corpus, self.data_dir, cfg.relations or None)
        self.corpus = corpus
        self.relations = corpus.relations
        self._versions: dict = {}  # per --compat (and --misprimes of a negated corpus), as `data_versions` gives them
        self._versions_lock = threading.Lock()
        self.store: GraphStore = open_store(cfg.store, None, self.cache / "store", cfg.store_timeout)
        ctx = PredictorContext(corpus, self.store, self.cache, self.data_dir, cfg.device, "float32", cfg.batch_size,
                               {}, progress=True)
        from bridge.predictors.kb import is_set_corpus, make_gold

        # LM-KBC: each subject and relation has a gold *set*, held in memory (no graphs); answers become ids as a run
        # links them (`eval.lmkbc.label_index`)
        self.set_valued = is_set_corpus(corpus)
        self.gold = make_gold("gold", ctx)
        self.gold_graphs = [] if self.set_valued else sorted(self.gold.graphs.values())
        # negated LAMA, SQuAD, ConceptNet: each fact is its own cloze sentence, held in no gold graph; the gold column
        # reads the corpus's facts, and a query asks the sentence of the subject's facts, as a run asks them
        self.cloze_facts = not self.set_valued and bool(corpus.facts) and corpus.facts[0].cloze is not None
        self.labels = self.object_labels = None
        if self.set_valued:
            from eval.lmkbc import known_labels, label_index

            self.labels = label_index(self.data_dir)
            self.object_labels = known_labels(self.data_dir)
        self.columns: list[Column] = []
        for p in planned:
            # the page and its JSON show a server URL's query values as `***`, as a run's files do
            column = Column(p.name, shown(p.spec), side_of({"predictor_specs": {p.name: {"spec": p.spec}}}, p.name),
                            set_rule=p.options.get("set") if self.set_valued else None)
            try:
                column.predictor = p.factory(p.spec, PredictorContext(
                    corpus, self.store, self.cache, self.data_dir, cfg.device, "float32", cfg.batch_size,
                    dict(p.options), progress=True, name=p.name))
            except KbcError as exc:
                column.error = str(exc)
                log.warning("predictor %s (%s) not available: %s", p.name, shown(p.spec), exc)
            self.columns.append(column)
        self.index = self._open_index(cfg.text_index)
        from kb.reasoning import closure_graphs

        self.has_inferred = bool(closure_graphs(self.store))
        self.subjects: dict[str, list[Entity]] = {}  # label -> the corpus's subjects carrying it
        self.by_subject: dict[str, list[Fact]] = {}  # subject label -> its facts (evidence sentences)
        for fact in corpus.facts:
            known = self.subjects.setdefault(fact.subject.label, [])
            if fact.subject not in known:
                known.append(fact.subject)
            self.by_subject.setdefault(fact.subject.label, []).append(fact)
        self.startup_seconds = round(time.perf_counter() - started, 2)
        # the store is read as it was published by now: a later `kbc kb infer` beside it is said, not shown
        self.store_read_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    def _open_index(self, location: str | None):
        if not location:
            return None
        from kb.text.evidence import evidence_index
        from kb.text.index import open_index

        if location == "lama":
            from bridge.predictors.text import EVIDENCE_INDEX

            return evidence_index(self.cache / "index" / EVIDENCE_INDEX, self.data_dir, progress=True)
        return open_index("tantivy", location)

    def data_versions(self, compat: str | None = None, misprimes: str | None = None) -> dict[str, str]:
        """Per relation, the data version `kbc run` records for the data served here (`relation_versions` of the
        corpus read as a run with this `--compat` reads it, label duplicates removed under `--compat lama`; for a
        negated/misprimed corpus with the sentences of its `--misprimes` files joined, as that run's records), so a
        browsed run made from other data is told apart from one made from this. Computed once per setting."""
        from eval.lama import joined_versions
        from eval.negated import PROBE_CORPORA

        facts = self._fact_versions(compat)
        if misprimes is None or self.corpus.name not in PROBE_CORPORA:
            return facts
        with self._versions_lock:
            if (compat, misprimes) not in self._versions:
                from bridge.experiments.negated import NegatedExperiment

                probes = NegatedExperiment(misprimes).input_versions({self.corpus.name: self.corpus}, self.data_dir)
                self._versions[compat, misprimes] = joined_versions(facts, probes[self.corpus.name])
            return self._versions[compat, misprimes]

    def _fact_versions(self, compat: str | None) -> dict[str, str]:
        from eval.lama import relation_versions

        with self._versions_lock:
            if compat not in self._versions:
                corpus = self.corpus
                if compat:
                    corpus = load_corpus(self.cfg.corpus, self.data_dir, self.cfg.relations or None, compat=compat,
                                         cache_dir=self.cache)
                if compat == "lama":
                    from eval.compat import lama_dedup

                    corpus = copy.copy(corpus)
                    corpus.facts = lama_dedup(corpus.facts)[0]
                self._versions[compat] = relation_versions(corpus)
            return self._versions[compat]

    def close(self) -> None:
        def shut() -> None:
            if self.index is not None:
                self.index.close()
            self.store.close()

        self.call(shut)
        if self.worker is not None:
            self.worker.shutdown(wait=True)
            self.worker = None

    def examples(self, n: int = 4) -> list[dict]:
        """A query per relation (its first fact's subject) for the landing page, so the first click answers."""
        first: dict[str, Fact] = {}
        for fact in self.corpus.facts:
            if fact.relation in self.relations and fact.relation not in first:
                first[fact.relation] = fact
                if len(first) == n:
                    break
        from eval.lama import MASK, SQUAD_RELATION

        out = []
        for rel, f in first.items():
            template = f.cloze or self.relations[rel].template
            # SQuAD's facts have no subject to ask by (each is labelled "Squad"): its example is its cloze
            asked = ({"cloze": template.replace("[Y]", MASK)} if rel == SQUAD_RELATION.id and f.cloze
                     else {"subject": f.subject.label, "relation": rel})
            out.append({"subject": f.subject.label, "relation": rel, "label": self.relations[rel].label,
                        "params": asked, "prompt": template.replace("[X]", f.subject.label).replace("[Y]", "…")})
        return out

    def describe(self) -> dict:
        return {"corpus": self.corpus.name, "relations": len(self.relations), "facts": len(self.corpus.facts),
                "store": self.store.location, "gold_graphs": len(self.gold_graphs),
                "inferred": self.has_inferred, "text_index": self.cfg.text_index,
                "coherency": self.cfg.coherency, "startup_seconds": self.startup_seconds,
                "predictors": [{"name": c.name, "spec": c.spec, "kind": c.kind, "error": c.error}
                               for c in self.columns]}
