"""Builds of one tantivy index folder, or of one Elasticsearch index name, at a time; a build that finds its index
already there keeps it (and says so); `--force` and `kbc index verify`; rebuild hints and refusals that say what
differs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from cli_support import run_kbc

from kb.text.index import build_index, open_index
from kb.text.paragraphs import Paragraph
from kb.writer_lock import command_line

ROOT = Path(__file__).resolve().parents[1]
FIRST = [Paragraph(f"A#{i}", "A", i, f"alpha text number {i}") for i in range(4)]
SECOND = [Paragraph(f"B#{i}", "B", i, f"beta text number {i}") for i in range(3)]


def _tiny_lama(src: Path, dest: Path, trex_rows: int = 12) -> Path:
    """T-REx P19 and Google-RE cut to their first rows (evidence for a small index), SQuAD and the vocabulary."""
    rows = {"TREx/P19.jsonl": trex_rows, "Squad/test.jsonl": 5, "common_vocab_cased.txt": 30_000}
    rows.update({f"Google_RE/{n}_test.jsonl": 5 for n in ("place_of_birth", "date_of_birth", "place_of_death")})
    for name, n in rows.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        with (src / name).open(encoding="utf-8") as handle:
            (dest / name).write_text("".join(line for _, line in zip(range(n), handle)), encoding="utf-8")
    relations = (src / "relations.jsonl").read_text(encoding="utf-8").splitlines()
    (dest / "relations.jsonl").write_text(next(r for r in relations if '"P19"' in r) + "\n", encoding="utf-8")
    return dest


@pytest.fixture
def tiny(lama_dir, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    return _tiny_lama(lama_dir, tmp_path / "lama")


class _Told(logging.Handler):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.event = text, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


def _live(root: Path) -> str:
    return (root / "CURRENT").read_text()


def _interleaved(build: Callable[[str, Iterable[Paragraph]], None], waiting: str) -> tuple[dict, bool]:
    """`build("first", ...)` paused after its first paragraph while `build("second", SECOND)` starts in another
    thread: the errors each raised, and whether the second logged `waiting` (it waited for the first)."""
    started, go = threading.Event(), threading.Event()

    def slow():
        yield FIRST[0]
        started.set()
        assert go.wait(120), "the second build was not seen to wait"  # a deadlock guard, failing the first build
        yield from FIRST[1:]

    errors: dict[str, BaseException] = {}

    def run(label: str, paragraphs) -> None:
        try:
            build(label, paragraphs)
        except BaseException as exc:  # noqa: BLE001 - the thread's failure is the test's finding
            errors[label] = exc

    told = _Told(waiting)
    logger = logging.getLogger("kbc")
    logger.addHandler(told)
    try:
        first = threading.Thread(target=run, args=("first", slow()))
        first.start()
        assert started.wait(60)
        second = threading.Thread(target=run, args=("second", SECOND))
        second.start()
        deadline = time.monotonic() + 60  # a deadlock guard: the second build waits or ends well before
        while second.is_alive() and not told.event.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        go.set()
        first.join(120)
        second.join(120)
        assert not first.is_alive() and not second.is_alive(), "a build did not end"
    finally:
        logger.removeHandler(told)
    return errors, told.event.is_set()


def _build_behind(lock, argv: list[str], cache: Path, publish: Callable[[], None]) -> tuple[str, int, str, str]:
    """`kbc index build ARGV` in a real process while this one holds the build `lock`; once it says it waits, the
    other build's index is published (`publish`) and the lock let go: its waiting line, exit status, stdout, stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "bridge.cli", "index", "build", *argv, "--quiet"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KBC_CACHE": str(cache)})
    try:
        waiting = proc.stderr.readline()  # written once the build found the lock held
        publish()
        lock.release()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return waiting.rstrip("\n"), proc.returncode, out, err


def test_a_second_build_waits_for_the_first_instead_of_deleting_its_work(tmp_path):
    """Forced interleaving: the second build starts while the first is mid-way. Unserialised, the second one
    published, then deleted every other generation folder, the first one's unfinished folder included, and the
    first died at its commit (tantivy: 'No such file or directory')."""
    root = tmp_path / "idx"
    errors, waited = _interleaved(
        lambda label, paragraphs: build_index(paragraphs, "tantivy", root,
                                              meta={"source": f"jsonl:{label}.jsonl"}).close(),
        f"the text index {root} is being built by process {os.getpid()}")
    assert errors == {}
    assert waited  # the second one waited for the first
    with open_index("tantivy", root) as idx:  # the second build ran after the first, and is the live one
        assert (idx.meta["source"], len(idx)) == ("jsonl:second.jsonl", 3)
    assert sorted(p.name for p in root.iterdir()) == sorted(["CURRENT", _live(root), "build.lock", "kbc-readers.lock"])


