"""Writing training checkpoints while training goes on.

An epoch's full training state (a bert-base encoder with its AdamW moments: 1.3 GB) takes seconds to write; a loop
that waits for the write leaves the card idle that long every epoch. `BackgroundSaver` copies the state to host
memory first (`host_copy`: the next optimizer step changes the tensors in place, on a CPU as on a GPU, so they
cannot be written while training goes on) and writes the copy from one thread while the next epoch trains. The copy
doubles the state in host memory: with at most one write in flight that is one state's worth, kept from the first
write to the end of training so that each later copy fills the same memory.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from eval.datadir import sha256_file
from eval.durable import replacing, write_atomic
from eval.errors import DataError


def atomic_save(obj, path: Path, digest: bool = False) -> None:
    """`torch.save` to `path.tmp`, synced, then renamed: `path` holds either the old state or the new one, never a
    part, after a power cut too. `digest`: the file's SHA-256 is kept beside it (`digest_path`), so that a resume
    refuses a file changed since (a flipped bit in a weight still loads, and would train on from it)."""
    import torch

    with replacing(path, path.with_suffix(path.suffix + ".tmp")) as tmp:
        torch.save(obj, tmp)
        kept = sha256_file(tmp) if digest else None
    if kept is not None:
        side = digest_path(path)
        write_atomic(side, kept.encode("utf-8"), side.with_suffix(side.suffix + ".tmp"))


def digest_path(path: Path) -> Path:
    """Where `atomic_save(..., digest=True)` keeps the SHA-256 of `path`."""
    return path.with_name(path.name + ".sha256")


def check_digest(path: Path, fix: str) -> None:
    """Refuse, in one line, a file whose kept SHA-256 (`digest_path`) is not its own; a file without one (written
    by an earlier kbc version) is read as it is."""
    try:
        kept = digest_path(path).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return
    if kept != sha256_file(path):
        raise DataError(f"{path}: changed since it was written (its SHA-256 is not the one kept in "
                        f"{digest_path(path).name}); {fix}")


def host_copy(obj, spare: dict[tuple, list] | None = None):
    """`obj` with every tensor copied to host memory (dicts, lists and tuples rebuilt, other values deep-copied).
    Tensors that are one view of one storage stay one tensor, as `torch.save` keeps them; a state dict keeps its
    `_metadata` (the module versions `load_state_dict` reads). `spare` holds host tensors of an earlier copy that
    nothing reads any more, by layout: they are filled instead of new ones allocated (no fresh pages to fault in for
    each copy), and on return `spare` holds this copy's tensors, for a later call."""
    import torch

    copies: dict[tuple, torch.Tensor] = {}
    free = spare if spare is not None else {}

    def walk(x):
        if isinstance(x, torch.Tensor):
            key = (x.device, x.untyped_storage().data_ptr(), x.storage_offset(), tuple(x.shape), x.stride(), x.dtype)
            if key not in copies:
                reuse = free.get(key[3:])
                copies[key] = reuse.pop().copy_(x.detach()) if reuse else x.detach().to("cpu", copy=True)
            return copies[key]
        if isinstance(x, dict):
            out = type(x)((k, walk(v)) for k, v in x.items())
            if hasattr(x, "_metadata"):
                out._metadata = copy.deepcopy(x._metadata)
            return out
        if isinstance(x, list | tuple):
            return type(x)(walk(v) for v in x)
        return copy.deepcopy(x)

    out = walk(obj)
    if spare is not None:
        spare.clear()
        for key, tensor in copies.items():
            spare.setdefault(key[3:], []).append(tensor)
    return out


class BackgroundSaver:
    """One writer thread for checkpoints, used as a context manager around a training loop.

    `save(items)` waits for the previous write, copies the objects to host memory and writes them in the given order
    (each with `atomic_save`) while the caller goes on. A write that fails stops that call's remaining files (a later
    file must not describe a state its earlier one lacks) and raises a `DataError` naming the file at the next
    `check`, `save` or `wait`. Leaving the `with` block always waits for the write in flight: when the block ends by
    another exception, that exception goes on, with a failed write noted on it."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._failure: DataError | None = None
        self._spare: dict[tuple, list] = {}  # the last write's host tensors, refilled by the next copy

    def __enter__(self) -> BackgroundSaver:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            self.wait()
            return
        try:
            self.wait()
        except DataError as failure:
            exc.add_note(str(failure))

    def save(self, items: Sequence[tuple[object, Path]]) -> None:
        """Write `items` ((object, path) pairs, in order) in the background, from host copies taken now."""
        self.wait()
        copies = host_copy([obj for obj, _ in items], self._spare)  # what the files share is copied once
        snapshot = [(obj, Path(path)) for obj, (_, path) in zip(copies, items)]
        self._thread = threading.Thread(target=self._write, args=(snapshot,), name="checkpoint-writer")
        self._thread.start()

    def wait(self) -> None:
        """Return once the write in flight is on disk; raise the `DataError` of a failed one."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check()

    def check(self) -> None:
        """Raise the `DataError` of a write that failed (once); return at once otherwise."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _write(self, items: list[tuple[object, Path]]) -> None:
        for obj, path in items:
            try:
                atomic_save(obj, path, digest=True)
            except Exception as exc:  # any failure goes to the training loop, never lost in this thread
                reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
                self._failure = DataError(f"{path}: could not be written ({' '.join(str(reason).split())}); the "
                                          "folder keeps the epoch before: free space or fix its permissions and rerun "
                                          "to resume")
                with contextlib.suppress(OSError):
                    path.with_suffix(path.suffix + ".tmp").unlink(missing_ok=True)
                return
