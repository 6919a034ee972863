"""LAMA-UHN (E-BERT paper §2.1): LAMA without the facts that an entity's name gives away.

Two filters, applied in this order (the paper applies them sequentially):
- string match: a fact is deleted when its object label is a case-insensitive substring of its
  subject label ("Apple Watch" -> "Apple"), in every relation.
- person name: for the person relations of `PLACE_NOUNS`, each whitespace token of the subject
  name is put into "[X] is a common name in the following <noun> : [MASK] ." (noun: city,
  country or language by relation); the fact is deleted when the gold object is among the top 3
  vocabulary tokens for any token. The question is asked of a masked LM through a `NameRanker`;
  `ScorerNameRanker` adapts an `lm.masked.MaskedLMScorer` over its whole vocabulary (as LAMA's
  `create_lama_uhn.py` takes the top 3 over all logits). Uncased models compare lower-cased names.

Filters read only the relation and the two labels, so a source row is kept exactly when the
fact it belongs to is kept; filtered data sets hold the original rows (judged-wrong Google-RE
rows pass through and are dropped again by the loader). Deletions are counted over facts
(after the loader's deduplication).

`trex-uhn` / `google_re-uhn` (`eval.corpora.load_corpus`) are built on first use into
`$KBC_CACHE/uhn/<version>/` (default cache `~/.cache/kbcompare`), where the version hashes the
source files, the filters, this module's `UHN_VERSION` and the name ranker's model fingerprint,
so edited data or another model builds anew. Without a name ranker only the string filter runs.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import sys
import uuid as uuidlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from eval.checked_json import read_checked, write_checked
from eval.datadir import ENV_VAR, cache_root, fingerprint, resolve_data_dir
from eval.durable import fsync_dir, fsync_tree
from eval.errors import ConfigError, DataError
from eval.file_digests import file_sha256
from eval.out_folders import check_own_folder, refuse_in_data
from eval.readers_lock import READERS_LOCK, hold_shared
from eval.report_counts import LoadReport
from eval.types import Fact

log = logging.getLogger("kbc")
UHN_VERSION = "uhn-v1"  # bump when a filter's rule changes: cached data sets then rebuild
FILTERS = ("string", "name")
TOP_K = 3
NAME_TEMPLATE = "[X] is a common name in the following {noun} : {mask} ."
# LAMA's create_lama_uhn.py PLACENOUNS (Google-RE relations under this project's names)
PLACE_NOUNS = {
    "place_of_birth": "city",
    "place_of_death": "city",
    "P19": "city",
    "P20": "city",
    "P27": "country",
    "P1412": "language",
    "P103": "language",
}
UHN_CORPORA = {"trex-uhn": "trex", "google_re-uhn": "google_re"}
DELETIONS_FILE = "deletions.json"
META_FILE = "uhn.json"
MANIFEST_FILE = "files.sha256.json"  # every other file's SHA-256, checked before a cached build is used
COPIED = ("common_vocab_cased.txt", "common_vocab_lowercased.txt", "common_vocab_cased_be_ro_al.txt")


def string_match(subject: str, obj: str) -> bool:
    """E-BERT filter 1: the object label is a case-insensitive substring of the subject label."""
    return obj.lower() in subject.lower()


class NameRanker(Protocol):
    """A masked LM asked for its top-k vocabulary tokens at the mask of each text."""

    mask: str
    uncased: bool
    fingerprint: str

    def top(self, texts: Sequence[str], k: int, on_batch: Callable[[int], None] | None = None) -> list[list[str]]:
        """`on_batch(n)` is told after each batch of n texts the model read (a progress bar)."""
        ...


class ScorerNameRanker:
    """A `MaskedLMScorer` and its full-vocabulary `CandidateSet` (`lm.vocab.full_vocab`) as a NameRanker."""

    def __init__(self, scorer, candidates, uncased: bool, model: str = "") -> None:
        self.model = model  # the path or hub id it was loaded from, as given: said where its deletions are
        self.scorer = scorer
        self.candidates = candidates
        self.uncased = uncased
        self.mask = scorer.tokenizer.mask_token
        self.fingerprint = f"{scorer.fingerprint}:{scorer.dtype}:{candidates.fingerprint}"

    def top(self, texts: Sequence[str], k: int, on_batch: Callable[[int], None] | None = None) -> list[list[str]]:
        before, self.scorer.on_batch = self.scorer.on_batch, on_batch
        try:
            scored = self.scorer.score(list(texts), self.candidates, k)
        finally:
            self.scorer.on_batch = before
        return [[self.candidates.labels[p] for p in s.pos] for s in scored]


def name_prompt(name: str, relation: str, mask: str) -> str:
    return NAME_TEMPLATE.format(noun=PLACE_NOUNS[relation], mask=mask).replace("[X]", name)


def person_name_ranks(facts: Iterable[Fact], ranker: NameRanker, k: int = TOP_K,
                      progress: bool = False) -> dict[str, tuple[int | None, ...]]:
    """For each fact of a person relation: the gold object's rank (1..k) for each name token, None
    where it is not in that token's top k (E-BERT Table 3's "(1,-)"). Each distinct prompt runs once;
    `progress`: a bar on stderr counts them, for the model reads them for minutes on the full data."""
    todo: list[tuple[str, str, list[str]]] = []
    for fact in facts:
        if fact.relation not in PLACE_NOUNS:
            continue
        sub, obj = fact.subject.label, fact.object.label
        if ranker.uncased:
            sub, obj = sub.lower(), obj.lower()
        # a token holding the model's mask text would give the prompt two masks: it cannot be asked
        texts = [name_prompt(tok, fact.relation, ranker.mask) for tok in sub.split() if ranker.mask not in tok]
        todo.append((fact.uid, obj, texts))
    unique = list(dict.fromkeys(t for _, _, texts in todo for t in texts))
    tops: dict[str, list[str]] = {}
    with tqdm(total=len(unique), desc="UHN name filter", unit="prompt", disable=not progress or not unique,
              file=sys.stderr) as bar:
        if unique:
            tops = dict(zip(unique, ranker.top(unique, k, bar.update)))
            bar.update(len(unique) - bar.n)  # prompts answered from the cache come in no batch
    out: dict[str, tuple[int | None, ...]] = {}
    for uid, obj, texts in todo:
        out[uid] = tuple(tops[t].index(obj) + 1 if obj in tops[t][:k] else None for t in texts)
    return out


@dataclass
class Deletions:
    """Facts of one relation, and how many each filter deleted (name: among string-filter survivors)."""

    corpus: str
    n: int = 0
    deleted_string: int = 0
    deleted_name: int = 0

    @property
    def kept(self) -> int:
        return self.n - self.deleted_string - self.deleted_name

    def to_dict(self) -> dict:
        return {"corpus": self.corpus, "n": self.n, "deleted_string": self.deleted_string,
                "deleted_name": self.deleted_name, "kept": self.kept}


@dataclass
class Filtered:
    """Kept facts, per-relation deletion counts, the name ranks of facts the name filter deleted,
    and the (relation, subject label, object label) keys the name filter deleted."""

    kept: list[Fact]
    deletions: dict[str, Deletions]
    name_ranks: dict[str, tuple[int | None, ...]] = field(default_factory=dict)
    name_keys: set[tuple[str, str, str]] = field(default_factory=set)


def check_filters(filters: Iterable[str], ranker: NameRanker | None) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(filters))
    unknown = [f for f in chosen if f not in FILTERS]
    if unknown:
        raise ConfigError(f"unknown UHN filter {unknown[0]!r}; choose from {', '.join(FILTERS)}")
    if not chosen:
        raise ConfigError(f"no UHN filter chosen; choose from {', '.join(FILTERS)}")
    if "name" in chosen and ranker is None:
        raise ConfigError("the person-name filter needs a masked LM (--model PATH, or KBC_UHN_MODEL)")
    return chosen


def filter_facts(facts: Sequence[Fact], filters: Iterable[str] = ("string",), ranker: NameRanker | None = None,
                 k: int = TOP_K, progress: bool = False) -> Filtered:
    """Apply the filters in order (string, then name on what is left); counts per relation."""
    chosen = check_filters(filters, ranker)
    deletions: dict[str, Deletions] = {}
    survivors: list[Fact] = []
    for fact in facts:
        d = deletions.setdefault(fact.relation, Deletions(fact.corpus))
        d.n += 1
        if "string" in chosen and string_match(fact.subject.label, fact.object.label):
            d.deleted_string += 1
        else:
            survivors.append(fact)
    if "name" not in chosen:
        return Filtered(survivors, deletions)
    ranks = person_name_ranks(survivors, ranker, k, progress)  # type: ignore[arg-type]
    kept, hits, keys = [], {}, set()
    for fact in survivors:
        r = ranks.get(fact.uid, ())
        if any(x is not None for x in r):
            deletions[fact.relation].deleted_name += 1
            hits[fact.uid] = r
            keys.add((fact.relation, fact.subject.label, fact.object.label))
        else:
            kept.append(fact)
    return Filtered(kept, deletions, hits, keys)


# --- filtered data sets in the LAMA layout -------------------------------------------------------------

def _source_files(root: Path) -> dict[str, Path]:
    """Output path (relative, LAMA layout) -> source file: relations, T-REx (reconstructed where the
    original is missing, written into TREx/), Google-RE."""
    files: dict[str, Path] = {"relations.jsonl": root / "relations.jsonl"}
    for sub in ("TREx_reconstructed", "TREx"):  # originals win over reconstructions
        folder = root / sub
        if folder.is_dir():
            for path in sorted(folder.glob("*.jsonl")):
                files[f"TREx/{path.name}"] = path
    folder = root / "Google_RE"
    if folder.is_dir():
        for path in sorted(folder.glob("*_test.jsonl")):
            files[f"Google_RE/{path.name}"] = path
    return files


def source_version(data_dir: str | Path | None = None) -> str:
    """A content hash of the source files a UHN data set is built from."""
    root = resolve_data_dir(data_dir)
    return fingerprint(list(_source_files(root).values()))


def _relation_of(out_name: str) -> tuple[str, str]:
    """(corpus, relation) of an output data file."""
    folder, name = out_name.split("/")
    if folder == "TREx":
        return "trex", name.removesuffix(".jsonl")
    return "google_re", name.removesuffix("_test.jsonl")


def _write_filtered(src: Path, dst: Path, relation: str, chosen: tuple[str, ...],
                    name_keys: set[tuple[str, str, str]]) -> None:
    """The source rows whose fact is kept, byte for byte."""
    with src.open("rb") as inp, dst.open("wb") as out:
        for raw in inp:
            if not raw.strip():
                continue
            row = json.loads(raw)
            sub, obj = row.get("sub_label"), row.get("obj_label")
            if isinstance(sub, str) and isinstance(obj, str):
                sub, obj = sub.strip(), obj.strip()  # the labels as the loader reads them (`eval.lama._label`)
                if "string" in chosen and string_match(sub, obj):
                    continue
                if (relation, sub, obj) in name_keys:
                    continue
            out.write(raw if raw.endswith(b"\n") else raw + b"\n")


def _replace_dir(tmp: Path, out: Path) -> None:
    """Put the finished `tmp` at `out`, synced (a power cut keeps the old build or the new one, whole); a previous
    build there is swapped out, then removed."""
    fsync_tree(tmp)
    old = out.with_name(f".{out.name}.old-{uuidlib.uuid4().hex[:8]}") if out.exists() else None
    if old is not None:
        os.replace(out, old)
    os.replace(tmp, out)
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def check_out(out: Path, data_dir: str | Path | None) -> None:
    """Refuse an `out` among the data the build reads (inside it, the folder itself, or one holding it), as `kbc run
    --out` is refused there: a build over its own output would replace the data it filtered with a copy of itself.
    An earlier build elsewhere is replaced whole, its own `relations.jsonl` notwithstanding."""
    given = data_dir or os.environ.get(ENV_VAR)
    read = [resolve_data_dir(data_dir), *([Path(given)] if given else [])]
    refuse_in_data(out, ", and LAMA-UHN is written into --out; pass a folder outside the data", read,
                   replaced=(Path(out).expanduser() / META_FILE).is_file())


def build_uhn(data_dir: str | Path | None, out: str | Path, filters: Iterable[str] = ("string",),
              ranker: NameRanker | None = None, k: int = TOP_K, replace_existing: bool = True,
              progress: bool = False) -> dict[str, dict]:
    """Write the filtered data set to `out` in the LAMA layout with `deletions.json`; returns the deletions.

    Built in a temporary folder beside `out` and renamed into place, so `out` is never half-written.
    An existing `out` is replaced only when it is an earlier UHN build (it holds `uhn.json`) or empty;
    with `replace_existing=False` a build that another process finished first is kept instead.
    """
    from eval.lama import load_google_re, load_trex

    chosen = check_filters(filters, ranker)
    root = resolve_data_dir(data_dir)
    out = Path(out).expanduser()
    check_own_folder(out, META_FILE, f"{out} exists and is not a LAMA-UHN folder; choose another --out or remove it")
    files = _source_files(root)
    facts: list[Fact] = list(load_trex(root).facts)
    if any(name.startswith("Google_RE/") for name in files):
        facts += load_google_re(root).facts
    result = filter_facts(facts, chosen, ranker, k, progress)
    deletions = {rel: d.to_dict() for rel, d in result.deletions.items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{uuidlib.uuid4().hex[:8]}")
    try:
        (tmp / "TREx").mkdir(parents=True)
        (tmp / "Google_RE").mkdir()
        for name, src in files.items():
            if name == "relations.jsonl":
                shutil.copyfile(src, tmp / name)
                continue
            _, relation = _relation_of(name)
            _write_filtered(src, tmp / name, relation, chosen, result.name_keys)
        for name in COPIED:
            if (root / name).is_file():
                shutil.copyfile(root / name, tmp / name)
        (tmp / DELETIONS_FILE).write_text(json.dumps(deletions, indent=1) + "\n", encoding="utf-8")
        deleted = {uid: [r if r is not None else "-" for r in ranks] for uid, ranks in result.name_ranks.items()}
        meta = {"uhn_version": UHN_VERSION, "source": str(root), "source_version": fingerprint(list(files.values())),
                "filters": list(chosen), "top_k": k, "name_model": getattr(ranker, "fingerprint", None),
                "name_ranks_of_deleted": deleted}
        (tmp / META_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        write_checked(tmp / MANIFEST_FILE, _digests(tmp))
        if replace_existing or not (out / META_FILE).is_file():
            _replace_dir(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return deletions


def uhn_data_dir(data_dir: str | Path | None = None, ranker: NameRanker | None = None,
                 cache_dir: str | Path | None = None, k: int = TOP_K) -> Path:
    """The cached UHN data set for this source data (string filter; plus the name filter with a ranker)."""
    root = resolve_data_dir(data_dir)
    filters = ("string", "name") if ranker is not None else ("string",)
    key = "\x1f".join([UHN_VERSION, source_version(root), ",".join(filters), str(k),
                       getattr(ranker, "fingerprint", "") or ""])
    version = hashlib.sha256(key.encode()).hexdigest()[:16]
    out = cache_root(cache_dir) / "uhn" / version
    _hold_readers_lock(out.parent)
    if not (out / META_FILE).is_file():
        build_uhn(root, out, filters, ranker, k, replace_existing=False)
    elif not _intact(out):
        build_uhn(root, out, filters, ranker, k)
    return out


# the cache's LAMA-UHN folders this process read, each one's readers' lock held until the process ends (a run may
# hash its data files again, for their version, well after loading them), so `kbc cache clear uhn` refuses meanwhile
_READING: dict[Path, io.FileIO] = {}


def _hold_readers_lock(folder: Path) -> None:
    folder = folder.absolute()
    if folder in _READING:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no cache to build in: the build says why
    if (handle := hold_shared(folder / READERS_LOCK)) is not None:
        _READING[folder] = handle


def _digests(folder: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file of a UHN folder but its manifest."""
    return {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST_FILE}


