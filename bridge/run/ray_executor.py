"""`--executor ray`: chunks of queries answered by Ray actors that each build the predictor once.

Each predictor that needs no graph store (language models, Freq, random) runs on a pool of actors
(`--workers`, each with `--gpus-per-worker` GPUs and `--threads-per-worker` CPU threads); the others, which
query the run's open store, stay in the driver. The driver keeps a bounded number of chunks in flight (two
per actor). An actor makes the chunk's records itself (the stage's `Recorder` travels once per stage) and
sends back finished lines, which the driver hands to the runner in submission order, so it alone writes, in
the same order as a local run, and spends its time writing, not decoding answers. A chunk whose actor dies
is given to a fresh actor; Ctrl-C cancels what is in flight and leaves every written record, so a rerun
resumes.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
import warnings
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields, replace

from bridge.predictors.base import parameter_count
from bridge.run.executors import RAY_MISSING, Chunk, ExecutorSettings, Recorder, implicit_cluster
from eval.errors import ConfigError, KbcError
from eval.types import Answer, Prediction, RankedAnswers

try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ImportError:  # pragma: no cover - the optional extra
    raise ConfigError(RAY_MISSING) from None

log = logging.getLogger("kbc")

# factories whose predictors need no graph store: they can be built away from the driver
REMOTE_FACTORIES = frozenset({
    "bridge.predictors.lm:make_masked", "bridge.predictors.lm:make_causal", "bridge.predictors.lm:make_seq2seq",
    "bridge.predictors.kb:make_freq", "bridge.predictors.random_baseline:make_random",
})
SERVED_FACTORY = "bridge.predictors.generation:make_served"
# a Ray Client head's errors when the server process it starts for each client dies: before it started, as it
# started (the head then finds a zombie where it looks for the process), or after (then the head has waited
# RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S for it to answer)
CLIENT_SERVER_FAILED = ("Starting Ray client server failed", "psutil.ZombieProcess",
                        "Proxy failed to Connect to backend")
CLIENT_SERVER_RETRIES = 1
IN_FLIGHT_PER_WORKER = 2  # one chunk computing, one queued: no actor waits on the driver
MAX_ATTEMPTS = 3  # a chunk given to this many actors that all died is an error, not a loop
# what the runner reads off a predictor besides methods
PLAIN_ATTRIBUTES = ("slots", "chunk_size", "uncased", "score_scale")
PREDICTION_FIELDS = tuple(f.name for f in fields(Prediction))
ANSWERS_AT = PREDICTION_FIELDS.index("answers")
NICENESS_VARIABLE = "RAY_worker_niceness"  # read by the raylet a cluster started here spawns
AUTH_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
AUTH_MODE_VARIABLE = "RAY_AUTH_MODE"  # a ray:// client sends the cluster's token only when it is `token`


def pack(predictions: Iterable[Prediction]) -> tuple[list, list[tuple]]:
    """A chunk's predictions as columns: the chunk's distinct answer labels once, then per prediction the
    label positions and the scores as arrays. Building and pickling ~100 `Answer`s per query costs more
    than scoring them with a small model; scores travel as doubles only where every one is a float, so
    a record reads the same as a local run's."""
    table: dict = {}
    index = table.setdefault
    rows = []
    for p in predictions:
        answers = p.answers
        if type(answers) is RankedAnswers:  # a masked LM's: two lists already, no ids
            labels, scores, ids = answers.labels, answers.scores, [None]
        else:
            labels = [a.label for a in answers]
            scores = [a.score for a in answers]
            ids = [a.id for a in answers]
        floats = all(type(s) is float for s in scores)
        strings = all(type(label) is str for label in labels)
        row = [getattr(p, name) for name in PREDICTION_FIELDS]
        row[ANSWERS_AT] = (array("i", [index(label, len(table)) for label in labels]) if strings else labels,
                           array("d", scores) if floats else scores, ids if any(i is not None for i in ids) else None)
        rows.append(tuple(row))
    return list(table), rows


