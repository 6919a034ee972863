"""`--executor ray` on a local Ray cluster: the same prediction records as a local run, through lost workers,
Ctrl-C and resumes across executors; one `error:` line for a cluster that cannot be used."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import lm_fixtures
import pytest
import ray
from cli_support import run_kbc
from record_compare import actor_threads
from record_compare import assert_same_run as _assert_same_run
from record_compare import records as _records

from bridge.experiments.lama import LamaExperiment
from bridge.run.executors import ExecutorSettings
from bridge.run.ray_executor import _workers_at_driver_priority
from bridge.run.runner import RunConfig, run_experiment

pytestmark = pytest.mark.heavy
tiny_models = lm_fixtures.tiny_models
RELATIONS = ["P36", "P47", "P19", "P101", "P103", "P138", "P17", "P27"]


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """One cluster for the module, its workers at this process's priority as a cluster a run starts has them:
    at Ray's default (15 lower) the actors would wait on every busier process of the machine."""
    with _workers_at_driver_priority():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _both(argv: list[str], tmp_path: Path, capsys, monkeypatch, ray_flags: tuple[str, ...] = ("--workers", "2")
          ) -> tuple[Path, Path, str]:
    outs = []
    err = ""
    for name, flags in (("local", ()), ("ray", ("--executor", "ray", *ray_flags))):
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / f"cache-{name}"))
        out = tmp_path / name
        with actor_threads():
            code, _, err = run_kbc([*argv, "--out", str(out), "--quiet", *flags], capsys)
        assert code == 0, err
        outs.append(out)
    assert _metadata(outs[0]) == _metadata(outs[1])  # the executor is no part of what a run records of itself
    return outs[0], outs[1], err


def _metadata(out: Path) -> dict:
    """A run's config.json but for what each run of a directory has of its own: when and how it ran, how long
    each predictor took, and the directory's own cache scope."""
    config = json.loads((out / "config.json").read_text())
    return {k: v for k, v in config.items() if k not in ("runs", "seconds", "cache_scope")}


