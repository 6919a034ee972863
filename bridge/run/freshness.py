"""Whether a run directory's summaries already are what scoring its files would give.

A rerun with nothing left to ask would rebuild the same summaries; instead `bridge.run.summaries.collect` reads
them back when nothing they come from changed: every byte under `predictions/` and of the per-fact statistics,
the run config (less its log of runs and timings), the scoring arguments, the code and the numeric libraries.
The outputs themselves must be the bytes written then, else they are rebuilt too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TypeVar

from bridge.run.attempts import samples
from bridge.run.run_lock import BeingWritten, writing_now
from eval.durable import write_atomic
from eval.errors import DataError
from eval.jsonl import refuse_special

T = TypeVar("T")

STAMP = ".kbc-summaries"  # beside `.kbc.lock`: the digests of the last scoring's inputs and outputs
OUTPUTS = ("summary.json", "summary.md", "curves.json", "dropped.json", "instances.parquet")
VOLATILE = ("runs", "seconds", "usage")  # config entries no summary reads: each run adds to them
LIBRARIES = ("numpy", "scipy", "pandas", "pyarrow")
PACKAGES = ("eval", "kb", "lm", "bridge")
SAMPLE_CHANGED = "its config.json's run log (`runs`) states the sample"  # a rerun would keep the edited attempt


@cache
def code_identity() -> tuple:
    """Every source file of the project (path, size, mtime) and the numeric libraries' versions."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(__file__).resolve().parents[2]
    files = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            st = path.stat()
            files.append((str(path.relative_to(root)), st.st_size, st.st_mtime_ns))
    versions = []
    for name in LIBRARIES:
        try:
            versions.append((name, version(name)))
        except PackageNotFoundError:
            versions.append((name, None))
    return tuple(files), tuple(versions)


def files_digest(out: Path, stats: bool = True) -> str:
    """A digest of every file the summaries of `out` read: the prediction records and (`stats`) the per-fact
    statistics.

    Taken before they are read, so a file that changes while they are scored changes the digest next time."""
    from bridge.run.fact_columns import FACT_STATS, analysis_dir

    table = analysis_dir(out) / FACT_STATS
    return _digests(out, [table] if stats and table.is_file() else [])[0]


def _digests(out: Path, more: list[Path] = ()) -> tuple[str, dict[str, str]]:
    """The digest of the prediction files (and `more`) together, and of each alone, read once: each file's own lets
    a refusal name the files that changed."""
    predictions = out / "predictions"
    files = sorted(p for p in predictions.rglob("*") if p.is_file()) if predictions.is_dir() else []
    return _each_and_all(out, [str(path.relative_to(out)) for path in [*files, *more]])


def _each_and_all(out: Path, names: list[str]) -> tuple[str, dict[str, str]]:
    """The digest of the files `names` (under `out`) together, each named, and of each alone."""
    together = hashlib.sha256()
    each = {}
    for name in names:
        together.update(f"\x00{name}\x00".encode())
        alone = hashlib.sha256()
        with (out / name).open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                together.update(block)
                alone.update(block)
        each[name] = alone.hexdigest()
    return together.hexdigest(), each


def _changed_predictions(stamp: dict, now: dict[str, str]) -> str:
    """Which prediction files differ from those the summaries were scored from, named where the stamp holds each
    file's digest (a stamp of an earlier kbc version holds only the digest of them all)."""
    recorded = stamp.get("prediction_files")
    how = "its prediction files changed since its summaries were written"
    if not isinstance(recorded, dict):
        return f"{how} (cut, edited or added)"
    changed = [f"{name} ({'added' if name not in recorded else 'removed' if name not in now else 'cut or edited'})"
               for name in sorted({*recorded, *now}) if recorded.get(name) != now.get(name)]
    if not changed:
        return f"{how} (cut, edited or added)"
    return f"{how}: {', '.join(changed[:3])}" + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")


