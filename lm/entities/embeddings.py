"""wikipedia2vec word and entity vectors, loaded from `.npz` or the word2vec text format.

Both formats end up as one `EntityEmbeddings`: plain NumPy matrices plus title/word lookups, so the
rest of the package never depends on how the vectors were stored. The text format is what the
wikipedia2vec project publishes (`enwiki_20180420_300d.txt`): a `N D` header line, then one
`token v1 … vD` line per item, entities written `ENTITY/Title_with_underscores`.

The library's own `.pkl` is a pickle: loading one runs whatever code it holds, so it is never
loaded here. `kbc entities convert` (`lm.entities.convert`) turns a pickle the user trusts into the
`.npz` format once; `kbc entities train` writes both. The `.npz` holds plain arrays only (read with
`allow_pickle=False`): the vectors, names as one UTF-8 blob per list (newline-separated, compact
where fixed-width string arrays would pad every name to the longest title), and, when known, the
redirect and mention tables the linker uses.
"""

from __future__ import annotations

import bz2
import gzip
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eval.durable import replacing
from eval.errors import ConfigError, DataError

ENTITY_PREFIX = "ENTITY/"
NPZ_FORMAT = "kbc-wikipedia2vec/1"
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")


@dataclass
class LinkTables:
    """Redirects (source -> target title) and the mention dictionary (text -> [(title, commonness)])."""

    redirects: dict[str, str] = field(default_factory=dict)
    mentions: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    case_sensitive: bool = False

    def mention_lookup(self, text: str) -> list[tuple[str, float]]:
        return self.mentions.get(text if self.case_sensitive else text.lower(), [])


@dataclass
class EntityEmbeddings:
    """Words and entities in one wikipedia2vec space (rows of `word_vectors` / `entity_vectors`)."""

    words: list[str]
    word_vectors: np.ndarray
    titles: list[str]
    entity_vectors: np.ndarray
    lowercase: bool
    source: str = ""
    links: LinkTables | None = None
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


def refuse_pickle(path: Path, what: str = "wikipedia2vec model") -> ConfigError:
    """The one-line refusal for a pickle given where vectors are read."""
    return ConfigError(
        f"{path} is a pickle; loading one runs any code it holds, so a {what} is only read as .npz or "
        f"word2vec text: convert a file you trust once with `kbc entities convert {path} --out "
        f"{path.with_suffix('.npz')} --trust-pickle` and pass the .npz"
    )


def load_embeddings(path: str | Path) -> EntityEmbeddings:
    """Load wikipedia2vec vectors: `.npz` (see the module docstring) or word2vec text (`.txt`, `.gz`, `.bz2`)."""
    path = Path(path)
    if path.suffix in PICKLE_SUFFIXES:
        raise refuse_pickle(path)
    if not path.exists():
        raise DataError(f"{path}: no such wikipedia2vec model (train one with `kbc entities train DUMP`)")
    if path.is_dir():
        raise DataError(f"{path} is a directory; pass the model file (.npz or word2vec text)")
    if path.suffix == ".npz":
        return load_npz(path)
    try:
        return load_text(path)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 word2vec text ({exc.reason} at byte {exc.start}); "
                        "pass a .npz or word2vec text model") from None
    except (OSError, EOFError) as exc:  # unreadable, or a damaged .gz / .bz2
        raise DataError(f"{path}: cannot read it ({exc})") from None


def _blob(names: list[str], what: str) -> np.ndarray:
    bad = next((n for n in names if "\n" in n), None)
    if bad is not None:
        raise DataError(f"{what} {bad!r} contains a newline; it cannot be stored")
    return np.frombuffer("\n".join(names).encode("utf-8"), dtype=np.uint8)


def _names(data, key: str, n: int, path: Path) -> list[str]:
    blob = data[key]
    if blob.dtype != np.uint8 or blob.ndim != 1:
        raise DataError(f"{path}: array {key!r} is not a UTF-8 blob")
    names = blob.tobytes().decode("utf-8").split("\n") if n else []
    if len(names) != n:
        raise DataError(f"{path}: {key!r} holds {len(names)} names for {n} rows")
    return names


