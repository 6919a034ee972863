"""Everyday commands do not load libraries only other commands need (each costs a second or more)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("module", "absent"), [
    ("kb.extraction.kb_build", "sklearn"),  # `kbc kb stats` names the extracted graphs; extraction trains
    ("bridge.run.fact_columns", "pandas"),  # `kbc compare` names the per-fact files to check they are current
    ("bridge.run.freshness", "pandas"),
    ("bridge.run.runner", "oxrdflib"),  # rdflib's SPARQL engine: a run whose predictors read no graph opens no store
])
def test_module_does_not_load(module, absent):
    code = f"import sys, {module}; print({absent!r} in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
