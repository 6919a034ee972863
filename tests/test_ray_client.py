"""`--ray-address ray://HOST:PORT`: a run driven through Ray Client against a cluster started with `ray start`,
token authentication on, writes the records of a local run."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from record_compare import actor_threads, assert_same_run

from lm.local_server import free_port

pytestmark = pytest.mark.heavy
tiny_models = lm_fixtures.tiny_models
RAY = Path(sys.executable).with_name("ray")


@pytest.fixture(scope="module")
def head():
    """(ray:// address, the environment a client needs, its temp dir, a call that waits until it serves): a head of
    2 CPUs with its own token and temp dir, started at once and waited on only where a client needs it (a test's
    local run goes on while it starts), stopped with its whole process group at the end."""
    token = secrets.token_hex(16)
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": token, "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # stopped at once at the end
           # a client's server process answers within seconds (2 s on 2 loaded cores); one that died is waited on
           # about twice this long before the run's one retry
           "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "15"}
    port, client = free_port(), free_port()
    temp = tempfile.mkdtemp(prefix="kbcray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    proc = subprocess.Popen([str(RAY), "start", "--head", "--block", f"--port={port}",
                             f"--ray-client-server-port={client}", "--num-cpus=2", "--include-dashboard=false",
                             "--disable-usage-stats", f"--temp-dir={temp}"], env={**env, "RAY_worker_niceness": "0"},
                            start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def serving() -> None:
        deadline = time.monotonic() + 90
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", client)) == 0:
                    return
            assert proc.poll() is None and time.monotonic() < deadline, "the Ray head did not start"
            time.sleep(0.5)

    try:
        yield f"ray://127.0.0.1:{client}", env, Path(temp), serving
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)  # its ray_current_cluster too: no later ray.init finds it


def _kbc(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bridge.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def _client_server_logs(temp: Path) -> str:
    """The tails of the head's client-server logs: why a client's own server process did not serve."""
    logs = sorted(temp.glob("session_latest/logs/ray_client_server*"))
    return "".join(f"\n--- {log.name}\n" + log.read_text(errors="replace")[-2000:] for log in logs)


def test_a_ray_client_run_writes_the_local_records(head, tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    address, env, temp, serving = head
    base = ["run", "lama", "--corpus", "trex", "--relations", "P36", "P19", "--limit", "5", "--predictors", "freq",
            f"bert={tiny_models('bert-cased')}", "--data-dir", str(lama_dir), "--quiet"]
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "c1"))
    with actor_threads():  # in this process, on one torch thread as each actor: the same sums
        code, _, err = run_kbc([*base, "--out", str(tmp_path / "local")], capsys)
    assert code == 0, err
    serving()
    remote = _kbc([*base, "--out", str(tmp_path / "ray"), "--executor", "ray", "--ray-address", address,
                   "--workers", "2"], {**env, "KBC_CACHE": str(tmp_path / "c2")})
    assert remote.returncode == 0, remote.stderr + _client_server_logs(temp)
    assert assert_same_run(tmp_path / "local", tmp_path / "ray") == 2 * 2 * 5


def test_a_client_server_that_died_is_started_once_more(monkeypatch):
    """A head whose server process for this client died, before or after it started, is asked once more; any other
    failure, or a second death, is the run's one error line."""
    import bridge.run.ray_executor as rx
    from bridge.run.executors import ExecutorSettings
    from eval.errors import ConfigError

    head = "Initialization failure from server:\nTraceback (most recent call last):\n  File \"x\", line 1\n"
    died_after = head + "RuntimeError: Proxy failed to Connect to backend! Check the logs.\n"
    died_before = head + "RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err.\n"
    timeout = "ray client connection timeout"
    cases = [((died_after, timeout), 2, timeout), ((died_before, died_after), 2,
              "Initialization failure from server: RuntimeError: Proxy failed to Connect to backend! Check the logs"),
             ((timeout, died_after), 1, timeout)]
    monkeypatch.setattr(rx.time, "sleep", lambda s: None)
    for answers, calls, reason in cases:
        asked: list[str] = []

        def init(address, answers=answers, asked=asked, **_):
            asked.append(address)
            raise ConnectionError(answers[len(asked) - 1])

        monkeypatch.setattr(rx.ray, "init", init)
        with pytest.raises(ConfigError) as err:
            rx.RayExecutor.connect(ExecutorSettings("ray", "ray://127.0.0.1:10001"))
        assert asked == ["ray://127.0.0.1:10001"] * calls
        assert str(err.value).startswith(f"--ray-address ray://127.0.0.1:10001: {reason}; start one with `ray start")
