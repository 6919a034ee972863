"""Values users type (flags, `--set` values, `retrieved:K`), read strictly.

Python's `int()` and `float()` also take ` 3`, `1_0`, `٣` (any Unicode digit), `nan` and `inf`, and
`Path("")` is the current folder. As option values these are typos or look-alikes, and two spellings
of one number would give one run two identities; every number and path a user types goes through
these functions instead.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def strict_int(text: str) -> int:
    """`text` as an integer: ASCII digits, a minus sign at most before them; ValueError otherwise."""
    if not isinstance(text, str) or not _INT.fullmatch(text):
        raise ValueError(f"not a whole number: {text!r}")
    return int(text)


def strict_float(text: str) -> float:
    """`text` as a finite number in ASCII decimal notation (`0.5`, `3`, `1e-3`); ValueError otherwise."""
    if not isinstance(text, str) or not _FLOAT.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise ValueError(f"not a finite number: {text!r}")
    return value


def strict_path(text: str) -> Path:
    """`text` as a path; an empty text (which `Path` reads as the current folder) is a ValueError."""
    if not isinstance(text, str) or not text.strip() or "\0" in text:
        raise ValueError(f"not a path: {text!r}")
    return Path(text)
