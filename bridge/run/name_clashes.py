"""Predictor names and relation ids that cannot each have files of their own on every file system: the run writes
`predictions/<corpus>/<predictor>/<relation>.jsonl`, and a run directory is copied between machines. Names that
differ only in case are one file on macOS and Windows (one predictor's records would overwrite the other's and a
summary could mix them), and Windows keeps device names (`CON`, `NUL`, `COM1`...) from files. Refused before any
work; runs already written are read as they are."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from eval.errors import ConfigError
from eval.file_names import case_clash, windows_device
from eval.relations import slug

CASE = "which case-insensitive file systems (macOS, Windows) take for one"
DEVICE = "a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9), where no file can be named so"


def _on_disk(folder: Path, pattern: str) -> list[str]:
    """The names (stems of files, names of folders) `pattern` finds in `folder`, an absent folder holding none."""
    try:
        found = sorted(folder.glob(pattern))
    except OSError:
        return []
    return [p.name if pattern == "*" else p.stem for p in found if (p.is_dir() if pattern == "*" else p.is_file())]


def check_file_names(out: Path, predictors: Iterable[str], corpora: dict[str, Iterable[str]]) -> None:
    """Refuse predictor names and relation ids (`corpora`: each corpus's relations asked) whose prediction files would
    clash there with each other or with those `out` already holds, or that Windows cannot name a file with."""
    predictors = list(predictors)
    for name in predictors:
        if windows_device(slug(name)):
            raise ConfigError(f"--predictors {name}: the predictor's folder would be named {slug(name)!r}, {DEVICE}; "
                              "name it otherwise with NAME=SPEC (e.g. bert=/models/bert)")
    for corpus, relations in corpora.items():
        folder = out / "predictions" / corpus
        clash = case_clash([*_on_disk(folder, "*"), *(slug(p) for p in predictors)])
        if clash is not None:
            raise ConfigError(f"predictors {clash[0]!r} and {clash[1]!r} differ only in case, {CASE} folder "
                              f"({folder}); name one of them apart with NAME=SPEC")
        relations = list(relations)
        for rel in relations:
            if windows_device(slug(rel)):
                raise ConfigError(f"{corpus} relation {rel!r}: its prediction file would be named {slug(rel)}.jsonl, "
                                  f"{DEVICE}; leave it out with --relations, or give it another id in the data")
        clash = case_clash([*dict.fromkeys(_on_disk(folder, "**/*.jsonl")), *(slug(r) for r in relations)])
        if clash is not None:
            raise ConfigError(f"{corpus} relations {clash[0]!r} and {clash[1]!r} differ only in case, {CASE} "
                              f"prediction file ({clash[0]}.jsonl); ask one of them (--relations), or give one "
                              "another id in the data")
