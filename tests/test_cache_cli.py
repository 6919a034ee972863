"""`kbc cache info|prune|clear`: exact sizes, only what can never be used again pruned, whole kinds cleared on
request, nothing removed under another kbc's feet, nothing that is not kbc's touched, no link followed, and a run
after a clear gives the same results."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import time
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc

from eval import file_digests, lama
from eval.corpora import load_corpus
from eval.snapshot import forget_recent, snapshot_path

tiny_models = lm_fixtures.tiny_models

RELATIONS = [{"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth", "type": "N-1"}]
P19 = [{"uuid": "u1", "sub_label": "Ada", "sub_uri": "Q1", "obj_label": "Paris", "obj_uri": "Q90"}]
HOUR_AGO = time.time() - 3600


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("KBC_CACHE", str(root))
    return root


def _data(folder: Path) -> Path:
    (folder / "TREx").mkdir(parents=True)
    (folder / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RELATIONS), encoding="utf-8")
    (folder / "TREx" / "P19.jsonl").write_text("".join(json.dumps(r) + "\n" for r in P19), encoding="utf-8")
    return folder


def _file(path: Path, size: int, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _answer(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))


# -- info --------------------------------------------------------------------------------------
def test_info_gives_each_kind_its_exact_size_and_files_and_names_what_is_not_kbcs(cache, tmp_path, capsys):
    _file(cache / "snapshots" / "trex-0123456789abcdef.json", 1500)
    _file(cache / "snapshots" / "google_re-0123456789abcdef.json", 250)
    _file(cache / "digests" / ("a" * 32 + ".json"), 300)
    _file(cache / "uhn" / "0123456789abcdef" / "TREx" / "P19.jsonl", 2_000_000)
    _file(cache / "notes.txt", 7)
    outside = _file(tmp_path / "outside" / "big.bin", 5_000_000)
    (cache / "entities").mkdir()
    (cache / "entities" / "map-link.npz").symlink_to(outside)
    code, out, err = run_kbc(["cache", "info", "--json"], capsys)
    assert code == 0, err
    shown = json.loads(out)
    assert shown["root"] == str(cache) and shown["source"] == "from KBC_CACHE"
    sizes = {k: (v["bytes"], v["files"]) for k, v in shown["kinds"].items()}
    assert sizes == {"store": (0, 0), "lm": (0, 0), "index": (0, 0), "entities": (0, 0), "re": (0, 0),
                     "snapshots": (1750, 2), "digests": (300, 1), "uhn": (2_000_000, 1), "matplotlib": (0, 0)}
    assert shown["total"] == {"bytes": 2_002_050, "files": 4}
    assert shown["not_kbc"] == [str(cache / "notes.txt")]
    assert shown["links"] == [str(cache / "entities" / "map-link.npz")]
    code, out, _ = run_kbc(["cache"], capsys)  # alone: info, as text
    lines = out.splitlines()
    assert lines[0] == f"cache: {cache} (from KBC_CACHE)"
    assert "snapshots      1750 B        2  parsed corpora" not in out  # sizes are human-readable
    assert any(line.split()[:3] == ["snapshots", "2", "kB"] and line.split()[3] == "2" for line in lines)
    assert any(line.split()[:3] == ["uhn", "2.0", "MB"] for line in lines)
    assert any(line.split()[:4] == ["total", "2.0", "MB", "4"] for line in lines)
    assert f"left alone: {cache / 'notes.txt'} (not kbc's: never removed)" in lines


def test_info_says_where_the_default_cache_is_and_that_it_is_not_made_yet(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KBC_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, _ = run_kbc(["cache", "info"], capsys)
    assert code == 0
    assert out.splitlines()[0] == (f"cache: {tmp_path / '.cache' / 'kbcompare'} (the default; KBC_CACHE is not "
                                   "set); not made yet: nothing is cached")
    assert not (tmp_path / ".cache").exists()


def test_a_cache_that_is_a_file_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(_file(tmp_path / "file", 1)))
    code, _, err = run_kbc(["cache", "prune"], capsys)
    assert code == 2 and err == f"error: the cache {tmp_path / 'file'} is a file; point KBC_CACHE at a directory\n"


# -- prune -------------------------------------------------------------------------------------
def test_prune_removes_the_snapshot_of_data_gone_and_keeps_the_live_one_which_is_still_read(
        cache, tmp_path, monkeypatch, capsys):
    live, gone = _data(tmp_path / "live"), _data(tmp_path / "gone")
    load_corpus("trex", live)
    load_corpus("trex", gone)
    kept, dead = snapshot_path("trex", live.resolve(), {}), snapshot_path("trex", gone.resolve(), {})
    assert kept.is_file() and dead.is_file()
    shutil.rmtree(gone)
    code, out, err = run_kbc(["cache", "prune", "--dry-run"], capsys)
    assert code == 0, err
    assert f"would remove snapshots/{dead.name} (" in out and kept.name not in out
    assert dead.is_file()  # a dry run removes nothing
    code, out, err = run_kbc(["cache", "prune"], capsys)
    assert code == 0, err
    size = dead.stat().st_size if dead.exists() else None
    assert size is None and kept.is_file()
    assert f"removed snapshots/{dead.name} (" in out
    assert f"its data file {gone.resolve() / 'TREx' / 'P19.jsonl'} is gone" in out
    assert out.splitlines()[-1].startswith("freed ")

    def refuse(*args, **kwargs):
        raise AssertionError("parsed again")

    forget_recent()
    monkeypatch.setitem(lama.LOADERS, "trex", refuse)
    assert [f.uid for f in load_corpus("trex", live).facts] == ["u1"]  # read from the snapshot kept


def test_prune_removes_a_snapshot_whose_data_changed_or_of_an_earlier_version(cache, tmp_path, capsys):
    data = _data(tmp_path / "lama")
    load_corpus("trex", data)
    path = snapshot_path("trex", data.resolve(), {})
    old = _file(cache / "snapshots" / "trex-00000000000000aa.json", 0)
    old.write_text(json.dumps({"schema": 2, "sources": []}) + "\n{}\n")
    later = cache / "snapshots" / "trex-00000000000000bb.json"  # a later kbc's: it may read it
    later.write_text(json.dumps({"schema": 999, "sources": []}) + "\n{}\n")
    with (data / "TREx" / "P19.jsonl").open("a") as handle:
        handle.write("\n")
    code, out, _ = run_kbc(["cache", "prune"], capsys)
    assert code == 0
    assert not path.exists() and not old.exists() and later.exists()
    assert f"its data file {data.resolve() / 'TREx' / 'P19.jsonl'} changed" in out
    assert "written by an earlier kbc version (schema 2, now" in out


def test_prune_removes_digests_of_files_gone_and_keeps_the_others(cache, tmp_path, capsys):
    here, gone = _file(tmp_path / "here.bin", 10), _file(tmp_path / "gone.bin", 10)
    for path in (here, gone):
        file_digests._remember(file_digests._key(path, os.stat(path)), "ab" * 32)
    gone.unlink()
    code, out, _ = run_kbc(["cache", "prune"], capsys)
    assert code == 0
    assert len(list((cache / "digests").iterdir())) == 1
    assert f"its file {gone.resolve()} is gone" in out and "digests: removed 1 entry, " in out
    file_digests._MEMO.clear()
    assert file_digests._recall(file_digests._key(here, os.stat(here))) == "ab" * 32


def test_prune_removes_stale_temporary_files_of_kbc_only(cache, tmp_path, capsys):
    stale = _file(cache / "snapshots" / ".trex-0123456789abcdef.json.4242.tmp", 100, HOUR_AGO)
    fresh = _file(cache / "snapshots" / ".trex-0123456789abcdef.json.4243.tmp", 100)
    entity = _file(cache / "entities" / "map-0123456789abcdef.npz.tmp.npz", 100, HOUR_AGO)
    uhn = cache / "uhn" / ".0123456789abcdef.tmp-deadbeef"
    _file(uhn / "TREx" / "P19.jsonl", 100, HOUR_AGO)
    os.utime(uhn / "TREx", (HOUR_AGO, HOUR_AGO))
    os.utime(uhn, (HOUR_AGO, HOUR_AGO))
    building = cache / "uhn" / ".0123456789abcdef.tmp-cafecafe"  # a build still writing into it
    _file(building / "TREx" / "P19.jsonl", 100)
    os.utime(building, (HOUR_AGO, HOUR_AGO))
    mine = _file(cache / "snapshots" / "notes.txt", 5, HOUR_AGO)
    other = _file(cache / "other" / "f.txt", 5)  # a folder of the cache that is no kind's
    code, out, _ = run_kbc(["cache", "prune"], capsys)
    assert code == 0
    assert not stale.exists() and not entity.exists() and not uhn.exists()
    assert fresh.exists() and building.exists() and mine.exists() and other.exists()
    assert "a killed writer's temporary file, untouched for 1 hour\n" in out
    assert f"left alone: {mine} (not kbc's: never removed)" in out
    assert f"left alone: {other.parent} (not kbc's: never removed)" in out


def test_prune_follows_no_link(cache, tmp_path, capsys):
    outside = tmp_path / "outside"
    dead = _file(outside / "trex-00000000000000aa.json", 0)
    dead.write_text(json.dumps({"schema": 2, "sources": []}) + "\n{}\n")
    tmp_dir = outside / "build"
    _file(tmp_dir / "P19.jsonl", 10, HOUR_AGO)
    os.utime(tmp_dir, (HOUR_AGO, HOUR_AGO))
    (cache / "snapshots").mkdir(parents=True)
    (cache / "snapshots" / dead.name).symlink_to(dead)
    (cache / "uhn").mkdir()
    (cache / "uhn" / ".0123456789abcdef.tmp-deadbeef").symlink_to(tmp_dir)
    (cache / "digests").symlink_to(outside)
    code, out, _ = run_kbc(["cache", "prune"], capsys)
    assert code == 0 and out == (f"left alone: {cache / 'snapshots' / dead.name} (a link: never followed nor "
                                 f"removed)\nleft alone: {cache / 'digests'} (a link: never followed nor removed)\n"
                                 f"nothing to remove in {cache}\n")
    assert dead.read_text().startswith('{"schema": 2') and (tmp_dir / "P19.jsonl").is_file()
    assert (cache / "snapshots" / dead.name).is_symlink()


# -- clear -------------------------------------------------------------------------------------
def _filled(cache: Path) -> None:
    _file(cache / "snapshots" / "trex-0123456789abcdef.json", 1000)
    _file(cache / "digests" / ("a" * 32 + ".json"), 300)
    _file(cache / "lm" / "served_first_answers" / ("b" * 64 + ".json"), 20)
    _file(cache / "notes.txt", 7)


def test_clear_asks_first_and_removes_nothing_when_told_no(cache, monkeypatch, capsys):
    _filled(cache)
    _answer(monkeypatch, "n\n")
    code, out, err = run_kbc(["cache", "clear"], capsys)
    assert code == 0 and out == "nothing removed\n"
    assert f"remove 2 files (1 kB) of every kind from {cache}? [y/N]" in err  # a served run's first answer stays
    assert (cache / "snapshots" / "trex-0123456789abcdef.json").is_file()
    _answer(monkeypatch, "")  # no answer (not a terminal): refused, not taken for yes
    code, out, err = run_kbc(["cache", "clear"], capsys)
    assert code == 2 and err.splitlines()[-1] == ("error: kbc cache clear asks before removing, and got no answer; "
                                                  "nothing removed: pass --yes to clear without asking")
    assert (cache / "snapshots" / "trex-0123456789abcdef.json").is_file()


def test_clear_removes_the_kinds_asked_and_never_what_is_not_kbcs(cache, monkeypatch, capsys):
    _filled(cache)
    _answer(monkeypatch, "y\n")
    code, out, _ = run_kbc(["cache", "clear", "snapshots"], capsys)
    assert code == 0
    assert out.splitlines() == ["snapshots: removed 1 file (1 kB)", f"freed 1 kB in {cache}"]
    assert not any((cache / "snapshots").iterdir()) and (cache / "digests").is_dir()
    code, out, _ = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 0
    assert f"left alone: {cache / 'notes.txt'} (not kbc's: never removed)" in out
    assert sorted(p.name for p in cache.rglob("*") if not p.is_dir()) == ["b" * 64 + ".json", "notes.txt"]
    code, _, err = run_kbc(["cache", "clear", "snapshot", "--yes"], capsys)
    assert code == 2 and "(did you mean 'snapshots'?)" in err


def test_clear_follows_no_link(cache, tmp_path, capsys):
    outside = _file(tmp_path / "outside" / "kept.json", 10)
    _file(cache / "snapshots" / "trex-0123456789abcdef.json", 10)
    (cache / "snapshots" / "link.json").symlink_to(outside)
    (cache / "digests").symlink_to(outside.parent)
    code, out, _ = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 0
    assert outside.is_file() and (cache / "snapshots" / "link.json").is_symlink()
    assert f"left alone: {cache / 'digests'} (a link: never followed nor removed)" in out
    assert f"left alone: {cache / 'snapshots' / 'link.json'} (a link: never followed nor removed)" in out


def test_clear_is_refused_while_another_kbc_writes_the_store(cache, capsys):
    from kb.store_disk import StoreFolder, store_alone  # noqa: F401
    from kb.writer_lock import WriterLock

    store = cache / "store"
    StoreFolder(store).close()
    _filled(cache)
    lock = WriterLock(store / "writer.lock", store / "writer.json", "", "", "", 0)
    lock.acquire()
    try:
        code, _, err = run_kbc(["cache", "clear", "--yes"], capsys)
    finally:
        lock.release()
    assert code == 2
    assert err.startswith(f"error: the graph store {store} is being written by process {os.getpid()} (`")
    assert len(err.splitlines()) == 1
    assert (cache / "snapshots" / "trex-0123456789abcdef.json").is_file()  # nothing removed, of any kind


def test_clear_is_refused_while_another_kbc_reads_the_store(cache, capsys):
    from kb.store_disk import StoreFolder

    store = cache / "store"
    _store_with_one_graph(store)
    reader = StoreFolder(store)
    try:
        code, _, err = run_kbc(["cache", "clear", "store", "--yes"], capsys)
    finally:
        reader.close()
    assert code == 2 and err.startswith(f"error: the graph store {store} is being read by process {os.getpid()}")
    assert err.endswith("; nothing removed: clear again once it ends\n") and len(err.splitlines()) == 1, err
    assert (store / "LIVE").is_file()
    code, out, _ = run_kbc(["cache", "clear", "store", "--yes"], capsys)
    assert code == 0 and not any(store.iterdir())
    again = StoreFolder(store)  # an empty store, as a new one
    assert len(again.current()) == 0
    again.close()


@pytest.mark.parametrize("kind", ["results", "responses"])
def test_clear_is_refused_while_another_kbc_has_an_lm_cache_open(cache, kind, capsys):
    from lm.cache import ResultCache
    from lm.response_cache import ResponseCache

    path = cache / "lm" / f"{kind}.sqlite"
    opened = ResultCache(path) if kind == "results" else ResponseCache(path)
    try:
        code, _, err = run_kbc(["cache", "clear", "lm", "--yes"], capsys)
    finally:
        opened.close()
    assert code == 2 and err == f"error: the LM cache {path} is in use by process {os.getpid()} (`" \
        + err.split("(`", 1)[1]
    assert err.endswith("; nothing removed: clear again once it ends\n"), err
    assert path.is_file()
    code, _, _ = run_kbc(["cache", "clear", "lm", "--yes"], capsys)
    assert code == 0 and not path.exists()


def test_clear_is_refused_while_a_text_index_is_built(cache, capsys):
    from kb.text.tantivy_index import writer_lock

    folder = cache / "index" / "lama-evidence"
    folder.mkdir(parents=True)
    lock = writer_lock(folder)
    lock.acquire()
    try:
        code, _, err = run_kbc(["cache", "clear", "index", "--yes"], capsys)
    finally:
        lock.release()
    assert code == 2 and err.startswith(f"error: the text index {folder} is being built by process {os.getpid()}")


# -- a run after a clear or a prune ------------------------------------------------------------
def test_a_run_after_clear_and_prune_gives_the_same_summary(cache, lama_dir, tiny_models, tmp_path, capsys):
    def run(out: Path) -> bytes:  # the summary's bytes: nothing in it names the folder or the time
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "5",
                                "--predictors", "freq", "gold", f"bert={tiny_models('bert-cased')}", "--data-dir",
                                str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
        assert code == 0, err
        return (out / "summary.json").read_bytes()

    first = run(tmp_path / "first")
    assert (cache / "lm" / "results.sqlite").is_file() and (cache / "store" / "LIVE").is_file()
    code, _, _ = run_kbc(["cache", "prune"], capsys)
    assert code == 0
    assert run(tmp_path / "pruned") == first
    code, _, _ = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 0 and not (cache / "lm" / "results.sqlite").exists()
    forget_recent()
    assert run(tmp_path / "cleared") == first
    assert (cache / "lm" / "results.sqlite").is_file()  # computed again, and kept again


def test_prune_keeps_an_entry_a_writer_replaced_after_it_was_judged(cache, tmp_path):
    from bridge.run.cache_admin import dead_entries, remove_dead

    old = _file(cache / "snapshots" / "trex-00000000000000aa.json", 0)
    old.write_text(json.dumps({"schema": 2, "sources": []}) + "\n{}\n")
    dead, _ = dead_entries(cache)
    assert [d.path for d in dead] == [old]
    fresh = _file(tmp_path / "fresh.json", 10)
    os.replace(fresh, old)  # a run wrote it again meanwhile
    assert remove_dead(dead) == [] and old.read_bytes() == b"x" * 10


def test_the_refusal_names_the_other_process_and_its_command(cache, capsys):
    import subprocess

    path = cache / "lm" / "results.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from lm.cache import ResultCache; c = ResultCache(sys.argv[1]); "
                               "print('open', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        assert holder.stdout.readline() == "open\n"
        code, _, err = run_kbc(["cache", "clear", "--yes"], capsys)
    finally:
        holder.communicate("")
    assert code == 2
    assert err.startswith(f"error: the LM cache {path} is in use by process {holder.pid} (`")
    assert "from lm.cache import ResultCache" in err and path.is_file()


def test_clear_is_refused_while_an_elasticsearch_index_is_built(cache, capsys):
    from kb.text.es_index import build_lock

    lock = build_lock("http://127.0.0.1:9200", "lama-evidence")
    lock.acquire()
    try:
        code, _, err = run_kbc(["cache", "clear", "index", "--yes"], capsys)
    finally:
        lock.release()
    assert code == 2 and err.startswith(f"error: an Elasticsearch index is being built by process {os.getpid()}")
    code, _, _ = run_kbc(["cache", "clear", "index", "--yes"], capsys)
    assert code == 0 and not any((cache / "index" / "elasticsearch-builds").iterdir())


# -- what a clear asks about is what it removes, and it leaves no file of its own -------------------
def _store_with_one_graph(store: Path) -> None:
    import pyoxigraph as ox

    from kb.store_disk import StoreFolder

    writer = StoreFolder(store)
    writer.claim()
    writer.writable().add(ox.Quad(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), ox.NamedNode("urn:o"),
                                  ox.NamedNode("urn:kbc:graph:g")))
    writer.publish()
    writer.close()


def test_a_declined_clear_of_an_empty_store_leaves_nothing_that_stops_a_run(cache, monkeypatch, capsys):
    from kb.store_disk import StoreFolder, holds_nothing

    store = cache / "store"
    store.mkdir(parents=True)
    _answer(monkeypatch, "n\n")
    code, out, _ = run_kbc(["cache", "clear", "store"], capsys)
    assert code == 0 and out == f"nothing to remove in {cache}\n"
    _answer(monkeypatch, "")
    code, out, _ = run_kbc(["cache", "clear", "store"], capsys)
    assert code == 0 and out == f"nothing to remove in {cache}\n"
    assert list(store.iterdir()) == [] and holds_nothing(store)
    StoreFolder(store).close()  # a run opens it as a new store


def test_a_store_folder_holding_only_its_writer_lock_is_an_empty_store(cache):
    from kb.store_disk import WRITER_LOCK, StoreFolder, holds_nothing

    store = cache / "store"  # as a clear leaves it for a moment, or a clear killed before letting go
    _file(store / WRITER_LOCK, 0)
    assert holds_nothing(store)
    StoreFolder(store).close()


@pytest.mark.parametrize("kinds", [["store"], []])
def test_clear_removes_the_files_and_bytes_it_asked_about(cache, kinds, monkeypatch, capsys):
    from bridge.run.cache_admin import FIRST_ANSWERS
    from eval.cells import byte_size, count_of

    _store_with_one_graph(cache / "store")
    _filled(cache)
    listed = json.loads(run_kbc(["cache", "info", "--json"], capsys)[1])["kinds"]
    asked = kinds or list(listed)
    stays = list((cache / "lm" / FIRST_ANSWERS).iterdir()) if "lm" in asked else []
    files = sum(listed[k]["files"] for k in asked) - len(stays)
    size = sum(listed[k]["bytes"] for k in asked) - sum(p.stat().st_size for p in stays)
    _answer(monkeypatch, "y\n")
    code, out, err = run_kbc(["cache", "clear", *kinds], capsys)
    assert code == 0, err
    assert f"remove {count_of(files, 'files')} ({byte_size(size)}) of " in err
    removed = [line.split(": removed ")[1] for line in out.splitlines() if ": removed " in line]
    counted = [int(r.split()[0]) for r in removed]
    assert sum(counted) == files and out.splitlines()[-1] == f"freed {byte_size(size)} in {cache}"
    assert not any((cache / "store").iterdir())


def test_clear_keeps_the_lock_of_an_lm_cache_being_opened(cache, capsys):
    from lm.cache import shared_lock

    path = cache / "lm" / "results.sqlite"
    held = shared_lock(path)  # a process between locking the cache and making its file
    try:
        code, _, err = run_kbc(["cache", "clear", "lm", "--yes"], capsys)
    finally:
        held.close()
    assert code == 2 and err.startswith(f"error: the LM cache {path} is in use by process {os.getpid()}")
    assert Path(f"{path}.lock").is_file()


def test_clear_leaves_a_file_of_snapshots_or_digests_under_a_name_kbc_does_not_give(cache, monkeypatch, capsys):
    _filled(cache)
    mine = _file(cache / "snapshots" / "my-notes.json", 40)
    also = _file(cache / "digests" / "keep.txt", 5)
    code, out, _ = run_kbc(["cache", "info", "--json"], capsys)
    assert json.loads(out)["not_kbc"] == [str(cache / "notes.txt"), str(mine), str(also)]
    _answer(monkeypatch, "n\n")
    code, _, err = run_kbc(["cache", "clear", "snapshots", "digests"], capsys)
    assert "remove 2 files (1 kB) of snapshots, digests" in err  # the two kbc wrote, not the user's
    code, out, _ = run_kbc(["cache", "clear", "snapshots", "digests", "--yes"], capsys)
    assert code == 0 and mine.read_bytes() == b"x" * 40 and also.read_bytes() == b"x" * 5
    assert out.splitlines()[:2] == ["snapshots: removed 1 file (1 kB)", "digests: removed 1 file (300 B)"]
    assert f"left alone: {mine} (not kbc's: never removed)" in out
    assert sorted(p.name for p in (cache / "snapshots").iterdir()) == ["my-notes.json"]


def test_clearing_every_kind_lists_only_the_kinds_that_held_something(cache, capsys):
    _filled(cache)
    code, out, _ = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 0
    assert [line for line in out.splitlines() if ": removed " in line] == [
        "snapshots: removed 1 file (1 kB)", "digests: removed 1 file (300 B)"]  # lm holds only a first answer


def test_an_entry_a_writer_renames_away_while_it_is_listed_stops_neither_prune_nor_clear(cache, monkeypatch, capsys):
    from bridge.run import cache_admin

    _filled(cache)
    listed = cache_admin._entries

    def with_ghosts(folder: Path) -> list[Path]:  # a snapshot and a digest written aside, renamed in since listed
        ghosts = {"snapshots": ".trex-0123456789abcdef.json.77.tmp", "digests": "a" * 32 + ".json.77.tmp"}
        return listed(folder) + ([folder / ghosts[folder.name]] if folder.name in ghosts else [])

    monkeypatch.setattr(cache_admin, "_entries", with_ghosts)
    code, out, err = run_kbc(["cache", "prune", "--dry-run"], capsys)
    assert code == 0 and out.splitlines()[-1] == f"would free 1 kB in {cache}", err  # the two damaged entries
    code, out, err = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 0 and out.splitlines()[-1] == f"freed 1 kB in {cache}", err
    code, out, err = run_kbc(["cache", "prune"], capsys)
    assert code == 0 and out == f"left alone: {cache / 'notes.txt'} (not kbc's: never removed)\n" \
        f"nothing to remove in {cache}\n", err


def test_a_relative_kbc_cache_is_shown_as_the_folder_it_names_here(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", "rel-cache")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_kbc(["cache", "info"], capsys)
    assert code == 0 and out.splitlines()[0] == (f"cache: {tmp_path / 'rel-cache'} (from KBC_CACHE); not made yet: "
                                                 "nothing is cached")


def test_an_interrupted_clear_or_prune_says_what_it_leaves_not_that_a_run_resumes():
    from bridge.cli import interrupted_line

    assert interrupted_line(["cache", "clear", "-y"]).startswith("interrupted: part of what was asked may be removed")
    assert interrupted_line(["cache", "prune"]).startswith("interrupted: some of what can never be used again")



def test_clear_leaves_the_first_answers_a_resumed_served_run_checks_its_server_against(cache, capsys):
    from bridge.run.cache_admin import FIRST_ANSWERS

    first = _file(cache / "lm" / FIRST_ANSWERS / ("c" * 64 + ".json"), 90)
    results = _file(cache / "lm" / "results.sqlite", 50)
    code, out, err = run_kbc(["cache", "clear", "lm", "--yes"], capsys)
    assert code == 0, err
    assert first.read_bytes() == b"x" * 90 and not results.exists()
    assert out.splitlines() == [
        "lm: removed 1 file (50 B)",
        f"left alone: {cache / 'lm' / FIRST_ANSWERS} (1 file: the first answers of served-model runs, which a "
        "resumed run asks its server again to tell other weights; remove it by hand once those runs are done)",
        f"freed 50 B in {cache}"]


# -- readers of a text index and of the LAMA-UHN data hold a lock a clear respects --------------------
def _holder(code: str, *args: str):
    """Another Python process that runs `code`, prints `held`, and keeps what it opened until its stdin ends."""
    import subprocess

    holder = subprocess.Popen([sys.executable, "-c", f"{code}; print('held', flush=True); sys.stdin.read()", *args],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1])
    assert holder.stdout.readline() == "held\n"
    return holder


def test_clear_is_refused_while_a_text_index_is_searched_and_readers_do_not_block_each_other(cache, capsys):
    import fcntl

    from eval.lock_holders import command_of
    from eval.readers_lock import READERS_LOCK
    from kb.text.index import build_index, open_index
    from kb.text.paragraphs import Paragraph

    folder = cache / "index" / "lama-evidence"
    build_index([Paragraph("p1", "Ada", 0, "Ada was born in Paris")], "tantivy", folder).close()
    first = open_index("tantivy", folder)
    second = open_index("tantivy", folder)  # a second reader opens while the first holds its lock
    try:
        with open(folder / READERS_LOCK, "rb") as probe:
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: a third one is not kept waiting either
        code, _, err = run_kbc(["cache", "clear", "index", "--yes"], capsys)
        assert [h.paragraph.pid for h in first.search("Paris")] == ["p1"]  # nothing removed under its feet
    finally:
        first.close()
        second.close()
    assert code == 2 and err.startswith(f"error: the text index {folder} is being read by process {os.getpid()} "
                                        f"(`{command_of(os.getpid())}`)"), err
    assert err.endswith("; nothing removed: clear again once it ends\n") and len(err.splitlines()) == 1
    assert (folder / "CURRENT").is_file()
    code, out, err = run_kbc(["cache", "clear", "index", "--yes"], capsys)
    assert code == 0, err
    assert not [p for p in (cache / "index").rglob("*") if not p.is_dir()]  # the readers' lock file too


def test_clear_is_refused_while_another_kbc_reads_the_lama_uhn_data(cache, tmp_path, capsys):
    data = _data(tmp_path / "lama")
    holder = _holder("import sys; from eval.corpora import load_corpus; load_corpus('trex-uhn', sys.argv[1])",
                     str(data))
    try:
        code, _, err = run_kbc(["cache", "clear", "uhn", "--yes"], capsys)
    finally:
        holder.communicate("")
    assert code == 2 and err.startswith(f"error: the LAMA-UHN data {cache / 'uhn'} is being read by process "
                                        f"{holder.pid} (`"), err
    assert "from eval.corpora import load_corpus" in err
    assert err.endswith("; nothing removed: clear again once it ends\n")
    built = [p for p in (cache / "uhn").iterdir() if p.is_dir()]
    assert len(built) == 1 and (built[0] / "TREx" / "P19.jsonl").is_file()
    code, out, err = run_kbc(["cache", "clear", "uhn", "--yes"], capsys)
    assert code == 0 and list((cache / "uhn").iterdir()) == [], err
    assert [f.uid for f in load_corpus("trex-uhn", data).facts] == ["u1"]  # built again


def test_a_clear_of_lm_stopped_midway_leaves_no_sqlite_log_beside_a_missing_database(cache, monkeypatch):
    from bridge.run.cache_admin import clear

    db = cache / "lm" / "results.sqlite"
    unlink = Path.unlink
    for stop_after in range(4):
        for name in ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm", "results.sqlite-journal"):
            _file(cache / "lm" / name, 10)
        removed: list[str] = []

        def stopping(path: Path, missing_ok: bool = False) -> None:
            if len(removed) == stop_after:  # noqa: B023
                raise KeyboardInterrupt  # killed here
            unlink(path, missing_ok=missing_ok)
            removed.append(path.name)  # noqa: B023

        monkeypatch.setattr(Path, "unlink", stopping)
        with pytest.raises(KeyboardInterrupt):
            clear(cache, ["lm"])
        monkeypatch.setattr(Path, "unlink", unlink)
        left = sorted(p.name for p in (cache / "lm").iterdir() if p.name.startswith("results.sqlite-"))
        assert db.is_file() or left == [], (stop_after, removed, left)  # a log left beside no database


def test_info_counts_a_file_that_is_not_kbcs_apart_from_its_folders_kind(cache, capsys):
    _filled(cache)
    _file(cache / "snapshots" / "my-notes.json", 40)
    _file(cache / "digests" / "keep.txt", 5)
    code, out, err = run_kbc(["cache", "info", "--json"], capsys)
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["kinds"]["snapshots"]["bytes"], shown["kinds"]["snapshots"]["files"]) == (1000, 1)
    assert (shown["kinds"]["digests"]["bytes"], shown["kinds"]["digests"]["files"]) == (300, 1)
    assert shown["total"] == {"bytes": sum(k["bytes"] for k in shown["kinds"].values()),
                              "files": sum(k["files"] for k in shown["kinds"].values())} == {"bytes": 1320, "files": 3}
    assert shown["not_kbc_total"] == {"bytes": 7 + 40 + 5, "files": 3} and len(shown["not_kbc"]) == 3
    code, out, _ = run_kbc(["cache", "info"], capsys)
    rows = [line.split() for line in out.splitlines()]
    assert next(r for r in rows if r[0] == "snapshots")[:4] == ["snapshots", "1", "kB", "1"]  # files: 1, not 2
    at = rows.index(next(r for r in rows if r[0] == "total"))
    assert rows[at][:4] == ["total", "1", "kB", "3"] and rows[at + 1][:5] == ["not", "kbc", "52", "B", "3"]


def test_a_clear_of_lm_that_leaves_only_first_answers_names_them_and_why(cache, capsys):
    from bridge.run.cache_admin import FIRST_ANSWERS

    first = _file(cache / "lm" / FIRST_ANSWERS / ("c" * 64 + ".json"), 90)
    code, out, err = run_kbc(["cache", "clear", "lm", "--yes"], capsys)
    assert code == 0, err
    assert first.is_file()
    assert out.splitlines() == [
        f"left alone: {cache / 'lm' / FIRST_ANSWERS} (1 file: the first answers of served-model runs, which a "
        "resumed run asks its server again to tell other weights; remove it by hand once those runs are done)",
        f"nothing to remove in {cache}"]


# -- what cannot be removed ----------------------------------------------------------------------
def _refusing(monkeypatch, name: str) -> None:
    """`Path.unlink` refused (as in a folder made read-only) for the file called `name`."""
    unlink = Path.unlink

    def refused(path: Path, missing_ok: bool = False) -> None:
        if path.name == name:
            raise PermissionError(13, "Permission denied", str(path))
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refused)


def test_a_file_clear_cannot_remove_is_one_error_line_saying_what_went_before_and_the_fix(cache, monkeypatch,
                                                                                         capsys):
    _filled(cache)
    stuck = cache / "snapshots" / "trex-0123456789abcdef.json"
    _refusing(monkeypatch, stuck.name)
    code, out, err = run_kbc(["cache", "clear", "digests", "snapshots", "--yes"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.splitlines() == [
        f"error: cannot remove {stuck} (Permission denied); removed before it: digests 1 file (300 bytes); make "
        f"{stuck.parent} writable (`chmod u+w {stuck.parent}`) or remove {stuck} by hand, then run `kbc cache "
        "clear` again (what is removed is computed again when next needed)"]
    assert stuck.is_file() and not any((cache / "digests").iterdir())


def test_a_lock_file_clear_cannot_make_is_one_error_line_and_nothing_is_removed(cache, monkeypatch, capsys):
    _filled(cache)
    _file(cache / "lm" / "results.sqlite", 10)
    opened = Path.open

    def refused(path: Path, *args, **kwargs):
        if path.name.endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    lock = cache / "lm" / "results.sqlite.lock"
    code, out, err = run_kbc(["cache", "clear", "--yes"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.splitlines() == [
        f"error: cannot make the lock file {lock} (Permission denied), which keeps other kbc processes out while "
        f"the cache is cleared; nothing removed; make {lock.parent} writable (`chmod u+w {lock.parent}`) or remove "
        f"{lock} by hand, then run `kbc cache clear` again (what is removed is computed again when next needed)"]
    assert (cache / "snapshots" / "trex-0123456789abcdef.json").is_file()
    assert (cache / "lm" / "results.sqlite").is_file()


def test_an_entry_prune_cannot_remove_is_one_error_line_saying_what_went_before(cache, tmp_path, monkeypatch,
                                                                                capsys):
    stale = [_file(cache / "snapshots" / f".trex-0123456789abcdef.json.424{i}.tmp", 100, HOUR_AGO) for i in (1, 2)]
    _refusing(monkeypatch, stale[1].name)
    code, out, err = run_kbc(["cache", "prune"], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.splitlines() == [
        f"error: cannot remove {stale[1]} (Permission denied); removed before it: 1 entry (100 bytes); make "
        f"{stale[1].parent} writable (`chmod u+w {stale[1].parent}`) or remove {stale[1]} by hand, then run `kbc "
        "cache prune` again (what is removed is computed again when next needed)"]
    assert not stale[0].exists() and stale[1].exists()
