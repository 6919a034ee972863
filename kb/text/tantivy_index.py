"""The embedded default backend: an on-disk tantivy index (Lucene-style BM25, phrase queries).

Layout of an index directory: `CURRENT` names the live generation folder; each generation
holds the tantivy files and `kbc-meta.json`. A build writes a new generation and replaces
`CURRENT` atomically, so a crash mid-build leaves the previous index in use.

Two tantivy traps are avoided here: `search(limit=0)` and a one-term `phrase_query` panic with
an exception derived from `BaseException`, so counts use `count=True` with limit 1 and
one-word phrases become term queries; the custom tokenizer is registered on every open.

A damaged index is an error that says how to rebuild it, never an empty index: tantivy itself
would create a fresh empty index where its `meta.json` is gone, and reports damaged segment files
only when it reads them (as a ValueError, or a Rust panic), so opening checks the layout and
every read turns tantivy's failures into a DataError. tantivy reads some damaged files (norms,
postings) without complaint and scores differently, so opening also checks every file against
the checksums recorded at build time (`kb.text.integrity`). `search` never asks for more hits than
there are paragraphs (tantivy allocates the requested size up front, and aborts when it cannot).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from eval.durable import fsync_tree, write_atomic
from eval.errors import DataError
from eval.native_paths import check_native_path
from eval.out_folders import refuse_in_data
from eval.readers_lock import READERS_LOCK, hold_shared
from kb.text.analyzer import NAME as ANALYZER
from kb.text.analyzer import PATTERN, tantivy_analyzer, term_counts
from kb.text.base import Hit, Mention
from kb.text.integrity import check_files, file_digests, record_verified
from kb.text.paragraphs import ContentDigest, Paragraph, index_fingerprint
from kb.writer_lock import WriterLock

CURRENT = "CURRENT"
LOCK = "build.lock"
LOCK_INFO = "build.json"
_GENERATION = re.compile(r"gen-[0-9]+(\.building)?")
META = "kbc-meta.json"
# tantivy reports a failed write of its worker threads (a full or read-only disk) as a ValueError naming no file
_IO_FAILURE = re.compile(r"io::Error|IoError|index writer was killed|No space left|Read-only file system")
TANTIVY_META = "meta.json"
HEAP = 256 * 1024 * 1024
PAGE = 10_000


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("pid", stored=True, tokenizer_name="raw")
    sb.add_text_field("title", stored=True, tokenizer_name="raw")
    sb.add_unsigned_field("para", stored=True)
    sb.add_text_field("text", stored=True, tokenizer_name=ANALYZER, index_option="position")
    sb.add_text_field("links", stored=True, tokenizer_name="raw")
    sb.add_text_field("facts", stored=True, tokenizer_name="raw")
    return sb.build()


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _rebuild_command(root: Path, meta: dict | None) -> str:
    """The build command that recreates this index, as precise as its metadata allows (a LAMA build keeps an
    index of the same data that opens as intact, so it is told to `--force`: damage `verify` found is unseen there)."""
    source = meta.get("source") if isinstance(meta, dict) else None
    if source == "lama-evidences":
        data_dir = meta.get("data_dir") if isinstance(meta, dict) else None
        data = data_dir if isinstance(data_dir, str) else "LAMA_DATA_DIR"
        return f"kbc index build --force --data-dir {data} --out {root}"
    if isinstance(source, str) and source.partition(":")[0] in ("dump", "jsonl"):
        kind, _, path = source.partition(":")
        return f"kbc index build --source {kind} --input {path} --out {root}"
    return f"kbc index build --out {root} ..."


def damaged(root: Path, why: str, meta: dict | None = None) -> DataError:
    return DataError(f"{root}: the text index is damaged ({why}); rebuild it with "
                     f"`{_rebuild_command(root, meta)}`")


def _one_line(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _is_tantivy_failure(exc: BaseException) -> bool:
    """tantivy reports bad files as ValueError or OSError, and some as a Rust panic (a BaseException)."""
    return isinstance(exc, (ValueError, OSError)) or type(exc).__name__ == "PanicException"


def _read_meta(root: Path, generation: Path) -> dict:
    path = generation / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise damaged(root, f"{path.name} is missing in {generation.name}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise damaged(root, f"{path} is unreadable: {_one_line(exc)}") from None
    if not isinstance(meta, dict):
        raise damaged(root, f"{path} holds a JSON {type(meta).__name__}, not an object")
    return meta


def _check_own(root: Path) -> None:
    """A build writes only into a new or empty folder or an index folder (`CURRENT`, its lock and `gen-*`
    folders): its `CURRENT` would replace another tool's file of that name, and old generations are deleted. Nor
    into a data folder, a new subfolder included: data folders are inputs, often shared."""
    refuse_in_data(root, ", and a build writes its index files into --out; pass a folder outside the data, or leave "
                   "--out out to use the cache")
    if not root.is_dir():
        return
    foreign = sorted(p.name for p in root.iterdir()
                     if not (p.name in (CURRENT, f"{CURRENT}.tmp", LOCK, LOCK_INFO, READERS_LOCK)
                             or p.is_dir() and _GENERATION.fullmatch(p.name)))
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise DataError(f"--out {root} is not empty ({shown}) and is not a text index; an index is built only "
                        "into a new or empty folder or over an index built before: pass another --out")


def writer_lock(root: Path) -> WriterLock:
    """The lock one build of `root` holds at a time."""
    return WriterLock(root / LOCK, root / LOCK_INFO, f"the text index {root} is being built",
                      "or use another index folder, or another cache: KBC_CACHE=DIR",
                      "wait for it to finish, or use another index folder, or another cache: KBC_CACHE=DIR kbc ...")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _disk_state(root: Path) -> str:
    """What the disk under `root` says of a failed write: full, or read-only, else what to check."""
    try:
        stats = os.statvfs(root)
    except OSError:
        return "check that its disk is writable and has room"
    if stats.f_flag & os.ST_RDONLY:
        return "its disk is read-only; build it in a writable folder"
    if stats.f_bavail * stats.f_frsize < HEAP:
        return (f"its disk has {stats.f_bavail * stats.f_frsize / 2**20:.1f} MiB free; free space there or build it "
                "on a larger disk (--out, or KBC_CACHE for the LAMA evidence index)")
    return "check that its disk is writable and has room"


class TantivyIndex:
    backend = "tantivy"
    built = False  # True on the index a `build` made (False: opened as it was)

    def __init__(self, root: Path, generation: Path, reader: io.FileIO | None = None) -> None:
        import tantivy

        self.root = root
        self.generation = generation
        # held while open, so that `kbc cache clear index` refuses rather than remove the files searched
        self._reader = reader if reader is not None else hold_shared(root / READERS_LOCK)
        self.meta = _read_meta(root, generation)
        self._schema = _schema()
        self._index = tantivy.Index(self._schema, path=str(generation), reuse=True)
        self._index.register_tokenizer(ANALYZER, tantivy_analyzer())
        self._searcher = self._index.searcher()
        self._q = tantivy.Query
        self._occur = tantivy.Occur

    # -- opening and building -------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path) -> TantivyIndex:
        """The live generation of `root`, checked: a damaged index is a DataError, not an empty index. Its readers'
        lock is taken before `CURRENT` is read and held until `close`."""
        check_native_path(root, "the text index", "move the index to a folder named in ASCII")
        reader = hold_shared(root / READERS_LOCK) if (root / CURRENT).is_file() else None
        try:
            return cls._open(root, reader)
        except BaseException:
            if reader is not None:
                reader.close()
            raise

    @classmethod
    def _open(cls, root: Path, reader: io.FileIO | None) -> TantivyIndex:
        pointer = root / CURRENT
        if root.is_file():
            kind = "dump" if ".xml" in root.suffixes else "jsonl"
            raise DataError(f"{root} is a file, not a text index (a folder); to search the paragraphs it holds, "
                            f"index them first with `kbc index build --source {kind} --input {root} --out DIR` "
                            "and name that DIR instead")
        if not pointer.exists():
            if root.is_dir() and any(p.name != READERS_LOCK for p in root.iterdir()):  # a build refuses other files
                raise DataError(f"{root}: no text index there (the folder holds other files); name the folder of "
                                "one, or build one into a new folder with `kbc index build --out DIR ...`")
            raise DataError(f"{root}: no text index there; build one with `kbc index build --out {root} ...`")
        if not pointer.is_file():
            raise damaged(root, f"{pointer} is not a file")
        try:
            name = pointer.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise damaged(root, f"{pointer} is unreadable: {_one_line(exc)}") from None
        if not name or Path(name).name != name or name in (".", ".."):
            raise damaged(root, f"{pointer} names no index folder ({name!r})")
        generation = root / name
        if not generation.is_dir():
            raise damaged(root, f"the folder {name} named by {pointer} is missing")
        meta = _read_meta(root, generation)
        if not (generation / TANTIVY_META).is_file():
            raise damaged(root, f"tantivy's {TANTIVY_META} is missing in {name}", meta)
        mismatch = check_files(generation, meta.get("files"))
        if mismatch:
            raise damaged(root, mismatch, meta)
        try:
            index = cls(root, generation, reader)
        except BaseException as exc:
            if not _is_tantivy_failure(exc):
                raise
            raise damaged(root, f"tantivy cannot open it: {_one_line(exc)}", meta) from None
        expected = meta.get("paragraphs")
        if isinstance(expected, int) and expected != len(index):
            raise damaged(root, f"{expected} paragraphs were built but tantivy finds {len(index)}", meta)
        return index

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            if not _is_tantivy_failure(exc):
                raise
            raise damaged(self.root, f"tantivy cannot read it: {_one_line(exc)}", self.meta) from None

    @classmethod
    def build(cls, paragraphs: Iterable[Paragraph], root: Path, meta: dict | None = None,
              progress: bool = False, threads: int = 1,
              reuse: Callable[[dict], bool] | None = None) -> TantivyIndex:
        """Index `paragraphs` into a new generation of `root` and switch to it, one build of `root` at a time.

        A build waits for another build of the same folder (`kb.writer_lock`); then, where `reuse` accepts the
        metadata of the intact index found there (one the other build just made), that index is returned
        instead (`built` False) and `paragraphs` are not read.
        """
        if root.exists() and not root.is_dir():
            raise DataError(f"{root} is a file; pass a directory (new or holding a text index) as --out")
        check_native_path(root, "the text index", "give --out a folder named in ASCII")
        _check_own(root)
        lock = writer_lock(root)
        for _ in range(100):  # a failed build elsewhere may remove the folder it made while we waited
            root.mkdir(parents=True, exist_ok=True)
            try:
                lock.acquire()
                break
            except FileNotFoundError:
                continue
        else:
            raise DataError(f"--out {root}: the folder keeps disappearing while a build waits for it")
        try:
            if reuse is not None and (root / CURRENT).exists():
                try:
                    found = cls.open(root)
                except DataError:  # damaged: built again
                    found = None
                if found is not None and reuse(found.meta):
                    return found
                if found is not None:
                    found.close()
            index = cls._build_generation(paragraphs, root, meta, progress, threads)
            index.built = True
            return index
        finally:
            lock.release(remove=not (root / CURRENT).exists())  # a folder left holding no index keeps no lock

    @classmethod
    def _build_generation(cls, paragraphs: Iterable[Paragraph], root: Path, meta: dict | None, progress: bool,
                          threads: int) -> TantivyIndex:
        """The build itself, under the writer lock: so every other generation is an old one or a build cut short."""
        import tantivy
        from tqdm import tqdm

        name = f"gen-{time.time_ns()}"
        generation = root / f"{name}.building"
        generation.mkdir()
        writer = index = None
        try:
            schema = _schema()
            index = tantivy.Index(schema, path=str(generation))
            index.register_tokenizer(ANALYZER, tantivy_analyzer())
            writer = index.writer(heap_size=HEAP, num_threads=threads)
            n = 0
            seen: set[str] = set()
            start = time.perf_counter()
            content = ContentDigest(paragraphs)
            for p in tqdm(content, desc="indexing", unit="para", disable=not progress):
                if p.pid in seen:
                    raise DataError(f"duplicate paragraph id {p.pid!r}; paragraph ids must be unique")
                seen.add(p.pid)
                doc = tantivy.Document()
                doc.add_text("pid", p.pid)
                doc.add_text("title", p.title)
                doc.add_unsigned("para", p.para)
                doc.add_text("text", p.text)
                for link in p.links:
                    doc.add_text("links", link)
                for fact in p.facts:
                    doc.add_text("facts", fact)
                writer.add_document(doc)
                n += 1
            writer.commit()
            writer.wait_merging_threads()
            seconds = time.perf_counter() - start
            files = file_digests(generation)
            info = {"backend": "tantivy", "paragraphs": n, "analyzer": PATTERN, "built_at": time.time(),
                    "build_seconds": round(seconds, 3), **(meta or {}), "content_sha256": content.hexdigest(),
                    "paragraphs_with_facts": content.with_facts, "files": files}
            (generation / META).write_text(json.dumps(info, indent=1, ensure_ascii=False))
            record_verified(generation, files)
            fsync_tree(generation)  # on disk before the pointer names it: a power cut keeps the old index or this
            final = root / name
            os.replace(generation, final)
            write_atomic(root / CURRENT, name.encode(), root / f"{CURRENT}.tmp")
        except BaseException as exc:
            disk = _disk_state(root) if isinstance(exc, ValueError) else ""  # before the folder goes
            if writer is not None:
                try:
                    writer.rollback()
                except Exception:  # the writer may already be unusable; the folder goes anyway
                    pass
            writer = index = None
            _remove_tree(generation)
            if isinstance(exc, ValueError) and _IO_FAILURE.search(str(exc)):
                raise DataError(f"{root}: the text index could not be written ({_one_line(exc)}): "
                                f"{disk}; nothing of it was kept") from None
            raise
        for old in root.iterdir():
            if old.is_dir() and old.name.startswith("gen-") and old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        return cls(root, final)

    def verify(self) -> int:
        """Hash every file of the generation against the digests recorded at build time (an open hashes only
        those whose size or time changed); returns how many were checked."""
        files = self.meta.get("files")
        mismatch = check_files(self.generation, files, full=True)
        if mismatch:
            raise damaged(self.root, mismatch, self.meta)
        return len(files)

    # -- queries --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._searcher.num_docs

    def _term(self, field: str, value: str):
        return self._q.term_query(self._schema, field, value)

    def _mention_query(self, mention: Mention):
        clauses = []
        for phrase in mention.token_phrases():
            q = self._term("text", phrase[0]) if len(phrase) == 1 else \
                self._q.phrase_query(self._schema, "text", list(phrase))
            clauses.append((self._occur.Should, q))
        if mention.link:
            clauses.append((self._occur.Should, self._term("links", mention.link)))
        if not clauses:
            return self._q.empty_query()
        return clauses[0][1] if len(clauses) == 1 else self._q.boolean_query(clauses)

    def _all_of(self, mentions: Sequence[Mention]):
        if not mentions:
            return self._q.all_query()
        if len(mentions) == 1:
            return self._mention_query(mentions[0])
        return self._q.boolean_query([(self._occur.Must, self._mention_query(m)) for m in mentions])

    def search(self, text: str, k: int = 10) -> list[Hit]:
        terms = term_counts(text)
        if not terms or k <= 0:
            return []
        clauses = [(self._occur.Should, self._q.boost_query(self._term("text", t), float(c)) if c > 1
                    else self._term("text", t)) for t, c in terms.items()]
        query = self._q.boolean_query(clauses)
        k = min(k, len(self))
        if k <= 0:
            return []
        with self._reading():
            result = self._searcher.search(query, k, count=False)
            return [Hit(score, self._paragraph(addr)) for score, addr in result.hits]

    def _paragraph(self, addr) -> Paragraph:
        d = self._searcher.doc(addr)
        return Paragraph(d.get_first("pid"), d.get_first("title"), d.get_first("para"), d.get_first("text"),
                         tuple(d.get_all("links")), tuple(d.get_all("facts")))

    def count(self, *mentions: Mention) -> int:
        query = self._all_of(mentions)
        with self._reading():
            return self._searcher.search(query, 1, count=True).count

    def count_many(self, groups: Sequence[Sequence[Mention]]) -> list[int]:
        return [self.count(*g) for g in groups]

    def _pages(self, mentions: Sequence[Mention], read) -> Iterator:
        """`read(addr)` of every paragraph holding all `mentions`, a page at a time."""
        query = self._all_of(mentions)
        total = self.count(*mentions)
        for offset in range(0, total, PAGE):
            with self._reading():
                result = self._searcher.search(query, min(PAGE, total - offset), count=False, offset=offset,
                                               order_by_field=None)
                found = [read(addr) for _, addr in result.hits]
            yield from found

    def matching(self, *mentions: Mention) -> Iterator[str]:
        return self._pages(mentions, lambda addr: self._searcher.doc(addr).get_first("pid"))

    def matching_paragraphs(self, *mentions: Mention) -> Iterator[Paragraph]:
        """The paragraphs themselves (text and links) of `matching`, in the same order."""
        return self._pages(mentions, self._paragraph)

    def doc_freq(self, term: str) -> int:
        with self._reading():
            return self._searcher.doc_freq("text", term)

    def facts_held(self, uids: Iterable[str]) -> set[str]:
        with self._reading():
            return {uid for uid in uids if self._searcher.doc_freq("facts", uid)}

    def fingerprint(self) -> str:
        """What the live generation holds (`index_fingerprint`; before the content digest: its files' digests)."""
        return index_fingerprint(self.meta, json.dumps(self.meta.get("files"), sort_keys=True))

    def stats(self) -> dict:
        meta = {k: v for k, v in self.meta.items() if k != "files"}  # the checksums are for `open`
        return {**meta, "backend": "tantivy", "location": str(self.root), "paragraphs": len(self),
                "size_bytes": _dir_size(self.generation), "segments": self._searcher.num_segments}

    def close(self) -> None:
        self._searcher = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __enter__(self) -> TantivyIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _remove_tree(folder: Path, tries: int = 50) -> None:
    """Remove a failed build's folder. The index writer's own threads may still release its files while the
    folder is being removed (a file put back after its folder was emptied), so the removal is tried until the
    folder is gone, for up to about a second."""
    for _ in range(tries):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
        time.sleep(0.02)