def inputs_digest(config: dict, args: tuple, files: str, code: str | None = None) -> str:
    """The digest of everything a scoring reads: the run config (less its volatile log), `args` (setting,
    resamples, seed), the code (`code_digest`, this code's unless given), and the files (`files_digest`)."""
    kept = {k: v for k, v in config.items() if k not in VOLATILE}
    text = json.dumps([kept, list(args), code or code_digest(), files], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def outputs_digest(out: Path) -> str | None:
    """A digest of the summary files as they are now; None when one is missing."""
    digests = _output_digests(out)
    return None if digests is None else digests[0]


def output_names(out: Path) -> list[str]:
    """The summary files, then those the run's experiment writes of its own from the same scoring (its
    `own_outputs` patterns: FewRel's confusion matrices), as paths relative to `out`."""
    from bridge.experiments import own_outputs

    refuse_special(out / "config.json", str(out / "config.json"), "run config")  # a pipe would wait for a writer
    try:
        config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None
    patterns = own_outputs(config.get("experiment", "lama")) if isinstance(config, dict) else ()
    return [*OUTPUTS, *sorted({p.relative_to(out).as_posix() for pattern in patterns for p in out.glob(pattern)
                               if p.is_file()})]


def _output_digests(out: Path) -> tuple[str, dict[str, str]] | None:
    """The digest of the summary files together (`outputs_digest`) and of each alone, read once; None when one is
    missing. Each file's own digest lets a refusal name the file that changed."""
    names = output_names(out)
    if not all((out / name).is_file() for name in names):
        return None
    return _each_and_all(out, names)


def _stamp(out: Path) -> dict | None:
    try:
        stamp = json.loads((out / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def code_digest() -> str:
    return hashlib.sha256(json.dumps(code_identity()).encode()).hexdigest()


def stated_samples(config: dict) -> list[list]:
    """The `[limit, seed]` samples the run log of `config` states (`bridge.run.attempts.samples`), as the stamp
    keeps them: the run log is left out of the inputs digest, yet the summaries and readers state its sample."""
    return [list(sample) for sample in samples(config)]


def fresh_rows(out: Path, inputs: str, asked: list[list] | None = None) -> list[dict] | None:
    """The rows of `summary.json` when the stamp says they were scored from exactly `inputs` (and the samples
    `asked`, where it records them) and every output is as written then; else None (score again)."""
    stamp = _stamp(out)
    if stamp is None or stamp.get("inputs") != inputs or stamp.get("outputs") != outputs_digest(out) \
            or stamp.get("samples", asked) != asked:
        return None
    try:
        rows = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return rows if isinstance(rows, list) else None


def fresh_instances(out: Path) -> Path | None:
    """`instances.parquet` when it was written, by this code, from exactly the prediction files there now."""
    stamp = _stamp(out)
    if stamp is None or stamp.get("code") != code_digest() or stamp.get("files") != files_digest(out) \
            or stamp.get("outputs") != outputs_digest(out):
        return None
    return out / "instances.parquet"


def unscored_change(out: Path, config: dict) -> str | None:
    """What changed in `out` since its summaries were written, None when nothing did: its prediction files, its
    config or the summary files themselves, checked against the digests its last scoring recorded (whatever code
    scored it). Readers of `summary.json` other than the runner refuse a run that says something here."""
    stamp = _stamp(out)
    if stamp is None or not all(isinstance(stamp.get(k), str)
                                for k in ("inputs", "files", "predictions", "code", "outputs")):
        return f"it holds no record ({STAMP}) of what its summaries were scored from"
    together, each = _digests(out)
    if together != stamp["predictions"]:  # per-fact statistics added later change no score
        from bridge.run.results import check_records

        check_records(out)  # a record line the runner did not write is named, with its own fix
        return _changed_predictions(stamp, each)
    missing = next((name for name in OUTPUTS if not (out / name).is_file()), None)
    if missing:
        return f"its {missing} is missing"
    digests = _output_digests(out)
    if digests is None or digests[0] != stamp["outputs"]:
        return _changed_outputs(stamp, digests[1] if digests else {})
    if _scored_args(config, stamp) is None:
        return "its config.json changed since its summaries were written"
    if "samples" in stamp and stamp["samples"] != stated_samples(config):  # a stamp of an earlier kbc: none kept
        return (f"{SAMPLE_CHANGED} {_flags(stated_samples(config))}, but its summaries were scored from "
                f"{_flags(stamp['samples'])}")
    return None


def _flags(asked: object) -> str:
    """A stamp's or run log's samples as their flags: `--limit 12 --seed 0`, `every fact`, joined by `and`."""
    if not isinstance(asked, list) or not asked:
        return "no attempt"
    return " and ".join(f"`--limit {s[0]} --seed {s[1]}`" if isinstance(s, list) and len(s) == 2 and s[0]
                        else "every fact" for s in asked)


def _changed_outputs(stamp: dict, now: dict[str, str]) -> str:
    """Which summary files are not the ones the scoring wrote: those whose own digest differs, or, for a record
    written before each file's digest was kept, all of them (one of them changed)."""
    recorded = stamp.get("output_files")
    changed = [name for name in dict.fromkeys([*OUTPUTS, *sorted({*recorded, *now})])
               if recorded.get(name) != now.get(name)] if isinstance(recorded, dict) else []
    if not changed:
        return (f"one of its summary files ({', '.join(OUTPUTS)}) is not the one its scoring wrote (edited or "
                "replaced)")
    if not any(name in recorded for name in changed):  # files an earlier kbc version wrote without a digest
        one = len(changed) == 1
        listed = changed[0] if one else f"{', '.join(changed[:-1])} and {changed[-1]}"
        return (f"its {listed} {'has' if one else 'have'} no digest in {STAMP} (an earlier kbc version wrote "
                f"{'it' if one else 'them'} without one), so whether {'it is' if one else 'they are'} what its "
                "scoring wrote cannot be known")
    if len(changed) == 1:
        return f"its {changed[0]} is not the one its scoring wrote (edited or replaced)"
    return f"its {', '.join(changed[:-1])} and {changed[-1]} are not the ones its scoring wrote (edited or replaced)"


def _scored_args(config: dict, stamp: dict) -> tuple | None:
    """The scoring arguments (setting, resamples, seed) the stamp's inputs digest was taken with, None when the
    config with either setting gives another digest."""
    summary = config.get("summary") if isinstance(config.get("summary"), dict) else {}
    for setting in ("raw", "filtered"):
        args = (setting, summary.get("bootstrap"), summary.get("seed"))
        if inputs_digest(config, args, stamp["files"], stamp["code"]) == stamp["inputs"]:
            return args
    return None


def rewrite_recorded(out: Path, config: dict, rewrite: Callable[[], object]) -> str | None:
    """Run `rewrite` (the per-fact table written again with the statistics `kbc analyze` just added) and record its
    result, so that readers go on trusting the run; returns why nothing was written, else None.

    Done only when the record says the summaries are what this code's scoring gave from the files there now: the
    new record then says the same with the new statistics and table. A run changed since (or scored by other code)
    is left as it is, still refused where it was."""
    why = unscored_change(out, config)
    stamp = _stamp(out)
    if why is None and stamp["code"] != code_digest():
        why = "it was scored by another version of the code"
    if why is not None:
        return why
    args = _scored_args(config, stamp)
    rewrite()
    files = files_digest(out)
    write_stamp(out, inputs_digest(config, args, files), files, stamp.get("samples"))
    return None


def not_finished(out: Path, config: dict | None = None) -> str:
    """The refusal of a run that has written no summaries yet (still running, or stopped before its scoring), naming
    the command of its unfinished attempt where the runs log holds several (`rerun_hint`)."""
    from bridge.run.attempts import rerun_hint

    return writing_now(out) or (f"{out} has predictions but no summary.json: the run has not finished; "
                                f"{rerun_hint(config or {}, out)} to complete it")


def check_scored(out: Path, config: dict) -> None:
    """Refuse a run whose summaries are not what scoring its files gave (`unscored_change`), in one line."""
    from bridge.run.attempts import part_asked_refusal, rerun_hint

    if not (out / "summary.json").exists() and not (out / STAMP).exists():  # never scored: not a damaged run
        raise DataError(not_finished(out, config))
    busy = writing_now(out)  # a run that has just taken the lock may not have changed a file yet, but will
    if busy:
        raise BeingWritten(busy)
    try:
        why = unscored_change(out, config)
    except DataError:  # a record line being written reads as a damaged one until the run ends
        busy = writing_now(out)
        if busy:
            raise BeingWritten(busy) from None
        raise
    # summaries a run scored, of an attempt stopped part of the way through a relation that a later command of
    # another sample, or of other relations, did not finish (a directory of an earlier kbc version)
    part = part_asked_refusal(out, config)
    if why or part:
        busy = writing_now(out)
        if busy:
            raise BeingWritten(busy)
        fix = ("set its attempts' `limit` and `seed` back to the sample scored" if why and why.startswith(
            SAMPLE_CHANGED) else f"{rerun_hint(config, out)} to rescore it")
        raise DataError(part or f"{out}: {why}; {fix}")


def scored_bytes(out: Path, name: str, config: dict) -> bytes:
    """The bytes of the summary file `name` (`output_names`) of a scored run, read once and checked against the
    digest its scoring recorded of it, refused (`check_scored`'s line) when they differ: a reader that trusts a run
    between full checks by its files' sizes and times (the explorer) reads no file edited since, even one edited to
    its old size and time."""
    data = (out / name).read_bytes()
    recorded = (_stamp(out) or {}).get("output_files")
    if not isinstance(recorded, dict) or recorded.get(name) == hashlib.sha256(data).hexdigest():
        return data  # a record of an earlier kbc version holds no digest of each file: `check_scored` vouches
    check_scored(out, config)  # names what changed, with its fix
    raise BeingWritten(f"{out}: its {name} changed while it was read; read it again")  # rescored meanwhile


def check_readable(out: Path, config: dict, records_only: bool = False) -> None:
    """Refuse (`check_scored`) a run with summaries whose files are no longer what they were scored from, before
    its prediction records or per-fact table are read: what `kbc compare`, `kbc show` and the explorer print then
    agrees with its summaries, or is not printed. A run without `summary.json` yet (running, or stopped before its
    first scoring) is read as it stands, a torn last line ending a file's records.

    `records_only` (`kbc analyze`, which reads the records and rebuilds a missing or damaged table from them, never
    the summaries): refused only when its prediction files changed since they were scored."""
    if not (out / "summary.json").exists() and not (out / STAMP).exists():
        return
    stamp = _stamp(out)
    if records_only and stamp is not None and isinstance(stamp.get("predictions"), str) \
            and files_digest(out, stats=False) == stamp["predictions"]:
        return
    check_scored(out, config)


def read_steadily(outs: list[Path], read: Callable[[], T]) -> T:
    """`read()` of runs' files, refused for a scored run of `outs` whose lock a `kbc run` took, or whose files it
    changed, while they were read: what was read may mix what its summaries scored with that run's new files (a
    run without summaries is read as it stands)."""
    scored = [out for out in outs if (out / "summary.json").exists()]
    before = [files_state(out) for out in scored]
    found = read()
    for out, state in zip(scored, before, strict=True):
        busy = writing_now(out)
        if busy or files_state(out) != state:
            raise BeingWritten(busy or f"{out}: its files changed while they were read; read it again")
    return found


def files_state(out: Path) -> tuple:
    """Path, size and mtime of every file `unscored_change` reads: when these are unchanged, so is its answer."""
    predictions = out / "predictions"
    files = sorted(p for p in predictions.rglob("*") if p.is_file()) if predictions.is_dir() else []
    state = []
    for path in [*files, out / STAMP, out / "config.json", *(out / name for name in output_names(out))]:
        try:
            st = path.stat()
        except OSError:
            state.append((str(path), None))
            continue
        state.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(state)


def write_stamp(out: Path, inputs: str, files: str, asked: list[list] | None = None) -> None:
    """Record what the summaries just written were scored from (the last step of scoring), with the samples
    `asked` (`stated_samples`) that they and the readers state."""
    outputs = _output_digests(out)
    path = out / STAMP
    if outputs is None:
        path.unlink(missing_ok=True)
        return
    predictions, each = _digests(out)
    stamp = {"inputs": inputs, "files": files, "predictions": predictions, "prediction_files": each,
             "code": code_digest(), "outputs": outputs[0], "output_files": outputs[1]}
    if asked is not None:
        stamp["samples"] = asked
    # synced as the outputs it names are: without it, readers refuse the run until it is scored again
    write_atomic(path, json.dumps(stamp).encode("utf-8"), path.with_name(path.name + ".tmp"))
