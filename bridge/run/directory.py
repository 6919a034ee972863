"""Reading a finished (or running) run directory: its config and its per-query prediction records.

Analyses read runs while the runner may still append to them, so reading never writes: a torn
last line ends a file's records here exactly as it does for the runner's scoring
(`bridge.run.results.read_done`), but the file is left as it is; a damaged line is an error.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bridge.run.older_names import recorded_path
from bridge.run.results import complete_records, slug
from eval.errors import ConfigError, DataError


def read_records(path: Path) -> list[dict]:
    """The complete records of one predictions file, in file order (later duplicates win by uid); the file is
    parsed once per command (`bridge.run.results`), however many readers ask."""
    return list(complete_records(path).values())


def did_you_mean(name: str, known: list[str]) -> str:
    """A hint for error messages: the closest known name, and the known names."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (known: {', '.join(known) or 'none'})"


@dataclass
class RunDir:
    """A run directory: `config.json` plus `predictions/<corpus>/<predictor>/<relation>.jsonl`."""

    path: Path
    config: dict

    @property
    def corpora(self) -> list[str]:
        return list(self.config.get("corpora") or [])

    @property
    def predictors(self) -> list[str]:
        return list(self.config.get("predictors") or [])

    def predictor(self, name: str) -> str:
        """The run's name for a predictor given by name or folder name; a clear error otherwise."""
        if name in self.predictors:
            return name
        for known in self.predictors:
            if slug(known) == name:
                return known
        raise ConfigError(f"{self.path} has no predictor {name!r}{did_you_mean(name, self.predictors)}")

    def corpus(self, name: str) -> str:
        if name in self.corpora:
            return name
        raise ConfigError(f"{self.path} has no corpus {name!r}{did_you_mean(name, self.corpora)}")

    def folder(self, corpus: str, predictor: str) -> Path:
        return self.path / "predictions" / corpus / slug(predictor)

    def relation_files(self, corpus: str, predictor: str, stage: str = "") -> list[Path]:
        """The prediction files of one predictor on one corpus (of one `stage`, in its own folder: coherency's)."""
        folder = self.folder(corpus, predictor) / stage
        return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []

    def relation_file(self, corpus: str, predictor: str, relation: str, stage: str = "") -> Path:
        """A relation's prediction file (perhaps not there), by its present name or the one an older kbc gave it
        (`bridge.run.older_names`)."""
        return recorded_path(self.path, corpus, predictor, relation, stage)

    def relations(self, corpus: str, stages: tuple[str, ...] = ("",)) -> list[str]:
        """The ids of the relations whose prediction files the run holds for `corpus` (in `stages`), sorted: the
        ids `config.json` names, as a file's name is no id (`schema_birthPlace`, or a hash for `首都`); the name of
        a file no id of it names, as it is."""
        stems = {p.stem for name in self.predictors for stage in stages
                 for p in self.relation_files(corpus, name, stage)}
        found = {rel: stems & {self.relation_file(corpus, name, rel, stage).stem for name in self.predictors
                               for stage in stages}
                 for rel in (self.config.get("relation_types") or {}).get(corpus) or {}}
        return sorted({rel for rel, held in found.items() if held} | (stems - set().union(*found.values())))

    def records(self, corpus: str, predictor: str, relation: str | None = None) -> Iterator[dict]:
        """Records of one predictor on one corpus (one relation, or all in file-name order)."""
        if relation is not None:
            yield from read_records(self.relation_file(corpus, predictor, relation))
            return
        for path in self.relation_files(corpus, predictor):
            yield from read_records(path)

    def by_uid(self, corpus: str, predictor: str, relation: str | None = None) -> dict[str, dict]:
        return {r["uid"]: r for r in self.records(corpus, predictor, relation)}


def run_dir_holding(path: Path) -> Path | None:
    """The run directory `path` is in (or is), else None: a folder with `config.json` beside `predictions/` or
    `summary.json`, as `kbc run` leaves it; symlinks are followed."""
    resolved = Path(path).resolve()
    for folder in (resolved, *resolved.parents):
        if (folder / "config.json").is_file() and ((folder / "predictions").is_dir()
                                                  or (folder / "summary.json").is_file()):
            return folder
    return None