def test_a_waiting_lama_build_uses_the_index_the_other_process_built(tiny, tmp_path):
    """Two real processes: this one holds the folder's build lock while `kbc index build` starts; it waits, and
    then finds the index of the same data (published meanwhile) and keeps it instead of building again."""
    from kb.text.evidence import evidence_index
    from kb.text.tantivy_index import writer_lock

    root = tmp_path / "idx"
    aside = evidence_index(tmp_path / "aside", tiny)  # what the other build makes
    aside.close()
    root.mkdir()
    lock = writer_lock(root)
    lock.acquire()
    since = json.loads((root / "build.json").read_text())["since"]
    generation = _live(tmp_path / "aside")

    def publish() -> None:
        os.rename(tmp_path / "aside" / generation, root / generation)
        (root / "CURRENT").write_text(generation)

    waiting, code, out, err = _build_behind(lock, ["--data-dir", str(tiny), "--out", str(root)], tmp_path / "cache",
                                            publish)
    command = command_line()
    assert waiting == (
        f"the text index {root} is being built by process {os.getpid()} (`{command}`, since {since}); waiting up "
        "to 1800 s ($KBC_STORE_WAIT) for it (or use another index folder, or another cache: KBC_CACHE=DIR)")
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"index: 32 paragraphs in {root} (tantivy), already built from this data, kept as "
                                "it is (--force rebuilds it)"]
    assert _live(root) == generation  # not built again


def _set_byte_keeping_time(path: Path) -> None:
    """One byte flipped in place: the file is never truncated (an index this process opened maps it)."""
    st = path.stat()
    with path.open("r+b") as handle:
        handle.seek(st.st_size // 2)
        byte = handle.read(1)[0]
        handle.seek(st.st_size // 2)
        handle.write(bytes([byte ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_build_says_whether_it_built_and_force_and_verify_catch_unseen_damage(tiny, tmp_path, capsys):
    root = tmp_path / "idx"
    build = ["index", "build", "--data-dir", str(tiny), "--out", str(root), "--quiet"]
    code, out, _ = run_kbc(build, capsys)
    assert code == 0
    assert out.splitlines() == ["LAMA evidences: 27 pages, 32 paragraphs; skipped nothing",
                                f"index: 32 paragraphs in {root} (tantivy), built"]
    first = _live(root)
    kept = (f"index: 32 paragraphs in {root} (tantivy), already built from this data, kept as it is "
            "(--force rebuilds it)")
    code, out, _ = run_kbc(build, capsys)
    assert (code, out.splitlines(), _live(root)) == (0, [kept], first)
    store = next((root / first).glob("*.store"))
    _set_byte_keeping_time(store)  # same size and time: an open does not hash it again
    code, out, _ = run_kbc(build, capsys)
    assert (code, out.splitlines(), _live(root)) == (0, [kept], first)
    code, _, err = run_kbc(["index", "verify", "--index", str(root)], capsys)
    assert (code, err) == (2, f"error: {root}: the text index is damaged (its file {store.name} differs from the one "
                              "it was built with: SHA-256 mismatch); rebuild it with `kbc index build --force "
                              f"--data-dir {tiny} --out {root}`\n")
    code, out, _ = run_kbc([*build, "--force"], capsys)
    assert code == 0 and out.splitlines()[-1] == f"index: 32 paragraphs in {root} (tantivy), built"
    assert _live(root) != first
    assert sorted(p.name for p in root.iterdir()) == sorted(["CURRENT", _live(root), "build.lock", "kbc-readers.lock"])
    files = len(json.loads((root / _live(root) / "kbc-meta.json").read_text())["files"])
    code, out, _ = run_kbc(["index", "verify", "--index", str(root)], capsys)
    assert (code, out) == (0, f"index {root}: all {files} files match the SHA-256 digests recorded when it was built\n")


def test_a_rebuild_over_other_data_is_said_even_under_quiet(tiny, lama_dir, tmp_path, capsys):
    other = _tiny_lama(lama_dir, tmp_path / "other", trex_rows=11)
    root = tmp_path / "idx"
    assert run_kbc(["index", "build", "--data-dir", str(tiny), "--out", str(root), "--quiet"], capsys)[0] == 0
    code, out, err = run_kbc(["-q", "index", "build", "--data-dir", str(other), "--out", str(root), "--quiet"], capsys)
    assert code == 0 and out.splitlines()[-1] == f"index: 30 paragraphs in {root} (tantivy), built"
    assert err == (f"the LAMA evidence index {root} was built from other trex data ({tiny}); rebuilding it from "
                   f"{other}\n")


def test_a_file_named_as_an_index_says_how_to_index_it(tmp_path, capsys):
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "alpha"}) + "\n")
    code, _, err = run_kbc(["index", "stats", "--index", str(src)], capsys)
    assert (code, err) == (2, f"error: {src} is a file, not a text index (a folder); to search the paragraphs it "
                              f"holds, index them first with `kbc index build --source jsonl --input {src} --out DIR` "
                              "and name that DIR instead\n")


def test_another_index_than_the_default_is_refused_in_words(tiny, tmp_path, capsys):
    from kb.text.evidence import evidence_index

    root = tmp_path / "idx"
    with evidence_index(root, tiny) as idx:
        digest = idx.fingerprint()[:16]
    run = ["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3", "--predictors", "retrieval",
           "--data-dir", str(tiny), "--out", str(tmp_path / "run"), "--quiet"]
    assert run_kbc(run, capsys)[0] == 0
    code, _, err = run_kbc([*run, "--set", f"retrieval.text_index={root}"], capsys)
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: {tmp_path / 'run'}: predictor 'retrieval' was run there on text_index its default (the LAMA "
        f"evidence index in the cache), now {root} (content sha256:{digest}) (what the default held then was not "
        "recorded, so whether both hold the same cannot be known); give it another name (NAME=SPEC) or use another "
        "--out"))


def test_a_build_waits_a_bounded_time_and_names_the_build_it_waited_for(tmp_path, capsys, monkeypatch):
    from kb.text.tantivy_index import writer_lock

    monkeypatch.setenv("KBC_STORE_WAIT", "0.3")
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "alpha"}) + "\n")
    root = tmp_path / "idx"
    root.mkdir()
    lock = writer_lock(root)
    lock.acquire()
    try:
        since = json.loads((root / "build.json").read_text())["since"]
        code, _, err = run_kbc(["index", "build", "--source", "jsonl", "--input", str(src), "--out", str(root),
                                "--quiet"], capsys)
    finally:
        lock.release()
    holder = f"process {os.getpid()} (`{command_line()}`, since {since}), in another thread of this process"
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: the text index {root} is being built by {holder}, still after 0.3 s; wait for it to finish, or use "
        "another index folder, or another cache: KBC_CACHE=DIR kbc ..."))
    assert sorted(p.name for p in root.iterdir()) == ["build.lock"]  # nothing of its own left behind


