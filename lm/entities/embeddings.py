"""wikipedia2vec word and entity vectors, loaded from the library's `.pkl` or the word2vec text format.

Both formats end up as one `EntityEmbeddings`: plain NumPy matrices plus title/word lookups, so the
rest of the package never depends on how the vectors were stored. The text format is what the
wikipedia2vec project publishes (`enwiki_20180420_300d.txt`): a `N D` header line, then one
`token v1 … vD` line per item, entities written `ENTITY/Title_with_underscores`.
"""

from __future__ import annotations

import bz2
import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eval.errors import DataError

ENTITY_PREFIX = "ENTITY/"


@dataclass
class EntityEmbeddings:
    """Words and entities in one wikipedia2vec space (rows of `word_vectors` / `entity_vectors`)."""

    words: list[str]
    word_vectors: np.ndarray
    titles: list[str]
    entity_vectors: np.ndarray
    lowercase: bool
    source: str = ""
    _word_row: dict[str, int] = field(default_factory=dict, repr=False)
    _title_row: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if len(self.words) != len(self.word_vectors) or len(self.titles) != len(self.entity_vectors):
            raise DataError(f"{self.source}: names and vector rows disagree in number")
        self._word_row = {w: i for i, w in enumerate(self.words)}
        self._title_row = {t: i for i, t in enumerate(self.titles)}

    @property
    def dim(self) -> int:
        return int(self.word_vectors.shape[1]) if len(self.word_vectors) else int(self.entity_vectors.shape[1])

    def word_row(self, word: str) -> int | None:
        return self._word_row.get(word.lower() if self.lowercase else word)

    def entity_row(self, title: str) -> int | None:
        return self._title_row.get(title)

    def describe(self) -> dict:
        return {"source": self.source, "words": len(self.words), "entities": len(self.titles), "dim": self.dim,
                "lowercase": self.lowercase}


def load_embeddings(path: str | Path) -> EntityEmbeddings:
    """Load a wikipedia2vec model: `.pkl` (the library's format) or word2vec text (`.txt`, `.gz`, `.bz2`)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such wikipedia2vec model (train one with `kbc entities train DUMP`)")
    if path.suffix == ".pkl":
        return load_pkl(path)
    return load_text(path)


def load_pkl(path: Path) -> EntityEmbeddings:
    """The library's joblib pickle: words are rows [0, word_size), entities follow at `entity_offset`."""
    from wikipedia2vec import Wikipedia2Vec

    try:
        model = Wikipedia2Vec.load(str(path))
    except Exception as exc:  # joblib/pickle raise many types for a foreign or truncated file
        raise DataError(f"{path}: not a wikipedia2vec .pkl model ({type(exc).__name__}: {exc})") from exc
    dic = model.dictionary
    syn0 = np.asarray(model.syn0, dtype=np.float32)
    words = [""] * dic.word_size
    for word in dic.words():
        words[word.index] = word.text
    titles = [""] * dic.entity_size
    offset = dic.entity_offset
    for ent in dic.entities():
        titles[ent.index - offset] = ent.title
    return EntityEmbeddings(words, syn0[:offset].copy(), titles, syn0[offset:offset + dic.entity_size].copy(),
                            lowercase=bool(dic.lowercase), source=str(path))


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def load_text(path: Path) -> EntityEmbeddings:
    """word2vec text (`N D` header) or the library's default text format (`item<TAB>vector`)."""
    words: list[str] = []
    titles: list[str] = []
    word_vecs: list[np.ndarray] = []
    ent_vecs: list[np.ndarray] = []
    dim = None
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if lineno == 1:
                head = line.split()
                if len(head) == 2 and all(p.isdigit() for p in head):
                    dim = int(head[1])
                    continue
            if "\t" in line:
                token, _, rest = line.partition("\t")
            else:
                token, _, rest = line.partition(" ")
            vec = np.array(rest.split(), dtype=np.float32) if rest else np.zeros(0, np.float32)
            if dim is None:
                dim = len(vec)
            if len(vec) != dim or dim == 0:
                raise DataError(f"{path}:{lineno}: expected {dim} numbers after {token!r}, got {len(vec)}")
            if token.startswith(ENTITY_PREFIX):
                titles.append(token[len(ENTITY_PREFIX):].replace("_", " "))
                ent_vecs.append(vec)
            else:
                words.append(token)
                word_vecs.append(vec)
    if dim is None:
        raise DataError(f"{path}: empty embedding file")
    lowercase = not any(w != w.lower() for w in words)
    empty = np.zeros((0, dim), np.float32)
    return EntityEmbeddings(words, np.vstack(word_vecs) if word_vecs else empty, titles,
                            np.vstack(ent_vecs) if ent_vecs else empty, lowercase=lowercase, source=str(path))


def save_text(emb: EntityEmbeddings, path: str | Path) -> None:
    """Write the word2vec text format the wikipedia2vec project publishes."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(f"{len(emb.words) + len(emb.titles)} {emb.dim}\n")
        for names, vecs, prefix in ((emb.words, emb.word_vectors, ""), (emb.titles, emb.entity_vectors, ENTITY_PREFIX)):
            for name, vec in zip(names, vecs):
                token = (prefix + name).replace(" ", "_")
                handle.write(token + " " + " ".join(f"{v:.6f}" for v in vec) + "\n")