def open_run(path: str | Path) -> RunDir:
    """Open a run directory, or say exactly what is wrong with it; a run an earlier version scored under another
    reading of the data files is noted once (`bridge.run.reading`)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"run directory {path} does not exist")
    if not path.is_dir():
        raise DataError(f"{path} is not a directory (expected a run directory from `kbc run`)")
    config_path = path / "config.json"
    if not config_path.exists():
        raise DataError(f"{path} has no config.json: not a run directory written by `kbc run`")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataError(f"{config_path} is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise DataError(f"{config_path} must hold a JSON object")
    for key in ("corpora", "predictors"):
        value = config.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataError(f"{config_path} needs {key!r} as a list of names")
    from bridge.run.reading import note_reading

    note_reading(path, config)  # scored under another reading of the data: said once, the scores left as they are
    return RunDir(path, config)


def unfinished(run: RunDir) -> list[str]:
    """What a run lacks before its scores can be shown: summaries, a recorded end, rows for every predictor."""
    missing: list[str] = []
    runs = run.config.get("runs") or []
    # an attempt that ended in an error is recorded as failed: it ended, and the rows below say what is missing
    open_runs = [r for r in runs if isinstance(r, dict) and not (r.get("finished") or r.get("failed"))]
    if open_runs:
        missing.append(f"the run started {open_runs[-1].get('started', '?')} recorded no end (still running, or "
                       "killed)")
    path = run.path / "summary.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from None
    if rows is None:
        missing.append("summary.json")
        return missing
    if isinstance(rows, dict):
        rows = rows.get("rows", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{path} must hold a JSON list of rows")
    scored = {(r.get("corpus"), r.get("predictor")) for r in rows}
    absent = [f"{c}/{p}" for c in run.corpora for p in run.predictors if (c, p) not in scored]
    if absent:
        missing.append(f"summary rows of {', '.join(absent[:5])}" + (f" and {len(absent) - 5} more"
                                                                      if len(absent) > 5 else ""))
    return missing


def unfinished_refusal(run: RunDir, given: Path) -> str | None:
    """The one line refusing to show `run` (named `given`) as a finished run (`unfinished`), None where it is one:
    a run a live `kbc run` is writing to is told to be waited for, as every reader says, since the rerun that would
    complete it is refused by that run's lock."""
    from bridge.run.attempts import rerun_hint
    from bridge.run.run_lock import writing_now

    missing = unfinished(run)
    if not missing:
        return None
    return writing_now(run.path) or (f"--run {given} is not a finished run: it lacks {'; '.join(missing)}; "
                                     f"{rerun_hint(run.config, Path(given))} to complete it (or wait for it to end)")


def incomplete(run: RunDir, current: bool = False) -> str | None:
    """Why a run read as it stands (`kbc compare`) is not a finished one, in one line; None where it is finished.

    A last attempt stopped by Ctrl-C or SIGTERM is recorded failed with the error `interrupted`: its records and
    summaries hold what was done before it stopped, which a rerun of the same command completes. `current`: the
    run's summaries are what scoring its files and config gave (`bridge.run.freshness.unscored_change`), so an
    attempt stopped before it changed anything left a finished run."""
    missing = unfinished(run)
    attempts = [r for r in run.config.get("runs") or [] if isinstance(r, dict)]
    last = attempts[-1] if attempts else {}
    stopped = last.get("error") == "interrupted"
    if not (missing or stopped):
        return None
    if not missing and current:  # stopped before it changed anything an earlier attempt scored
        return None
    started = last.get("started", "?")
    said = []
    if stopped:
        said.append(f"its last attempt was interrupted (started {started})")
    elif last.get("failed"):
        said.append(f"its last attempt failed (started {started}: {last.get('error') or 'no error recorded'})")
    elif attempts and not last.get("finished"):
        from bridge.run.run_lock import writing

        said.append(f"its last attempt is still running (started {started}; a kbc run holds its lock), so what it "
                    "has written so far is read" if writing(run.path) else
                    f"its last attempt recorded no end (started {started}; still running, or killed)")
        missing = missing[1:]  # `unfinished` says that attempt first
    if missing:
        said.append(f"it lacks {'; '.join(missing)}")
    return ", and ".join(said)