def _intact(folder: Path) -> bool:
    """Whether a cached UHN folder holds exactly the bytes it was built with (warning where it does not)."""
    if not (folder / MANIFEST_FILE).is_file():
        log.warning("%s: a LAMA-UHN data set of an earlier kbc version (no checksums); built again", folder)
        return False
    recorded = read_checked(folder / MANIFEST_FILE, "LAMA-UHN data set")
    if recorded is None:
        return False
    if recorded != _digests(folder):
        log.warning("%s: files differ from those it was built with (edited or damaged); the LAMA-UHN data set is "
                    "built again", folder)
        return False
    return True


def read_deletions(folder: str | Path) -> dict[str, dict]:
    path = Path(folder) / DELETIONS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: not found (build the data set with `kbc data uhn --out DIR`)") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from None


def load_uhn_corpus(name: str, data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
                    compat: str | None = None, ranker: NameRanker | None = None,
                    cache_dir: str | Path | None = None):
    """`trex-uhn` or `google_re-uhn`: the base corpus loaded from the cached UHN data set, renamed."""
    from eval.lama import load_google_re, load_trex

    base = UHN_CORPORA[name]
    folder = uhn_data_dir(data_dir, ranker, cache_dir)
    corpus = load_trex(folder, relations) if base == "trex" else load_google_re(folder, relations, compat=compat)
    corpus.name = name
    corpus.facts = [replace(f, corpus=name) for f in corpus.facts]
    deletions = read_deletions(folder)
    meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    mine = [deletions[rel] for rel in corpus.relations if rel in deletions]
    corpus.fact_filter = " + ".join(meta.get("filters", [])) + (f" ({meta['name_model']})" if meta.get("name_model")
                                                              else "")
    corpus.filter_details = filter_details(meta, ranker)
    note = LoadReport(f"{name} (LAMA-UHN, {' + '.join(meta.get('filters', []))})")
    note.notes.append(f"deleted {sum(d['deleted_string'] for d in mine)} (string match) + "
                      f"{sum(d['deleted_name'] for d in mine)} (person name) of {sum(d['n'] for d in mine)} facts; "
                      f"per relation in {folder / DELETIONS_FILE}")
    corpus.reports.append(note)
    return corpus


