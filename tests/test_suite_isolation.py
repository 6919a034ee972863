"""The suite runs on a cache root of its own (`conftest.pytest_configure`), never the user's."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def test_the_cache_root_is_the_runs_own():
    root = Path(os.environ["KBC_CACHE"])
    assert root.name.startswith("kbc-test-cache-") and root.parent == Path(tempfile.gettempdir())
    assert root.is_dir() and root != Path.home() / ".cache" / "kbcompare"
