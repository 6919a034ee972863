"""Parsed corpora kept in the cache, so a command does not parse the same JSONL again.

`<cache>/snapshots/<corpus>-<key>.json` (`<cache>`: a run's cache dir, else `eval.datadir.cache_root`; the key
names the data directory and the loader's options) holds three lines of ASCII JSON: a header, the corpus less its
facts, its facts as columns; never pickle, so reading one runs no code. The header names the schema, the size and
CRC-32 of the lines that follow, and each data file the corpus was parsed from: its path, size, mtime and SHA-256.
A snapshot is used only when the files the loader would read now are those files with those exact bytes; any other
data, a damaged or truncated snapshot or another schema is parsed again (and the snapshot rewritten), so a snapshot
gives the facts, relations, load reports and version that parsing gives.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import logging
import os
import re
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

from eval.datadir import cache_root, hash_files, writer_id
from eval.durable import write_atomic
from eval.errors import KbcError
from eval.lama import MASK, Corpus
from eval.report_counts import LoadReport
from eval.types import Entity, Fact, Relation, evidences_of

SCHEMA = 11  # 3: T-REx and Google-RE labels stripped, load notes on labels and unlisted files; 4: T-REx uids unique;
#           5: labels in NFC without zero-width characters at the ends; 6: labels with control characters refused;
#           7: lone surrogate escapes refused; 8: labels with bidirectional overrides refused;
#           9: templates in NFC; 10: directional marks dropped at the ends of labels, label duplicates named so;
#           11: labels with a line or paragraph separator refused
log = logging.getLogger("kbc")

Sources = list[tuple[str, int, int, str]]  # (path, size, mtime_ns, sha256) per data file, in path order
_EVIDENCE = ("text", "masked", "sub_surface", "obj_surface", "url")
COLUMNS = ("uid", "relation", "subject_label", "subject_id", "subject_aliases", "object_label", "object_id",
           "object_aliases", "cloze", "answer_idx", "evidences", *_EVIDENCE)


def snapshot_path(name: str, root: Path, options: dict, cache_dir: str | Path | None = None) -> Path:
    key = hashlib.sha256(json.dumps([str(root), options], sort_keys=True).encode()).hexdigest()[:16]
    return cache_root(cache_dir) / "snapshots" / f"{name}-{key}.json"


def read_sources(files: list[Path]) -> tuple[Sources, str]:
    """Each file's identity, and the corpus version (`eval.datadir.fingerprint`) from the same single read."""
    ordered = sorted(files)
    stats = [path.stat() for path in ordered]
    version, digests = hash_files(ordered, each=True)
    return [(str(p), st.st_size, st.st_mtime_ns, d) for p, st, d in zip(ordered, stats, digests)], version


def cached_corpus(name: str, root: Path, options: dict, files: Callable[[], list[Path]],
                  parse: Callable[[], Corpus], cache_dir: str | Path | None = None) -> Corpus:
    """The corpus `parse()` gives, from its snapshot (under `cache_dir`, else the default cache) where that was made
    from the same bytes of `files()`."""
    path = snapshot_path(name, root, options, cache_dir)
    key = path.name  # the corpus, its data directory and the loader's options, whichever cache holds it
    try:
        wanted = files()
        recent = _RECENT.get(key)
        same = _same_bytes(recent[0], wanted) if recent is not None else None
        if same is not None:
            _RECENT.move_to_end(key)
            return _copy(recent[1], same[1])
        found = _current(path, wanted)
        if found is not None:
            corpus = _decode_body(path, found[0], name, facts=True)
            if corpus is not None:
                corpus._version = (tuple(corpus.files), found[1][1])
                _remember(key, found[1][0], corpus)
                return corpus
        before = read_sources(wanted)
    except (OSError, KbcError):
        return parse()  # a missing, unreadable or broken file: parsing names it
    with collector_paused():
        corpus = parse()
    try:
        after = read_sources(corpus.files)
    except OSError:
        return corpus
    if [s[0] for s in after[0]] == [s[0] for s in before[0]] and after == before:
        corpus._version = (tuple(corpus.files), after[1])  # the bytes parsed are the bytes hashed
        _write(path, corpus, after[0])
        _remember(key, after[0], corpus)
    return corpus