def test_coherency_on_ray_second_stage_reads_the_first(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    argv = ["run", "coherency", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "8", "--predictors",
            "gold", f"bert={tiny_models('bert-cased')}", "--data-dir", str(lama_dir)]
    local, remote, err = _both(argv, tmp_path, capsys, monkeypatch)
    # gold and bert, both stages, both rounds of every instance; and each drops the 2 facts the instance rule
    # leaves out, a record per first-step query (2 x 2 x 2)
    assert _assert_same_run(local, remote) == 90 + 8
    assert "gold: runs in the driver" in err
    runs = json.loads((remote / "config.json").read_text())["runs"]
    # the cluster joined (the module's) and the workers each pool had
    assert runs[-1]["executor"] == {"kind": "ray", "address": ray.get_runtime_context().gcs_address, "workers": 2,
                                    "gpus_per_worker": 0.0, "threads_per_worker": 1}
    assert json.loads((local / "config.json").read_text())["runs"][-1]["executor"] == {"kind": "local"}
    assert not [a for a in ray.util.list_named_actors() if a.startswith("kbc-")]  # every pool released
    second = _records(remote)["predictions/trex/bert/second/P36.jsonl"]
    assert any("first_answer" in r for r in second)


def test_kmir_on_ray(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    # one graph store for both runs: the second finds the types and facts the first wrote, as a rerun would
    argv = ["run", "kmir", "--corpus", "trex", "--relations", "P36", "P47", "--limit", "6",
            "--questions-per-relation", "4", "--predictors", "kb", f"bert={tiny_models('bert-cased')}",
            "--data-dir", str(lama_dir), "--store", str(tmp_path / "store")]
    local, remote, _ = _both(argv, tmp_path, capsys, monkeypatch, ("--workers", "1"))
    assert _assert_same_run(local, remote) > 0
    assert json.loads((local / "summary.json").read_text()) == json.loads((remote / "summary.json").read_text())


def test_generation_on_ray_prints_what_asking_cost(tiny_models, lama_dir, tmp_path, capsys, monkeypatch):
    """The requests and tokens counted in the actor come back to the driver: the same line as a local run."""
    argv = ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--limit", "3", "--predictors",
            f"llm={tiny_models('gpt2')}", "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=4",
            "--data-dir", str(lama_dir)]
    lines = {}
    for name, flags in (("local", ()), ("ray", ("--executor", "ray", "--workers", "1"))):
        monkeypatch.setenv("KBC_CACHE", str(tmp_path / f"cache-{name}"))
        with actor_threads():
            code, _, err = run_kbc([*argv, "--out", str(tmp_path / name), "--quiet", *flags], capsys)
        assert code == 0, err
        lines[name] = [line for line in err.splitlines() if line.startswith("google_re / llm: 3 queries: ")]
    assert lines["local"] == lines["ray"] and len(lines["ray"]) == 1
    assert lines["ray"][0].startswith("google_re / llm: 3 queries: 3 asked, 0 from the cache, 0 sharing another "
                                      "query's prompt, 0 unanswered; generations 3; tokens used ")
    assert _assert_same_run(tmp_path / "local", tmp_path / "ray") == 3
    assert _metadata(tmp_path / "local") == _metadata(tmp_path / "ray")


def hooked(monkeypatch, hook) -> None:
    """Calls `hook(n)` in the driver before the n-th record line it writes (1-based), whichever executor made
    it: records are made beside the predictor, so the hook sits where the lines reach the runner."""
    from bridge.run.executors import LocalExecutor
    from bridge.run.ray_executor import RayExecutor

    written = [0]

    def calling(lines):
        for line in lines:
            written[0] += 1
            hook(written[0])
            yield line

    for cls in (LocalExecutor, RayExecutor):
        def map_(self, predictor, chunks, recorder, _original=cls.map):
            for lines in _original(self, predictor, chunks, recorder):
                yield calling(lines)

        monkeypatch.setattr(cls, "map", map_)


def _cfg(tmp_path: Path, lama_dir: Path, name: str, model: Path) -> RunConfig:
    return RunConfig(corpora=["trex"], predictors=[f"bert={model}"], out=tmp_path / name, data_dir=str(lama_dir),
                     relations=RELATIONS, limit=5, options={"cache": "off"}, cache_dir=tmp_path / f"cache-{name}",
                     bootstrap=0)


def _watch(caplog_records: list) -> logging.Handler:
    handler = logging.Handler()
    handler.emit = caplog_records.append
    logging.getLogger("kbc").addHandler(handler)
    return handler


@pytest.fixture(scope="module")
def local_lama(tiny_models, lama_dir, tmp_path_factory) -> Path:
    """The local run that the Ray runs below must equal, made once for all of them."""
    root = tmp_path_factory.mktemp("ray-local")
    with actor_threads():
        run_experiment(_cfg(root, lama_dir, "local", tiny_models("bert-cased")), LamaExperiment(), progress=False)
    return root / "local"


def test_a_killed_worker_loses_no_chunk(tiny_models, local_lama, lama_dir, tmp_path, monkeypatch):
    model = tiny_models("bert-cased")

    def kill(n: int) -> None:
        """At the first record line every worker dies: with one chunk per relation, 8 chunks and a window of 4,
        the chunks not yet given out go to dead workers and must be redone on fresh ones. (Killing one worker by
        name could pick a dead one an earlier test left listed, or one whose chunks were already back.)"""
        if n == 1:
            for name in ray.util.list_named_actors():
                if name.startswith("kbc-"):
                    try:
                        ray.kill(ray.get_actor(name))
                    except ValueError:  # already gone
                        pass

    seen: list[logging.LogRecord] = []
    handler = _watch(seen)
    hooked(monkeypatch, kill)
    try:
        run_experiment(_cfg(tmp_path, lama_dir, "ray", model), LamaExperiment(), progress=False,
                       executor=ExecutorSettings("ray", workers=2))
    finally:
        logging.getLogger("kbc").removeHandler(handler)
    assert any("a Ray worker was lost" in r.getMessage() for r in seen)
    assert _assert_same_run(local_lama, tmp_path / "ray") == len(RELATIONS) * 5


def test_ctrl_c_leaves_a_directory_either_executor_resumes(tiny_models, local_lama, lama_dir, tmp_path, monkeypatch):
    model = tiny_models("bert-cased")

    def interrupt(n: int) -> None:
        if n == 12:
            raise KeyboardInterrupt

    on_ray = ExecutorSettings("ray", workers=1)
    for name, first, then in (("ray", on_ray, None), ("mixed", None, on_ray)):
        cfg = _cfg(tmp_path, lama_dir, name, model)
        with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt), actor_threads():
            hooked(patch, interrupt)
            run_experiment(cfg, LamaExperiment(), progress=False, executor=first)
        written = sum(len(lines) for lines in _records(cfg.out).values())
        assert written == 11  # every record before the interrupt stays, flushed
        with actor_threads():
            run_experiment(cfg, LamaExperiment(), progress=False, executor=then)  # the identity is the same: resumed
        assert _assert_same_run(local_lama, cfg.out) == len(RELATIONS) * 5
    assert not [a for a in ray.util.list_named_actors() if a.startswith("kbc-")]


