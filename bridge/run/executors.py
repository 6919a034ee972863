"""Where a run's chunks of queries are answered: in this process (the default) or on a Ray cluster.

The runner cuts each predictor's work into chunks and is the only writer of the run directory. An executor
only builds predictors and answers chunks, handing the predictions back in the order the chunks were given,
so a run's files do not depend on where it ran: the executor is never part of a predictor's identity.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from eval.errors import ConfigError
from eval.types import Prediction, Query

KINDS = ("local", "ray")
CONNECT_TIMEOUT_S = 5.0

Work = tuple[list[Query], int]  # one chunk of queries and the depth asked for it


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
        if self.address and self.address != "auto":
            check_reachable(self.address)

    def describe(self) -> dict:
        """What `config.json` records of each run (never part of an identity)."""
        return {"kind": "local"} if self.kind == "local" else asdict(self)


def check_reachable(address: str) -> None:
    """A concrete address answers within seconds, or the run stops with one line (Ray itself waits minutes)."""
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    default = 10001 if address.startswith("ray://") else 6379
    try:
        host, port = parts.hostname, parts.port or default
    except ValueError:
        host = None
    if not host:
        raise ConfigError(f"--ray-address {address}: expected auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(f"--ray-address {address}: cannot reach a Ray cluster at {host}:{port} "
                          f"({exc.strerror or exc}); start one with `ray start --head` or fix the address") from None


class LocalExecutor:
    """Everything in this process, one chunk after another (the predictor streams its own answers)."""

    settings = ExecutorSettings()

    def build(self, factory, spec: str, ctx, name: str | None = None):
        return factory(spec, ctx)

    def map(self, predictor, work: Iterable[Work]) -> Iterator[Iterable[Prediction]]:
        for queries, depth in work:
            yield predictor.predict(queries, depth)

    def release(self, predictor) -> None:
        """Nothing held beyond the predictor object itself."""

    def close(self) -> None:
        """Nothing to disconnect."""

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
