"""Where a run's chunks of queries are answered: in this process (the default) or on a Ray cluster.

The runner cuts each predictor's work into chunks and is the only writer of the run directory. An executor
only builds predictors and answers chunks, handing each chunk's record lines back in the order the chunks
were given, so a run's files do not depend on where it ran: the executor is never part of a predictor's
identity. Records are made beside the predictor (`Recorder`), so a remote worker sends finished lines and the
driver only writes them.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from eval.errors import ConfigError
from eval.jsonl import jsonl_text
from eval.types import Fact, Prediction, Query

KINDS = ("local", "ray")
ADDRESS_VARIABLE = "RAY_ADDRESS"
CONNECT_TIMEOUT_S = 5.0
INSTALL_RAY = "pip install -e '.[ray]'"  # the project is installed from its checkout (README, docs/ray.md)
RAY_MISSING = f"--executor ray needs Ray, which is not installed: {INSTALL_RAY} in the kbcompare checkout"


@dataclass(frozen=True)
class Chunk:
    """Queries of one relation answered together, with their facts and the file their records go to."""

    relation: str
    queries: list[Query]
    facts: list[Fact]
    depth: int
    path: str


class Recorder:
    """A stage's records of a chunk's predictions, as the lines the runner appends.

    Holds the experiment as its `queries()` left it (records only read that state) and the valid objects of
    the stage's relations; a remote worker receives it once per stage."""

    def __init__(self, experiment, stage: str, valid: dict, predictor: str) -> None:
        self.experiment, self.stage, self.valid, self.predictor = experiment, stage, valid, predictor

    def lines(self, chunk: Chunk, predictions: Iterable[Prediction]) -> list[str]:
        predictions = list(predictions)
        if len(predictions) != len(chunk.queries):
            raise ConfigError(f"predictor {self.predictor} gave {len(predictions)} predictions for "
                              f"{len(chunk.queries)} queries")
        valid, record = self.valid.get(chunk.relation, {}), self.experiment.record
        return [jsonl_text(record(self.stage, q, f, p, valid), chunk.path)
                for q, f, p in zip(chunk.queries, chunk.facts, predictions)]


@dataclass(frozen=True)
class ExecutorSettings:
    """`--executor`, `--ray-address`, `--workers`, `--gpus-per-worker`, `--threads-per-worker`."""

    kind: str = "local"
    address: str | None = None  # None: RAY_ADDRESS, else a cluster started here; `auto`: a running one
    workers: int | None = None  # actors per predictor; None: as many as the cluster's CPUs (or GPUs) hold
    gpus_per_worker: float = 0.0
    threads_per_worker: int = 1

    def check(self) -> None:
        """Ray-only flags with the local executor are refused rather than ignored."""
        if self.kind not in KINDS:
            raise ConfigError(f"--executor {self.kind}: use one of {', '.join(KINDS)}")
        if self.kind == "local":
            given = [flag for flag, value, default in (
                ("--ray-address", self.address, None), ("--workers", self.workers, None),
                ("--gpus-per-worker", self.gpus_per_worker, 0.0), ("--threads-per-worker", self.threads_per_worker, 1),
            ) if value != default]
            if given:
                raise ConfigError(f"{given[0]} applies to --executor ray only; add --executor ray or drop it")
        if self.workers is not None and self.workers < 1:
            raise ConfigError(f"--workers {self.workers}: must be at least 1")
        if self.gpus_per_worker < 0:
            raise ConfigError(f"--gpus-per-worker {self.gpus_per_worker:g}: must not be negative")
        if self.threads_per_worker < 1:
            raise ConfigError(f"--threads-per-worker {self.threads_per_worker}: must be at least 1")
        if self.kind != "ray":
            return
        if importlib.util.find_spec("ray") is None:  # before any cluster is looked for: nothing could join it
            raise ConfigError(RAY_MISSING)
        if self.address and self.address != "auto":
            check_reachable(self.address)
            return
        found = implicit_cluster()
        if found is None:
            if self.address == "auto":
                raise ConfigError(f"--ray-address auto: no Ray cluster runs on this machine (none in "
                                  f"{ADDRESS_VARIABLE} or {current_cluster_file()}); start one with `ray start "
                                  "--head`, or drop --ray-address to start one for this run")
            return
        where, address = found
        if where == ADDRESS_VARIABLE:
            check_reachable(address, f"{ADDRESS_VARIABLE}={address}:",
                            f"unset {ADDRESS_VARIABLE} to start one for this run, or fix it")
        else:
            check_reachable(address, f"{where} (left by `ray start`) names {address}:",
                            f"`ray stop` (or remove {where}) to start one for this run, or pass --ray-address")

    def describe(self) -> dict:
        """What `config.json` records of each run (never part of an identity)."""
        return {"kind": "local"} if self.kind == "local" else asdict(self)