# The corpora this process read last, by snapshot name, with the data files they were read from: a process that
# runs several experiments (the Python API, a notebook) decodes a corpus once while its files keep their bytes
_RECENT: OrderedDict[str, tuple[Sources, Corpus]] = OrderedDict()
KEEP_RECENT = 4  # LAMA's four corpora


def _remember(key: str, sources: Sources, corpus: Corpus) -> None:
    _RECENT[key] = (sources, _copy(corpus, corpus.version))
    _RECENT.move_to_end(key)
    while len(_RECENT) > KEEP_RECENT:
        _RECENT.popitem(last=False)


def forget_recent() -> None:
    """Read every corpus from its snapshot or its files again (the next load decodes or parses)."""
    _RECENT.clear()


def _copy(corpus: Corpus, version: str) -> Corpus:
    """A corpus of its own holding the same (immutable) facts and relations: a caller may change its lists."""
    copied = replace(corpus, relations=dict(corpus.relations), facts=list(corpus.facts),
                     reports=copy.deepcopy(corpus.reports), files=list(corpus.files))
    copied._version = (tuple(copied.files), version)
    return copied


def _stats(files: list[Path]) -> list[tuple[str, int, int]]:
    return [(str(p), (st := p.stat()).st_size, st.st_mtime_ns) for p in sorted(files)]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection inside: a corpus is hundreds of thousands of new objects and no cycle among them, and
    each full collection would walk them all (and every object of the modules a run imported before)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def cached_outline(name: str, root: Path, options: dict, files: Callable[[], list[Path]],
                   cache_dir: str | Path | None = None) -> tuple[Corpus, int] | None:
    """A corpus from a current snapshot without its facts (relations, load reports, files, version) and how many
    facts it has; None where there is no current snapshot."""
    path = snapshot_path(name, root, options, cache_dir)
    try:
        found = _current(path, files())
    except (OSError, KbcError):
        return None
    outline = _decode_body(path, found[0], name, facts=False) if found is not None else None
    if outline is None:
        return None
    corpus, n_facts = outline
    corpus._version = (tuple(corpus.files), found[1][1])
    return corpus, n_facts


def _current(path: Path, wanted: list[Path]) -> tuple[bytes, tuple[Sources, str]] | None:
    """The content of the snapshot at `path` (after its header), the data files' identities and the data version,
    where it was made from the bytes `wanted` hold and its content has the size and CRC its header names."""
    read = _read(path)
    same = _same_bytes(read[0]["sources"], wanted) if read is not None else None
    return (read[1], same) if same is not None else None


def _same_bytes(sources: Sources, wanted: list[Path]) -> tuple[Sources, str] | None:
    """The identities and the version of the files `wanted` where they are those `sources` names, byte for byte
    (paths, sizes and mtimes first: hashing only when those agree); else None."""
    if [s[:3] for s in sources] != _stats(wanted):
        return None
    now, version = read_sources(wanted)
    return (now, version) if now == sources else None


def _read(path: Path) -> tuple[dict, bytes] | None:
    """The header (its sources as tuples) and the content of a snapshot, read at once; None (and a warning where
    it is damaged) when there is none of this schema."""
    try:
        head, _, body = path.read_bytes().partition(b"\n")
        header = json.loads(head)
        if not isinstance(header, dict) or header.get("schema") != SCHEMA:
            schema = header.get("schema") if isinstance(header, dict) else None
            if isinstance(schema, int) and schema < SCHEMA:  # rewritten, as for other data, saying why
                log.info("%s: a snapshot an earlier kbc version wrote (schema %d, now %d: the data files are read "
                         "otherwise since); parsing the data again", path, schema, SCHEMA)
            return None
        sources = [tuple(s) for s in header["sources"]]
        if not all(len(s) == 4 and isinstance(s[0], str) and isinstance(s[3], str) for s in sources):
            raise ValueError("its list of data files is malformed")
        if zlib.crc32(body) != header["crc32"] or len(body) != header["size"]:
            raise ValueError("its content does not match its size and CRC (damaged or truncated)")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: unreadable snapshot (%s); parsing the data again", path, exc)
        return None
    return {**header, "sources": sources}, body


