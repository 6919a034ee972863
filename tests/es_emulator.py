"""The noida-db Elasticsearch-API emulator, started from its bundled binary, so the `elasticsearch`-client code
runs in the suite without a server (it is an emulator, not Elasticsearch)."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lm.local_server import free_port


@contextmanager
def emulator(data: Path) -> Iterator[str]:
    """The URL of an emulator holding its indexes under `data`, with only its Elasticsearch API; stopped at the end."""
    import noida_db

    binary = Path(noida_db.__file__).parent / "noida-db"
    if not binary.is_file():
        pytest.fail(f"noida-db binary not found at {binary} (pip install noida-db)")
    binary.chmod(0o755)
    log = (data / "log.txt").open("w")
    for attempt in range(3):  # a port found free can be taken by another process before the emulator binds it
        port = free_port()
        proc = subprocess.Popen(
            [
                str(binary),
                "start",
                "--only",
                "elasticsearch",
                "--data-dir",
                str(data / "db"),
                "--host",
                "127.0.0.1",
                "--elasticsearch-port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        if _answers(url, proc):
            break
        if proc.poll() is None or attempt == 2:
            proc.kill()
            pytest.fail(f"noida-db did not start: {(data / 'log.txt').read_text()[-500:]}")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _answers(url: str, proc: subprocess.Popen) -> bool:
    """Whether the emulator answers at `url` within 30 s (a deadlock guard); False at once if it ended."""
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return True
        except OSError:
            time.sleep(0.2)
    return False
