"""Errors a user can act on. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


class KbcError(Exception):
    """Base class for user-facing errors (bad input, missing data, bad configuration)."""


class DataError(KbcError):
    """Input data is missing or malformed; the message names the file (and line) or the fix."""


class MissingData(DataError):
    """A corpus, folder or file that is not there (as against one that is there and malformed): where a command can
    tell which flag reads the folder given, it says so beside it."""


class ConfigError(KbcError):
    """A command-line or run configuration that cannot work."""


@contextmanager
def naming(path: str | os.PathLike) -> Iterator[None]:
    """An OSError raised without a file name by a library writing `path` (pyarrow's "Error writing bytes to file",
    Pillow's `[Errno 28]`) raised again naming it, so that the `error:` line says which file a full disk refused."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or not exc.errno:
            raise
        raise OSError(exc.errno, os.strerror(exc.errno), str(path)) from exc
