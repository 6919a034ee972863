"""The RE extraction over the whole of Google-RE (a minute of CPU), computed once per test run: the tests that need
it read the cached extraction, in a folder the run's worker processes share, and still fill their own store."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from test_entities_support import _one_builder, _workdir


@functools.cache
def google_re_extraction(lama_dir: Path) -> Path:
    """The cache folder where `ensure_re_kb` wrote the whole Google-RE extraction (`re/google_re-….json.gz`)."""
    from eval.corpora import load_corpus
    from kb.extraction.kb_build import cache_path, ensure_re_kb
    from kb.store import GraphStore

    cache = _workdir() / "re-google_re"
    with _one_builder("re-google_re"):
        corpus = load_corpus("google_re", lama_dir)
        if not cache_path(cache, corpus).is_file():
            with GraphStore.open(None) as store:
                ensure_re_kb(store, corpus, cache, progress=False)
    return cache


def seed_extraction(lama_dir: Path, cache_dir: Path) -> Path:
    """`cache_dir` given the extraction alone (no build report): a build there skips the extraction but still
    writes the graphs and its report. Returns the extraction's path there."""
    from eval.corpora import load_corpus
    from kb.extraction.kb_build import cache_path

    corpus = load_corpus("google_re", lama_dir)
    target = cache_path(cache_dir, corpus)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache_path(google_re_extraction(lama_dir), corpus), target)
    return target