def save_npz(emb: EntityEmbeddings, path: str | Path) -> Path:
    """Write `emb` (with its link tables) as plain arrays; atomic (a temporary file, then a rename)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {
        "format": np.array(NPZ_FORMAT),
        "words": _blob(emb.words, "word"),
        "word_vectors": np.asarray(emb.word_vectors, dtype=np.float32),
        "titles": _blob(emb.titles, "title"),
        "entity_vectors": np.asarray(emb.entity_vectors, dtype=np.float32),
        "lowercase": np.array(bool(emb.lowercase)),
    }
    if emb.links is not None:
        sources = list(emb.links.redirects)
        texts = [t for t, found in emb.links.mentions.items() for _ in found]
        pairs = [pair for found in emb.links.mentions.values() for pair in found]
        arrays.update(
            redirect_sources=_blob(sources, "redirect"),
            redirect_targets=_blob([emb.links.redirects[s] for s in sources], "redirect target"),
            n_redirects=np.array(len(sources)),
            mention_texts=_blob(texts, "mention"),
            mention_titles=_blob([t for t, _ in pairs], "mention title"),
            mention_commonness=np.array([c for _, c in pairs], dtype=np.float32),
            mentions_case_sensitive=np.array(bool(emb.links.case_sensitive)),
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path, path.with_name(path.name + ".part")) as tmp, tmp.open("wb") as handle:
        np.savez(handle, **arrays)
    return path


def load_npz(path: Path) -> EntityEmbeddings:
    """The `.npz` format, read with `allow_pickle=False`: a file holding pickled objects is refused."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if "format" not in data.files:
                raise DataError(f"{path}: not a wikipedia2vec .npz of this tool (arrays: {', '.join(data.files)}); "
                                "convert a wikipedia2vec .pkl with `kbc entities convert`")
            if str(data["format"]) != NPZ_FORMAT:
                raise DataError(f"{path}: format {str(data['format'])!r}, expected {NPZ_FORMAT!r}")
            word_vectors = np.asarray(data["word_vectors"], dtype=np.float32)
            entity_vectors = np.asarray(data["entity_vectors"], dtype=np.float32)
            if word_vectors.ndim != 2 or entity_vectors.ndim != 2 or word_vectors.shape[1] != entity_vectors.shape[1]:
                raise DataError(f"{path}: vector arrays of shapes {word_vectors.shape} and {entity_vectors.shape}")
            words = _names(data, "words", len(word_vectors), path)
            titles = _names(data, "titles", len(entity_vectors), path)
            links = None
            if "n_redirects" in data:
                n = int(data["n_redirects"])
                commonness = data["mention_commonness"].astype(float)
                sources = _names(data, "redirect_sources", n, path)
                targets = _names(data, "redirect_targets", n, path)
                texts = _names(data, "mention_texts", len(commonness), path)
                found = _names(data, "mention_titles", len(commonness), path)
                mentions: dict[str, list[tuple[str, float]]] = {}
                for text, title, c in zip(texts, found, commonness):
                    mentions.setdefault(text, []).append((title, float(c)))
                links = LinkTables(dict(zip(sources, targets)), mentions, bool(data["mentions_case_sensitive"]))
            lowercase = bool(data["lowercase"])
    except KeyError as exc:
        raise DataError(f"{path}: damaged wikipedia2vec .npz ({exc.args[0] if exc.args else exc}); convert the "
                        "model again with `kbc entities convert`") from None
    except (ValueError, OSError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        # np.load raises ValueError for pickled content with allow_pickle=False
        raise DataError(f"{path}: not a readable wikipedia2vec .npz ({type(exc).__name__}: {exc})") from None
    return EntityEmbeddings(words, word_vectors, titles, entity_vectors, lowercase=lowercase, source=str(path),
                            links=links)


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
    promised = None  # the word2vec header's vector count
    seen: dict[str, int] = {}  # name (entities with spaces as underscores) -> its line
    lineno = 0
    with _open_text(path) as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if lineno == 1:
                head = line.split()
                if len(head) == 2 and all(p.isdigit() for p in head):
                    promised, dim = int(head[0]), int(head[1])
                    continue
            if "\t" in line:
                token, _, rest = line.partition("\t")
            else:
                token, _, rest = line.partition(" ")
            try:
                vec = np.array(rest.split(), dtype=np.float32) if rest else np.zeros(0, np.float32)
            except ValueError:
                raise DataError(f"{path}:{lineno}: the vector of {token!r} holds a non-number") from None
            if dim is None:
                dim = len(vec)
            if not len(vec):  # no numbers: not a vector file at all, or a line cut short
                raise DataError(f"{path}:{lineno}: {token!r} has no vector; a wikipedia2vec text file holds NAME "
                                "and its numbers on each line (after an optional 'COUNT DIM' header)")
            if len(vec) != dim:
                raise DataError(f"{path}:{lineno}: expected {dim} numbers after {token!r}, got {len(vec)}")
            if not np.isfinite(vec).all():  # a NaN scores below everything: the entity would silently never rank
                raise DataError(f"{path}:{lineno}: the vector of {token!r} holds nan or inf")
            # a name twice: lookups would find one vector while the other still ranked as an answer
            if (first := seen.setdefault(token.replace(" ", "_"), lineno)) != lineno:
                raise DataError(f"{path}:{lineno}: {token!r} again (first on line {first}); each name needs one vector")
            if token.startswith(ENTITY_PREFIX):
                titles.append(token[len(ENTITY_PREFIX):].replace("_", " "))
                ent_vecs.append(vec)
            else:
                words.append(token)
                word_vecs.append(vec)
    if dim is None:
        raise DataError(f"{path}: empty embedding file")
    held = len(words) + len(titles)
    if promised is not None and held != promised:
        # a file cut off in a copy loses its last entities silently: they would be "not linked", not missing
        raise DataError(f"{path}: the header (line 1) promises {promised:,} vectors but the file holds {held:,} "
                        f"(lines 2-{lineno}); is it cut off? Copy or convert it again")
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
