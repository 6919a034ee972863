"""Results survive a power cut: a file switched in is synced before its rename and its folder after, and a run's
prediction records are synced once per chunk."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from eval import durable
from eval.durable import fsync_dir, replacing, write_atomic


@pytest.fixture
def events(monkeypatch):
    """("fsync", inode) and ("replace", source name, target name) in the order they happen."""
    seen: list[tuple] = []
    fsync, replace = os.fsync, os.replace

    def synced(fd):
        seen.append(("fsync", os.fstat(fd).st_ino))
        fsync(fd)

    def replaced(src, dst):
        seen.append(("replace", Path(src).name, Path(dst).name))
        replace(src, dst)

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "replace", replaced)
    return seen


def _ino(path: Path) -> int:
    return path.stat().st_ino


def test_the_file_is_synced_before_its_rename_and_the_folder_after(tmp_path, events):
    target = tmp_path / "summary.json"
    target.write_text("old", encoding="utf-8")
    write_atomic(target, b"new", tmp_path / "summary.json.tmp")
    assert target.read_bytes() == b"new"
    assert events == [("fsync", _ino(target)), ("replace", "summary.json.tmp", "summary.json"),
                      ("fsync", _ino(tmp_path))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_a_cache_skips_the_syncs(tmp_path, events):
    write_atomic(tmp_path / "entry.json", (b"a", b"b"), durable=False)
    assert (tmp_path / "entry.json").read_bytes() == b"ab"
    assert events == [("replace", f".entry.json.{os.getpid()}.tmp", "entry.json")]


def test_a_failed_write_leaves_the_old_file_and_nothing_aside(tmp_path, events):
    target = tmp_path / "head.pt"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("stopped")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["head.pt"]
    assert events == []


def test_a_folder_the_system_cannot_open_is_not_synced(tmp_path, monkeypatch):
    """Windows opens no folder (EACCES); an error that means lost data (EIO) still stops the write."""
    def refuse(code):
        def open_(path, flags, *args):
            raise OSError(code, os.strerror(code), str(path))
        return open_

    monkeypatch.setattr(os, "open", refuse(errno.EACCES))
    fsync_dir(tmp_path)
    monkeypatch.setattr(os, "open", refuse(errno.EIO))
    with pytest.raises(OSError) as failed:
        fsync_dir(tmp_path)
    assert failed.value.errno == errno.EIO


def test_a_folder_sync_the_file_system_refuses_is_skipped(tmp_path, monkeypatch):
    def fsync(fd):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "fsync", fsync)
    fsync_dir(tmp_path)
    with pytest.raises(OSError):
        durable.fsync_file(tmp_path)  # a file's sync is never skipped


def test_make_dirs_syncs_each_new_folder_into_its_parent(tmp_path, events):
    make = tmp_path / "a" / "b"
    durable.make_dirs(make)
    assert make.is_dir()
    assert events == [("fsync", _ino(tmp_path)), ("fsync", _ino(tmp_path / "a"))]
    events.clear()
    durable.make_dirs(make)
    assert events == []


def _sites(tmp_path: Path) -> list[tuple[str, Path, object]]:
    import pandas as pd

    from bridge.analysis.stats import atomic_json
    from bridge.report.out_dir import write_text
    from bridge.run.instances import atomic_parquet
    from eval.jsonl import write_json
    from lm.entities.manifest import Manifest

    manifest = Manifest(tmp_path / "manifest.json")
    return [
        ("summary.json", tmp_path / "summary.json", lambda p: write_json(p, [{"value": 0.5}])),
        ("summary.md", tmp_path / "summary.md", lambda p: write_text(p, "| a |\n")),
        ("instances.parquet", tmp_path / "instances.parquet", lambda p: atomic_parquet(pd.DataFrame({"a": [1]}), p)),
        ("evidence_summary.json", tmp_path / "evidence_summary.json", lambda p: atomic_json({"n": 1}, p)),
        ("manifest.json", tmp_path / "manifest.json", lambda p: manifest._save()),
    ]


@pytest.mark.parametrize("name", ["summary.json", "summary.md", "instances.parquet", "evidence_summary.json",
                                  "manifest.json"])
def test_results_are_synced_where_they_are_written(tmp_path, events, name):
    _, path, write = next(site for site in _sites(tmp_path) if site[0] == name)
    write(path)
    renamed = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == name]
    assert len(renamed) == 1, events
    at = renamed[0]
    assert ("fsync", _ino(path)) in events[:at]
    assert ("fsync", _ino(tmp_path)) in events[at + 1:]


def test_a_training_checkpoint_and_its_digest_are_synced(tmp_path, events):
    import torch

    from lm.background_save import atomic_save, digest_path

    path = tmp_path / "checkpoint.pt"
    atomic_save({"w": torch.zeros(2)}, path, digest=True)
    assert [e for e in events if e[0] == "replace"] == [("replace", "checkpoint.pt.tmp", "checkpoint.pt"),
                                                        ("replace", "checkpoint.pt.sha256.tmp", "checkpoint.pt.sha256")]
    first, second = (events.index(e) for e in events if e[0] == "replace")
    assert events[first - 1] == ("fsync", _ino(path))
    assert events[second - 1] == ("fsync", _ino(digest_path(path)))
    assert events[-1] == ("fsync", _ino(tmp_path))


def test_records_are_synced_once_per_chunk_after_their_digests(tmp_path, events):
    from bridge.run.record_digests import RecordAppender, claim, digests_path

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}", encoding="utf-8")
    claim(run)
    path = run / "predictions" / "trex" / "freq" / "P19.jsonl"
    with RecordAppender(path) as handle:
        for chunk in (["a", "b"], ["c"]):
            handle.write([json.dumps({"uid": uid, "relation": "P19"}) + "\n" for uid in chunk])
    files = {_ino(path): "records", _ino(digests_path(path)): "digests"}
    assert [files[e[1]] for e in events if e[0] == "fsync" and e[1] in files] == ["digests", "records"] * 2
    # the new files' names are synced into their folders, and the folders made for them into theirs
    synced = {e[1] for e in events if e[0] == "fsync"}
    for folder in (path.parent, path.parent.parent, digests_path(path).parent, run / "predictions"):
        assert _ino(folder) in synced
