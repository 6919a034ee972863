"""Prediction records are scored only as the runner wrote them: each line is checked against the digest the runner
kept of it (`RUN/.kbc-records`); a crash between the two resumes to the scores of an uninterrupted run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bridge.run.record_digests import FOLDER, WIDTH, key_of, line_digest
from bridge.run.runner import RunConfig, run_lama
from eval.errors import ConfigError, DataError

FIX = "delete that file so that the run recomputes it, or use a new --out"
RELATIONS = ["place_of_birth", "place_of_death"]


def _run(out: Path, lama_dir: Path, cache: Path) -> list[dict]:
    return run_lama(RunConfig(["google_re"], ["freq"], out, str(lama_dir), relations=RELATIONS, cache_dir=cache),
                    progress=False)


@pytest.fixture(scope="module")
def untouched(tmp_path_factory, lama_dir) -> Path:
    """A finished run, left as the runner wrote it (tests copy it)."""
    root = tmp_path_factory.mktemp("records")
    _run(root / "run", lama_dir, root / "cache")
    return root / "run"


def _copy(untouched: Path, tmp_path: Path) -> Path:
    shutil.copytree(untouched, tmp_path / "run")
    return tmp_path / "run"


def _file(run: Path, relation: str = "place_of_birth") -> Path:
    return run / "predictions" / "google_re" / "freq" / f"{relation}.jsonl"


def _digests(run: Path, relation: str = "place_of_birth") -> Path:
    return run / FOLDER / "google_re" / "freq" / f"{relation}.digests"


def _scores(run: Path) -> str:
    return (run / "summary.json").read_text(encoding="utf-8")


def test_the_runner_keeps_one_digest_per_line(untouched):
    for relation in RELATIONS:
        lines = _file(untouched, relation).read_bytes().splitlines(keepends=True)
        assert len(lines) == {"place_of_birth": 2937, "place_of_death": 765}[relation]
        key = key_of(_file(untouched, relation))
        assert _digests(untouched, relation).read_bytes() == b"".join(line_digest(raw, key) for raw in lines)


@pytest.mark.parametrize(("kept", "tail"), [(0, b""), (1000, b""), (2936, b""), (1024, b"\0" * 4096)])
def test_a_crash_between_digests_and_lines_resumes_to_the_same_records(untouched, tmp_path, lama_dir, kept, tail):
    """Digests reach the disk first: a crash can leave digests of lines never written (and a torn line), which the
    resume drops before asking those queries again. A power cut can also keep the file's new size without its last
    bytes (zeros where the chunk being written was): the chunks before it were synced."""
    run = _copy(untouched, tmp_path)
    lines = _file(run).read_bytes().splitlines(keepends=True)
    _file(run).write_bytes(b"".join(lines[:kept]) + lines[kept][:40] + tail)  # the digests still cover every line
    (run / ".kbc-summaries").unlink()
    _run(run, lama_dir, tmp_path / "cache")
    assert _file(run).read_bytes() == _file(untouched).read_bytes()
    assert _digests(run).read_bytes() == _digests(untouched).read_bytes()
    assert _scores(run) == _scores(untouched)


def test_a_deleted_record_file_is_recomputed_to_the_same_scores(untouched, tmp_path, lama_dir):
    run = _copy(untouched, tmp_path)
    path = _file(run)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records[3]["rank_raw"] = 1 if records[3].get("rank_raw") != 1 else 2
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(DataError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == f"{path}:4: not the record this run wrote there (changed since); {FIX}"
    path.unlink()  # as the message says
    _run(run, lama_dir, tmp_path / "cache")
    assert path.read_bytes() == _file(untouched).read_bytes()
    assert _scores(run) == _scores(untouched)


def test_lines_without_their_digests_are_refused(untouched, tmp_path):
    from bridge.run.directory import open_run

    run = _copy(untouched, tmp_path)
    _digests(run).unlink()
    with pytest.raises(DataError) as refused:
        list(open_run(run).records("google_re", "freq", "place_of_birth"))
    assert str(refused.value) == f"{_file(run)}:1: a record this run did not write (it wrote 0 lines there); {FIX}"
    path = _digests(run, "place_of_death")
    path.write_bytes(path.read_bytes()[:-WIDTH])  # the last line's digest lost
    with pytest.raises(DataError) as refused:
        list(open_run(run).records("google_re", "freq", "place_of_death"))
    assert str(refused.value) == (f"{_file(run, 'place_of_death')}:765: a record this run did not write (it wrote 764 "
                                  f"lines there); {FIX}")


def test_the_api_and_the_explorer_refuse_an_edited_record(untouched, tmp_path):
    import kbcompare
    from bridge.serve.runs import Runs

    run = _copy(untouched, tmp_path)
    path = _file(run, "place_of_death")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records[-1]["gold"] = records[-1]["answers"][0][0]  # its top answer made the gold
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    expected = f"{path}:765: not the record this run wrote there (changed since); {FIX}"
    for read in (kbcompare.load_run, lambda p: Runs([p])):
        with pytest.raises(DataError) as refused:
            read(run)
        assert str(refused.value) == expected


def test_a_run_written_without_digests_is_not_added_to(untouched, tmp_path, lama_dir):
    run = _copy(untouched, tmp_path)
    shutil.rmtree(run / FOLDER)
    before = _file(run).read_bytes()
    with pytest.raises(ConfigError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == (
        f"{run} holds prediction records written without record digests (by an older kbc, or by hand; "
        "predictions/google_re/freq/place_of_birth.jsonl is one), which a rerun cannot check; use a new --out, or "
        f"delete {run / 'predictions'} so that the run recomputes them")
    assert _file(run).read_bytes() == before and not (run / FOLDER).exists()


def test_records_copied_in_from_another_run_or_another_file_are_refused(untouched, tmp_path, lama_dir):
    """Digests are keyed by the run's own key and the file's place: another run's records, sealed by that run (here
    with an edited gold, as a run over other data writes), and a file moved to another relation's place are refused
    like edited ones; a digests folder without a key (as one was made before keys) is read as it was written."""
    from bridge.run.directory import open_run

    other = tmp_path / "other"
    _run(other, lama_dir, tmp_path / "cache")
    assert _file(other).read_bytes() == _file(untouched).read_bytes()
    assert key_of(_file(other)) != key_of(_file(untouched)) and len(key_of(_file(other))) == 32
    records = _file(other).read_text(encoding="utf-8").splitlines(keepends=True)
    records[0] = records[0].replace('"gold": "', '"gold": "Berlin', 1)
    _file(other).write_text("".join(records), encoding="utf-8")
    key = key_of(_file(other))
    _digests(other).write_bytes(b"".join(line_digest(line.encode(), key) for line in records))
    list(open_run(other).records("google_re", "freq", "place_of_birth"))  # as that run wrote them

    run = _copy(untouched, tmp_path / "mixed")
    shutil.copy(_file(other), _file(run))
    shutil.copy(_digests(other), _digests(run))
    with pytest.raises(DataError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == f"{_file(run)}:1: not the record this run wrote there (changed since); {FIX}"

    moved = _copy(untouched, tmp_path / "moved")
    shutil.copy(_file(moved, "place_of_death"), _file(moved))
    shutil.copy(_digests(moved, "place_of_death"), _digests(moved))
    with pytest.raises(DataError) as refused:
        list(open_run(moved).records("google_re", "freq", "place_of_birth"))
    assert str(refused.value) == f"{_file(moved)}:1: not the record this run wrote there (changed since); {FIX}"

    unkeyed = _copy(untouched, tmp_path / "unkeyed")
    (unkeyed / FOLDER / "key").unlink()
    for relation in RELATIONS:
        lines = _file(unkeyed, relation).read_bytes().splitlines(keepends=True)
        _digests(unkeyed, relation).write_bytes(b"".join(line_digest(raw) for raw in lines))
    _run(unkeyed, lama_dir, tmp_path / "cache")
    assert _scores(unkeyed) == _scores(untouched)


def test_a_damaged_digests_file_is_named_with_the_fix_that_works(untouched, tmp_path, lama_dir):
    """Bytes of a digests file changed, or the file cut: the digests file is named, not the intact records; deleting
    the records file, as said, recomputes both to the same scores."""
    run = _copy(untouched, tmp_path)
    sums, records = _digests(run), _file(run)
    raw = bytearray(sums.read_bytes())
    raw[WIDTH + 3:WIDTH + 5] = b"zz"  # two bytes of line 2 flipped
    sums.write_bytes(bytes(raw))
    fix = f"so the records of {records} cannot be checked; delete {records} so that the run recomputes it and its " \
          "digests, or use a new --out"
    with pytest.raises(DataError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == f"{sums}: damaged (line 2 is no digest), {fix}"
    sums.write_bytes(bytes(raw[:-40]))  # and cut inside a line
    with pytest.raises(DataError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == f"{sums}: damaged (line 2 is no digest), {fix}"
    sums.write_bytes(_digests(untouched).read_bytes()[:-40])
    with pytest.raises(DataError) as refused:
        _run(run, lama_dir, tmp_path / "cache")
    assert str(refused.value) == (f"{sums}: damaged (cut inside digest line 2935, while place_of_birth.jsonl holds "
                                  f"2937 lines), {fix}")
    from bridge.run.directory import open_run

    with pytest.raises(DataError) as refused:
        list(open_run(run).records("google_re", "freq", "place_of_birth"))
    assert str(refused.value) == (f"{sums}: damaged (cut inside digest line 2935, while place_of_birth.jsonl holds "
                                  f"2937 lines), {fix}")
    records.unlink()  # as the message says
    _run(run, lama_dir, tmp_path / "cache")
    assert records.read_bytes() == _file(untouched).read_bytes()
    assert sums.read_bytes() == _digests(untouched).read_bytes()
    assert _scores(run) == _scores(untouched)