def test_cluster_problems_are_one_error_line(tiny_models, lama_dir, tmp_path, capsys):
    base = ["run", "lama", "--corpus", "trex", "--relations", "P36", "--limit", "2", "--predictors",
            f"bert={tiny_models('bert-cased')}", "--data-dir", str(lama_dir), "--quiet"]
    cases = [
        (["--executor", "ray", "--ray-address", "127.0.0.1:1"],
         "error: --ray-address 127.0.0.1:1: cannot reach a Ray cluster at 127.0.0.1:1"),
        (["--executor", "ray", "--gpus-per-worker", "1"],
         "error: --executor ray: the cluster has 2 CPUs and 0 GPUs, too few for 1 worker(s) of 1 CPU(s) and 1 GPU(s)"),
        (["--executor", "ray", "--workers", "3"], "error: --executor ray: the cluster has 2 CPUs and 0 GPUs, too few "
                                                  "for 3 worker(s) of 1 CPU(s)"),
        (["--ray-address", "auto"], "error: --ray-address applies to --executor ray only"),
    ]
    for i, (flags, message) in enumerate(cases):
        out = tmp_path / f"out{i}"
        code, _, err = run_kbc([*base, "--out", str(out), *flags], capsys)
        assert code == 2, err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(message) and "Traceback" not in err, err
        assert not (out / "predictions").exists()


def test_ray_is_imported_only_when_asked():
    code = ("import sys, bridge.cli, bridge.cli.run, bridge.run.runner, bridge.run.executors; "
            "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_predictions_travel_whole():
    from bridge.run.ray_executor import pack, unpack
    from eval.types import Answer, Prediction

    sent = [Prediction("u1", (Answer("Paris", -0.5), Answer("Lyon", -1.25, "Q456")), True, {"n_tokens": 7},
                       {"Paris": 1}, True), Prediction("u2", ()),
            Prediction("u3", (Answer("Lyon", -0.75), Answer("Paris", -2.0))),
            Prediction("u4", (Answer("Paris", 3), Answer("Rome", 1)), shared_ties=True)]  # counts stay ints
    labels, rows = pack(sent)
    assert labels == ["Paris", "Lyon", "Rome"]  # each label once per chunk, answers point into the table
    got = unpack((labels, rows))
    assert got == sent
    assert [(p.extra, p.target_ranks, p.shared_ties) for p in got] == [
        ({"n_tokens": 7}, {"Paris": 1}, True), ({}, None, False), ({}, None, False), ({}, None, True)]
    assert [[(type(a.score), a.id) for a in p.answers] for p in got] == [
        [(float, None), (float, "Q456")], [], [(float, None), (float, None)], [(int, None), (int, None)]]


def test_a_cluster_started_for_the_run_keeps_the_driver_priority():
    code = ("import os, ray, signal; from bridge.run.executors import ExecutorSettings; "
            "from bridge.run.ray_executor import RayExecutor\n"
            "def stop(signum, frame): pass\n"
            "signal.signal(signal.SIGTERM, stop)\n"
            "with RayExecutor.connect(ExecutorSettings('ray', workers=1)) as pool:\n"
            "    f = ray.remote(num_cpus=1)(lambda: os.nice(0))\n"
            "    print(os.nice(0), ray.get(f.remote()), 'RAY_worker_niceness' in os.environ,\n"
            "          signal.getsignal(signal.SIGTERM) is stop, pool.describe()['address'].replace(' ', '_'),\n"
            "          pool.describe()['workers'])")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_worker_niceness", "RAY_AUTH_MODE")}
    # the driver runs below this process's priority, as under `nice`: its workers take the driver's, not more
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=lambda: os.nice(3))
    assert done.returncode == 0, done.stderr
    driver = min(os.nice(0) + 3, 19)
    # Ray alone would give its workers 15 more; and the driver's SIGTERM handler (kbc's: stop as Ctrl-C does) is
    # the one it had, not Ray's immediate exit
    # config.json records the cluster as started here, with its CPUs, and the workers asked; Ray's notice that
    # it turned token authentication on, of a cluster the run starts and stops itself, is kept back
    assert done.stdout.split() == [str(driver), str(driver), "False", "True", f"started:_{os.cpu_count()}_CPUs", "1"]
    assert "Token authentication" not in done.stderr, done.stderr