def current_cluster_file() -> Path:
    """Where `ray start` notes the cluster it started, which `ray.init()` without an address joins."""
    return Path(os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp") / "ray" / "ray_current_cluster"


def implicit_cluster() -> tuple[str, str] | None:
    """(where it is named, address) of the cluster Ray joins when no address is given: `RAY_ADDRESS`, else the
    one `ray start` left on this machine; None when Ray would start one."""
    env = os.environ.get(ADDRESS_VARIABLE, "").strip()
    if env and env not in ("auto", "local"):
        return ADDRESS_VARIABLE, env
    path = current_cluster_file()
    try:
        noted = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return (str(path), noted) if noted else None


def check_reachable(address: str, what: str | None = None, fix: str | None = None) -> None:
    """A concrete address answers within seconds, or the run stops with one line (Ray itself waits minutes).
    `what` and `fix` word the line for an address the user did not type (`RAY_ADDRESS`, a file `ray start` left)."""
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    default = 10001 if address.startswith("ray://") else 6379
    try:
        host, port = parts.hostname, parts.port or default
    except ValueError:
        host = None
    if not host:
        raise ConfigError(f"--ray-address {address}: expected auto, HOST:PORT or ray://HOST:PORT")
    what = what or f"--ray-address {address}:"
    try:
        conn = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise ConfigError(f"{what} cannot reach a Ray cluster at {host}:{port} ({exc.strerror or exc}); "
                          f"{fix or 'start one with `ray start --head` or fix the address'}") from None
    with conn:
        if not speaks_grpc(conn):
            raise ConfigError(f"{what} {host}:{port} answers, but not as a Ray cluster (its GCS port, 6379 by "
                              "default, or its client port, 10001; not the dashboard's 8265)") from None


# what every HTTP/2 client sends first; an HTTP/2 (gRPC) server answers with a SETTINGS frame (type 4)
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def speaks_grpc(conn: socket.socket) -> bool:
    """Whether the peer talks HTTP/2, as Ray's GCS and client server (gRPC) do: Ray itself retries any other
    port for minutes, where a web server or a silent port is told apart here within seconds."""
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        conn.sendall(_PREFACE)
        head = b""
        while len(head) < 9:
            part = conn.recv(9 - len(head))
            if not part:
                return False
            head += part
    except OSError:
        return False
    return head[3] == 4  # a frame header: 3 bytes of length, then the type


class LocalExecutor:
    """Everything in this process, one chunk after another (the predictor streams its own answers)."""

    settings = ExecutorSettings()

    def describe(self) -> dict:
        """What `config.json` records of the attempt's executor."""
        return self.settings.describe()

    def build(self, factory, spec: str, ctx, name: str | None = None):
        return factory(spec, ctx)

    def map(self, predictor, chunks: Iterable[Chunk], recorder: Recorder) -> Iterator[list[str]]:
        for chunk in chunks:
            yield recorder.lines(chunk, predictor.predict(chunk.queries, chunk.depth))

    def release(self, predictor) -> None:
        """Nothing held beyond the predictor object itself."""

    def close(self) -> None:
        """Nothing to disconnect."""

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