def test_two_elasticsearch_builds_of_one_alias_run_one_at_a_time(emulator_url, tmp_path, monkeypatch):
    """Forced interleaving, as for tantivy: the second build starts while the first is mid-way. Unserialised, the
    second one built and swapped the alias, then the first one swapped it back and deleted the second's index."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    name = "kbc-two-builds"
    errors, waited = _interleaved(
        lambda label, paragraphs: build_index(paragraphs, "elasticsearch", name, emulator_url,
                                              meta={"source": f"jsonl:{label}.jsonl"}).close(),
        f"the text index {emulator_url}/{name} is being built by process {os.getpid()}")
    assert errors == {}
    assert waited  # the second one waited for the first
    with open_index("elasticsearch", name, emulator_url) as idx:  # the second build ran after the first
        assert (idx.meta["source"], len(idx)) == ("jsonl:second.jsonl", 3)
    assert list((tmp_path / "cache" / "index" / "elasticsearch-builds").iterdir()) == []  # no lock file kept


def test_a_waiting_elasticsearch_lama_build_keeps_the_index_the_other_process_built(emulator_url, tiny, tmp_path):
    """Two real processes: this one holds the alias's build lock while `kbc index build --backend elasticsearch`
    starts; it waits, then finds the index of the same data (swapped in meanwhile) and keeps it, as tantivy does."""
    from elasticsearch import Elasticsearch

    from kb.text.es_index import build_lock
    from kb.text.evidence import evidence_index

    name = "kbc-lama-waits"
    with evidence_index("kbc-lama-aside", tiny, "elasticsearch", emulator_url) as aside:  # what the other build makes
        concrete = aside.concrete
    lock = build_lock(emulator_url, name)
    lock.acquire()
    since = json.loads(lock.info.read_text())["since"]

    def publish() -> None:
        es = Elasticsearch(emulator_url)
        es.indices.update_aliases(actions=[{"add": {"index": concrete, "alias": name}}])
        es.close()

    waiting, code, out, err = _build_behind(lock, ["--backend", "elasticsearch", "--es-url", emulator_url,
                                                   "--data-dir", str(tiny), "--out", name], tmp_path / "cache",
                                            publish)
    command = command_line()
    assert waiting == (
        f"the text index {emulator_url}/{name} is being built by process {os.getpid()} (`{command}`, since {since}); "
        "waiting up to 1800 s ($KBC_STORE_WAIT) for it (or use another index name)")
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"index: 32 paragraphs in {emulator_url}/{name} (elasticsearch), already built from "
                                "this data, kept as it is (--force rebuilds it)"]
    with open_index("elasticsearch", name, emulator_url) as idx:
        assert idx.concrete == concrete  # not built again


def test_an_elasticsearch_build_in_a_cache_it_cannot_write_is_one_error_line(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("a file, not a folder")
    monkeypatch.setenv("KBC_CACHE", str(cache))
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "alpha"}) + "\n")
    code, _, err = run_kbc(["index", "build", "--backend", "elasticsearch", "--es-url", "http://127.0.0.1:9",
                            "--source", "jsonl", "--input", str(src), "--out", "kbc-x", "--quiet"], capsys)
    assert (code, err.splitlines()[-1]) == (2, (
        f"error: cannot create {cache / 'index' / 'elasticsearch-builds'} (the lock of Elasticsearch index builds): "
        "Not a directory; point KBC_CACHE at a writable directory"))
