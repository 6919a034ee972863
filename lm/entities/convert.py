"""Turning the wikipedia2vec library's pickles into the `.npz` format, once, for a trusted file.

Unpickling runs code stored in the file, so this is the one place that loads a pickle, and only
when the caller vouches for it: `kbc entities convert --trust-pickle`, or `kbc entities train`
converting what it has just written itself. Everything else reads `.npz` or word2vec text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eval.errors import ConfigError, DataError
from lm.entities.embeddings import EntityEmbeddings, LinkTables, save_npz


def untrusted(pkl: Path, out: Path) -> ConfigError:
    return ConfigError(
        f"refusing to unpickle {pkl}: loading a pickle runs any code it holds; if you trust where it "
        f"came from, rerun as `kbc entities convert {pkl} --out {out} --trust-pickle`"
    )


def convert(pkl: str | Path, out: str | Path | None = None, *, trust_pickle: bool = False) -> Path:
    """Write the vectors of a wikipedia2vec `.pkl` (with the redirects and mentions beside it) as `.npz`."""
    pkl = Path(pkl)
    out = Path(out) if out else pkl.with_suffix(".npz")
    if out.suffix != ".npz":
        raise ConfigError(f"--out {out}: the converted model is written as .npz")
    if not pkl.is_file():  # named before the trust question: there is nothing to vouch for
        raise DataError(f"{pkl}: no such wikipedia2vec model file")
    if not trust_pickle:
        raise untrusted(pkl, out)
    model = _load_model(pkl)
    emb = _embeddings(model, pkl)
    emb.links = _link_tables(pkl, model)
    return save_npz(emb, out)


def _load_model(pkl: Path):
    from wikipedia2vec import Wikipedia2Vec

    try:
        return Wikipedia2Vec.load(str(pkl))
    except Exception as exc:  # joblib/pickle raise many types for a foreign or truncated file
        raise DataError(f"{pkl}: not a wikipedia2vec .pkl model ({type(exc).__name__}: {exc})") from None


def _embeddings(model, pkl: Path) -> EntityEmbeddings:
    """Words are rows [0, word_size) of `syn0`; entities follow at `entity_offset`."""
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
                            lowercase=bool(dic.lowercase), source=str(pkl))


def _link_tables(pkl: Path, model) -> LinkTables:
    """The redirects of the dump DB (`<stem>.db`) and the mention DB (`<stem>_mention.pkl`), where present."""
    stem = pkl.parent / pkl.stem
    tables = LinkTables()
    db = Path(f"{stem}.db")
    if db.is_file():
        from lm.entities.linking import read_redirects

        tables.redirects = read_redirects(db)
    mention_file = Path(f"{stem}_mention.pkl")
    if mention_file.is_file():
        import joblib
        from wikipedia2vec.mention_db import MentionDB

        try:
            stored = joblib.load(str(mention_file))
            db_ = MentionDB.load(stored, model.dictionary)
        except RuntimeError as exc:
            raise DataError(f"{mention_file}: built with another dictionary than {pkl}") from exc
        except Exception as exc:  # joblib/pickle raise many types for a foreign or truncated file
            raise DataError(f"{mention_file}: not a wikipedia2vec mention DB ({type(exc).__name__}: {exc})") from None
        tables.case_sensitive = bool(stored["kwargs"].get("case_sensitive", False))
        for mention in db_:
            tables.mentions.setdefault(mention.text, []).append((mention.entity.title, float(mention.commonness)))
    return tables
