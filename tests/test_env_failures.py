"""A failing environment under a run (a full disk, a kill, a symlink loop, memory running out): one `error:` line,
and a rerun ends with the files an uninterrupted run writes. CI cannot mount a small or read-only filesystem, so a
full disk is a write made to raise ENOSPC."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc

from bridge.run import runner
from eval.snapshot import forget_recent

tiny_models = lm_fixtures.tiny_models


def _one_error(code: int, err: str) -> str:
    """The one `error:` line of a failed command (`note:` lines a command prints on its way before it aside)."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("note: ")]
    assert code == 2 and "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error:"), err
    return lines[0]


def _run(out: Path, lama_dir: Path, *args: str) -> list[str]:
    return ["-q", "run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "20", "--predictors",
            "freq", "--data-dir", str(lama_dir), "--out", str(out), *args]


def _full_once(full: list, real_write):
    """`runner.write_json` on a disk that is full once `full` holds anything."""
    def write(path, data):
        if full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_write(path, data)
    return write


def test_a_disk_full_after_the_last_record_keeps_what_the_summary_reads(lama_dir, tmp_path, monkeypatch, capsys):
    """Every record is on disk when the disk fills (or the process is killed) before config.json is written again:
    the rerun, which asks nothing, still summarises the predictor as an uninterrupted run does (its answer space)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    whole = tmp_path / "whole"
    assert run_kbc(_run(whole, lama_dir), capsys)[0] == 0
    real_run, real_write, full = runner.Job.run, runner.write_json, []

    def then_full(self, experiment):
        real_run(self, experiment)
        full.append(True)  # the disk is full from here on: config.json is never written again

    monkeypatch.setattr(runner.Job, "run", then_full)
    monkeypatch.setattr(runner, "write_json", _full_once(full, real_write))
    out = tmp_path / "out"
    _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
    monkeypatch.setattr(runner.Job, "run", real_run)
    monkeypatch.setattr(runner, "write_json", real_write)
    code, _, err = run_kbc(_run(out, lama_dir), capsys)
    assert code == 0, err
    for name in ("summary.json", "summary.md"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


def test_a_symlink_loop_is_one_error_line(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for out in (tmp_path / "a", tmp_path / "a" / "run"):
        line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
        assert str(tmp_path / "a") in line and ("symbolic links" in line or "symlink loop" in line), line


def test_a_cache_that_is_a_link_to_a_folder_not_there_is_one_error_line(lama_dir, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"  # as a link to a drive that is not mounted
    cache.symlink_to(tmp_path / "drive" / "kbc")
    monkeypatch.setenv("KBC_CACHE", str(cache))
    for args in (_run(tmp_path / "run", lama_dir), ["cache", "info"]):
        line = _one_error(*run_kbc(args, capsys)[::2])
        assert line == (f"error: the cache {cache} is a symbolic link to {tmp_path / 'drive' / 'kbc'}, which does "
                        "not exist; make that folder, or point KBC_CACHE at a directory"), line
    assert not (tmp_path / "drive").exists() and not (tmp_path / "run").exists()


ALLOCATOR = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
             "allocate 62509056 bytes. Error code 12 (Cannot allocate memory)")


@pytest.mark.parametrize("failure", [RuntimeError(ALLOCATOR), MemoryError()], ids=["torch", "python"])
def test_memory_running_out_is_one_error_line_and_the_rerun_resumes(failure, tiny_models, lama_dir, tmp_path,
                                                                   monkeypatch, capsys):
    import torch

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    args = ["-q", "run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--predictors",
            f"bert={tiny_models('bert-cased')}", "--batch-size", "10000000", "--data-dir", str(lama_dir)]
    capsys.readouterr()  # the fixture's own lines

    def full(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(torch, "log_softmax", full)
    out = tmp_path / "run"
    line = _one_error(*run_kbc([*args, "--out", str(out)], capsys)[::2])
    assert line.startswith("error: out of memory") and "--batch-size" in line, line
    assert line.endswith("; results written so far are kept; rerun the same command to resume"), line
    if isinstance(failure, RuntimeError):
        assert "62509056 bytes" in line
    monkeypatch.undo()
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    assert run_kbc([*args, "--out", str(out)], capsys)[0] == 0
    assert (out / "summary.json").is_file()


@pytest.mark.parametrize("argv", [["-q", "run", "lama", "--out", "x"], ["-v", "-q", "run", "lama", "--corpus", "trex",
                                                                          "--out", "x"], ["run", "lama", "--out", "x"]])
def test_the_out_folder_is_read_after_kbc_own_options(argv):
    """`kbc -q run lama --out X`: the folder a failure or Ctrl-C line speaks of is X, not the default."""
    from bridge.cli import out_folder

    assert out_folder(argv) == Path("x")


def test_a_full_disk_under_instances_parquet_names_the_file(lama_dir, tmp_path, monkeypatch, capsys):
    """pyarrow's own error names no file: the line names the one being written, and no `.tmp` copy stays."""
    import pyarrow.parquet as pq

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    def full(table, path, *args, **kwargs):  # `path`: the file opened for it, or a path
        if hasattr(path, "write"):
            path.write(b"PAR1")  # a partial copy, as a full disk leaves it
        else:
            Path(path).write_bytes(b"PAR1")
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    out = tmp_path / "out"
    line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
    assert line == f"error: No space left on device: {out / 'instances.parquet'}"
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("kind", ["file", "loop", "under-file"])
def test_a_cache_that_cannot_be_a_folder_is_refused_before_any_work(kind, lama_dir, tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    cache = {"file": tmp_path / "file", "loop": tmp_path / "a", "under-file": tmp_path / "file" / "cache"}[kind]
    monkeypatch.setenv("KBC_CACHE", str(cache))
    forget_recent()  # the corpus is read from the cache, as by a new process, not from this one's memory
    out = tmp_path / "out"
    line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
    assert line.startswith(f"error: the cache {cache} ") and line.endswith("; point KBC_CACHE at a directory"), line
    assert not out.exists()


def test_the_line_names_the_write_that_failed_first(lama_dir, tmp_path, monkeypatch, capsys):
    """The disk fills under a prediction file; recording the failed attempt in config.json then fails too: the
    line names the prediction file, and the rerun with room resumes to an uninterrupted run's summary."""
    from bridge.run import record_digests

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    whole = tmp_path / "whole"
    assert run_kbc(_run(whole, lama_dir), capsys)[0] == 0
    real_append, real_write, full = record_digests.RecordAppender._append, runner.write_json, []

    def append(self, raw):
        full.append(self.path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    monkeypatch.setattr(record_digests.RecordAppender, "_append", append)
    monkeypatch.setattr(runner, "write_json", _full_once(full, real_write))
    out = tmp_path / "out"
    line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
    assert line == f"error: No space left on device: {full[0]}" and full[0].suffix == ".jsonl", line
    monkeypatch.setattr(record_digests.RecordAppender, "_append", real_append)
    monkeypatch.setattr(runner, "write_json", real_write)
    assert run_kbc(_run(out, lama_dir), capsys)[0] == 0
    assert (out / "summary.json").read_bytes() == (whole / "summary.json").read_bytes()


def test_a_full_disk_under_a_report_figure_names_the_file(lama_dir, tmp_path, monkeypatch, capsys):
    """Pillow's error names no file: the line names the figure being written."""
    from matplotlib.figure import Figure

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    assert run_kbc(_run(run, lama_dir), capsys)[0] == 0

    def full(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as PngImagePlugin raises it

    monkeypatch.setattr(Figure, "savefig", full)
    report = tmp_path / "report"
    line = _one_error(*run_kbc(["report", str(run), "--out", str(report)], capsys)[::2])
    assert line.startswith(f"error: No space left on device: {report / 'figures'}/") and line.endswith(".png"), line


def _full_disk(monkeypatch, hit):
    """A disk that fills up while a file whose name `hit` accepts is written: half its bytes, then ENOSPC. Returns
    the real `Path.open`."""
    real = Path.open

    class Full:
        def __init__(self, handle, path: Path) -> None:
            self.handle, self.path = handle, path

        def write(self, data):
            self.handle.write(data[: len(data) // 2])  # what fitted
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.handle.close()

        def __getattr__(self, name):
            return getattr(self.handle, name)

    def opened(self: Path, mode: str = "r", *args, **kwargs):
        handle = real(self, mode, *args, **kwargs)
        return Full(handle, self) if "w" in mode and hit(self.name) else handle

    monkeypatch.setattr(Path, "open", opened)
    return real


def test_a_full_disk_leaves_the_earlier_leaderboard_file_whole(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    assert run_kbc(_run(run, lama_dir), capsys)[0] == 0
    board = tmp_path / "board.csv"
    assert run_kbc(["leaderboard", str(run), "--format", "csv", "--out", str(board)], capsys)[0] == 0
    before = board.read_bytes()
    _full_disk(monkeypatch, lambda name: True)
    line = _one_error(*run_kbc(["leaderboard", str(run), "--format", "csv", "--bootstrap", "50", "--out", str(board)],
                               capsys)[::2])
    assert line == f"error: cannot write --out {board}: No space left on device"
    assert board.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["board.csv"]


def test_a_full_disk_under_summary_md_leaves_no_half_a_summary(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, whole = tmp_path / "out", tmp_path / "whole"
    assert run_kbc(_run(whole, lama_dir), capsys)[0] == 0
    assert run_kbc(_run(out, lama_dir, "--bootstrap", "50"), capsys)[0] == 0
    before = (out / "summary.md").read_bytes()
    real = _full_disk(monkeypatch, lambda name: "summary.md" in name)
    line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])  # rescored: another --bootstrap
    assert line.startswith("error: No space left on device: ") and "summary.md" in line, line
    assert (out / "summary.md").read_bytes() == before
    monkeypatch.setattr(Path, "open", real)
    assert run_kbc(_run(out, lama_dir), capsys)[0] == 0
    assert (out / "summary.md").read_bytes() == (whole / "summary.md").read_bytes()


def test_a_full_disk_under_a_prediction_file_names_it(lama_dir, tmp_path, monkeypatch, capsys):
    """A file object's write fails with `[Errno 28]` and no name: the line names the prediction file."""
    import io

    from bridge.run import record_digests

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))

    class Full(io.BufferedWriter):
        def flush(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_init = record_digests.RecordAppender.__init__

    def opened(self, path):
        real_init(self, path)
        self.data.close()
        self.data = Full(io.FileIO(path, "ab"))

    monkeypatch.setattr(record_digests.RecordAppender, "__init__", opened)
    out = tmp_path / "out"
    line = _one_error(*run_kbc(_run(out, lama_dir), capsys)[::2])
    assert line.startswith(f"error: No space left on device: {out / 'predictions' / 'trex' / 'freq'}/"), line
    assert line.endswith(".jsonl"), line


def test_a_full_disk_under_a_text_index_build_is_one_error_line(tmp_path, monkeypatch, capsys):
    """tantivy's writer threads report a failed write as a ValueError naming no file: one line naming the index
    folder and the disk's state, and nothing of the build kept."""
    import tantivy

    real = tantivy.Index

    class Writer:
        def add_document(self, doc):
            raise ValueError("An error occurred in a thread: 'An index writer was killed.. A worker thread "
                             "encountered an error (io::Error most likely) or panicked.'")

        def rollback(self):
            raise ValueError("An index writer was killed")

    class Index:
        def __init__(self, schema, path):
            self.index = real(schema, path=path)

        def register_tokenizer(self, *args):
            self.index.register_tokenizer(*args)

        def writer(self, **kwargs):
            return Writer()

    monkeypatch.setattr(tantivy, "Index", Index)
    (tmp_path / "p.jsonl").write_text('{"title": "A", "text": "Dante was born in Florence"}\n')
    out = tmp_path / "index"
    line = _one_error(*run_kbc(["-q", "index", "build", "--source", "jsonl", "--input", str(tmp_path / "p.jsonl"),
                                "--out", str(out)], capsys)[::2])
    assert line.startswith(f"error: {out}: the text index could not be written (") and "io::Error" in line, line
    assert line.endswith("; nothing of it was kept"), line
    assert not out.exists() or not list(out.glob("gen-*"))
