"""A resume reads which queries are done off each line's head; it must agree with parsing every record."""

from __future__ import annotations

import json

import pytest

from bridge.run import results
from bridge.run.results import done_uids, read_done
from eval.errors import DataError
from eval.jsonl import write_jsonl_line


def _write(path, uids):
    with path.open("w", encoding="utf-8") as handle:
        for uid in uids:
            write_jsonl_line(handle, {"uid": uid, "relation": "P19", "rank_raw": 1, "rank_filtered": 1})


@pytest.fixture(autouse=True)
def _fresh_cache():
    results._PARSED.clear()


def test_heads_agree_with_the_records(tmp_path):
    path = tmp_path / "P19.jsonl"
    _write(path, ["a", "b-1", "é/ü", "a"])
    assert done_uids(path) == {"a", "b-1", "é/ü"} == set(read_done(path))
    assert done_uids(tmp_path / "none.jsonl") == set()


def test_an_escaped_uid_is_parsed(tmp_path):
    path = tmp_path / "P19.jsonl"
    _write(path, ['say "x"', "back\\slash", "tab\there"])
    assert done_uids(path) == {'say "x"', "back\\slash", "tab\there"}


def test_a_torn_last_line_is_cut_as_before(tmp_path):
    path = tmp_path / "P19.jsonl"
    _write(path, ["a", "b"])
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"uid": "c", "rel')
    assert done_uids(path) == {"a", "b"}
    assert path.read_bytes() == whole


def test_damage_past_the_head_is_named_by_scoring(tmp_path):
    path = tmp_path / "P19.jsonl"
    _write(path, ["a"])
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"uid": "b", "relation": }\n')
    assert done_uids(path) == {"a", "b"}  # done as far as a resume goes
    with pytest.raises(DataError, match=r"P19.jsonl:2: malformed JSON"):
        read_done(path)  # the scoring reads every record
    other = tmp_path / "P20.jsonl"
    other.write_text('["uid", "a"]\n' + json.dumps({"uid": "b", "relation": "P20"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"P20.jsonl:1: a prediction record needs"):
        done_uids(other)  # another head: the file is parsed, and its damage named at once


def test_a_second_record_of_a_uid_unlike_the_first_is_refused(tmp_path):
    """Which copy counts would be a matter of order: neither does. The same record twice is one record."""
    path = tmp_path / "P19.jsonl"
    _write(path, ["a", "b", "a"])
    assert done_uids(path) == {"a", "b"} == set(read_done(path))
    with path.open("a", encoding="utf-8") as handle:
        write_jsonl_line(handle, {"uid": "b", "relation": "P19", "rank_raw": 50, "rank_filtered": 1})
    expected = (f"{path}:4: a second record for uid 'b', unlike the one on line 2; delete that file so that the run "
                "recomputes it, or use a new --out")
    for read in (done_uids, read_done):
        results._PARSED.clear()
        with pytest.raises(DataError) as refused:
            read(path)
        assert str(refused.value) == expected