def unpack(packed: tuple[list, list[tuple]]) -> list[Prediction]:
    labels, rows = packed
    out = []
    for row in rows:
        where, scores, ids = row[ANSWERS_AT]
        names = [labels[i] for i in where] if isinstance(where, array) else where
        # with no ids, the answers stay two lists until read (`RankedAnswers`), as a local run holds a masked LM's
        answers = RankedAnswers(names, list(scores)) if ids is None else tuple(map(Answer, names, scores, ids))
        out.append(Prediction(*row[:ANSWERS_AT], answers, *row[ANSWERS_AT + 1:]))
    return out


class PredictorWorker:
    """One actor: the predictor built once from (factory, spec, context), answering chunks."""

    def __init__(self, factory, spec: str, ctx, threads: int) -> None:
        if factory.__module__ == "bridge.predictors.lm":  # Freq and random need no torch
            import torch

            torch.set_num_threads(threads)
        self.predictor = factory(spec, ctx)
        self.relations = list(ctx.corpus.relations)
        self.recorder: tuple[str, Recorder] | None = None  # the current stage's, fetched once

    def info(self) -> dict:
        p = self.predictor
        size = getattr(p, "answer_space_size", None)
        return {"describe": p.describe(), "attributes": {k: getattr(p, k) for k in PLAIN_ATTRIBUTES if hasattr(p, k)},
                "sizes": {rel: size(rel) for rel in self.relations} if size else None,
                "filter": hasattr(p, "filter_facts"), "cost": hasattr(p, "cost"), "tally": hasattr(p, "tally"),
                "parameters": parameter_count(p)}

    def predict(self, queries: list, depth: int) -> tuple[list, list[tuple]]:
        return pack(self.predictor.predict(queries, depth))

    def lines(self, token: str, recorder: list, chunk: Chunk) -> list[str]:
        """The chunk's record lines. `recorder` holds the stage's Recorder reference inside a list, so Ray
        hands over the reference and this actor fetches the object once per stage, not once per chunk."""
        if self.recorder is None or self.recorder[0] != token:
            self.recorder = (token, ray.get(recorder[0]))
        return self.recorder[1].lines(chunk, self.predictor.predict(chunk.queries, chunk.depth))

    def filter_facts(self, facts: list, slot: str | None) -> tuple[list[int], dict, dict[int, str]]:
        """Positions of the kept facts (the driver maps them back to its own objects), the reasons, and each
        dropped fact's reason, asked here so that the driver needs no round trip per dropped fact."""
        def ask(some: list):
            return self.predictor.filter_facts(some) if slot is None else self.predictor.filter_facts(some, slot=slot)

        kept, reasons = ask(facts)
        where = {id(f): i for i, f in enumerate(facts)}
        positions = [where[id(f)] for f in kept]
        left = set(range(len(facts))) - set(positions)
        return positions, dict(reasons), {i: next(iter(ask([facts[i]])[1]), "unsupported") for i in sorted(left)}

    def cost(self, queries: list) -> str:
        return self.predictor.cost(queries)

    def tally(self) -> dict[str, int]:
        return self.predictor.tally()

    def report_line(self, tally: dict[str, int]) -> str:
        return self.predictor.report_line(tally)

    def pid(self) -> int:
        return os.getpid()


RemoteWorker = ray.remote(PredictorWorker)


