"""Per-query prediction files: appended as answers arrive, read back to resume and to score."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bridge.run.record_digests import FIX, check_lines, digests_path
from eval.answer_text import GENERATED
from eval.errors import DataError
from eval.jsonl import refuse_special
from eval.metrics import Ranked
from eval.relations import slug
from eval.types import SCORE_DIGITS, TOP_SAVED, Answer, answer_rows


def saved_answers(answers: Sequence[Answer], used: Iterable[int | None] = (), shared_ties: bool = False,
                  top: int = TOP_SAVED) -> list[list]:
    """The `[label, score, id]` rows a record keeps: the top `top` answers, holding every answer its verdict uses
    (positions `used` in `answers`, the most important first).

    Where ties are shared (`Prediction.shared_ties`) the order among equal scores means nothing, so each used answer
    goes first among its equals (after the used ones named before it): a gold counted at its tie group's first
    place is saved there, not behind ten namesakes. A used answer still below the top extends the list down to it.
    No answer moves above one of a higher score and no score changes."""
    picked = list(dict.fromkeys(u for u in used if u is not None and 0 <= u < len(answers)))
    if not picked:  # the top as ranked (a run writes one list per query)
        return answer_rows(answers, top)
    order = list(range(len(answers)))
    if shared_ties and picked:
        first_of_group: list[int] = []
        for i, a in enumerate(answers):
            first_of_group.append(first_of_group[-1] if i and answers[i - 1].score == a.score else i)
        pinned = {u: k for k, u in enumerate(picked)}
        order.sort(key=lambda i: (first_of_group[i], i not in pinned, pinned.get(i, i)))
    at = {i: k for k, i in enumerate(order)}
    keep = max(top, *(at[u] + 1 for u in picked))
    return [[answers[i].label, round(answers[i].score, SCORE_DIGITS), answers[i].id] for i in order[:keep]]


def predictions_path(out: Path, corpus: str, predictor: str, relation: str, stage: str = "") -> Path:
    """`predictions/<corpus>/<predictor>/[<stage>/]<relation>.jsonl` (one-stage experiments have no stage folder)."""
    folder = out / "predictions" / corpus / slug(predictor)
    return (folder / stage if stage else folder) / f"{slug(relation)}.jsonl"


def record_layout(stages: tuple[str, ...]) -> str:
    """Where an experiment of these stages (`Experiment.stages`) writes its records, as a user finds them."""
    named = [s for s in stages if s]
    folder = "predictions/<corpus>/<predictor>/"
    if not named:
        return f"{folder}<relation>.jsonl"
    if "" in stages:  # a stage of records under the predictor folder, others in stage folders beside them
        return f"{folder}<relation>.jsonl ({', '.join(f'{s} stage: {s}/<relation>.jsonl' for s in named)})"
    return f"{folder}{'|'.join(named)}/<relation>.jsonl"


# fields the scorers compute with, and the types they must have
_INT_OR_NULL = ("rank_raw", "rank_filtered", "rank_exact_raw", "rank_exact_filtered", "round")
_BOOLS = ("symmetric", "first_correct", "second_correct", "same_as_first", "coherent", "correct")
_LISTS = ("answers", "excluded", "other_valid")
_NUMBERS = ("f1", "em")


def _int_or_null(v) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_CHECKS = {**dict.fromkeys(_INT_OR_NULL, _int_or_null), **dict.fromkeys(_BOOLS, lambda v: isinstance(v, bool)),
           **dict.fromkeys(_LISTS, lambda v: isinstance(v, list)), **dict.fromkeys(_NUMBERS, _number)}
_CHECKED = frozenset(_CHECKS)


class _NonFinite(ValueError):
    """A bare NaN, Infinity or -Infinity (Python's json reads them; they are not JSON)."""


def _no_constant(name: str) -> float:
    raise _NonFinite(name)


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # one for all lines: `json.loads` would build one each


def parse_record(path: Path, lineno: int, raw: bytes) -> dict:
    """One complete line of a predictions file (`_complete_lines` leaves out a torn last one), checked.

    A complete line that does not parse, or whose fields have the wrong types, is damage, not a
    crash mid-write: scoring around it would change the numbers, so it is an error naming the line.
    """
    # what json.loads does; a line beginning `{"` is UTF-8 to `json.detect_encoding` (no BOM, no zero byte)
    encoding = "utf-8" if raw.startswith(b'{"') else json.detect_encoding(raw)
    try:
        record = _DECODER.decode(raw.decode(encoding, "surrogatepass"))
    except _NonFinite:
        raise DataError(f"{path}:{lineno}: holds NaN or infinity, which is no score (and not JSON); {FIX}") from None
    except ValueError as exc:
        raise DataError(f"{path}:{lineno}: malformed JSON ({exc.__class__.__name__}); {FIX}") from None
    if not isinstance(record, dict) or not isinstance(record.get("uid"), str) \
            or not isinstance(record.get("relation"), str):
        raise DataError(f"{path}:{lineno}: a prediction record needs string 'uid' and 'relation'; {FIX}")
    wrong = [key for key in _CHECKED.intersection(record) if not _CHECKS[key](record[key])]
    if wrong:
        key = min(wrong, key=list(_CHECKS).index)  # the first in the order above, whatever the set order
        raise DataError(f"{path}:{lineno}: field {key!r} has the wrong type ({record[key]!r}); {FIX}")
    return record


# path -> (what os.stat said of it and of its digests, records by uid, bytes of complete lines): a command reads
# each predictions file once, however many steps (resume, scoring, the instances table) look at it; any write
# changes the stat and the file is parsed again
_PARSED: dict[str, tuple[tuple, dict[str, dict], int]] = {}
_PARSED_MAX_RECORDS = 1_000_000  # a long-lived process (kbc serve) forgets them all past this


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _file_key(path: Path) -> tuple | None:
    """What os.stat says of a predictions file and of its digests; None when there is no file."""
    try:
        key = _stat_key(path.stat())
    except FileNotFoundError:
        return None
    sums = digests_path(path)
    try:
        return key, _stat_key(sums.stat()) if sums is not None else None
    except FileNotFoundError:
        return key, None


def _complete_lines(path: Path) -> list[tuple[int, bytes]]:
    """Each complete line of a predictions file with its number, up to a torn last line (no newline: a crash
    mid-write), which readers cut off; checked against the digests the runner kept of what it wrote."""
    refuse_special(path, str(path), "predictions file")  # a pipe would wait for a writer: once per file read
    with path.open("rb") as handle:
        lines = list(enumerate(handle, 1))
    if lines and not lines[-1][1].endswith(b"\n"):
        lines.pop()
    check_lines(path, lines)
    return lines


def _duplicate(path: Path, lineno: int, uid: str, first: int) -> DataError:
    return DataError(f"{path}:{lineno}: a second record for uid {uid!r}, unlike the one on line {first}; {FIX}")


def _parsed(path: Path) -> tuple[dict[str, dict], int, int]:
    """(records by uid, bytes of complete lines, file size); ({}, 0, -1) when there is no file."""
    key = _file_key(path)
    if key is None:
        return {}, 0, -1
    cached = _PARSED.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1], cached[2], key[0][1]
    done: dict[str, dict] = {}
    first: dict[str, int] = {}
    good_bytes = 0
    lines = _complete_lines(path)
    for lineno, raw in lines:
        record = parse_record(path, lineno, raw)
        uid = record["uid"]
        if uid in first:
            if lines[first[uid] - 1][1] != raw:  # the same record twice is one record
                raise _duplicate(path, lineno, uid, first[uid])
        else:
            first[uid] = lineno
        done[uid] = record
        good_bytes += len(raw)
    if sum(len(v[1]) for v in list(_PARSED.values())) + len(done) > _PARSED_MAX_RECORDS:  # runs in other threads add
        _PARSED.clear()
    _PARSED[str(path)] = (key, done, good_bytes)
    return done, good_bytes, key[0][1]


