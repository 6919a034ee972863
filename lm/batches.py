"""Independent forward passes spread over the CPU threads torch was given, one thread each.

On a few CPU cores, one pass at a time with every core inside each operation loses time to the cores
waiting on each other around every small operation (layer norms, activations, attention reshapes); the
same passes run side by side, each on one core, keep the cores busy. Each pass's numbers come from one
thread whatever the order the passes finish in, so a result does not depend on scheduling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_passes(fn: Callable[[T], R], items: Sequence[T], device) -> Iterator[R]:
    """`fn` of each item, in order. `fn` must enter `torch.inference_mode()` itself: the mode is per thread."""
    import torch

    threads = torch.get_num_threads()
    if getattr(device, "type", str(device)) != "cpu" or threads < 2 or len(items) < 2:
        yield from map(fn, items)
        return
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix="kbc-pass") as pool:
            yield from pool.map(fn, items)
    finally:
        torch.set_num_threads(threads)
