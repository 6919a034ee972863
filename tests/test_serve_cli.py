"""`kbc serve` as a user starts it: prints the URL, answers, stops cleanly on Ctrl-C; bad options exit 2."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import httpx
from cli_support import run_kbc


def test_serve_starts_prints_the_url_and_stops_on_ctrl_c(lama_dir, tmp_path):
    """On the port it picked (`--port 0`): a port found free here could be taken by another process before the
    server binds it."""
    env = {**os.environ, "KBC_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "bridge.cli", "serve", "--port", "0", "--data-dir",
                             str(lama_dir), "--relations", "P36", "--predictors", "freq"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        shown = re.match(r"open http://127\.0\.0\.1:(\d+)/ ", line)
        assert shown, (line, proc.stderr.read() if proc.poll() else "")
        port = int(shown.group(1))
        assert port > 0
        deadline = time.monotonic() + 30
        while True:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/api/status", timeout=5).json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        assert status["relations"] == 1 and [p["name"] for p in status["predictors"]] == ["freq"]
        body = httpx.get(f"http://127.0.0.1:{port}/api/query", params={"subject": "France", "relation": "P36"}).json()
        assert body["gold"] == ["Paris"]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, proc.stderr.read()
    assert "Traceback" not in proc.stderr.read()


def test_serve_rejects_bad_options_with_one_line(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    for argv, needle in ((["--coherency", "nobody", "--predictors", "freq"], "--coherency nobody"),
                         (["--relations", "P999"], "unknown relation id(s) P999"),
                         (["--run", str(tmp_path / "missing")], "does not exist"),
                         (["--predictors", "frq"], "did you mean 'freq'")):
        code, out, err = run_kbc(["serve", "--data-dir", str(lama_dir), *argv], capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], err


def test_serve_listens_before_it_prints_the_url(lama_dir, tmp_path, capsys, monkeypatch):
    """A client that connects as soon as it reads the URL is answered, not refused."""
    import uvicorn

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    reached = []

    def run(self, sockets):  # in place of serving: connect as a client would on seeing the URL
        host, port = sockets[0].getsockname()[:2]
        with socket.create_connection((host, port), timeout=5):
            reached.append(port)
        self.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    code, out, err = run_kbc(["serve", "--port", "0", "--data-dir", str(lama_dir), "--relations", "P36",
                              "--predictors", "freq"], capsys)
    assert code == 0 and len(reached) == 1, err
    assert f"open http://127.0.0.1:{reached[0]}/ " in out


def test_serve_counts_one_relation_and_one_predictor_in_the_singular(lama_dir, tmp_path, capsys, monkeypatch):
    import uvicorn

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: setattr(self, "started", True))
    code, _, err = run_kbc(["serve", "--port", "0", "--data-dir", str(lama_dir), "--relations", "P36",
                            "--predictors", "freq"], capsys)
    assert code == 0, err
    assert re.search(r"kbc serve: trex, 1 relation, 1 predictor, ready in ", err), err


def test_serve_takes_index_and_store_timeout_as_other_commands_spell_them(lama_dir, tmp_path, capsys, monkeypatch):
    """`--index` (kbc index, kbc analyze) names the text index as `--text-index` does; `--store-timeout` (kbc run,
    kbc kb) reaches the store the explorer opens."""
    import uvicorn

    import bridge.serve.explorer as explorer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    missing = tmp_path / "no-index"
    code, _, err = run_kbc(["serve", "--data-dir", str(lama_dir), "--relations", "P36", "--index", str(missing)],
                           capsys)
    assert code == 2 and err.startswith(f"error: {missing}: no text index there"), err
    timeouts = []

    def opened(*args, **kwargs):
        timeouts.append(args[3])
        return opening(*args, **kwargs)

    opening = explorer.open_store
    monkeypatch.setattr(explorer, "open_store", opened)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: setattr(self, "started", True))
    code, _, err = run_kbc(["serve", "--port", "0", "--data-dir", str(lama_dir), "--relations", "P36",
                            "--predictors", "freq", "--store-timeout", "7.5"], capsys)
    assert code == 0 and timeouts == [7.5], err
