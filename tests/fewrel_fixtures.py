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


def trex_rows(folder: Path, relation: str, rows: list[tuple[str, str, str, str]]) -> None:
    """`folder/TREx/<relation>.jsonl` holding (subject id, subject label, object id, object label) facts."""
    (folder / "TREx").mkdir(parents=True, exist_ok=True)
    (folder / "TREx" / f"{relation}.jsonl").write_text("".join(
        json.dumps({"uuid": f"{relation}-{i}", "sub_uri": s, "sub_label": sl, "obj_uri": o, "obj_label": ol,
                    "predicate_id": relation}) + "\n" for i, (s, sl, o, ol) in enumerate(rows)), encoding="utf-8")


MILLAIS = ("Q159606", "John Everett Millais", "Q184814", "Pre-Raphaelite Brotherhood")  # P463, test sentence P463:2
HAWAII = ("Q68740", "island of Hawaii", "Q2529053", "Pāhoa")  # P527: its inverse is test sentence P361:1


def kb_slice(shared_data: Path, data: Path) -> Path:
    """`data/` holding a FewRel slice of three test sentences (P361:1, P364:6, P463:2) and beside it a LAMA copy
    whose T-REx holds two facts: Millais member of (P463) the Pre-Raphaelite Brotherhood and island of Hawaii has
    part (P527) Pāhoa."""
    fewrel_slice(shared_data, data, per_relation=10, relations=("P361", "P364", "P463"))
    lama = data / "lama"
    lama.mkdir()
    (lama / "relations.jsonl").write_text((shared_data / "lama" / "relations.jsonl").read_text(encoding="utf-8"),
                                          encoding="utf-8")
    trex_rows(lama, "P463", [MILLAIS])
    trex_rows(lama, "P527", [HAWAII])
    return data
