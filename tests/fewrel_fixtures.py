"""A small FewRel slice (the first sentences of a few relations of the staged file) and wikipedia2vec vectors for
its entities, for the FewRel tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eval.fewrel import DATA_FILE, NAMES_FILE

RELATIONS = ("P177", "P364", "P2094")


def fewrel_slice(shared_data: Path, out: Path, per_relation: int = 20, relations=RELATIONS) -> Path:
    """`out/fewrel/` holding `per_relation` sentences of each relation (and the names file)."""
    source = shared_data / "fewrel"
    data = json.loads((source / DATA_FILE).read_text(encoding="utf-8"))
    folder = out / "fewrel"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DATA_FILE).write_text(json.dumps({r: data[r][:per_relation] for r in relations}), encoding="utf-8")
    (folder / NAMES_FILE).write_text((source / NAMES_FILE).read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def entity_vectors(folder: Path, out: Path, vocab: dict[str, int], dim: int = 32, skip_every: int = 3) -> Path:
    """A wikipedia2vec `.npz`: random vectors for common whole-word tokens of `vocab` (to fit the map) and for
    the slice's entity mentions, except every `skip_every`-th title (those fall back to word pieces)."""
    from eval.fewrel import read_sentences
    from lm.entities.embeddings import EntityEmbeddings, save_npz

    titles = sorted({e.label for s in read_sentences(folder / DATA_FILE) for e in (s.head, s.tail)})
    titles = [t for i, t in enumerate(titles) if i % skip_every]
    words = sorted(t for t in vocab if t.isalpha() and not t.startswith("##"))[:400]
    rng = np.random.default_rng(0)
    emb = EntityEmbeddings(words, rng.normal(size=(len(words), dim)).astype(np.float32), titles,
                           rng.normal(size=(len(titles), dim)).astype(np.float32), lowercase=False)
    return save_npz(emb, out / "w2v.npz")
