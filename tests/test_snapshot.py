"""Parsed-corpus snapshots: the same corpus as parsing, never the facts of other bytes."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from eval import lama, snapshot
from eval.corpora import load_corpus
from eval.snapshot import SCHEMA, forget_recent, snapshot_path

RELATIONS = [{"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth", "type": "N-1"},
             {"relation": "P36", "template": "The capital of [X] is [Y] .", "label": "capital", "type": "1-1"}]
P19 = [{"uuid": "u1", "sub_label": "Ada", "sub_uri": "Q1", "obj_label": "Paris", "obj_uri": "Q90",
        "evidences": [{"masked_sentence": "Ada was born in [MASK] .", "obj_surface": "Paris", "sub_surface": "Ada"}]},
       {"uuid": "u2", "sub_label": "Bob", "sub_uri": "Q2", "obj_label": "Rome", "obj_uri": "Q220",
        "evidences": [{"masked_sentence": "Bob, born in [MASK]", "obj_surface": "the Eternal City"}]},
       {"uuid": "u3", "sub_label": "Bob", "sub_uri": "Q2", "obj_label": "Rome", "obj_uri": "Q220"}]  # a duplicate


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "lama"
    _write_jsonl(root / "relations.jsonl", RELATIONS)
    _write_jsonl(root / "TREx" / "P19.jsonl", P19)
    return root


def _same(a, b) -> None:
    assert a.facts == b.facts
    assert a.relations == b.relations
    assert [(r.to_dict(), r.relation) for r in a.reports] == [(r.to_dict(), r.relation) for r in b.reports]
    assert a.files == b.files and a.version == b.version


def _snapshot(root: Path, name: str = "trex") -> Path:
    return snapshot_path(name, root.resolve(), {})


def test_the_snapshot_gives_what_parsing_gives(data):
    first = load_corpus("trex", data)
    path = _snapshot(data)
    assert path.is_file()
    header = json.loads(path.read_bytes().split(b"\n", 1)[0])
    assert header["schema"] == SCHEMA
    assert [Path(s[0]).name for s in header["sources"]] == ["P19.jsonl", "relations.jsonl"]
    again = load_corpus("trex", data)
    _same(again, lama.load_trex(data))
    _same(again, first)
    assert [f.uid for f in again.facts] == ["u1", "u2"]
    assert again.facts[1].evidences[0].text == "Bob, born in the Eternal City"
    report = next(r for r in again.reports if r.relation == "P19")
    assert (report.read, report.kept, dict(report.dropped)) == (3, 2, {"duplicate rows (same ids)": 1})
    assert again.reports[-1].notes == ["1 relation has no data file: P36"]


def test_the_snapshot_is_used(data, monkeypatch):
    load_corpus("trex", data)

    def refuse(*args, **kwargs):
        raise AssertionError("parsed again")

    version = lama.load_trex(data).version
    monkeypatch.setitem(lama.LOADERS, "trex", refuse)
    monkeypatch.setattr(lama, "fingerprint", refuse)  # the version comes from the one read that checked the bytes
    corpus = load_corpus("trex", data)
    assert [f.object.label for f in corpus.facts] == ["Paris", "Rome"]
    assert corpus.version == version


def test_a_changed_data_file_is_parsed_again(data):
    load_corpus("trex", data)
    path = data / "TREx" / "P19.jsonl"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b'"Paris"', b'"Pariz"'))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime: the bytes still differ
    assert path.stat().st_size == st.st_size
    corpus = load_corpus("trex", data)
    assert [f.object.label for f in corpus.facts] == ["Pariz", "Rome"]
    _same(corpus, lama.load_trex(data))


def test_a_data_file_added_beside_is_read(data):
    load_corpus("trex", data)
    _write_jsonl(data / "TREx" / "P36.jsonl", [{"sub_label": "France", "obj_label": "Paris"}])
    corpus = load_corpus("trex", data)
    assert list(corpus.relations) == ["P19", "P36"]
    assert [f.uid for f in corpus.facts] == ["u1", "u2", "P36:1"]


@pytest.mark.parametrize("damage", ["flipped", "truncated", "header", "sources", "schema"])
def test_a_damaged_snapshot_is_parsed_again_and_rewritten(data, damage, caplog):
    load_corpus("trex", data)
    path = _snapshot(data)
    raw = path.read_bytes()
    head, body = raw.split(b"\n", 1)
    if damage == "flipped":  # still JSON, still the same size: another label
        raw = head + b"\n" + body.replace(b'"Paris"', b'"Pariz"')
    elif damage == "truncated":
        raw = raw[: len(raw) - 40]
    elif damage == "header":
        raw = b"{not json\n" + body
    elif damage == "sources":
        raw = json.dumps({**json.loads(head), "sources": [5]}).encode() + b"\n" + body
    else:
        raw = json.dumps({**json.loads(head), "schema": SCHEMA + 1}).encode() + b"\n" + body
    path.write_bytes(raw)
    forget_recent()  # as a new process finds it
    with caplog.at_level(logging.WARNING, logger="kbc"):
        corpus = load_corpus("trex", data)
    assert [f.object.label for f in corpus.facts] == ["Paris", "Rome"]
    _same(corpus, lama.load_trex(data))
    if damage != "schema":
        assert f"{path}: unreadable snapshot" in caplog.text
    assert path.read_bytes() != raw  # rewritten


def test_a_snapshot_is_plain_json(data):
    load_corpus("trex", data)
    head, meta, facts = _snapshot(data).read_bytes().split(b"\n")
    json.loads(head)
    assert json.loads(meta)["n_facts"] == 2
    assert json.loads(facts)["uid"] == ["u1", "u2"]


def test_real_corpora_from_their_snapshots(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path))
    for name, facts in (("google_re", 5527), ("squad", 305)):
        load_corpus(name, lama_dir)
        assert _snapshot(lama_dir, name).is_file()
        again = load_corpus(name, lama_dir)
        _same(again, lama.LOADERS[name](lama_dir))
        assert len(again.facts) == facts


def test_bad_data_still_names_the_line(data):
    (data / "TREx" / "P19.jsonl").write_text('{"sub_label": "A", "obj_label": "B"}\n{oops\n', encoding="utf-8")
    from eval.errors import DataError

    with pytest.raises(DataError, match=r"P19.jsonl:2: malformed JSON"):
        load_corpus("trex", data)
    assert not _snapshot(data).exists()


def test_the_outline_counts_without_the_facts(data):
    from eval.corpora import corpus_outline

    parsed, n = corpus_outline("trex", data)  # no snapshot yet: loaded in full, and one written
    assert n == 2 and len(parsed.facts) == 2
    outline, n = corpus_outline("trex", data)
    full = lama.load_trex(data)
    assert outline.facts == [] and n == 2
    assert outline.summary(verbose=True, n_facts=n) == full.summary(verbose=True) == (
        "trex: 1 relation, read 3, kept 2, dropped 1\n"
        "  trex/P19 (TREx/P19.jsonl): read 3, kept 2, dropped 1 (1 duplicate rows (same ids))\n"
        "  trex relations.jsonl: 1 relation has no data file: P36")
    assert (outline.relations, outline.files, outline.version) == (full.relations, full.files, full.version)


def test_a_lone_surrogate_escaped_in_the_data_is_refused_and_no_snapshot_is_kept(data):
    """JSON may escape half of a surrogate pair (`\\ud800`): kept in the label, it reached the run's digests and
    records, which no UTF-8 file can hold, and the run stopped in a traceback; it is refused with its line."""
    from eval.errors import DataError

    _write_jsonl(data / "TREx" / "P19.jsonl", [{**P19[0], "sub_label": "Ada\ud800"}])
    with pytest.raises(DataError, match=r"P19.jsonl:1: '\\ud800' escapes half of a UTF-16 surrogate pair"):
        load_corpus("trex", data)
    assert not _snapshot(data).is_file()


@pytest.mark.parametrize("fails", [False, True])
def test_parsing_a_corpus_pauses_the_cycle_collector_and_resumes_it(data, monkeypatch, fails):
    """Hundreds of thousands of new objects with no cycle among them: no full collection walks them while they are
    made; the collector runs again afterwards, also when the data is refused."""
    import gc

    from eval.errors import DataError

    seen = []

    def load(*args, **kwargs):
        seen.append(gc.isenabled())
        if fails:
            raise DataError("refused")
        return lama.load_trex(*args, **kwargs)

    monkeypatch.setitem(lama.LOADERS, "trex", load)
    if fails:
        with pytest.raises(DataError, match="refused"):
            load_corpus("trex", data)
    else:
        assert [f.uid for f in load_corpus("trex", data).facts] == ["u1", "u2"]
    assert (seen, gc.isenabled()) == ([False], True)


def test_a_process_decodes_a_corpus_once_while_its_files_keep_their_bytes(data, tmp_path, monkeypatch):
    first = load_corpus("trex", data)

    def refuse(*args, **kwargs):
        raise AssertionError("read again")

    with monkeypatch.context() as m:
        m.setitem(lama.LOADERS, "trex", refuse)
        m.setattr(snapshot, "_decode_body", refuse)
        m.setenv("KBC_CACHE", str(tmp_path / "another-cache"))  # whichever cache a run names
        again = load_corpus("trex", data)
        _same(again, first)
        again.facts.clear()  # a caller's changes stay its own
        again.reports[0].drop("by hand")
        _same(load_corpus("trex", data), lama.load_trex(data))
    path = data / "TREx" / "P19.jsonl"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b'"Rome"', b'"Roma"'))  # same size and mtime, other bytes
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = load_corpus("trex", data)
    assert [f.object.label for f in changed.facts] == ["Paris", "Roma"]
    _same(changed, lama.load_trex(data))


def test_a_cache_that_cannot_keep_the_snapshot_is_said_once(data, tmp_path, monkeypatch, caplog):
    """A full or read-only cache: the corpus is parsed as ever, and one warning says why every run parses again."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "full"))
    monkeypatch.setattr(snapshot, "_UNWRITABLE", set())
    real_open = Path.open

    def full(self, mode="r", *args, **kwargs):
        if "w" in mode and self.name.endswith(".tmp"):
            raise OSError(28, os.strerror(28), str(self))
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full)
    with caplog.at_level(logging.WARNING, logger="kbc"):
        for _ in range(2):
            forget_recent()
            _same(load_corpus("trex", data), lama.load_trex(data))
    said = [r.getMessage() for r in caplog.records if "parsed copy" in r.getMessage()]
    assert said == [f"{tmp_path / 'full' / 'snapshots'}: cannot keep the data's parsed copy (No space left on device); "
                    "each run parses the data files again (free space or make it writable, or set KBC_CACHE to a "
                    "writable folder)"]
    assert not _snapshot(data).exists()


