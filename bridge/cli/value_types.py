"""Number options: click's number types, reading the text through `eval.user_values`.

click converts with `int()` and `float()`, which take ` 3`, `1_0`, `٣`, `nan` and `inf`; every
number flag of `kbc` uses these types instead, so a number is written one way everywhere.
"""

from __future__ import annotations

import click

from eval.user_values import strict_float, strict_int, strict_path


class _Strict:
    """Reads text with `parse` before the click type checks its range; values that are numbers pass."""

    parse = staticmethod(strict_int)
    what = "integer"
    example = "3"

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            try:
                value = self.parse(value)
            except ValueError:
                self.fail(f"{value!r} is not a valid {self.what}; write it in ASCII digits, e.g. {self.example}",
                          param, ctx)
        return super().convert(value, param, ctx)


class _StrictFloat(_Strict):
    parse = staticmethod(strict_float)
    what = "number"
    example = "0.5"


class Int(_Strict, click.types.IntParamType):
    """`type=int`, strictly."""


class IntRange(_Strict, click.IntRange):
    """`click.IntRange`, strictly."""


class Float(_StrictFloat, click.types.FloatParamType):
    """`type=float`, strictly (no nan or inf)."""


class FloatRange(_StrictFloat, click.FloatRange):
    """`click.FloatRange`, strictly (no nan or inf)."""


class PathType(click.Path):
    """`click.Path`, refusing an empty value (`Path("")` is the current folder, never what was meant)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            try:
                strict_path(value)
            except ValueError:
                self.fail(f"{value!r} is no path; give a file or folder name", param, ctx)
        return super().convert(value, param, ctx)
