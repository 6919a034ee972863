"""One graph store, many processes: readers never lock each other out, a writer waits for another one
and names it, a write cut short is never seen, and processes filling the same graphs at once fill them once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from cli_support import run_kbc
from tests_support_facts import toy_facts

from eval.errors import KbcError
from eval.types import Entity
from kb.store import GraphStore
from kb.store_disk import LIVE, WRITER_INFO
from kb.writer_lock import command_line

PARIS, FRANCE = Entity("Paris", "Q90"), Entity("France", "Q142")
ROOT = Path(__file__).resolve().parents[1]


def test_readers_read_the_published_store_while_another_writes(tmp_path):
    path = tmp_path / "store"
    with GraphStore.open(path) as writer, GraphStore.open(path) as early:
        assert writer.ensure_facts(toy_facts(), "toy@1") is True
        assert early.graph_names() == []  # a reader keeps the store it opened: one run never sees two contents
        reader = GraphStore.open(path)
        with writer.writing():
            writer.drop_graph("gold")
            assert writer.objects(PARIS, "P131") == []  # the writer sees its own writes at once
            with GraphStore.open(path) as third:  # opened while the writer holds its lock: it reads all the same
                assert third.objects(PARIS, "P131") == [FRANCE]
            assert reader.objects(PARIS, "P131") == [FRANCE]
        assert reader.objects(PARIS, "P131") == [FRANCE]
        reader.close()
    with GraphStore.open(path) as after:
        assert after.objects(PARIS, "P131") == []
        assert after.graph_names() == []


def test_a_failed_write_is_never_published_and_leaves_nothing_behind(tmp_path):
    path = tmp_path / "store"
    with GraphStore.open(path) as store:
        store.ensure_facts(toy_facts(), "toy@1")
        live = (path / LIVE).read_text()
        with pytest.raises(InterruptedError), store.writing():
            store.drop_graph("gold")
            raise InterruptedError
        assert store.objects(PARIS, "P131") == [FRANCE]
    assert (path / LIVE).read_text() == live
    assert sorted(p.name for p in path.iterdir()) == sorted(["kbc-store.json", LIVE, "writer.lock", live])


def test_the_copy_of_a_writer_that_died_is_deleted_by_the_next(tmp_path):
    path = tmp_path / "store"
    with GraphStore.open(path) as store:
        store.ensure_facts(toy_facts(), "toy@1")
    (path / "work-1").mkdir()
    (path / "work-1" / "000001.sst").write_bytes(b"half")
    with GraphStore.open(path) as store:
        assert store.objects(PARIS, "P131") == [FRANCE]
        store.ensure_facts(toy_facts()[:1], "toy@2")
    assert sorted(p.name for p in path.iterdir() if p.name.startswith(("gen-", "work-"))) == [
        (path / LIVE).read_text()]


def test_a_writer_waits_then_names_the_holder_and_other_caches(tmp_path, capsys, monkeypatch, lama_dir):
    path = tmp_path / "store"
    monkeypatch.setenv("KBC_STORE_WAIT", "0.3")
    with GraphStore.open(path) as holder, holder.writing():
        holder.backend.claim()
        since = json.loads((path / WRITER_INFO).read_text())["since"]
        code, _, err = run_kbc(["kb", "load", "--corpus", "google_re", "--data-dir", str(lama_dir),
                                "--store", str(path)], capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2
    command = command_line()
    holder = f"process {os.getpid()} (`{command}`, since {since}), in another thread of this process"
    assert lines[-2] == (f"the graph store {path} is being written by {holder}; waiting up to 0.3 s ($KBC_STORE_WAIT) "
                         "for it (or use another cache: KBC_CACHE=DIR, or --store DIR)")
    assert lines[-1] == (f"error: the graph store {path} is being written by {holder}, still after 0.3 s; wait for it "
                         "to finish, or give this command its own store: KBC_CACHE=DIR kbc ... (another cache) or "
                         "--store DIR")
    assert not (path / WRITER_INFO).exists()  # released with the lock


def test_a_bad_wait_setting_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_STORE_WAIT", "soon")
    with pytest.raises(KbcError, match="KBC_STORE_WAIT='soon': give the seconds"):
        GraphStore.open(tmp_path / "store")


_FILL = """
import sys, time
from pathlib import Path
from tests_support_facts import toy_facts
from kb.store import GraphStore
while not Path(sys.argv[2]).exists():
    time.sleep(0.01)
with GraphStore.open(sys.argv[1]) as store:
    print(store.ensure_facts(toy_facts(), "toy@1"), sorted(store.relations().items()))
"""


def test_processes_filling_at_once_fill_once_and_read_the_same(tmp_path):
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    procs = [subprocess.Popen([sys.executable, "-c", _FILL, str(tmp_path / "store"), str(go)], text=True, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    said = sorted(out.strip() for out, _ in outs)
    counts = "[('P131', 2), ('P47', 3), ('date_of_birth', 1)]"
    assert said == [f"False {counts}", f"False {counts}", f"True {counts}"]


def _run(lama_dir: Path, out: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bridge.cli", "run", "lama", "--corpus", "trex", "--relations",
                             "P19", "P36", "--predictors", "gold", "freq", "--limit", "20", "--data-dir", str(lama_dir),
                             "--out", str(out), "--quiet"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _records(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.jsonl"))}


@pytest.mark.heavy
def test_serve_and_two_runs_on_one_cache_at_once(lama_dir, tmp_path):
    """Real processes started together on a fresh cache: each fills or waits, none fails, all agree."""
    alone_env = {**os.environ, "KBC_CACHE": str(tmp_path / "alone-cache")}
    alone = _run(lama_dir, tmp_path / "alone", alone_env)
    assert alone.wait(300) == 0, alone.stderr.read()
    expected = _records(tmp_path / "alone")
    assert len(expected) >= 2

    env = {**os.environ, "KBC_CACHE": str(tmp_path / "cache")}
    serve = subprocess.Popen([sys.executable, "-m", "bridge.cli", "serve", "--port", "0", "--data-dir",
                              str(lama_dir), "--relations", "P36", "--predictors", "freq"], cwd=ROOT, env=env,
                             text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    runs = [_run(lama_dir, tmp_path / name, env) for name in ("a", "b")]
    try:
        for run in runs:
            assert run.wait(300) == 0, run.stderr.read()
        shown = re.match(r"open http://127\.0\.0\.1:(\d+)/ ", serve.stdout.readline())  # the port it picked
        assert shown and serve.poll() is None, serve.stderr.read()
        port = int(shown.group(1))
        deadline = time.monotonic() + 120
        while True:
            try:
                body = httpx.get(f"http://127.0.0.1:{port}/api/query", params={"subject": "France", "relation": "P36"},
                                 timeout=5).json()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and serve.poll() is None, serve.stderr.read()
                time.sleep(0.2)
        assert body["gold"] == ["Paris"]
    finally:
        serve.send_signal(signal.SIGINT)
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
            raise
    assert serve.returncode == 0, serve.stderr.read()
    for name in ("a", "b"):
        assert _records(tmp_path / name) == expected
    for proc in (serve, *runs):
        assert "Traceback" not in proc.stderr.read()