def forget_records(out: str | Path) -> None:
    """Drop what was parsed of the run directory `out`'s predictions: a process that goes on to other runs (the
    Python API in a notebook or a sweep) would otherwise keep every run's records, up to `_PARSED_MAX_RECORDS` (about
    5 GB of them)."""
    root = Path(out).resolve()
    for key in list(_PARSED):
        if Path(key).resolve().is_relative_to(root):
            _PARSED.pop(key, None)


def complete_records(path: Path) -> dict[str, dict]:
    """The complete records of a predictions file by uid, read without changing it; a line the runner did not
    write there (`bridge.run.record_digests`), or a second record of a uid unlike the first, is refused.

    Parsed once per version of the file and shared between callers, who must not modify them.
    """
    return _parsed(path)[0]


def check_records(out: Path) -> None:
    """Refuse, naming the file and line, a run directory holding a record its runner did not write."""
    folder = out / "predictions"
    for path in sorted(folder.rglob("*.jsonl")) if folder.is_dir() else ():
        complete_records(path)


def read_done(path: Path) -> dict[str, dict]:
    """Records already written, by query uid. A torn last line (crash mid-write) is cut off."""
    done, good_bytes, size = _parsed(path)
    if good_bytes < size:
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
        _PARSED[str(path)] = (_file_key(path), done, good_bytes)
    return dict(done)


_UID_HEAD = b'{"uid": "'  # how every record the runner writes begins (`write_jsonl_line` keeps key order)


def done_uids(path: Path) -> set[str]:
    """The uids `read_done` would give, read off each line's head without parsing the records (a rerun with
    nothing left to ask needs no more), each line checked against its digest. A line this cannot read plainly
    (another head, an escaped uid) has the whole file parsed as `read_done` does; a torn last line is cut off the
    same way. Damage further into a line is left to the scoring, which reads every record and names the line."""
    cached = _PARSED.get(str(path))
    key = _file_key(path)
    if key is None:
        return set()
    if cached is not None and cached[0] == key:
        return set(read_done(path))
    first: dict[str, int] = {}
    good_bytes = 0
    lines = _complete_lines(path)
    for lineno, raw in lines:
        end = raw.find(b'"', len(_UID_HEAD))
        if not raw.startswith(_UID_HEAD) or end < 0 or b"\\" in raw[len(_UID_HEAD):end] \
                or not raw.rstrip().endswith(b"}"):
            return set(read_done(path))
        uid = raw[len(_UID_HEAD):end].decode("utf-8", "surrogatepass")
        if uid in first and lines[first[uid] - 1][1] != raw:
            raise _duplicate(path, lineno, uid, first[uid])
        first.setdefault(uid, lineno)
        good_bytes += len(raw)
    if good_bytes < key[0][1]:
        return set(read_done(path))  # the torn last line: cut off there, as a resume always did
    return set(first)


def to_ranked(record: dict) -> Ranked:
    return Ranked(record["relation"], record["rank_raw"], record["rank_filtered"],
                  record.get("rank_exact_raw"), record.get("rank_exact_filtered"))


def right(record: dict, setting: str) -> bool:
    """A fact answered right: the gold ranked 1st, or (an answer written by generation) the answer is the gold."""
    return bool(record.get(f"em_{setting}")) if GENERATED in record else record.get(f"rank_{setting}") == 1
