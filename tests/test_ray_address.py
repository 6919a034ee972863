"""The cluster Ray would join without an address (`RAY_ADDRESS`, the file `ray start` leaves) is checked like a
typed one: a dead one is one `error:` line within seconds, not minutes of Ray retrying. A `ray://` client that
times out names the token authentication it may lack."""

from __future__ import annotations

import time

import pytest
from cli_support import run_kbc

BASE = ["run", "lama", "--corpus", "trex", "--relations", "P36", "--limit", "2", "--predictors", "freq",
        "--executor", "ray", "--quiet"]


@pytest.fixture
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "raytmp"))
    return tmp_path / "raytmp" / "ray" / "ray_current_cluster"


def _error(argv: list[str], capsys) -> str:
    started = time.monotonic()
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and time.monotonic() - started < 10, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_a_dead_ray_address_variable(no_cluster, monkeypatch, tmp_path, capsys, lama_dir):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    line = _error([*BASE, "--data-dir", str(lama_dir), "--out", str(tmp_path / "out")], capsys)
    assert line == ("error: RAY_ADDRESS=127.0.0.1:1: cannot reach a Ray cluster at 127.0.0.1:1 (Connection refused); "
                    "unset RAY_ADDRESS to start one for this run, or fix it")
    assert not (tmp_path / "out" / "predictions").exists()


def test_a_cluster_ray_start_left_behind(no_cluster, tmp_path, capsys, lama_dir):
    no_cluster.parent.mkdir(parents=True)
    no_cluster.write_text("127.0.0.1:1")
    line = _error([*BASE, "--data-dir", str(lama_dir), "--out", str(tmp_path / "out")], capsys)
    assert line == (f"error: {no_cluster} (left by `ray start`) names 127.0.0.1:1: cannot reach a Ray cluster at "
                    f"127.0.0.1:1 (Connection refused); `ray stop` (or remove {no_cluster}) to start one for this "
                    "run, or pass --ray-address")


def test_auto_with_no_cluster(no_cluster, tmp_path, capsys, lama_dir):
    line = _error([*BASE, "--ray-address", "auto", "--data-dir", str(lama_dir), "--out", str(tmp_path / "out")],
                  capsys)
    assert line == (f"error: --ray-address auto: no Ray cluster runs on this machine (none in RAY_ADDRESS or "
                    f"{no_cluster}); start one with `ray start --head`, or drop --ray-address to start one for this "
                    "run")


@pytest.mark.parametrize("mode", [None, "token"])
def test_a_ray_client_timeout_names_the_auth_mode_it_lacks(mode, no_cluster, monkeypatch, tmp_path, capsys, lama_dir):
    """What Ray's client raises when a token-authenticated head ignores it (no `RAY_AUTH_MODE=token` here: it
    sends no token and waits 30 s); with the mode set, the hint would mislead and is left out."""
    import ray

    import bridge.run.executors as executors

    def times_out(*args, **kwargs):
        raise ConnectionError("ray client connection timeout")

    monkeypatch.setattr(executors, "check_reachable", lambda *a, **k: None)  # the port answers, as a head's does
    monkeypatch.setattr(ray, "init", times_out)
    if mode:
        monkeypatch.setenv("RAY_AUTH_MODE", mode)
    else:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    address = "ray://127.0.0.1:10001"
    line = _error([*BASE, "--ray-address", address, "--data-dir", str(lama_dir), "--out", str(tmp_path / "out")],
                  capsys)
    head = (f"error: --ray-address {address}: ray client connection timeout; start one with `ray start --head`, or "
            "drop --ray-address to start one for this run")
    hint = ("; a cluster with token authentication (Ray turns it on for clusters `ray start` starts) also needs "
            "RAY_AUTH_MODE=token here, with its token (`ray get-auth-token` on the head) in RAY_AUTH_TOKEN or "
            "~/.ray/auth_token")
    assert line == (head if mode else head + hint)
