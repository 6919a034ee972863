"""Predictor names and relation ids that cannot each have files of their own on every file system: the run writes
`predictions/<corpus>/<predictor>/<relation>.jsonl`, and a run directory is copied between machines. Names that
differ only in case are one file on macOS and Windows (one predictor's records would overwrite the other's and a
summary could mix them), and Windows keeps device names (`CON`, `NUL`, `COM1`...) from files. Refused before any
work; runs already written are read as they are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def check_file_names(out: Path, predictors: Iterable[str], corpora: dict[str, Iterable[str]],
                     extra: Mapping[str, str] | None = None) -> None:
    """Refuse predictor names and relation ids (`corpora`: each corpus's relations asked; `extra`: those an experiment
    asks beyond them, KMIR's derived ones, each -> where it is named) whose prediction files would clash there with
    each other or with those `out` already holds, or that Windows cannot name a file with."""
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
        derived = {slug(rel): (rel, where) for rel, where in (extra or {}).items() if rel not in relations}
        for rel, where in derived.values():
            if windows_device(slug(rel)):
                raise ConfigError(f"{where}: relation {rel!r}, which the {corpus} questions ask beside the corpus's "
                                  f"own, is {DEVICE} (a relation id names the relation's files); give it another id")
        clash = case_clash([*dict.fromkeys(_on_disk(folder, "**/*.jsonl")), *(slug(r) for r in relations),
                            *(name for name in derived if name not in map(slug, relations))])
        if clash is not None and (clash[0] in derived or clash[1] in derived):
            named, other = (clash[1], clash[0]) if clash[1] in derived else clash
            rel, where = derived[named]
            them = f"relation {derived[other][0]!r}" if other in derived else f"{corpus} relation {other!r}"
            raise ConfigError(f"{where}: relation {rel!r}, which the {corpus} questions ask beside the corpus's own, "
                              f"and {them} differ only in case, {CASE} file name; give one of them another id")
        if clash is not None:
            raise ConfigError(f"{corpus} relations {clash[0]!r} and {clash[1]!r} differ only in case, {CASE} "
                              f"prediction file ({clash[0]}.jsonl); ask one of them (--relations), or give one "
                              "another id in the data")
