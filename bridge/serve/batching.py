"""Queries that arrive while the explorer is busy are answered together: one LM batch instead of a queue.

Every request adds its item to the pending list; the first one into an empty list schedules a
drain on the explorer's thread, and the drain answers whatever is pending by then (at most
`limit`, the rest in the next drain). Alone, a query is answered at once; under load, the wait
grows with the batch, not with the queue. A batch that fails is answered again one item at a time,
so a failure reaches only the request that caused it, never one that happened to share its batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from bridge.serve.explorer import Explorer

T = TypeVar("T")
R = TypeVar("R")


class Batcher(Generic[T, R]):
    def __init__(self, explorer: Explorer, answer_many: Callable[[list[T]], list[R]], limit: int = 32) -> None:
        self.explorer = explorer
        self.answer_many = answer_many
        self.limit = limit
        self._lock = threading.Lock()
        self._pending: list[tuple[T, Future]] = []

    def ask(self, item: T) -> R:
        future: Future = Future()
        with self._lock:
            self._pending.append((item, future))
            first = len(self._pending) == 1
        if first:
            self.explorer.submit(self._drain)
        return future.result()

    def _drain(self) -> None:
        with self._lock:
            batch, self._pending = self._pending[:self.limit], self._pending[self.limit:]
            more = bool(self._pending)
        if more:
            self.explorer.submit(self._drain)
        try:
            results = self.answer_many([item for item, _ in batch])
        except Exception as exc:
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            for item, future in batch:
                self._alone(item, future)
            return
        except BaseException as exc:
            for _, future in batch:
                future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results):
            future.set_result(result)

    def _alone(self, item: T, future: Future) -> None:
        try:
            (result,) = self.answer_many([item])
        except Exception as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)
