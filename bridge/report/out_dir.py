"""Where `kbc report` may write, and which files there are its own.

The report writes into a folder it made (or an empty one, or one it wrote before), never into a folder of other
files, a data folder or a run directory other than its run's own `report/`. It lists what it wrote in `MARKER`,
and removes only files of that list that a later report no longer writes (a figure of a predictor left out).
A report is drawn whole in a folder of its own inside it (`staging`) and only then switched in file by file: a
report that fails midway (a full disk, a figure that cannot be drawn) leaves the earlier one as it was, never a page
beside figures of another run; one killed midway leaves that folder, which the next report there removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eval.durable import fsync_dir, fsync_file, make_dirs, write_atomic
from eval.errors import ConfigError
from eval.file_names import NAME_BYTES
from eval.lock_holders import started_at
from eval.out_folders import check_own_folder, refuse_in_data

MARKER = ".kbc-report.json"
PAGES = ("report.html", "report.md")
TABLES = "tables"  # each table of the page as CSV: `tables/<section>_<n>.csv`


def check_out(target: Path, run: Path) -> None:
    """Refuse a `target` the report does not own: inside a run directory (but `run`'s own `report/`), or holding
    files it did not write."""
    from bridge.run.directory import run_dir_holding

    default = run / "report"
    if target.exists() and not target.is_dir():
        raise ConfigError(f"--out {target}: exists and is not a directory")
    if target.resolve() == default.resolve():
        return  # the run's own report folder
    refuse_in_data(target, f"; write the report to a folder outside the data, or leave --out out (it writes "
                           f"{default})")
    holder = run_dir_holding(target)
    if holder is not None:
        raise ConfigError(f"--out {target} is inside the run directory {holder}; write the report to a new folder, "
                          f"or leave --out out (it writes {default})")
    check_own_folder(target, MARKER, f"--out {target} holds files `kbc report` did not write; name a new or empty "
                                     "folder (the report writes only into folders of its own)")


def _own(name: object) -> bool:
    """Whether `name` (from the marker) is a file the report writes: a page or CSV beside it, a figure, a table's
    CSV."""
    if not isinstance(name, str) or "\\" in name:
        return False
    parts = Path(name).parts
    if any(p in ("", ".", "..") for p in parts) or Path(name).is_absolute():
        return False
    if len(parts) == 1:
        return name in PAGES or name.endswith(".csv")
    return len(parts) == 2 and ((parts[0] == "figures" and name.endswith((".png", ".svg")))
                                or (parts[0] == TABLES and name.endswith(".csv")))


def written_before(target: Path) -> set[str]:
    """The files (relative to `target`) the last report there wrote, as its marker lists them."""
    try:
        listed = json.loads((target / MARKER).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return set()
    return {name for name in listed if _own(name)} if isinstance(listed, list) else set()


def write_text(path: Path, text: str) -> None:
    """Write aside, then switch in: a reader, and the disk after a power cut, never holds half a page."""
    tmp = path.with_name(f".{path.name[:40]}.{os.getpid()}.tmp")  # a name near 255 bytes leaves no room for more
    write_atomic(path, text.encode("utf-8", NAME_BYTES), tmp)  # eval.file_names


def record(target: Path, files: set[str], made_from: Path | None = None) -> None:
    """List `files` (relative to `target`) as the report's own, and (`made_from`: the run it reports) a digest of the
    run's summary.json, by which a later `kbc run` into that run tells the report no longer shows its summaries."""
    entry = {"written_by": "kbc report", "files": sorted(files)}
    if made_from is not None:
        entry["summary_sha256"] = summary_digest(made_from)
    write_text(target / MARKER, json.dumps(entry, indent=1) + "\n")


def summary_digest(run: Path) -> str | None:
    """The SHA-256 of a run's summary.json, or None where it has none."""
    try:
        return hashlib.sha256((run / "summary.json").read_bytes()).hexdigest()
    except OSError:
        return None


def stale_report(run: Path) -> str | None:
    """The line a run says when its own report (`RUN/report`) was made from summaries other than those it holds
    now; None where it has none, or the report shows these."""
    try:
        made = json.loads((run / "report" / MARKER).read_text(encoding="utf-8")).get("summary_sha256")
    except (OSError, ValueError, AttributeError):
        return None
    if made is None or made == summary_digest(run):
        return None
    return (f"{run / 'report'} was made from earlier summaries and does not show these; run `kbc report {run}` to "
            "remake it")


def remove_stale(target: Path, before: set[str], written: set[str]) -> None:
    """Remove the files an earlier report wrote there that this one did not."""
    for name in sorted(before - written):
        (target / name).unlink(missing_ok=True)


# `staging`'s folder, named by the process drawing in it: its id and, where /proc tells it, its start (`started_at`)
STAGE = re.compile(r"\.kbc-report-staging\.(\d+)(?:\.(\d+))?")


def _held(stage: Path) -> int | None:
    """An open descriptor of `stage` holding its lock (flock), taken without waiting; None where another process
    holds it (a report drawing there now)."""
    import fcntl

    from bridge.run.run_lock import BUSY

    fd = os.open(stage, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in BUSY:
            return None
        raise
    return fd


def _alive(pid: int) -> bool:
    """Whether a process of that id runs on this machine (one of another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _stage_name() -> str:
    """This process's staging folder's name: its id and its start, by which a later report tells this process from
    another given the same id after it ended; the id alone where the start is unknown (no /proc)."""
    start = started_at(os.getpid())
    return f".kbc-report-staging.{os.getpid()}" + (f".{start}" if start is not None else "")


def _drawing(pid: int, start: str | None) -> bool:
    """Whether the report that named a staging folder `pid` (and `start`) may still be drawing in it: its process
    runs, the same one where the name and /proc tell its start (not another given its id since; this process's
    folder is named with its start where /proc tells it); only where they do not, any process of that id."""
    now = started_at(pid)
    if now is not None and (start is not None or pid == os.getpid()):
        return start == str(now)
    return _alive(pid)


def remove_left_stages(target: Path) -> None:
    """Remove the staging folders a killed report left in `target` (SIGKILL, a power cut: its `finally` never ran):
    those named as `staging` names them whose process is gone (its id maybe another's now) and whose lock nobody
    holds. Another report drawing there now holds its lock (a kbc from before the lock: its process runs), and is
    left alone."""
    try:
        entries = list(os.scandir(target))
    except OSError:
        return
    for entry in entries:
        found = STAGE.fullmatch(entry.name)
        if found is None or not entry.is_dir(follow_symlinks=False) or _drawing(int(found.group(1)), found.group(2)):
            continue
        try:
            fd = _held(Path(entry.path))
        except OSError:
            continue
        if fd is not None:
            try:
                shutil.rmtree(entry.path, ignore_errors=True)
            finally:
                os.close(fd)


@contextmanager
def staging(target: Path) -> Iterator[Path]:
    """A new folder inside `target` to draw a whole report in, locked while it is drawn in; removed with what is
    left in it when the block ends (what `switch_in` moved is in `target` by then), and, where a killed report
    left one, by the next report there (`remove_left_stages`). A failure naming a file in it names the file's
    place in `target`."""
    stage = target / _stage_name()
    shutil.rmtree(stage, ignore_errors=True)  # one a killed report of the same process id (and start) left
    remove_left_stages(target)
    stage.mkdir()
    fd = _held(stage)
    try:
        yield stage
    except OSError as exc:  # named where the file goes (`figures/p_at_k.png`), not by the folder it was drawn in
        for attr in ("filename", "filename2"):
            name = getattr(exc, attr)
            if isinstance(name, (str, os.PathLike)) and Path(name).is_relative_to(stage):
                setattr(exc, attr, str(target / Path(name).relative_to(stage)))
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if fd is not None:
            os.close(fd)


def switch_in(stage: Path, target: Path, files: set[str]) -> None:
    """Move `files` (relative names) from `stage` into `target`, the pages last: renames in one file system, which
    need no room on a full disk, so the switch does not stop halfway where drawing would have."""
    for name in sorted(files, key=lambda n: (n in PAGES, n)):
        make_dirs((target / name).parent)
        fsync_file(stage / name)  # a power cut keeps the old file or this one, whole
        os.replace(stage / name, target / name)
    for folder in sorted({(target / name).parent for name in files}):
        fsync_dir(folder)