def test_a_port_that_is_not_ray_is_one_error_line(monkeypatch):
    """Ray retries any port for minutes: a web server (the dashboard's port, say) or a silent listener is told
    apart by its answer to an HTTP/2 preface, as gRPC (Ray's GCS and client server) speaks it."""
    import http.server
    import socket
    import socketserver
    import threading
    import time

    import bridge.run.executors as executors
    from eval.errors import ConfigError

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 0.5)
    web = socketserver.TCPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        for port in (web.server_address[1], silent.getsockname()[1]):
            started = time.monotonic()
            with pytest.raises(ConfigError) as err:
                executors.ExecutorSettings("ray", f"127.0.0.1:{port}").check()
            assert str(err.value) == (f"--ray-address 127.0.0.1:{port}: 127.0.0.1:{port} answers, but not as a Ray "
                                      "cluster (its GCS port, 6379 by default, or its client port, 10001; not the "
                                      "dashboard's 8265)")
            assert time.monotonic() - started < 5
        executors.ExecutorSettings("ray", ray.get_runtime_context().gcs_address).check()  # the real thing passes
    finally:
        web.shutdown()
        silent.close()


def test_a_server_traceback_is_told_by_its_last_line():
    from bridge.run.ray_executor import _reason

    told = ConnectionError("Initialization failure from server:\nTraceback (most recent call last):\n  File \"x\", "
                           "line 1\nRuntimeError: Proxy failed to Connect to backend! Check the logs.\n")
    assert _reason(told) == ("Initialization failure from server: RuntimeError: Proxy failed to Connect to backend! "
                             "Check the logs")
    assert _reason(ConnectionError("ray client connection timeout.\nmore")) == "ray client connection timeout"
    assert _reason(ConnectionError("")) == "ConnectionError"


def test_a_client_server_process_that_died_is_tried_again():
    """The head's three ways of saying the server process it started for this client died (a zombie: it died as
    the head looked for it) are tried once more; anything else is final."""
    from bridge.run.ray_executor import client_server_died

    died = ["Initialization failure from server:\nTraceback (most recent call last):\n  File \"proxier.py\", line 396\n"
            "psutil.ZombieProcess: PID still exists but it's a zombie (pid=22763)\n",
            "Initialization failure from server:\nRuntimeError: Starting Ray client server failed. See "
            "ray_client_server_23000.err for detailed logs.\n",
            "Initialization failure from server:\nRuntimeError: Proxy failed to Connect to backend! Check the logs.\n"]
    assert all(client_server_died(ConnectionError(message)) for message in died)
    final = ["ray client connection timeout", "Initialization failure from server:\nPermissionError: "
             "Authentication failed: invalid token"]
    assert not any(client_server_died(ConnectionError(message)) for message in final)


def test_a_served_model_is_said_to_run_in_the_driver_for_its_own_reason():
    from bridge.predictors.generation import resolve_server
    from bridge.run.ray_executor import driver_reason

    factory = resolve_server("http://127.0.0.1:8000/v1")
    assert driver_reason(f"{factory.__module__}:{factory.__qualname__}") == (
        "a server answers it: the driver sends the requests, as many at once as its concurrency allows")
    assert driver_reason("bridge.predictors.kb:make_gold") == "it reads the run's graph store"
