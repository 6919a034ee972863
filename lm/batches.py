"""How token id rows become forward passes: padded arrays, length-sorted batches, and passes spread over the CPU
threads torch was given, one thread each.

On a GPU a few full batches beat many small exact-length ones: rows sorted by length are cut into batches
(`length_batches`) and padded on the right under an attention mask (`pad_rows`); right padding changes no
position of a real token. On a few CPU cores, one pass at a time with every core inside each operation loses
time to the cores waiting on each other around every small operation (layer norms, activations, attention
reshapes); the same passes run side by side, each on one core, keep the cores busy. Each pass's numbers come from one
thread whatever the order the passes finish in, so a result does not depend on scheduling.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")


class _CallersThreads:
    """The thread count torch was given is each thread's once it ran torch, and a new thread's is the last one set
    anywhere: runs side by side in threads of one process (and the caller's own work) change each other's. The
    first of overlapping blocks records the count the caller set; each block sets it back in its thread when it
    ends (then also the count threads started later take), on an exception too."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blocks = 0
        self.saved: int | None = None  # None: torch was not imported when the first block began

    @contextmanager
    def kept(self) -> Iterator[int | None]:
        torch = sys.modules.get("torch")
        with self.lock:
            if self.saved is None and torch is not None:
                self.saved = torch.get_num_threads()
            self.blocks += 1
            saved = self.saved
        try:
            yield saved
        finally:
            with self.lock:
                self.blocks -= 1
                if self.saved is not None:
                    sys.modules["torch"].set_num_threads(self.saved)
                if self.blocks == 0:
                    self.saved = None


_THREADS = _CallersThreads()


def callers_threads() -> AbstractContextManager[int | None]:
    """Around in-process work (`kbcompare.run`): torch's thread count, which passes change meanwhile, is the
    caller's again in the caller's thread when it ends, on an exception too, and where runs of several threads
    overlap. Yields the caller's count (None where torch was not imported)."""
    return _THREADS.kept()


def _one_thread(fn: Callable[[T], R], item: T) -> R:
    """`fn(item)` on this thread alone: a pass thread's count is set to 1 before its first pass, whatever count it
    started with (one another run set back meanwhile)."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    return fn(item)


def map_passes(fn: Callable[[T], R], items: Sequence[T], device) -> Iterator[R]:
    """`fn` of each item, in order. `fn` must enter `torch.inference_mode()` itself: the mode is per thread."""
    import torch  # noqa: F401  (before `_THREADS` reads its count)

    if getattr(device, "type", str(device)) != "cpu" or len(items) < 2:
        yield from map(fn, items)
        return
    with _THREADS.kept() as threads:  # the caller's count, not the 1 another run's passes set
        if threads is None or threads < 2:
            yield from map(fn, items)
            return
        with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix="kbc-pass") as pool:
            yield from pool.map(partial(_one_thread, fn), items)


def pad_rows(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(ids [B, L] int64, which entries are real tokens [B, L] bool, or None when no row is padded): the rows
    padded on the right to the longest, built in one pass over the tokens."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    width = int(lengths.max())
    if (lengths == width).all():
        return np.array(rows, dtype=np.int64).reshape(len(rows), width), None
    keep = np.arange(width)[None, :] < lengths[:, None]
    array = np.full((len(rows), width), pad_id, dtype=np.int64)
    array[keep] = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(lengths.sum()))
    return array, keep


def length_batches(lengths: Sequence[int], rows: int, tokens: int | None = None) -> list[list[int]]:
    """Indices sorted by length (stable), cut into batches of at most `rows` rows and, when `tokens` is given,
    at most `tokens` padded tokens (rows x the batch's longest row; a row longer than that goes alone)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if tokens is None:
        return [order[start:start + rows] for start in range(0, len(order), rows)]
    out: list[list[int]] = []
    for i in order:
        if out and len(out[-1]) < rows and (len(out[-1]) + 1) * lengths[i] <= tokens:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def encoder_mask(model, attention):
    """`attention` ([B, L], 1 where a token is real; None when no row is padded) as a bidirectional encoder of
    transformers takes it without reading it back: the [B, 1, L, L] booleans it would build itself for SDPA
    attention. From a 2D mask it first asks the device whether any entry is 0 (`mask.all()`), so that on a GPU
    the host waits for the card at every forward pass instead of queueing the next one. Other attention
    implementations, and models whose code does not build its mask with `create_bidirectional_mask` (which
    passes a 4D mask through as given), get `attention` unchanged."""
    import sys

    if attention is None or attention.dim() != 2:
        return attention
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa" or getattr(config, "is_decoder", False):
        return attention
    if not hasattr(sys.modules.get(type(model).__module__), "create_bidirectional_mask"):
        return attention
    rows, length = attention.shape
    return attention.bool()[:, None, None, :].expand(rows, 1, length, length)


def to_device(array: np.ndarray, device):
    """A host array as a tensor on `device`. To a GPU the copy goes through pinned memory without waiting, so the
    host prepares the next pass while the card still runs the last; on a CPU the tensor shares the array."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if torch.device(device).type == "cuda":
        if tensor.numel() == 0:  # nothing to copy (a batch without target pairs)
            return torch.empty(tensor.shape, dtype=tensor.dtype, device=device)
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


class ToHost:
    """A device tensor on its way to host memory. From a GPU the copy goes to pinned memory without waiting and
    `wait` blocks until it has landed, so the host can work on an earlier batch meanwhile; on a CPU there is
    nothing to wait for."""

    def __init__(self, tensor) -> None:
        import torch

        self.event = None
        if tensor.device.type == "cuda":
            self.host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            self.host.copy_(tensor, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host = tensor

    def wait(self) -> np.ndarray:
        if self.event is not None:
            self.event.synchronize()
        return self.host.numpy()