def _cause(exc: BaseException) -> BaseException:
    """A predictor's own error (a KbcError keeps its one-line message); anything else named by its type."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, KbcError):
        return cause
    if cause is not None:
        return KbcError(f"a Ray worker failed: {type(cause).__name__}: {cause}")
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return KbcError(f"a Ray worker failed: {lines[-1] if lines else type(exc).__name__}")


class ActorPool:
    """Actors of one predictor; chunks go to the least loaded one and come back in submission order."""

    def __init__(self, name: str, factory, spec: str, ctx, settings: ExecutorSettings, n: int, gpus: float) -> None:
        self.name = name
        self.ctx = ray.put(ctx)  # the corpus travels once, not once per actor
        self.factory, self.spec, self.settings, self.gpus = factory, spec, settings, gpus
        self.tag = f"kbc-{uuid.uuid4().hex[:12]}"
        self.made = 0
        self.told: list[tuple[str, tuple]] = []  # calls that teach a predictor (filter_facts), replayed on new actors
        self.actors = [self._new() for _ in range(n)]

    def _new(self):
        threads = self.settings.threads_per_worker
        self.made += 1
        actor = RemoteWorker.options(num_cpus=threads, num_gpus=self.gpus, max_restarts=0,
                                     name=f"{self.tag}-{self.made}").remote(self.factory, self.spec, self.ctx, threads)
        for method, args in self.told:  # an actor runs one caller's calls in order: taught before it answers
            getattr(actor, method).remote(*args)
        return actor

    def ready(self) -> None:
        try:
            ray.get([actor.pid.remote() for actor in self.actors])
        except (RayTaskError, RayActorError) as exc:
            raise _cause(exc) from None

    def tell(self, method: str, *args):
        """A call that may change what the predictor answers later: made on every actor, now and to come."""
        self.told.append((method, args))
        refs = [(slot, actor, getattr(actor, method).remote(*args)) for slot, actor in enumerate(self.actors)]
        answers, lost = [], None
        for slot, actor, ref in refs:
            try:
                answers.append(ray.get(ref))
            except RayTaskError as exc:
                raise _cause(exc) from None
            except RayActorError as exc:  # its replacement is told on creation
                lost = exc
                if self.actors[slot] is actor:
                    self.actors[slot] = self._new()
        if not answers:
            return self.call(method, *args) if lost is not None else None
        return answers[0]

    def call(self, method: str, *args):
        """One call on a live actor (the first), replacing it while it dies."""
        for _ in range(MAX_ATTEMPTS):
            actor = self.actors[0]
            try:
                return ray.get(getattr(actor, method).remote(*args))
            except RayTaskError as exc:
                raise _cause(exc) from None
            except RayActorError as exc:
                lost = exc
                if self.actors[0] is actor:
                    self.actors[0] = self._new()
        raise _cause(lost)

    def every(self, method: str) -> list:
        """`method()` of every live actor (one that died took what it alone knew with it)."""
        out = []
        for actor in self.actors:
            try:
                out.append(ray.get(getattr(actor, method).remote()))
            except RayTaskError as exc:
                raise _cause(exc) from None
            except RayActorError:
                continue
        return out

    def map(self, work: Iterable[tuple], method: str = "predict", decode=unpack, lead: tuple = ()) -> Iterator:
        """`method(*lead, *chunk)` of each chunk on some actor, decoded, in submission order; at most two
        chunks per actor in flight or waiting."""
        work = iter(work)
        window = IN_FLIGHT_PER_WORKER * len(self.actors)
        inflight: dict = {}  # ObjectRef -> (index, slot, actor, chunk, attempt)
        done: dict[int, list[Prediction]] = {}
        load = [0] * len(self.actors)
        submitted = following = 0
        exhausted = False

        def submit(index: int, chunk: tuple, attempt: int) -> None:
            slot = min(range(len(self.actors)), key=load.__getitem__)
            actor = self.actors[slot]
            inflight[getattr(actor, method).remote(*lead, *chunk)] = (index, slot, actor, chunk, attempt)
            load[slot] += 1

        try:
            while True:
                while not exhausted and len(inflight) + len(done) < window:
                    chunk = next(work, None)
                    if chunk is None:
                        exhausted = True
                        break
                    submit(submitted, chunk, 1)
                    submitted += 1
                if following in done:
                    yield done.pop(following)
                    following += 1
                    continue
                if not inflight:
                    return
                (ref,), _ = ray.wait(list(inflight), num_returns=1)
                index, slot, actor, chunk, attempt = inflight.pop(ref)
                load[slot] -= 1
                try:
                    done[index] = decode(ray.get(ref))
                except RayTaskError as exc:
                    raise _cause(exc) from None
                except RayActorError as exc:
                    if attempt >= MAX_ATTEMPTS:
                        raise KbcError(f"{self.name}: a chunk of {_size(chunk)} queries lost its Ray worker "
                                       f"{attempt} times; last: {_cause(exc)}") from None
                    if self.actors[slot] is actor:
                        self.actors[slot] = self._new()
                    log.warning("%s: a Ray worker was lost; its chunk of %d queries is redone on a fresh worker",
                                self.name, _size(chunk))
                    submit(index, chunk, attempt + 1)
        finally:
            for ref in inflight:
                ray.cancel(ref)

    def close(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def _light(facts: list) -> list:
    """Facts as an actor needs them: neither the predictors built on actors (REMOTE_FACTORIES) nor the
    experiments' records read evidence sentences, which are most of a fact's bytes."""
    return [replace(f, evidences=()) if getattr(f, "evidences", ()) else f for f in facts]


def driver_reason(target: str) -> str:
    """Why the predictor built by `target` ("module:function") is built in the driver, not on the actors."""
    if target == SERVED_FACTORY:
        return "a server answers it: the driver sends the requests, as many at once as its concurrency allows"
    return "it reads the run's graph store"


def _without_text(corpus):
    """The corpus as an actor needs it (`_light`)."""
    if not any(getattr(f, "evidences", ()) for f in corpus.facts):
        return corpus
    light = replace(corpus, facts=_light(corpus.facts))
    light.__dict__.update({k: v for k, v in vars(corpus).items() if k not in vars(light)})  # a known version
    return light


def _size(chunk: tuple) -> int:
    """Queries in a chunk as `map` was given it: (Chunk,) or (queries, depth)."""
    first = chunk[0]
    return len(first.queries) if isinstance(first, Chunk) else len(first)


class RemotePredictor:
    """The driver's stand-in for a predictor living in actors: what the runner reads, asked once."""

    def __init__(self, pool: ActorPool) -> None:
        self.pool = pool
        info = pool.call("info")
        pool.ready()  # every actor holds the model before the first chunk: a load error stops the run here
        self._describe = info["describe"]
        self.parameter_count = info["parameters"]  # counted where the model lives: what the runner records of it
        for key, value in info["attributes"].items():
            setattr(self, key, value)
        if info["sizes"] is not None:
            self.answer_space_size = info["sizes"].get
        if info["filter"]:
            self._dropped: dict[tuple[int, str | None], str] = {}  # (fact, slot) -> why it was dropped
            self.filter_facts = self._filter_facts
        if info["cost"]:
            self.cost = lambda queries: pool.call("cost", queries)
        if info["tally"]:  # what asking cost (a generating predictor's requests and tokens), summed over the actors
            self.tally = self._tally
            self.report_line = lambda tally: pool.call("report_line", tally)

    def _tally(self) -> dict[str, int]:
        total: Counter = Counter()
        for tally in self.pool.every("tally"):
            total.update(tally)
        return dict(total)

    def describe(self) -> dict:
        return self._describe

    def predict(self, queries: list, depth: int) -> list[Prediction]:
        return next(self.pool.map([(queries, depth)]))

    def _filter_facts(self, facts: list, slot: str | None = None):
        """Asked of every actor (a predictor may remember what it kept); facts known to be dropped, as the
        runner asks them one by one for their reason, are answered here."""
        known = [self._dropped.get((id(f), slot)) for f in facts]
        if facts and all(known):
            return [], dict(Counter(known))
        kept, reasons, dropped = self.pool.tell("filter_facts", _light(facts), slot)
        self._dropped.update({(id(facts[i]), slot): why for i, why in dropped.items()})
        return [facts[i] for i in kept], reasons