def test_two_threads_writing_one_snapshot_each_write_their_own_copy(data, monkeypatch, caplog):
    """Two threads of one process parsing the same corpus into an empty cache: neither loses its copy to the
    other (both were named by the process alone, and the second switch-in found no file)."""
    import threading

    monkeypatch.setattr(snapshot, "_UNWRITABLE", set())
    both_written = threading.Barrier(2, timeout=30)
    real_replace = os.replace

    def replace_when_both_wrote(src, dst, *args, **kwargs):
        if Path(dst) == _snapshot(data):
            both_written.wait()
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(snapshot.os, "replace", replace_when_both_wrote)
    loaded: list = []
    with caplog.at_level(logging.WARNING, logger="kbc"):
        threads = [threading.Thread(target=lambda: loaded.append(load_corpus("trex", data))) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(loaded) == 2
    assert [r.getMessage() for r in caplog.records] == []
    assert not [p.name for p in _snapshot(data).parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(snapshot.os, "replace", real_replace)
    forget_recent()
    _same(load_corpus("trex", data), lama.load_trex(data))


def test_a_process_reads_settled_data_files_once_and_an_edit_again(data, monkeypatch):
    """Loading a corpus again hashes its files again only where one may have changed: an edit that keeps the size
    and sets the mtime back still changes the ctime, so it is read."""
    from eval import datadir

    reads: list[int] = []
    real = datadir._hash_files

    def counted(paths, each):
        reads.append(len(paths))
        return real(paths, each)

    monkeypatch.setattr(datadir, "_hash_files", counted)
    monkeypatch.setattr(datadir, "_HASHED", datadir.OrderedDict())
    monkeypatch.setattr(datadir, "SETTLED_NS", -1)  # the files just written count as settled
    first = load_corpus("trex", data)
    assert reads == [2]
    _same(load_corpus("trex", data), first)
    assert reads == [2]  # remembered: the same files with the same keys
    path = data / "TREx" / "P19.jsonl"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b'"Rome"', b'"Roma"'))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    changed = load_corpus("trex", data)
    assert [f.object.label for f in changed.facts] == ["Paris", "Roma"]
    assert changed.version != first.version and len(reads) > 1


def test_files_changed_within_the_last_ticks_are_hashed_every_time(data, monkeypatch):
    from eval import datadir

    reads: list[int] = []
    real = datadir._hash_files
    monkeypatch.setattr(datadir, "_hash_files", lambda paths, each: reads.append(1) or real(paths, each))
    monkeypatch.setattr(datadir, "_HASHED", datadir.OrderedDict())
    files = sorted((data / "TREx").glob("*.jsonl"))
    assert datadir.hash_files(files) == datadir.hash_files(files)
    assert reads == [1, 1] and not datadir._HASHED  # written just now: not remembered
