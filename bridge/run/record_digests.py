"""The digest of every line the runner wrote into a prediction file, so that no command scores a record it did not
write (appended, edited or pasted in by hand).

For `RUN/predictions/<corpus>/<predictor>/[<stage>/]<relation>.jsonl` the runner keeps
`RUN/.kbc-records/<corpus>/<predictor>/[<stage>/]<relation>.digests`: one fixed-width digest per line, in line order,
appended and synced to disk before the lines themselves, which are synced in turn once per chunk. After a crash,
Ctrl-C or a power cut the digests therefore cover every complete line of the file, and perhaps lines never written,
which the next append drops (their queries are asked again); every chunk appended before the last is on disk. Every
reader checks each line against its digest: a line without one, or with another, is refused naming the line.
Checking costs a SHA-256 per line, far less than parsing it.

Each digest is keyed by the run directory's own random key (`.kbc-records/key`, made with the folder) and the file's
place under `predictions/`: a prediction file copied in with its digests from another run (other data, another
model), or moved to another predictor's or relation's place, is refused like an edited one. A folder made before
keys were kept has none: its digests are plain SHA-256, as they were written.

A run directory without `.kbc-records/` was written before record digests existed (or by hand): its records are
read unchecked, with one warning per directory, and `kbc run` refuses to add to it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from eval.durable import fsync_dir, fsync_tree, make_dirs
from eval.errors import ConfigError, DataError, naming

FOLDER = ".kbc-records"  # beside `.kbc-summaries`, the digests of the summaries
SUFFIX = ".digests"
KEY = "key"  # in FOLDER: the run directory's own random key, hex
WIDTH = 17  # 16 hex digits (64 bits of SHA-256) and a newline
FIX = "delete that file so that the run recomputes it, or use a new --out"

DIGEST_LINE = re.compile(rb"[0-9a-f]{%d}\n" % (WIDTH - 1))

log = logging.getLogger("kbc")
_WARNED: set[Path] = set()


def line_digest(raw: bytes, key: bytes = b"") -> bytes:
    """The digest line of one record line (its bytes with the newline), under its file's `key` (`file_key`)."""
    return hashlib.sha256(key + raw).hexdigest()[:WIDTH - 1].encode() + b"\n"


def file_key(root: Path, under: Path) -> bytes:
    """The key of the digests of prediction file `under` (its path under `root/predictions`): the run's own key and
    the file's place, so that digests hold only for the lines this run wrote into this very file; empty for a
    digests folder made before keys were kept."""
    try:
        run_key = (root / FOLDER / KEY).read_bytes()
    except FileNotFoundError:
        return b""
    return hashlib.sha256(run_key + b"\0" + under.as_posix().encode() + b"\0").digest()


def key_of(path: Path) -> bytes:
    """`file_key` of prediction file `path`; empty outside a run."""
    found = _located(path)
    return b"" if found is None else file_key(*found)


def _located(path: Path) -> tuple[Path, Path] | None:
    """(run directory, path under its `predictions/`) of a prediction file; None for a file outside a run."""
    for parent in path.parents:
        if parent.name == "predictions" and (parent.parent / "config.json").is_file():
            return parent.parent, path.relative_to(parent)
    return None


def digests_path(path: Path) -> Path | None:
    """Where the digests of prediction file `path` are kept; None outside a run."""
    found = _located(path)
    return None if found is None else found[0] / FOLDER / found[1].with_suffix(SUFFIX)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def check_lines(path: Path, lines: Sequence[tuple[int, bytes]]) -> None:
    """Refuse the first of `lines` ((line number, bytes) of the complete lines of `path`, read before this is
    called) that the runner did not write there, naming it. Lines of a run that keeps no digests pass, with a warning
    the first time."""
    found = _located(path)
    if found is None or not lines:
        return
    root, under = found
    folder = root / FOLDER
    if not folder.is_dir():
        if root not in _WARNED:
            _WARNED.add(root)
            log.warning("warning: %s: its prediction records were written without record digests (by an older kbc, "
                        "or by hand), so they are read unchecked, with the ranks that version gave; rerun its command "
                        "into a new --out to have them checked and ranked by this one", root)
        return
    sums = folder / under.with_suffix(SUFFIX)
    digests = _read(sums)  # read after the lines: the runner writes it first
    written = len(digests) // WIDTH
    key = file_key(root, under)
    for lineno, raw in lines:
        at = (lineno - 1) * WIDTH
        if lineno > written:
            raise DataError(damage(sums, digests, path, lines[-1][0])
                            or f"{path}:{lineno}: a record this run did not write (it wrote {written} lines there); "
                               f"{FIX}")
        if digests[at:at + WIDTH] != line_digest(raw, key):
            raise DataError(damage(sums, digests, path, lines[-1][0])
                            or f"{path}:{lineno}: not the record this run wrote there (changed since); {FIX}")


