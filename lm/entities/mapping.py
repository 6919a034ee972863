"""The E-BERT map W from wikipedia2vec space into a masked LM's input word-piece embeddings (E-BERT §3).

W minimises sum_x ||F(x) W - E_B(x)||^2 over words x that are whole tokens in both vocabularies;
because wikipedia2vec embeds words and entities in one space, the same W applies to entities.
`procrustes` is the orthogonal variant (W^T W = I, Smith et al. 2017): it keeps the geometry of the
entity space and needs no more than a rotation (a semi-orthogonal W when the dimensions differ).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval.durable import replacing
from eval.errors import DataError

KINDS = ("lstsq", "procrustes")
FIT_RULE = 2  # raised whenever which words pair or how W is fitted changes: a map cached under another is refitted
WORD_START = ("Ġ", "▁")  # the marks of a word's first piece in BPE and SentencePiece vocabularies


@dataclass
class LinearMap:
    """y = x @ W for row vectors x of dimension d_F, giving d_B-dimensional y."""

    W: np.ndarray
    kind: str
    r2: float
    n_words: int
    info: dict

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=np.float32) @ self.W

    def describe(self) -> dict:
        return {"kind": self.kind, "r2": round(self.r2, 6), "n_words": self.n_words,
                "shape": list(self.W.shape), **self.info}

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = {"kind": self.kind, "r2": self.r2, "n_words": self.n_words, "info": self.info}
        meta = json.dumps({**fields, "sha256": _checksum(self.W, fields)})
        with replacing(path, path.with_name(path.name + ".tmp.npz")) as tmp:
            np.savez(tmp, W=self.W, meta=np.array(meta))

    @classmethod
    def load(cls, path: str | Path, checked: bool = False) -> LinearMap:
        """A saved map; its checksum (written since maps carry one) must match, and with `checked` must exist."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as data:
                W, meta = data["W"], json.loads(str(data["meta"]))
            if W.ndim != 2 or not isinstance(meta, dict):
                raise ValueError("W is not a matrix or meta is not an object")
            fields = {k: meta[k] for k in ("kind", "r2", "n_words", "info") if k in meta}
            lmap = cls(W.astype(np.float32), str(meta["kind"]), float(meta["r2"]), int(meta["n_words"]),
                       dict(meta.get("info") or {}))
        except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
            # np.load raises ValueError for pickled content with allow_pickle=False
            raise DataError(f"{path}: not a saved entity map (make one with `kbc entities map`): "
                            f"{type(exc).__name__}: {exc}") from None
        if (checked or "sha256" in meta) and meta.get("sha256") != _checksum(W, fields):
            raise DataError(f"{path}: the map does not match its checksum (damaged or edited); make it again with "
                            "`kbc entities map`")
        return lmap


def _checksum(W: np.ndarray, fields: dict) -> str:
    """SHA-256 over the matrix (shape, dtype, bytes) and the other fields of a saved map."""
    digest = hashlib.sha256(json.dumps([list(W.shape), str(W.dtype), fields], sort_keys=True).encode())
    digest.update(np.ascontiguousarray(W).tobytes())
    return digest.hexdigest()


def r_squared(pred: np.ndarray, target: np.ndarray) -> float:
    """Coefficient of determination over all coordinates: 1 - SS_res / SS_tot (SS_tot about column means).

    W has no intercept (E-BERT's map is linear), so a weak fit can score below 0: it then predicts
    the embeddings worse than their mean vector would.
    """
    target = np.asarray(target, dtype=np.float64)
    ss_res = float(np.sum((target - pred) ** 2))
    ss_tot = float(np.sum((target - target.mean(axis=0)) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else 0.0


def fit(X: np.ndarray, Y: np.ndarray, kind: str = "lstsq", info: dict | None = None) -> LinearMap:
    """Fit W on paired rows X (n, d_F) -> Y (n, d_B)."""
    if kind not in KINDS:
        raise DataError(f"unknown map kind {kind!r}; choose one of {', '.join(KINDS)}")
    X64, Y64 = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if X64.ndim != 2 or Y64.ndim != 2 or len(X64) != len(Y64):
        raise DataError(f"map fit needs paired matrices, got shapes {X64.shape} and {Y64.shape}")
    if len(X64) < X64.shape[1] and kind == "lstsq":
        raise DataError(f"only {len(X64)} shared words for a {X64.shape[1]}-d least-squares map; "
                        "use a larger wikipedia2vec model or --kind procrustes")
    if kind == "lstsq":
        W = np.linalg.lstsq(X64, Y64, rcond=None)[0]
    else:
        U, _, Vt = np.linalg.svd(X64.T @ Y64, full_matrices=False)
        W = U @ Vt
    W32 = W.astype(np.float32)
    return LinearMap(W32, kind, r_squared(X64 @ W, Y64), len(X64), dict(info or {}))


def shared_words(words: list[str], lowercase: bool, vocab: dict[str, int]) -> list[tuple[int, int]]:
    """(wikipedia2vec row, token id) for words that are whole tokens in both vocabularies.

    Continuation pieces (`##x`, or tokens without the word-start marker in BPE vocabularies) and
    special tokens (`[CLS]`, `<s>`, `[unused0]`) are not words. With a lowercased wikipedia2vec
    model only tokens equal to their lowercase form can match (E-BERT uses a cased model).
    """
    row = {w: i for i, w in enumerate(words)}
    # a vocabulary that marks word starts (BPE's Ġ, SentencePiece's ▁) writes a mid-word piece without the mark:
    # "the" there is the piece of "breathe", not the word, which is "Ġthe" (a WordPiece vocabulary may hold a
    # stray "Ġ" among its characters, hence a share, not any)
    marked = 10 * sum(token.startswith(WORD_START) for token in vocab) > len(vocab)
    pairs = []
    for token, tid in vocab.items():
        if token.startswith("##") or (token.startswith(("[", "<")) and token.endswith(("]", ">"))):
            continue
        if marked and not token.startswith(WORD_START):
            continue
        word = token[1:] if marked else token
        if not word or (lowercase and word != word.lower()):
            continue
        i = row.get(word)
        if i is not None:
            pairs.append((i, tid))
    pairs.sort(key=lambda p: p[1])
    return pairs


def fit_to_embeddings(word_vectors: np.ndarray, words: list[str], lowercase: bool, vocab: dict[str, int],
                      input_embeddings: np.ndarray, kind: str = "lstsq", info: dict | None = None) -> LinearMap:
    """E-BERT §3: learn W on the intersection of the wikipedia2vec and the model's word vocabularies."""
    pairs = shared_words(words, lowercase, vocab)
    if not pairs:
        raise DataError("no word is a whole token in both the wikipedia2vec and the model vocabulary")
    rows = np.array([p[0] for p in pairs])
    ids = np.array([p[1] for p in pairs])
    return fit(word_vectors[rows], input_embeddings[ids], kind, info)
