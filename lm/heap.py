"""Keep a CPU run's large per-batch tensors in the heap instead of mapping them anew each batch.

glibc's malloc serves blocks over its mmap threshold (at most 32 MiB) with a fresh `mmap` and unmaps them when
freed, so every batch's [batch, vocabulary] logits are faulted in page by page again: at `--batch-size 512` that
was over a quarter of a CPU run's time, spent in the kernel. Raising the mmap threshold above the batch's largest
tensor, and the trim threshold above what one batch frees, lets freed blocks be reused. Both are sized from the
tensors (not a fixed figure), so the memory kept stays a few batch tensors. Only on glibc, only ever raised, and
never where the user set glibc's malloc options in the environment themselves (theirs win).
"""

from __future__ import annotations

import ctypes
import os

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
FLOOR_MMAP = 32 << 20  # glibc's own largest (dynamic) thresholds: never set lower than it would go by itself
FLOOR_TRIM = 64 << 20
BLOCK_FACTOR = 2  # the largest single block a batch allocates, in tensors of the size given (int64 copies)
LIMIT = (1 << 31) - 1  # mallopt takes a C int
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

_applied = (0, 0)  # the thresholds applied so far (they are the whole process's)


def user_set(environ=None) -> bool:
    """The user chose glibc's malloc thresholds themselves (environment variables or GLIBC_TUNABLES)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in USER_SETTINGS) or "glibc.malloc." in env.get("GLIBC_TUNABLES", "")


def _mallopt():
    """glibc's `mallopt`, or None where the C library is not glibc."""
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
        return ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):
        return None


def settings(tensor_bytes: int, tensors: int) -> tuple[int, int]:
    """(mmap threshold, trim threshold) for passes whose largest tensor is `tensor_bytes` and which free about
    `tensors` of them at once, never below glibc's own largest."""
    return (min(LIMIT, max(FLOOR_MMAP, BLOCK_FACTOR * tensor_bytes)),
            min(LIMIT, max(FLOOR_TRIM, tensors * tensor_bytes)))


def keep_batch_memory(tensor_bytes: int, tensors: int) -> bool:
    """For an LM running on the CPU: let each pass's blocks of up to `BLOCK_FACTOR` x `tensor_bytes` come from the
    heap, and keep up to `tensors` such tensors freed for the next pass. Whether anything was raised (False: not
    glibc, set by the user, or already as high: an earlier LM's larger settings stay)."""
    global _applied
    mmap, trim = (max(new, old) for new, old in zip(settings(tensor_bytes, tensors), _applied))
    if (mmap, trim) == _applied or user_set():
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # trim first: setting either disables glibc's dynamic thresholds, and the trim threshold must not lag behind
    if not (mallopt(M_TRIM_THRESHOLD, trim) and mallopt(M_MMAP_THRESHOLD, mmap)):
        return False
    _applied = (mmap, trim)
    return True
