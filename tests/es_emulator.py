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
    port = free_port()
    log = (data / "log.txt").open("w")
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
    deadline = time.time() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"noida-db did not start: {(data / 'log.txt').read_text()[-500:]}")
            time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
