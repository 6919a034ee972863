"""JSONL reading that names the file and line of anything malformed, and typed field access.

Every failure a data file can cause (not UTF-8, unreadable, a directory, malformed JSON, a field of
the wrong JSON type) is a DataError naming the file and, where there is one, the line.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.durable import write_atomic
from eval.errors import DataError, KbcError, MissingData
from eval.file_names import NAME_BYTES

QID = re.compile(r"Q[1-9][0-9]*")  # a Wikidata item id
_JSON_TYPES = {str: "a string", bool: "a boolean", int: "a number", float: "a number", list: "an array",
               dict: "an object", type(None): "null"}


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def json_error(exc: json.JSONDecodeError, line: str) -> str:
    """The decoder's message with the place on the one line it read (its own text ends in "at" where the place
    follows): the column, or the end of the line where the text stopped too early."""
    at = "" if exc.msg.endswith(" at") else " at"
    where = "the end of the line" if exc.pos >= len(line.rstrip("\r\n")) else f"column {exc.pos + 1}"
    return f"{exc.msg}{at} {where}"


def refuse_special(path: Path, where: str, what: str = "file") -> None:
    """A DataError where `path` is a named pipe, socket or device: reading one waits for a writer that may never
    come, so a run would hang instead of naming the file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # missing or unreadable: the open that follows names it
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError(f"{where}: not a regular file (a named pipe, socket or device), expected a {what}")


def open_binary(path: Path, what: str = "file"):
    """`path` opened for reading; a missing, unreadable, special or directory path is a one-line DataError."""
    refuse_special(path, str(path), what)
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise MissingData(f"{path}: file not found") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a {what}") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def read_text(path: Path, where: str) -> str:
    """A whole UTF-8 text file, less a leading byte-order mark (editors on Windows write one, and it would stick to
    the first word, field or header); bytes that are not UTF-8 or an unreadable file are a DataError naming `where`."""
    refuse_special(path, where, "text file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{where}: cannot read it ({exc.strerror or exc})") from None


def read_jsonl(path: Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object); blank lines are skipped, bad lines raise DataError."""
    handle = open_binary(path, "JSONL file")
    empty = True
    with handle:
        lineno = 0
        while True:
            try:
                raw = handle.readline()
            except OSError as exc:
                raise DataError(f"{path}: cannot read it ({exc.strerror or exc})") from None
            if not raw:
                break
            lineno += 1
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{lineno}: not UTF-8 text (byte {raw[exc.start]:#04x} at column "
                                f"{exc.start + 1})") from None
            if not line.strip():
                continue
            empty = False
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                if "\r" in line.rstrip("\r\n"):  # lines ending in CR alone (classic Mac OS) read as one line
                    raise DataError(f"{path}:{lineno}: malformed JSON: lines end in a carriage return alone; save "
                                    "the file with LF (or CRLF) line ends") from None
                raise DataError(f"{path}:{lineno}: malformed JSON ({json_error(exc, line)})") from None
            except RecursionError:
                raise DataError(f"{path}:{lineno}: malformed JSON (nested too deeply)") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {json_type(row)}")
            check_no_lone_surrogate(row, line, f"{path}:{lineno}")
            missing = [k for k in required if k not in row]
            if missing:
                raise DataError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
            yield lineno, row
    if empty:
        raise DataError(f"{path}: file is empty")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_no_lone_surrogate(value: Any, text: str, where: str) -> None:
    """A DataError where JSON `text` escapes half of a UTF-16 pair (`\\ud800` without its partner): Python reads it as
    a string no UTF-8 file can hold, so writing a record, a digest or a page of it would fail midway. Only text
    holding such an escape is walked."""
    if not _SURROGATE_ESCAPE.search(text):
        return
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str) and (found := _SURROGATE.search(item)):
            raise DataError(f"{where}: {found.group()!r} escapes half of a UTF-16 surrogate pair, which is no "
                            "character; write the character itself (or both halves of its pair)")


def opt_str(row: dict, key: str, where: str) -> str | None:
    """A string field that may be absent, null or empty (then None); any other type is a DataError."""
    value = row.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise DataError(f"{where}: field {key!r} must be a string, got {json_type(value)}")
    return value


def opt_qid(row: dict, key: str, where: str) -> str | None:
    """A Wikidata item id field (Q123) that may be absent or null (then None). Facts are told apart and matched
    by these ids, so an empty string or any other text is a DataError rather than an id nothing else carries."""
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(f"{where}: field {key!r} must be a string, got {json_type(value)}")
    if not QID.fullmatch(value):
        got = "an empty string" if not value else repr(value)
        raise DataError(f"{where}: field {key!r} must be a Wikidata id such as Q123 (or null where there is none), "
                        f"got {got}")
    return value


def req_str(row: dict, key: str, where: str) -> str:
    """A string field that must be present and not blank."""
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        got = "missing" if key not in row else "empty" if isinstance(value, str) else json_type(value)
        raise DataError(f"{where}: field {key!r} must be a non-empty string, got {got}")
    return value


def opt_list(row: dict, key: str, where: str, item: type = str) -> list:
    """A list field whose entries are all of type `item` (str or dict); absent or null gives []."""
    value = row.get(key)
    if value is None:
        return []
    name = "strings" if item is str else "objects"
    if not isinstance(value, list):
        raise DataError(f"{where}: field {key!r} must be an array of {name}, got {json_type(value)}")
    bad = next((v for v in value if not isinstance(v, item)), _NOTHING)
    if bad is not _NOTHING:
        raise DataError(f"{where}: field {key!r} must be an array of {name}, got an entry that is {json_type(bad)}")
    return value


_NOTHING = object()


# `json.dumps`'s output, from one encoder made once: a run writes a line per query. Records are trees built by
# the runner, so the encoder does not look for reference cycles (a walk over every list and dict of each line).
_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False)


def jsonl_text(row: dict, into: str | None = None) -> str:
    """One JSON line with its newline; NaN and infinity are refused (bare `NaN` is not JSON and would be no
    score). `into` names the file it is meant for."""
    try:
        return _LINE_ENCODER.encode(row) + "\n"
    except ValueError:
        where = f" into {into}" if into else ""
        raise KbcError(f"cannot write a record holding NaN or infinity{where} (uid {row.get('uid')!r}); "
                       "it is not JSON") from None


def write_jsonl_line(handle, row: dict) -> None:
    name = getattr(handle, "name", None)
    handle.write(jsonl_text(row, name if isinstance(name, str) else None))


def write_json(path: Path, obj) -> None:
    """Write JSON atomically and durably: a reader, and the disk after a power cut, hold the old file or the new one,
    never half of it."""
    try:
        # a path Python could not decode (eval.file_names) stays UTF-8 JSON
        write_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str).encode("utf-8", NAME_BYTES),
                     path.with_suffix(path.suffix + ".tmp"))
    except OSError as exc:  # a full or read-only disk: name the file, leave no half-written copy
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
