"""The processes holding a lock on a file, as the kernel lists them (`/proc/locks`): what a refusal names where the
lock carries no record of its holder (a shared lock, which many processes hold at once). Linux only; elsewhere, or
where the list names no one (another PID namespace), a refusal says "another process"."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

LOCKS = Path("/proc/locks")


def lock_holders(path: Path) -> list[int]:
    """The ids of the processes holding a lock on `path` (its device and inode), in the kernel's order."""
    try:
        st = os.stat(path)
        listed = LOCKS.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return []
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: list[int] = []
    for line in listed:
        fields = line.split()
        if "->" in fields or len(fields) < 6:  # a process waiting for the lock, not holding it
            continue
        pid, where = fields[-4], fields[-3]
        if where == wanted and pid.isdigit() and int(pid) > 0 and int(pid) not in pids:
            pids.append(int(pid))
    return pids


def kbc_command(argv: Sequence[str]) -> str:
    """A command line (the interpreter first, as /proc/PID/cmdline has it) as a refusal names it: `kbc ARGS` where it
    runs kbc (`kbc`, `python .venv/bin/kbc`, `python -m bridge.cli`, `python .../bridge/cli/__main__.py`), else
    as it is (a script or a notebook kernel calling the Python API, which would read as some `kbc` command
    otherwise)."""
    words = [w for w in argv if w]

    def runs_kbc(word: str) -> bool:
        return Path(word).name == "kbc" or Path(word).parts[-3:] == ("bridge", "cli", "__main__.py")

    if words and runs_kbc(words[0]):
        return " ".join(["kbc", *words[1:]])
    if len(words) > 1 and runs_kbc(words[1]):
        return " ".join(["kbc", *words[2:]])
    if words[1:3] == ["-m", "bridge.cli"]:
        return " ".join(["kbc", *words[3:]])
    return " ".join(words)


def command_of(pid: int, limit: int = 100) -> str | None:
    """How process `pid` was started (`kbc run ...` for the command), cut at `limit` characters; None where unknown."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return None
    if not any(argv):
        return None
    text = kbc_command([os.fsdecode(a) for a in argv])
    return text if len(text) <= limit else text[:limit - 3] + "..."


def started_at(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22): with its id, what names one
    process, where an id alone may since belong to another; None where unknown (no /proc, e.g. macOS, or no such
    process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 1:].split()  # after the command's name, which may hold spaces and ")"
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def holders_text(path: Path) -> str:
    """"process 123 (`kbc run ...`)" for each holder of a lock on `path`, else "another process"."""
    named = []
    for pid in lock_holders(path):
        command = command_of(pid)
        named.append(f"process {pid}" + (f" (`{command}`)" if command else ""))
    return ", ".join(named) or "another process"
