"""Under `-n`, the modules that ask for a costly session fixture run on one worker (conftest's `SHARED_SET_UP`),
so that it is set up once per run: a module that asks for one and is left out of its group sets it up again on
another worker."""

from __future__ import annotations

import ast
from pathlib import Path

import conftest

TESTS = Path(__file__).resolve().parent
# the fixtures of each group: a module whose tests or fixtures take one of them belongs to the group
FIXTURES = {"small_run": {"small_run"}, "served": {"client", "serve_app", "serve_run"}, "wiki_sample": {"wiki_sample"}}
# modules defining a fixture of the same name that is not the shared one
OWN = {"served": {"import serve_support"}}


def _asked(path: Path) -> set[str]:
    """The parameter names of every function the module defines: the fixtures its tests and fixtures take."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for arg in node.args.args}


def _members(group: str) -> set[str]:
    found = set()
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if all(marker in text for marker in OWN.get(group, ())) and _asked(path) & FIXTURES[group]:
            found.add(path.stem)
    return found


def test_every_module_that_asks_for_a_shared_set_up_is_in_its_group():
    assert set(conftest.SHARED_SET_UP) == set(FIXTURES)
    for group, modules in conftest.SHARED_SET_UP.items():
        assert _members(group) == set(modules), group


def test_a_grouped_module_is_scheduled_whole_with_its_group(monkeypatch):
    scope = _scope(monkeypatch)
    assert scope("tests/test_analyze_stats.py::test_x") == scope("tests/test_input_checks.py::test_y") == "small_run"
    assert scope("tests/test_serve_fit.py::test_x") == scope("tests/test_serve_api.py::test_y") == "served"
    assert scope("tests/test_text_cooccur.py::test_x") == scope("tests/test_text_contract.py::t") == "wiki_sample"
    assert scope("tests/test_report.py::test_x") == "tests/test_report.py"  # a module of SET_UP_ONCE: whole
    assert scope("tests/test_metrics.py::test_x") == "tests/test_metrics.py::test_x"  # any other: test by test


def _scope(monkeypatch):
    """The scope conftest's scheduler gives a test id, read without an xdist session (its base class stubbed)."""
    from types import SimpleNamespace

    import xdist.scheduler

    class Stub:
        def __init__(self, config, log) -> None:
            pass

    monkeypatch.setattr(xdist.scheduler, "LoadScopeScheduling", Stub)
    return conftest.pytest_xdist_make_scheduler(SimpleNamespace(getvalue=lambda name: "load"), None)._split_scope
