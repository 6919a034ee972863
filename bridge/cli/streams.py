"""Output that the terminal's encoding cannot hold: under a Latin-1 or other non-UTF-8 locale a label such as
"Kyōto" would end a command with UnicodeEncodeError. Such characters are written as JSON escapes instead (`\\u014d`,
a surrogate pair past U+FFFF), so a text line stays readable and `--json` output stays valid JSON of the same value."""

from __future__ import annotations

import codecs
import io
import sys

ERRORS = "kbc-json-escape"


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    """The characters the codec could not encode, as JSON writes them with `ensure_ascii`."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(ERRORS, _json_escape)


def escape_unencodable() -> None:
    """Let stdout and stderr escape what their encoding cannot hold, instead of raising (UTF-8 streams hold all)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(errors=ERRORS)
