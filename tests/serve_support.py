"""Session fixtures of the explorer tests: one explorer (gold KB, Freq, a tiny BERT) and one real run.

The explorer asks T-REx P19 and P36 (two relations keep start-up short); the run is a real
`kbc run lama` of Freq, the gold KB and the same tiny BERT over a sample of the same relations.
Test modules import these fixtures by name; pytest registers them once per module, so what is
costly is built once per session here (`_once`) and shared by every module that asks.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import lm_fixtures
import pytest

RELATIONS = ["P19", "P36"]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
_BUILT: dict[str, object] = {}


def _once(request, key: str, make: Callable[[], object], close: Callable[[object], None] | None = None):
    if key not in _BUILT:
        _BUILT[key] = make()
        if close is not None:
            request.session.addfinalizer(lambda: close(_BUILT.pop(key)))
    return _BUILT[key]


def _tiny_bert(request) -> str:
    def make():
        return str(lm_fixtures.tiny_model_dir("bert-cased", request.getfixturevalue("tmp_path_factory").mktemp("tb")))

    return _once(request, "tiny-bert", make)



def holding_batcher(explorer, answer_many: Callable[[list], list], total: int):
    """A `Batcher` whose first batch is answered only once the rest of `total` asks wait behind it, so that they
    come as one batch however slowly the asking threads start. Past a generous deadline (a deadlock guard) every
    ask fails the test."""
    from bridge.serve.batching import Batcher

    first: list[int] = []

    def held(items: list) -> list:
        if not first:
            first.append(len(items))
            deadline = time.monotonic() + 60
            while True:
                with batcher._lock:
                    if len(batcher._pending) + len(items) >= total:
                        break
                if time.monotonic() > deadline:
                    pytest.fail(f"only {len(batcher._pending) + len(items)} of {total} asks came")
                time.sleep(0.005)
        return answer_many(items)

    batcher = Batcher(explorer, held)
    return batcher


def assert_same_answers_in_any_batch(got: list[dict], alone: list[dict], where: str) -> None:
    """A column's answers to a query asked in a batch and alone: the same labels, ids and marks, the scores equal
    up to float32's reduction order (`record_compare`). A batch's matrix products group their sums by its shape,
    and how depends on the CPU: here one row alone and two rows together already differ in their last bits."""
    from record_compare import assert_same_answers, assert_same_record

    def rows(answers: list[dict]) -> list[list]:
        return [[a["label"], a["score"], a["id"]] for a in answers]

    assert_same_answers(rows(got), rows(alone), where)
    mine = {a["label"]: a for a in alone}
    for a in got:
        if a["label"] in mine:  # else one of a near-tie at the cut, which `assert_same_answers` allowed
            assert_same_record({k: v for k, v in a.items() if k != "score"},
                               {k: v for k, v in mine[a["label"]].items() if k != "score"}, f"{where}: {a['label']}")


@pytest.fixture(scope="session")
def serve_explorer(request, lama_dir, tmp_path_factory):
    from bridge.serve.explorer import Explorer, ExplorerConfig

    def make():
        cfg = ExplorerConfig(data_dir=str(lama_dir), relations=RELATIONS, coherency="freq",
                             cache_dir=tmp_path_factory.mktemp("serve-cache"),
                             predictors=["freq", f"bert={_tiny_bert(request)}"])
        return Explorer.start(cfg)

    return _once(request, "explorer", make, lambda e: e.close())


@pytest.fixture(scope="session")
def serve_run(request, lama_dir, tmp_path_factory):
    """A real run, in its own cache."""
    from bridge.run.runner import RunConfig, run_lama

    def make():
        root = tmp_path_factory.mktemp("serve-run")
        out = root / "lama-small"
        cfg = RunConfig(corpora=["trex"], predictors=["freq", "gold", f"bert={_tiny_bert(request)}"], out=out,
                        data_dir=str(lama_dir), relations=RELATIONS, limit=60, cache_dir=root / "cache")
        run_lama(cfg, progress=False)
        return out

    return _once(request, "run", make)


@pytest.fixture(scope="session")
def serve_app(serve_explorer, serve_run):
    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    return create_app(serve_explorer, Runs([serve_run]))


@pytest.fixture(scope="session")
def client(serve_app):
    from fastapi.testclient import TestClient

    with TestClient(serve_app) as c:
        yield c


def seal(out) -> None:
    """Finish a run directory a test wrote by hand as `kbc run` leaves one: every summary output present and the
    record of what they were scored from (`bridge.run.freshness`), so the explorer reads it."""
    import json

    from bridge.run.freshness import OUTPUTS, files_digest, inputs_digest, write_stamp

    for name in OUTPUTS:
        if not (out / name).exists():
            (out / name).write_text("[]")
    config = json.loads((out / "config.json").read_text())
    files = files_digest(out)
    write_stamp(out, inputs_digest(config, ("raw", None, None), files), files)


@contextmanager
def served(app) -> Iterator[str]:
    """`app` served by uvicorn on a free local port for the block; yields its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium driven by Playwright; a missing browser fails the test, never skips it."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium and chromium-driver "
                    "(apt-get install -y chromium chromium-driver)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()