@contextmanager
def _workers_at_driver_priority() -> Iterator[None]:
    """A cluster started here runs its workers at this process's priority: Ray's default lowers theirs
    (niceness 15), so on a busy machine every actor would get less CPU than the same work done locally.
    The variable is an increment over the niceness the workers inherit (the driver's, through the raylet it
    starts), so 0 keeps the driver's. `RAY_worker_niceness` set by the user wins; a cluster already running keeps
    its own setting."""
    if NICENESS_VARIABLE in os.environ:
        yield
        return
    os.environ[NICENESS_VARIABLE] = "0"
    try:
        yield
    finally:
        os.environ.pop(NICENESS_VARIABLE, None)


class _OwnClusterNotice(logging.Filter):
    """Ray's notice that it turned token authentication on for a cluster it starts: said on every run kbc starts
    and stops its own cluster for, with nothing to do about it (the cluster keeps token authentication)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled for this Ray cluster")


@contextmanager
def _own_cluster_notice_kept_back(starts: bool) -> Iterator[None]:
    """Keep back `_OwnClusterNotice` while `ray.init` starts a cluster of this run's own; a cluster the user runs
    (joined) keeps every notice of Ray's."""
    if not starts:
        yield
        return
    said = logging.getLogger(AUTH_NOTICE_LOGGER)
    kept_back = _OwnClusterNotice()
    said.addFilter(kept_back)
    try:
        yield
    finally:
        said.removeFilter(kept_back)


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """`ray.init` makes SIGTERM exit the driver at once (`sys.exit`); the handler this process had (kbc's: stop as
    Ctrl-C does, keeping every record and marking the run) is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def client_server_died(exc: BaseException) -> bool:
    """Whether a Ray Client connection failed because the head's server process for this client died: a second
    try often gets one that lives."""
    return any(marker in str(exc) for marker in CLIENT_SERVER_FAILED)


def _reason(exc: BaseException) -> str:
    """Ray's error on one line: its first line, and the last line of a server traceback it carries (a client's
    `Initialization failure from server:` says nothing without it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    first = lines[0].rstrip(".")
    return f"{first} {lines[-1].rstrip('.')}" if len(lines) > 1 and first.endswith(":") else first


