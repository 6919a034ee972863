"""What `help()` shows of the Python API: every parameter of its functions and constructors typed (the types
resolve, as an editor or a type checker reads them), and every attribute of its result objects described."""

from __future__ import annotations

import functools
import inspect
import typing

import pytest

import kbcompare

CALLABLES = [
    kbcompare.run,
    kbcompare.load_run,
    kbcompare.compare,
    kbcompare.leaderboard,
    kbcompare.ask,
    kbcompare.experiments,
    kbcompare.Sides.__init__,
    kbcompare.Sides.ask,
    kbcompare.Run.table,
]


@pytest.mark.parametrize("function", CALLABLES, ids=lambda f: f.__qualname__)
def test_every_parameter_is_typed(function):
    hints = typing.get_type_hints(function)
    names = [p.name for p in inspect.signature(function).parameters.values() if p.name != "self"]
    assert [name for name in names if name not in hints] == []
    assert function.__name__ == "__init__" or "return" in hints


@pytest.mark.parametrize("cls", [kbcompare.Run, kbcompare.Answers])
def test_every_attribute_is_described(cls):
    found = {
        name: attr
        for name, attr in vars(cls).items()
        if not name.startswith("_") and isinstance(attr, property | functools.cached_property)
    }
    assert found
    assert [name for name, attr in found.items() if not (inspect.getdoc(attr) or "").strip()] == []