def filter_details(meta: Mapping, ranker: NameRanker | None) -> dict:
    """What chose a LAMA-UHN corpus's facts, for a run's config and summary: the filters and, with the person-name
    filter, the model it asked (as given, and its fingerprint) and over what it takes the top k."""
    out: dict = {"filters": list(meta.get("filters", []))}
    if "name" in out["filters"]:
        out |= {"name_model": getattr(ranker, "model", "") or None, "name_model_fingerprint": meta.get("name_model"),
                "top_k": meta.get("top_k", TOP_K), "over": "the model's full vocabulary"}
    return out


def filter_note(corpus: str, details: Mapping) -> str:
    """summary.md's line on a LAMA-UHN corpus: which filters deleted facts and which model the name filter asked."""
    filters = " + ".join(details.get("filters", [])) or "none"
    if "name" not in details.get("filters", []):
        return (f"{corpus}: LAMA-UHN facts, filtered by {filters} (no person-name filter: no model was given, "
                "$KBC_UHN_MODEL unset).")
    model = f"`{details['name_model']}` " if details.get("name_model") else ""
    return (f"{corpus}: LAMA-UHN facts, filtered by {filters}; the person-name filter asked {model}"
            f"(`{details.get('name_model_fingerprint')}`) for its top {details.get('top_k', TOP_K)} over "
            f"{details.get('over', 'its full vocabulary')}.")


def deletion_rates(deletions: Mapping[str, Mapping[str, int]], which: str = "deleted_string") -> dict[str, float]:
    """Per relation, the percentage of facts a filter deleted (E-BERT Table 3's "% del")."""
    return {rel: 100.0 * d[which] / d["n"] for rel, d in deletions.items() if d["n"]}
