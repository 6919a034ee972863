"""The processes holding a lock on a file, as the kernel lists them (`/proc/locks`): what a refusal names where the
lock carries no record of its holder (a shared lock, which many processes hold at once). Linux only; elsewhere, or
where the list names no one (another PID namespace), a refusal says "another process"."""

from __future__ import annotations

import os
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


def command_of(pid: int, limit: int = 100) -> str | None:
    """How process `pid` was started (`kbc run ...` for the command), cut at `limit` characters; None where unknown."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return None
    words = [os.fsdecode(a) for a in argv if a]
    if not words:
        return None
    if Path(words[0]).name == "kbc" or (len(words) > 1 and Path(words[1]).name == "kbc"):
        words = ["kbc", *words[words.index(next(w for w in words if Path(w).name == "kbc")) + 1:]]
    text = " ".join(words)
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
