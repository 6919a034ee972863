"""Shared fixtures. Tests that need the LAMA data read it from $KBC_DATA.

Without KBC_DATA they skip with a visible reason; with KBC_DATA set (as `.ci/run` does) a
missing or broken data directory is an error, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _share_the_cores() -> None:
    """Under `-n N` each worker (and each `kbc` it starts) takes its share of the cores for its math threads: N
    processes each running a thread per core oversubscribe the machine, and a 2-core run spends a fifth of its
    time waiting. A test about thread counts sets its own (`record_compare.actor_threads`, `test_batches`)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if not workers or "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, len(os.sched_getaffinity(0)) // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import sys

    if "torch" in sys.modules:  # started before this file: set in place
        sys.modules["torch"].set_num_threads(threads)


_share_the_cores()


@pytest.fixture(scope="session")
def lama_dir() -> Path:
    value = os.environ.get("KBC_DATA")
    if not value:
        pytest.skip("needs the LAMA data: set KBC_DATA (e.g. KBC_DATA=../shared/data/lama)")
    from eval.datadir import resolve_data_dir

    return resolve_data_dir(value)  # raises (fails the test) when KBC_DATA is set but wrong


@pytest.fixture(scope="session")
def shared_data(lama_dir: Path) -> Path:
    """The folder holding lama/, tokenizers/, wikipedia/ ... (the parent of the LAMA dir)."""
    return lama_dir.parent


@pytest.fixture(scope="session")
def trex(lama_dir):
    from eval.lama import load_trex

    return load_trex(lama_dir)


@pytest.fixture(scope="session")
def google_re(lama_dir):
    from eval.lama import load_google_re

    return load_google_re(lama_dir)


@pytest.fixture(scope="session")
def emulator_url(tmp_path_factory):
    """The URL of one noida-db Elasticsearch-API emulator per test process (`es_emulator`)."""
    from es_emulator import emulator

    with emulator(tmp_path_factory.mktemp("noida")) as url:
        yield url


@pytest.fixture(scope="session")
def wiki_sample(shared_data):
    """(paragraphs, ingest report) of the whole Wikipedia sample dump: parsing its markup takes seconds, so the
    modules that read it share one parse (and one worker, `SHARED_SET_UP`); a tuple, so that none changes it."""
    from kb.text.paragraphs import IngestReport, read_dump

    report = IngestReport("sample")
    return tuple(read_dump(shared_data / "wikipedia" / "enwiki-sample-206-pages.xml.bz2", report)), report


@pytest.fixture(scope="session", autouse=True)
def _built_once_per_run(tmp_path_factory) -> None:
    """The entity tests' artefacts are built once per run, not once per worker process: under `-n` the
    workers' temporary folders share a parent, which pytest removes with its old runs."""
    import test_entities_support

    base = tmp_path_factory.getbasetemp()
    test_entities_support.share_builds_in(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)


def pytest_configure(config) -> None:
    """One cache root (`KBC_CACHE`: snapshots, graph stores, LM results) for the whole run, new and removed after it,
    shared by the `-n` workers and every `kbc` they start (they inherit it). Without it the suite would read and fill
    the user's own `~/.cache/kbcompare` (or their KBC_CACHE): a test's output would depend on what earlier runs or
    versions left there, and the suite would write into a folder it does not own. A test about the cache sets its own.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker: the controller has set it
        return
    import tempfile

    os.environ["KBC_CACHE"] = config._kbc_cache = tempfile.mkdtemp(prefix="kbc-test-cache-")


def pytest_unconfigure(config) -> None:
    folder = getattr(config, "_kbc_cache", None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def pytest_sessionfinish(session, exitstatus):
    """With KBC_DATA set, a skipped data test is a failure (CI must run them all)."""
    if not os.environ.get("KBC_DATA"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    data_skips = [r for r in skipped if "KBC_DATA" in str(r.longrepr)]
    if data_skips:
        reporter.write_line(f"error: {len(data_skips)} data test(s) skipped although KBC_DATA is set")
        session.exitstatus = 1


# modules whose module-scoped fixtures take seconds to set up (a model and embeddings loaded, an index or a run
# built): under `-n` each is kept whole on one worker, so that they are set up once, not once per worker
SET_UP_ONCE = ("test_api", "test_causal_prefix", "test_entities_answers", "test_fewrel_run",
               "test_leaderboard_left_out", "test_leaderboard_shared", "test_metric_aliases", "test_negated_views",
               "test_ray_executor", "test_reasoning", "test_report", "test_report_generated", "test_serve_generated",
               "test_serve_inferred", "test_served_real", "test_shared_scope", "test_text_retrieval")

# modules that share a session fixture costly to set up: under `-n` each group is kept whole on one worker, so that
# the fixture is set up once per run, not once on each worker that happens to get one of their tests
SHARED_SET_UP = {
    "small_run": ("test_analyze_correlation", "test_analyze_errors", "test_analyze_evidence", "test_analyze_stats",
                  "test_input_checks"),  # analyze_support.small_run: an index, a tiny BERT and a run of three
    "served": ("test_serve_api", "test_serve_browser", "test_serve_fit", "test_serve_isolation",
               "test_serve_other_data", "test_serve_prompts"),  # serve_support's explorer, run and app
    "wiki_sample": ("test_text_contract", "test_text_cooccur", "test_text_paragraphs"),  # the sample dump parsed
}
_GROUP = {module: group for group, modules in SHARED_SET_UP.items() for module in modules}


def pytest_collection_modifyitems(session, config, items):
    """Heavy end-to-end runs first: with `-n` they start at once beside the many quick tests instead of
    lengthening the tail of the run."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` hands out tests one by one in their order, as `--dist load` does, but each module of `SET_UP_ONCE` and
    each group of `SHARED_SET_UP` whole (those first, the largest first: `LoadScopeScheduling`)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            stem = Path(module).stem
            if stem in _GROUP:
                return _GROUP[stem]
            return module if stem in SET_UP_ONCE else nodeid

    return Scheduling(config, log)


@pytest.fixture
def pipe_writer():
    """Opens each named pipe it is given for writing (waiting for a reader) and closes it at once; released at the
    end. For tests that a reader never opens a pipe put where a file belongs: one that did would read it empty
    instead of hanging the test. The set it returns names each pipe a reader opened."""
    pipes: list[Path] = []
    threads: list[threading.Thread] = []
    opened: set[Path] = set()

    def write(path: Path) -> None:
        fd = os.open(path, os.O_WRONLY)
        opened.add(path)
        os.close(fd)

    def start(path: Path) -> set[Path]:
        pipes.append(path)
        thread = threading.Thread(target=write, args=(path,), daemon=True)
        thread.start()
        threads.append(thread)
        return opened

    yield start
    for path, thread in zip(pipes, threads):
        if thread.is_alive():  # nobody opened the pipe: a reader that gives up at once lets the writer finish
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a read end open until the writer's open got through
            try:
                thread.join()
            finally:
                os.close(fd)
        thread.join()