def damage(sums: Path, digests: bytes, path: Path, lines: int) -> str | None:
    """The refusal naming digests file `sums` (bytes `digests`) as the damaged one, where it is not what the runner
    writes for the `lines` complete lines of prediction file `path`: a line that is no digest, or a file cut inside
    one short of the lines (the runner writes whole digests, before the lines). None where the digests read as the
    runner's: a record that does not match them is then the one changed."""
    bad = next((i for i in range(min(lines, len(digests) // WIDTH))
                if not DIGEST_LINE.fullmatch(digests, i * WIDTH, (i + 1) * WIDTH)), None)
    if bad is not None:
        why = f"line {bad + 1} is no digest"
    elif len(digests) < lines * WIDTH and len(digests) % WIDTH:
        why = f"cut inside digest line {len(digests) // WIDTH + 1}, while {path.name} holds {lines} lines"
    else:
        return None
    return (f"{sums}: damaged ({why}), so the records of {path} cannot be checked; delete {path} so that the run "
            "recomputes it and its digests, or use a new --out")


def held_without_digests(out: Path) -> Path | None:
    """A prediction file of run directory `out` holding records while `out` keeps no digests (an older kbc's run,
    to which `kbc run` does not add), else None."""
    predictions = out / "predictions"
    if (out / FOLDER).is_dir() or not predictions.is_dir():
        return None
    return next((p for p in sorted(predictions.rglob("*.jsonl")) if p.stat().st_size), None)


def claim(out: Path) -> None:
    """Keep record digests in run directory `out` from now on; refuse one holding records written without them,
    which a rerun could neither check nor tell from its own."""
    folder = out / FOLDER
    if folder.is_dir():
        return
    predictions = out / "predictions"
    held = held_without_digests(out)
    if held is not None:
        raise ConfigError(f"{out} holds prediction records written without record digests (by an older kbc, or by "
                          f"hand; {held.relative_to(out)} is one), which a rerun cannot check; use a new --out, or "
                          f"delete {predictions} so that the run recomputes them")
    made = out / f".{FOLDER}.{os.getpid()}.tmp"  # the folder appears with its key, never without
    made.mkdir()
    (made / KEY).write_text(os.urandom(16).hex(), encoding="ascii")
    fsync_tree(made)  # synced: records written under a lost key could never be checked
    os.replace(made, folder)
    fsync_dir(out)


def _open_synced(path: Path):
    """`path` opened to append, its name (and any folder made for it) synced into its folder when it is new."""
    new = not path.exists()
    make_dirs(path.parent)
    handle = path.open("ab")
    if new:
        fsync_dir(path.parent)
    return handle


def move_records(old: Path, new: Path) -> None:
    """Move prediction file `old` to `new` in the same run, its digests rewritten under `new`'s key (they are keyed
    by the file's place): each complete line is checked against its digest at `old` first, so no line the runner
    did not write gets one. The new digests are in place before the file is: a crash between leaves digests that
    the next append cuts back to the lines its file holds."""
    data = old.read_bytes()
    lines = [(i, raw) for i, raw in enumerate(data.splitlines(keepends=True), 1) if raw.endswith(b"\n")]
    check_lines(old, lines)
    found, sums = _located(new), digests_path(new)
    if found is not None and sums is not None and (found[0] / FOLDER).is_dir():
        key = file_key(*found)
        sums.parent.mkdir(parents=True, exist_ok=True)
        made = sums.with_name(f".{sums.name}.{os.getpid()}.tmp")
        made.write_bytes(b"".join(line_digest(raw, key) for _, raw in lines))
        os.replace(made, sums)
    new.parent.mkdir(parents=True, exist_ok=True)
    os.replace(old, new)
    held = digests_path(old)
    if held is not None:
        held.unlink(missing_ok=True)


class RecordAppender:
    """Appends lines to one prediction file for the runner: their digests first, synced to disk, then the lines.

    Opening it drops the digests of lines a crash kept from being written, so the next line's digest is at its
    line number; the file itself must already be checked (`bridge.run.results.done_uids`) and end in a newline."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = _open_synced(path)
        self.sums = None
        self.key = b""
        found = _located(path)
        try:
            if found is not None and (found[0] / FOLDER).is_dir():
                self.key = file_key(*found)
                sums = found[0] / FOLDER / found[1].with_suffix(SUFFIX)
                self.sums = _open_synced(sums)
                self._align(sums)
        except BaseException:
            self.close()
            raise

    def _align(self, sums: Path) -> None:
        size = self.path.stat().st_size
        with self.path.open("rb") as handle:
            text = handle.read(size)
        if text and not text.endswith(b"\n"):
            raise DataError(f"{self.path}: its last line is torn; {FIX}")
        lines = text.count(b"\n")
        held = sums.stat().st_size
        if held < lines * WIDTH:
            raise DataError(damage(sums, sums.read_bytes(), self.path, lines)
                            or f"{self.path}:{held // WIDTH + 1}: a record this run did not write; {FIX}")
        if held > lines * WIDTH:
            self.sums.truncate(lines * WIDTH)

    def write(self, lines: Iterable[str]) -> int:
        """Append `lines` (each a JSON record with its newline) and say how many; when making them is interrupted
        (Ctrl-C), those made so far are written all the same."""
        raw: list[bytes] = []
        try:
            for line in lines:
                raw.append(line.encode("utf-8"))
        finally:
            self._append(raw)
        return len(raw)

    def _append(self, raw: list[bytes]) -> None:
        if not raw:
            return
        if self.sums is not None:
            with naming(self.sums.name):  # a full disk: the line names the file, as a file object's error does not
                self.sums.write(b"".join(line_digest(r, self.key) for r in raw))
                self.sums.flush()
                os.fsync(self.sums.fileno())
        with naming(self.path):
            self.data.write(b"".join(raw))
            self.data.flush()
            os.fsync(self.data.fileno())  # once per chunk: a resume trusts every chunk before the last

    def close(self) -> None:
        try:
            with naming(self.path):
                self.data.close()
        finally:
            if self.sums is not None:
                with naming(self.sums.name):
                    self.sums.close()

    def __enter__(self) -> RecordAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
