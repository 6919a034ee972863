"""Prediction files an older kbc named otherwise: a relation id holding characters past ASCII had its name cut to
the ASCII ones (`首都` -> `predictor.jsonl`, `café` -> `caf.jsonl`), which now carries a hash of the id
(`eval.relations.slug`). Commands read such a file where the relation has none by its present name, and a rerun
into the run directory moves it to that name, digests rewritten, so its records are resumed, not asked again, and
no two files hold one relation's records."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from bridge.run.record_digests import move_records
from bridge.run.results import complete_records, predictions_path
from eval.relations import older_slug

log = logging.getLogger("kbc")


def older_file(path: Path, relation: str) -> Path | None:
    """The file an older kbc wrote `relation`'s records to, in place of `path` (its `predictions_path`); None where
    the names are one, `path` is there, or that file is not there or holds another relation's records (an ASCII id
    `caf` beside `café`)."""
    older = path.with_name(f"{older_slug(relation)}.jsonl")
    if older == path or path.exists() or not older.is_file():
        return None
    records = complete_records(older).values()
    return older if records and all(r.get("relation") == relation for r in records) else None


def recorded_path(out: Path, corpus: str, predictor: str, relation: str, stage: str = "") -> Path:
    """Where a relation's records are read: `predictions_path`, or the file an older kbc wrote them to while the run
    was not rerun since (`older_file`)."""
    path = predictions_path(out, corpus, predictor, relation, stage)
    return older_file(path, relation) or path


def rename_older_files(out: Path, predictors: Iterable[str], corpora: dict[str, Iterable[str]],
                       stages: tuple[str, ...]) -> None:
    """Move the prediction files an older kbc wrote for the relations asked (`corpora`: corpus -> relation ids) to
    their present names (`older_file`)."""
    predictors = list(predictors)
    for corpus, relations in corpora.items():
        for rel in relations:
            for predictor in predictors:
                for stage in stages:
                    new = predictions_path(out, corpus, predictor, rel, stage)
                    old = older_file(new, rel)
                    if old is not None:
                        move_records(old, new)
                        log.info("%s: renamed to %s, the name relation %s's records have now", old, new.name, rel)