def _decode_body(path: Path, body: bytes, name: str, facts: bool):
    """The corpus of a snapshot's checked content (without facts: the corpus less its facts, and their number);
    None (and a warning) where it does not decode."""
    try:
        meta, _, cols = body.partition(b"\n")
        meta = json.loads(meta)
        if not facts:
            return _decode(meta, None, name), meta["n_facts"]
        with collector_paused():
            return _decode(meta, json.loads(cols), name)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        log.warning("%s: unreadable snapshot (%s); parsing the data again", path, exc)
        return None


def _entity(e: Entity) -> list:
    return [e.label, e.id, list(e.aliases)]


def _entities(entities: list[Entity], prefix: str) -> dict[str, list]:
    """Entities as three columns: labels, ids, and aliases (null for none)."""
    return {f"{prefix}_label": [e.label for e in entities], f"{prefix}_id": [e.id for e in entities],
            f"{prefix}_aliases": [list(e.aliases) if e.aliases else None for e in entities]}


def _entities_of(cols: dict, prefix: str) -> list[Entity]:
    return list(map(Entity, cols[f"{prefix}_label"], cols[f"{prefix}_id"],
                    (tuple(a) if a else () for a in cols[f"{prefix}_aliases"])))


def _filled(masked: str | None, surface: str | None, obj_label: str) -> str | None:
    """The sentence a masked one stands for (as the T-REx loader restores it): stored only where it differs."""
    return masked.replace(MASK, surface or obj_label) if masked is not None else None


def _relation(r: Relation) -> list:
    return [r.id, r.label, r.template, r.type, r.description, [_entity(e) for e in r.answer_space],
            list(r.templates), list(r.domains)]


def _encode(corpus: Corpus) -> tuple[dict, dict] | None:
    """The corpus less its facts, and its facts as JSON columns; None for one holding other kinds of facts (they
    are not kept)."""
    facts = corpus.facts
    if any(type(f) is not Fact or f.corpus != corpus.name for f in facts):
        return None
    evidences = [ev for f in facts for ev in f.evidences]
    owner = [f.object.label for f in facts for _ in f.evidences]  # each evidence's gold label
    column = {k: list(map(attrgetter(k), evidences)) for k in _EVIDENCE}
    cols = {
        "uid": [f.uid for f in facts], "relation": [f.relation for f in facts],
        **_entities([f.subject for f in facts], "subject"), **_entities([f.object for f in facts], "object"),
        "cloze": [f.cloze for f in facts], "answer_idx": [f.answer_idx for f in facts],
        "evidences": [len(f.evidences) for f in facts],
        **{k: column[k] for k in _EVIDENCE if k != "text"},
        "text": [None if masked is not None and text == masked.replace(MASK, surface or label) else text
                 for text, masked, surface, label in zip(column["text"], column["masked"], column["obj_surface"],
                                                         owner)],  # `_filled`, inline: one call per evidence less
    }
    reports = [{**r.to_dict(), "relation": r.relation} for r in corpus.reports]
    meta = {"name": corpus.name, "relations": [_relation(r) for r in corpus.relations.values()], "reports": reports,
            "files": [str(p) for p in corpus.files], "n_facts": len(facts)}
    return meta, cols


