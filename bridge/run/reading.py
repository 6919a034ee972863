"""Runs an earlier kbc version scored while it read the data files otherwise (`eval.lama.READING`).

Such a run is shown as it was scored: its scores are that version's, and nothing is recomputed unless asked. The same
data files may give other facts under this kbc's reading, so a rerun could score otherwise, and a reader comparing it
with a new run is told so once per run: the CLI on stderr (a `note:` line after the command's output, none where it
fails: `gathered_notes`), the explorer on the run's page and leaderboard rows (and its log), the Python API as an
`EarlierReadingWarning`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

log = logging.getLogger("kbc")

# what the readings since the first recorded one changed (`eval.lama.READING`'s comment)
CHANGES = ("labels lose surrounding spaces and directional marks, a uuid given twice is numbered, labels and "
           "templates are read in NFC")
_NOTED: set[Path] = set()  # runs this process has noted on stderr
_GATHER: ContextVar[dict[Path, str] | None] = ContextVar("reading_notes", default=None)  # run -> its note


class EarlierReadingWarning(UserWarning):
    """A run read from Python was scored by an earlier kbc version that read the data files otherwise."""


def reading_of(config: dict) -> str:
    """The data reading a run config records, in words."""
    then = config.get("data_reading")
    return f"data reading {then}" if isinstance(then, int) else "a data reading from before readings were recorded"


def read_otherwise(config: dict) -> bool:
    """Whether the run was scored under another reading of the data files than this kbc's."""
    return config.get("data_reading") != _now()


def _now() -> int:
    from eval import lama  # read when asked: this module is imported as each command starts (`gathered_notes`)

    return lama.READING


def reading_note(path: Path | str, config: dict) -> str | None:
    """The note on a run an earlier version scored under another reading (naming the folder `path` and what to do);
    None for a run of this reading."""
    if not read_otherwise(config):
        return None
    from bridge.run.attempts import rerun_hint

    then = config.get("data_reading")
    hint = rerun_hint(config, Path(path))
    which = "another" if isinstance(then, int) and then > _now() else "an earlier"
    return (f"{path} was scored by {which} kbc version under {reading_of(config)}; this kbc reads the data files "
            f"with data reading {_now()} ({CHANGES}), so the same files may give other facts and a rerun "
            f"may score otherwise: its scores are shown as that version gave them, and nothing is recomputed unless "
            f"you ask; {hint}{'' if '--out' in hint else f' with --out {path}'}, into its folder, to rescore it "
            "under this reading")


def note_reading(path: Path | str, config: dict) -> None:
    """Say `reading_note` once per run: to the notes `gathered_notes` collects (a command says them once it has run,
    the Python API warns), else on stderr through the `kbc` log (the explorer's requests)."""
    note = reading_note(path, config)
    if note is None:
        return
    gathered = _GATHER.get()
    key = Path(os.path.abspath(path))
    if gathered is not None:
        gathered.setdefault(key, note)
        return
    if key in _NOTED:
        return
    _NOTED.add(key)
    log.warning("note: %s", note)


@contextmanager
def gathered_notes() -> Iterator[dict[Path, str]]:
    """Collect the reading notes of the runs read in the block instead of saying them: a command says them after
    its output, and not at all where it ends in an error (that one line is all it says); the API warns."""
    notes: dict[Path, str] = {}
    token = _GATHER.set(notes)
    try:
        yield notes
    finally:
        _GATHER.reset(token)
        _NOTED.update(notes)  # said or warned (or the command failed): a later read outside a block stays quiet


def say_gathered() -> None:
    """Say the notes gathered so far now, on stderr, each run once: a command that goes on (`kbc serve`) says them
    before it starts serving."""
    gathered = _GATHER.get() or {}
    for key, note in gathered.items():
        if key not in _NOTED:
            _NOTED.add(key)
            log.warning("note: %s", note)
    gathered.clear()


def readings_apart(first: tuple[Path, dict], second: tuple[Path, dict]) -> str | None:
    """The note on two runs read side by side that were scored under different readings, else None."""
    (one, a), (two, b) = first, second
    if a.get("data_reading") == b.get("data_reading"):
        return None
    older = one if read_otherwise(a) else two
    return (f"{one} and {two} were scored under different readings of the data files ({reading_of(a)} against "
            f"{reading_of(b)}): a fact's labels may differ between them by the reading alone, so part of a difference "
            f"may be the reading's; rerun {older} into its folder to compare them under one reading")
