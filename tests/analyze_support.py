"""A small real run for the analysis tests: freq, retrieval and a tiny BERT (real vocabulary, random
weights) over a few relations, with a text index over the LAMA evidence paragraphs of those
relations (built here, in seconds).

    from analyze_support import small_run  # noqa: F401  (pytest finds the fixture by name)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_support import run_kbc

RELATIONS = {"trex": ("P463", "P108"), "google_re": ("place_of_death",)}


@dataclass
class SmallRun:
    run: Path
    index: Path
    paragraphs: list
    facts: dict  # corpus -> facts of RELATIONS
    argv: list[str]
    model: Path  # the tiny BERT of the run (predictor `bert`)
    store: Path
    digests: dict[str, str]  # every file of `run` as built: tests write into a copy (`copy_run`), never into it


def file_digests(folder: Path) -> dict[str, str]:
    """Each file under `folder` (relative path) and the SHA-256 of its bytes."""
    import hashlib

    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def copy_run(small: SmallRun, folder: Path) -> Path:
    """A copy of the small run under `folder`, for a command that writes into its run directory."""
    import shutil

    run = folder / "run"
    shutil.copytree(small.run, run)
    return run


def check_pristine(small: SmallRun) -> None:
    """The shared run's files are exactly as built: no test wrote into it (each works on `copy_run`)."""
    assert file_digests(small.run) == small.digests


def call_kbc(argv: list[str]) -> tuple[int, str]:
    """(exit status, stdout + stderr) of `kbc ARGV`, for fixtures wider than one test (no capsys)."""
    from cli_support import run_kbc_captured

    code, text, _ = run_kbc_captured(argv, one_stream=True)
    return code, text


def _subset(corpus, relations):
    from types import SimpleNamespace

    return SimpleNamespace(name=corpus.name, facts=[f for f in corpus.facts if f.relation in relations])


_BUILT: dict[str, SmallRun] = {}


@pytest.fixture(scope="session")
def small_run(lama_dir, tmp_path_factory) -> SmallRun:
    """Built once per session, whichever test module asks first (each module imports the fixture)."""
    if "run" not in _BUILT:
        _BUILT["run"] = _build(lama_dir, tmp_path_factory)
    return _BUILT["run"]


def _build(lama_dir, tmp_path_factory) -> SmallRun:
    from eval.corpora import load_corpus
    from kb.text.index import build_index
    from kb.text.paragraphs import evidence_paragraphs

    root = tmp_path_factory.mktemp("analyze")
    subsets = [_subset(load_corpus(name, lama_dir, rels), rels) for name, rels in RELATIONS.items()]
    paragraphs = evidence_paragraphs(subsets)
    index = root / "index"
    build_index(paragraphs, "tantivy", index).close()
    from lm_fixtures import tiny_model_dir

    model = tiny_model_dir("bert-cased", root)
    run = root / "run"
    argv = ["run", "lama", "--corpus", "trex", "google_re", "--predictors", "freq", "retrieval", f"bert={model}",
            "--relations", *[r for rels in RELATIONS.values() for r in rels], "--limit", "25",
            "--set", f"retrieval.text_index={index}", "--set", "bert.cache=off", "--store", str(root / "store"),
            "--data-dir", str(lama_dir),
            "--out", str(run), "--quiet"]
    code, err = call_kbc(argv)
    assert code == 0, err
    return SmallRun(run, index, paragraphs, {s.name: s.facts for s in subsets}, argv, model, root / "store",
                    file_digests(run))


__all__ = ["small_run", "run_kbc", "call_kbc", "SmallRun", "copy_run", "check_pristine"]


def check_socs_column(small: SmallRun, model: Path, tmp_path: Path) -> None:
    """`kbc analyze stats --embeddings MODEL` on a copy of the run: every fact's SOCS is the cosine of the
    mean input embeddings of its subject and object, as `InputEmbeddings` computes them."""
    import pandas as pd

    from bridge.analysis.stats import InputEmbeddings, cosine

    run = copy_run(small, tmp_path)
    code, out = call_kbc(["analyze", "stats", str(run), "--index", str(small.index), "--embeddings", str(model),
                          "--quiet"])
    assert code == 0, out
    stats = pd.read_parquet(run / "analysis" / "fact_stats.parquet")
    assert stats["socs"].notna().all() and stats["socs"].between(-1, 1).all()
    emb = InputEmbeddings(model)
    fact = next(f for f in small.facts["trex"] if f.uid in set(stats["uid"]))
    expected = cosine(emb.vector(fact.subject.label), emb.vector(fact.object.label))
    assert stats.set_index("uid").loc[fact.uid, "socs"] == pytest.approx(expected, rel=1e-5)