def _decode(meta: dict, cols: dict | None, name: str) -> Corpus:
    """The corpus of a snapshot's parts; without `cols`, without its facts."""
    if meta["name"] != name:
        raise ValueError(f"it holds corpus {meta['name']!r}")
    relations = {}
    for rid, label, template, rtype, description, space, templates, domains in meta["relations"]:
        space = tuple(Entity(lb, i, tuple(a)) for lb, i, a in space)
        relations[rid] = Relation(rid, label, template, rtype, description, space, tuple(templates), tuple(domains))
    reports = [LoadReport(r["source"], r["read"], r["kept"], Counter(r["dropped"]), list(r["notes"]), r["relation"])
               for r in meta["reports"]]
    files = [Path(p) for p in meta["files"]]
    if cols is None:
        return Corpus(name, relations, [], reports, files)
    n = len(cols["uid"])
    counts = cols["evidences"]
    lengths = {k: len(v) for k, v in cols.items()}
    if any(lengths[k] != (sum(counts) if k in _EVIDENCE else n) for k in lengths) or len(lengths) != len(COLUMNS):
        raise ValueError("its columns differ in length")
    subjects, objects = _entities_of(cols, "subject"), _entities_of(cols, "object")
    owner = [o.label for o, k in zip(objects, counts) for _ in range(k)]  # each evidence's gold label
    texts = [t if t is not None else _filled(m, s, lb)
             for t, m, s, lb in zip(cols["text"], cols["masked"], cols["obj_surface"], owner)]
    evidences = evidences_of(texts, *(cols[k] for k in _EVIDENCE[1:]))
    facts = []
    start = 0
    for uid, rel, sub, obj, cloze, idx, k in zip(cols["uid"], cols["relation"], subjects, objects, cols["cloze"],
                                                 cols["answer_idx"], counts):
        facts.append(Fact(uid, name, rel, sub, obj, tuple(evidences[start:start + k]) if k else (), cloze, idx))
        start += k
    if n != meta["n_facts"]:
        raise ValueError("it holds another number of facts than it says")
    return Corpus(name, relations, facts, reports, files)


_UNWRITABLE: set[str] = set()  # snapshot folders this process could not write, said once each


def _write(path: Path, corpus: Corpus, sources: Sources) -> None:
    """Write the snapshot aside, then switch it in; a cache that cannot be written is skipped, not an error. Not
    synced: a snapshot a power cut damaged fails its size and CRC check, and the data is parsed again."""
    parts = _encode(corpus)
    if parts is None:
        return
    # ASCII JSON: the encoder's fast path, and a lone surrogate the data escaped (`\ud800`) is written as it came
    body = b"\n".join(json.dumps(part, separators=(",", ":")).encode("ascii") for part in parts)
    header = {"schema": SCHEMA, "size": len(body), "crc32": zlib.crc32(body), "sources": sources}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{writer_id()}.tmp")
        write_atomic(path, (json.dumps(header).encode() + b"\n", body), tmp, durable=False)
    except OSError as exc:
        folder = str(path.parent)
        if folder not in _UNWRITABLE:  # said once a process: each run parses the data again, and its user wonders why
            _UNWRITABLE.add(folder)
            log.warning("%s: cannot keep the data's parsed copy (%s); each run parses the data files again (free space "
                        "or make it writable, or set KBC_CACHE to a writable folder)", folder, exc.strerror or exc)


SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9_.-]+-[0-9a-f]{16}\.json")  # `snapshot_path`'s names
SNAPSHOT_TMP = re.compile(r"\.[A-Za-z0-9_.-]+-[0-9a-f]{16}\.json\.[0-9]+(-[0-9]+)?\.tmp")  # `_write`'s, while it writes


def why_dead(path: Path) -> str | None:
    """Why the snapshot at `path` can never be read again (None where it may be): its header names data files that
    are gone or whose size or mtime changed (it is read only where they hold the recorded bytes), an earlier
    schema, or it is damaged. Only the header is read: a whole T-REx snapshot is tens of MB."""
    try:
        with path.open("rb") as handle:
            head = handle.readline(1 << 24)
        header = json.loads(head)
        if not isinstance(header, dict):
            raise ValueError("no header")
        schema = header.get("schema")
        if isinstance(schema, int) and schema < SCHEMA:  # never read again; a later version's may be read by it
            return f"written by an earlier kbc version (schema {schema}, now {SCHEMA})"
        if schema != SCHEMA:
            return None
        sources = header["sources"]
        for source, size, mtime, _ in sources:
            try:
                st = os.stat(source)
            except (FileNotFoundError, NotADirectoryError):
                return f"its data file {source} is gone"
            if (st.st_size, st.st_mtime_ns) != (size, mtime):
                return f"its data file {source} changed"
    except (ValueError, KeyError, TypeError):
        return "damaged"
    return None
