"""Folders handed to libraries written in Rust (Oxigraph's graph store, tantivy's text index): they take a path as
UTF-8 text, while Python names files in the locale's encoding. Under a non-UTF-8 locale (`LANG=C` with Python's
UTF-8 mode off, a Latin-1 locale) a folder named outside ASCII would be looked up under other bytes: "damaged",
"no such file", or a traceback; so would a folder whose own name is not UTF-8 under any locale. Such a path is
refused on one line saying what to change."""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path

from eval.errors import ConfigError


def check_native_path(path: Path, what: str, fix: str) -> None:
    """Refuse `path` where its UTF-8 text is not the name the file system has: a non-UTF-8 locale's name outside
    ASCII, or a name whose own bytes are not UTF-8."""
    text = str(path)
    try:
        same = os.fsencode(text) == text.encode("utf-8")
    except UnicodeEncodeError:  # bytes of a name this locale could not decode
        same = False
    if same:
        return
    encoding = codecs.lookup(sys.getfilesystemencoding()).name
    if encoding == "utf-8":  # the name's own bytes are not UTF-8 (a folder named under another encoding)
        raise ConfigError(f"{what} {path} cannot be opened: its name is not UTF-8 text; rename the folder or {fix}")
    raise ConfigError(f"{what} {path} cannot be opened under this locale, whose file names are {encoding}, not "
                      f"UTF-8: its name holds characters outside ASCII; run under a UTF-8 locale (LANG=C.UTF-8) "
                      f"or {fix}")