class RayExecutor:
    """Pools of actors per predictor on a Ray cluster joined (or started here) once per run."""

    def __init__(self, settings: ExecutorSettings, owns: bool, cluster: str = "") -> None:
        self.settings = settings
        self.owns = owns  # whether this run started the Ray session (and so ends it)
        self.cluster = cluster  # the address joined, or "started: N CPUs" for a cluster started here
        self.pools: dict[int, ActorPool] = {}

    @classmethod
    def connect(cls, settings: ExecutorSettings) -> RayExecutor:
        address = settings.address
        if ray.is_initialized():
            return cls(settings, owns=False, cluster=ray.get_runtime_context().gcs_address).checked()
        joins = bool(address) or implicit_cluster() is not None  # without an address Ray joins one it finds
        try:
            for attempt in range(1 + CLIENT_SERVER_RETRIES):
                try:
                    with _workers_at_driver_priority(), _sigterm_kept(), warnings.catch_warnings(), \
                            _own_cluster_notice_kept_back(not joins):
                        warnings.simplefilter("ignore", UserWarning)  # the client's timeout warning: said below
                        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                                 logging_level=logging.WARNING)
                    break
                except ConnectionError as exc:
                    # a busy head may fail to start this client's own server process in time; it often starts
                    # on a second try (any other failure is final)
                    if attempt == CLIENT_SERVER_RETRIES or not client_server_died(exc):
                        raise
                    ray.shutdown()
                    time.sleep(2.0)
        except ConnectionError as exc:
            hint = "start one with `ray start --head`, or drop --ray-address to start one for this run"
            if str(address).startswith("ray://") and not os.environ.get(AUTH_MODE_VARIABLE):
                hint += (f"; a cluster with token authentication (Ray turns it on for clusters `ray start` starts) "
                         f"also needs {AUTH_MODE_VARIABLE}=token here, with its token (`ray get-auth-token` on the "
                         "head) in RAY_AUTH_TOKEN or ~/.ray/auth_token")
            raise ConfigError(f"--ray-address {address}: {_reason(exc)}; {hint}") from None
        except (ValueError, ImportError) as exc:
            raise ConfigError(f"--ray-address {address}: {str(exc).splitlines()[0]}") from None
        have = ray.cluster_resources()  # said, as `auto` joins whichever cluster this machine runs
        gcs, cpus, gpus = ray.get_runtime_context().gcs_address, have.get("CPU", 0.0), have.get("GPU", 0.0)
        log.info("Ray: %s the cluster at %s (%g CPUs, %g GPUs)", "joined" if joins else "started", gcs, cpus, gpus)
        started = f"started: {cpus:g} CPUs" + (f", {gpus:g} GPUs" if gpus else "")
        return cls(settings, owns=True, cluster=gcs if joins else started).checked()

    def describe(self) -> dict:
        """What `config.json` records of the attempt's executor: the flags, with the cluster joined (its address,
        or "started: N CPUs" for one started here) and the workers each predictor's pool had (`workers`; with
        --gpus-per-worker, `workers_with_gpus` for the language models' pools)."""
        out = {**self.settings.describe(), "address": self.cluster, "workers": self._workers(0.0)}
        if self.settings.gpus_per_worker:
            out["workers_with_gpus"] = self._workers(self.settings.gpus_per_worker)
        return out

    def checked(self) -> RayExecutor:
        """Refuse, before any work, workers the cluster cannot hold (their actors would wait forever)."""
        try:
            self._workers(self.settings.gpus_per_worker)
        except BaseException:
            self.close()
            raise
        return self

    def _workers(self, gpus: float) -> int:
        """How many actors: as asked, else as many as the cluster's CPUs (or GPUs) hold; more is refused."""
        have = ray.cluster_resources()
        cpus, threads = have.get("CPU", 0.0), self.settings.threads_per_worker
        fits = int(cpus // threads)
        if gpus:
            fits = min(fits, int(have.get("GPU", 0.0) // gpus))
        asked = self.settings.workers
        if fits < 1 or (asked and asked > fits):
            need = f"{asked or 1} worker(s) of {threads} CPU(s)" + (f" and {gpus:g} GPU(s)" if gpus else "")
            raise ConfigError(f"--executor ray: the cluster has {cpus:g} CPUs and {have.get('GPU', 0.0):g} GPUs, "
                              f"too few for {need}; lower --workers/--gpus-per-worker/--threads-per-worker or add "
                              "nodes")
        return asked or fits

    def build(self, factory, spec: str, ctx, name: str | None = None):
        """A stand-in answering from actors, or, for predictors that read the run's store, the predictor here."""
        target = f"{getattr(factory, '__module__', '')}:{getattr(factory, '__qualname__', '')}"
        if target not in REMOTE_FACTORIES:
            log.info("%s: runs in the driver (%s)", name or spec, driver_reason(target))
            return factory(spec, ctx)
        lm = target.startswith("bridge.predictors.lm:")
        gpus = self.settings.gpus_per_worker if lm else 0.0
        device = ctx.device if not gpus or ctx.device != "cpu" else "cuda"
        remote_ctx = replace(ctx, corpus=_without_text(ctx.corpus), store=None, progress=False, device=device)
        pool = ActorPool(name or spec, factory, spec, remote_ctx, self.settings, self._workers(gpus), gpus)
        try:
            predictor = RemotePredictor(pool)
        except BaseException:
            pool.close()
            raise
        self.pools[id(predictor)] = pool
        return predictor

    def map(self, predictor, chunks: Iterable[Chunk], recorder: Recorder) -> Iterator[list[str]]:
        pool = self.pools.get(id(predictor))
        if pool is None:  # kept in the driver
            for chunk in chunks:
                yield recorder.lines(chunk, predictor.predict(chunk.queries, chunk.depth))
            return
        token = uuid.uuid4().hex
        yield from pool.map(((replace(chunk, facts=_light(chunk.facts)),) for chunk in chunks), "lines", list,
                            (token, [ray.put(recorder)]))

    def release(self, predictor) -> None:
        pool = self.pools.pop(id(predictor), None)
        if pool is not None:
            pool.close()

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()
        if self.owns and ray.is_initialized():
            ray.shutdown()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
