"""`transformers serve` on a localhost port for one model folder: a real OpenAI-compatible server on this machine
(what the tests and `bench/generation.py` ask; a user points `--predictors` at it the same way as at vLLM)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from eval.errors import KbcError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_command() -> list[str]:
    """The `transformers` CLI beside this Python (a virtual environment's), else on PATH."""
    beside = Path(sys.executable).with_name("transformers")
    found = str(beside) if beside.is_file() else shutil.which("transformers")
    if found is None:
        raise KbcError("the `transformers` command is not installed; pip install 'transformers[serving]'")
    return [found, "serve"]


class LocalServer:
    """A `transformers serve DIR` child process (pinned to that model); `url` is its API root (…/v1)."""

    def __init__(self, model: str | Path, port: int | None = None, timeout: float = 120.0) -> None:
        self.model = str(model)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        self.log = open(os.devnull, "wb")  # noqa: SIM115  (kept open as long as the child runs)
        self.process = subprocess.Popen(
            [*serve_command(), self.model, "--host", "127.0.0.1", "--port", str(self.port),
             "--device", "cpu", "--log-level", "error"], stdout=self.log, stderr=subprocess.PIPE, env=env)
        self._wait(timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode("utf-8", "replace").strip().splitlines()
                raise KbcError(f"transformers serve stopped: {' / '.join(err[-3:]) if err else 'no message'}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    json.loads(response.read())
                return
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.3)
        self.close()
        raise KbcError(f"transformers serve did not answer on {self.url} within {timeout:g} s")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stderr.close()
        self.log.close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
