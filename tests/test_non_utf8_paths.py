"""Folders named outside ASCII (`données`) under a locale whose file names are not UTF-8 (`LANG=C` with Python's
UTF-8 mode off, a Latin-1 locale): the per-fact table is written and read there like every other file of the run,
and the folder's name is recorded and printed as the file system has it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd

# file names in ASCII, surrogate-escaped past it: what Python does under a C locale not coerced to UTF-8
ASCII_NAMES = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


def _kbc(argv: list[str], cache, names: dict[str, str] = ASCII_NAMES) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "LANG"}, **names, "KBC_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "bridge.cli", *argv], capture_output=True, timeout=300, env=env)


def test_run_and_compare_in_a_folder_named_outside_ascii(lama_dir, tmp_path):
    out = tmp_path / "données é" / "run"
    done = _kbc(["-q", "run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "30", "--predictors",
                 "freq", "again=freq", "--data-dir", str(lama_dir), "--out", str(out)], tmp_path / "cache")
    assert done.returncode == 0, done.stderr.decode()
    assert f"written: {out}/summary.md".encode() in done.stdout
    assert str(out) in json.loads((out / "config.json").read_text(encoding="utf-8"))["runs"][0]["argv"]
    frame = pd.read_parquet(out / "instances.parquet")
    assert len(frame) == 60 and frame.loc[frame.predictor == "freq", "correct_raw"].sum() > 0
    done = _kbc(["compare", str(out), "freq", "again", "--json"], tmp_path / "cache")
    assert done.returncode == 0, done.stderr.decode()
    done = _kbc(["report", str(out), "--out", str(tmp_path / "données é" / "report")], tmp_path / "cache")
    assert done.returncode == 0, done.stderr.decode()
    assert str(out) in (tmp_path / "données é" / "report" / "report.md").read_text(encoding="utf-8")


def test_graph_store_in_such_a_folder_is_refused_on_one_line(lama_dir, tmp_path):
    """Oxigraph takes its folder's name as UTF-8 text: it would look elsewhere (a store reported damaged) or fail."""
    done = _kbc(["run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "10", "--predictors", "kb",
                 "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], tmp_path / "cache é")
    assert done.returncode == 2, done.stderr.decode()
    (line,) = [x for x in done.stderr.decode("utf-8", "replace").splitlines() if x.startswith(("error", "Trace"))]
    assert line.startswith("error: the graph store ") and "LANG=C.UTF-8" in line and "KBC_CACHE=DIR" in line


def test_a_folder_named_in_latin1_under_a_utf8_locale(lama_dir, tmp_path):
    """A name that is not UTF-8 (copied from an older system): config.json stays UTF-8 JSON that reads back as the
    name Python has for it, and a rerun resumes."""
    out = tmp_path / os.fsdecode(b"caf\xe9") / "run"
    argv = ["-q", "run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "20", "--predictors", "freq",
            "--data-dir", str(lama_dir), "--out", str(out)]
    for _ in range(2):
        done = _kbc(argv, tmp_path / "cache", {"LC_ALL": "C.UTF-8"})
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        assert os.fsencode(f"written: {out}/summary.md") in done.stdout
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert [run["argv"][-1] for run in config["runs"]] == [str(out), str(out)]


def test_graph_store_in_a_folder_named_in_latin1_is_refused_on_one_line(lama_dir, tmp_path):
    cache = tmp_path / os.fsdecode(b"cach\xe9")
    done = _kbc(["run", "lama", "--corpus", "trex", "--relations", "P103", "--limit", "10", "--predictors", "kb",
                 "--data-dir", str(lama_dir), "--out", str(tmp_path / "run")], cache, {"LC_ALL": "C.UTF-8"})
    assert done.returncode == 2, done.stderr.decode("utf-8", "replace")
    (line,) = [x for x in done.stderr.decode("utf-8", "replace").splitlines() if x.startswith(("error", "Trace"))]
    assert line.startswith("error: the graph store ") and "its name is not UTF-8 text; rename the folder" in line


def test_the_per_fact_table_is_written_through_the_open_file_whatever_pandas_does_with_it(tmp_path, monkeypatch):
    """pandas 2.1 hands pyarrow an open file's name rather than the file: a name with bytes outside UTF-8 (what a
    C locale gives) then fails to encode. The table is written through the file, with the bytes pandas writes."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bridge.run.parquet_files import read_frame, write_frame

    frame = pd.DataFrame({"uid": ["a", "b"], "p@1": [1.0, 0.0]})
    expected = io.BytesIO()
    frame.to_parquet(expected, index=False, engine="pyarrow")

    def by_name(self, handle, **kwargs):  # pandas 2.1's write: the name of an open file, not the file
        pq.write_table(pa.Table.from_pandas(self, preserve_index=False), getattr(handle, "name", handle))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", by_name)
    path = tmp_path / os.fsdecode(b"donn\xe9es.parquet")
    write_frame(frame, path)
    assert path.read_bytes() == expected.getvalue()
    assert read_frame(path).equals(frame)
