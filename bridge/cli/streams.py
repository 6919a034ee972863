"""Output that the terminal's encoding cannot hold: under a Latin-1 or other non-UTF-8 locale a label such as
"Kyōto" would end a command with UnicodeEncodeError. Such characters are written as JSON escapes instead (`\\u014d`,
a surrogate pair past U+FFFF), so a text line stays readable and `--json` output stays valid JSON of the same value.
A file name Python read under a C locale holds the bytes it could not decode as surrogates (U+DC80-U+DCFF): those
go out as the bytes they stand for, the name as the file system has it."""

from __future__ import annotations

import codecs
import io
import sys

from eval.file_names import escaped_bytes

ERRORS = "kbc-json-escape"


def _json_escape(exc: UnicodeError) -> tuple[str | bytes, int]:
    """The characters the codec could not encode, as JSON writes them with `ensure_ascii`; escaped bytes as such."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    raw = escaped_bytes(text)
    if raw is not None:
        return raw, exc.end
    out = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(ERRORS, _json_escape)


def escape_unencodable() -> None:
    """Let stdout and stderr escape what their encoding cannot hold, instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            ascii_only = codecs.lookup(stream.encoding).name == "ascii"  # click would swap in its own UTF-8 writer
            stream.reconfigure(encoding="utf-8" if ascii_only else None, errors=ERRORS)
