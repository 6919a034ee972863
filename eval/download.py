"""`kbc data download`: every corpus of `eval.sources`, checksummed, resumable, put in place atomically.

Each file is fetched into `DEST/.download/` (a broken transfer resumes from there with an HTTP range request),
checked against its pinned size and SHA-256, and only then renamed to where the loaders look; a file that fails
the check is deleted, so nothing unverified is ever in place. LAMA's release archive is unpacked beside its final
folder and renamed into place whole.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from tqdm import tqdm

from eval.datadir import absolute_path, sha256_file
from eval.durable import fsync_dir, fsync_file, fsync_tree, make_dirs
from eval.errors import DataError
from eval.sources import BY_NAME, LAMA_URL, PinnedFile, Source

LAMA_SHA256: str | None = None  # pass --sha256 to pin; the digest is always printed and stored
PARTIAL = ".download"  # under DEST: unfinished transfers, resumed on the next run
LAMA_EXAMPLE = f"{LAMA_URL} (or file:///path/to/data.zip for a local copy)"
MIRROR_EXAMPLE = ("http://HOST[:PORT][/PATH] holding each upstream file at HOST/PATH below it, or a local folder "
                  "(such a mirror, or a data folder `kbc data download` filled)")


def check_url(url: str, option: str = "--url", example: str = LAMA_EXAMPLE) -> str:
    """`url` if urllib can fetch it (http, https, ftp with a host; file); a DataError otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
    except ValueError as exc:
        raise DataError(f"{option} {url!r} is not a valid URL ({exc})") from None
    if parts.scheme == "file" and parts.path:
        return url
    if parts.scheme not in ("http", "https", "ftp") or not parts.hostname:
        raise DataError(f"{option} {url!r} is not a URL to download from; expected e.g. {example}")
    return url


def local_mirror(mirror: str) -> Path | None:
    """The folder a `--mirror` names on this machine (a path, or a `file://` URL), absolute; None for a remote URL.

    A local mirror is read in either layout: a mirror's `HOST/PATH`, or the corpora laid out as `kbc data download`
    lays them out (a data folder filled before); every file is checked against its pinned SHA-256 either way."""
    parts = urllib.parse.urlsplit(mirror)
    if parts.scheme == "file":
        folder = Path(urllib.request.url2pathname(parts.path))
    elif not parts.scheme:
        folder = Path(mirror).expanduser()
    else:
        check_url(mirror, "--mirror", MIRROR_EXAMPLE)
        return None
    if not folder.is_dir():
        what = "is no folder" if folder.exists() else "does not exist"
        raise DataError(f"--mirror {mirror}: {folder} {what}; expected e.g. {MIRROR_EXAMPLE}")
    return absolute_path(folder)


def _hosted(folder: Path, url: str) -> Path:
    """Where a mirror folder holds the file of `url`: at its `HOST/PATH`."""
    parts = urllib.parse.urlsplit(url)
    return folder / str(parts.hostname) / parts.path.lstrip("/")


def _local_source(pinned: PinnedFile, folder: Path) -> Path | None:
    """Where a local mirror holds `pinned`: at its `HOST/PATH`, else where `kbc data download` puts it."""
    return next((p for p in (_hosted(folder, pinned.url), folder / pinned.dest) if p.is_file()), None)


def _nested(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def _check_local(source: Source, dest: Path, folder: Path, lama_url: str | None) -> None:
    """Refuse, before anything is written, a download that would write into the local mirror it copies from, or
    that the mirror cannot serve (with what to do instead)."""
    real = folder.resolve()
    targets = [dest / source.where, dest / PARTIAL] + ([dest / source.archive.dest] if source.archive else [])
    if any(_nested(t.resolve(), real) for t in targets):  # what it writes and where it copies from, links followed
        laid_out = all((folder / f.dest).is_file() for f in source.files())
        raise DataError(f"--dest {dest} and --mirror {folder} overlap, and a download never writes into the folder it "
                        "copies from; choose another --dest" + (f", or read the copy where it is: pass --data-dir "
                                                                f"{folder} to `kbc run`" if laid_out else ""))
    archive = source.archive
    if archive is not None and lama_url is None and not (dest / archive.dest / archive.marker).is_file():
        zipped, unpacked = _hosted(folder, archive.url), folder / archive.dest
        if not zipped.is_file() and (unpacked / archive.marker).is_file():
            raise DataError(f"--mirror {folder} holds LAMA unpacked ({unpacked}), not its release archive, so it "
                            "cannot be checked against the archive's SHA-256; read it where it is: pass --data-dir "
                            f"{unpacked} to `kbc run` (or export KBC_DATA={unpacked}), or put data.zip at {zipped} "
                            "(or pass --url file:///path/to/data.zip)")
        if not zipped.is_file():
            raise DataError(f"--mirror {folder} holds no LAMA release archive: expected {zipped}")
    missing = [f for f in source.files() if _local_source(f, folder) is None and not _present(f, dest)]
    if missing:
        first = missing[0]
        raise DataError(f"--mirror {folder} lacks {len(missing)} of the {len(source.files())} files of {source.name}, "
                        f"e.g. {first.dest}: looked for {folder / first.dest} (the layout `kbc data download` makes) "
                        f"and {_hosted(folder, first.url)} (a mirror's HOST/PATH)")


def _present(pinned: PinnedFile, dest: Path) -> bool:
    try:
        return _check_present(pinned, dest)
    except DataError:
        return False


def mirrored(url: str, mirror: str | None) -> str:
    """`url` on `mirror`, which holds each upstream file at `HOST/PATH` (e.g. raw.githubusercontent.com/OWNER/...)."""
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.hostname}{parts.path}"


def _fetch(url: str, part: Path, bar: tqdm) -> str:
    """Fetch `url` into `part`, continuing a partial `part` where the server honours a range; the SHA-256 of all
    of `part`. An answer shorter than its Content-Length leaves `part` for the next run to resume."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            start = _range_start(resp) if have else 0
            if start != have and start != 0:  # not the range asked for: start over without one
                part.unlink()
                return _fetch(url, part, bar)
            length = resp.headers.get("Content-Length")
            total = start + int(length) if length else None
            if bar.total is None and total:  # an archive: its size is known once the server answers
                bar.total = total
            digest = hashlib.sha256()
            if start:  # resumed: the kept bytes count towards the digest
                with part.open("rb") as kept:
                    for block in iter(lambda: kept.read(1 << 20), b""):
                        digest.update(block)
                bar.update(start)
            with part.open("ab" if start else "wb") as out:
                for block in iter(lambda: resp.read(1 << 20), b""):
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
                got = out.tell()
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing after the kept bytes: whole if the server's size is theirs
            if (exc.headers.get("Content-Range") or "") == f"bytes */{have}":
                bar.update(have)
                return sha256_file(part)
            part.unlink()
            return _fetch(url, part, bar)
        raise DataError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # ValueError: a URL urllib cannot open
        kept = part.stat().st_size if part.is_file() else 0
        reason = str(exc) or type(exc).__name__
        then = (f"{kept} bytes are kept in {part.parent}: rerun the same command to resume" if kept else
                "check the connection, or name a copy of the upstream files with --mirror URL (or KBC_DATA_MIRROR)")
        raise DataError(f"cannot download {url}: {reason}; {then}") from None
    if total is not None and got < total:
        raise DataError(_ended(url, part, got, total))
    return digest.hexdigest()


def _ended(url: str, part: Path, got: int, total: int) -> str:
    return (f"cannot download {url}: the transfer ended after {got} of {total} bytes; they are kept in "
            f"{part.parent}: rerun the same command to resume")


def _range_start(resp) -> int:
    """Where a 206 answer's bytes start (0 for a whole-file answer)."""
    if getattr(resp, "status", None) != 206:
        return 0
    match = re.match(r"bytes (\d+)-", resp.headers.get("Content-Range") or "")
    return int(match.group(1)) if match else -1


def _install(pinned: PinnedFile, dest: Path, mirror: str | None, bar: tqdm, folder: Path | None = None) -> None:
    """Fetch one pinned file (from local mirror `folder` where given), verify its size and SHA-256, then rename it
    into place."""
    final = dest / pinned.dest
    part = dest / PARTIAL / f"{pinned.dest}.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    local = _local_source(pinned, folder) if folder is not None else None
    url = local.as_uri() if local is not None else mirrored(pinned.url, mirror)
    if part.is_file() and part.stat().st_size > pinned.size:
        part.unlink()
    if part.is_file() and part.stat().st_size == pinned.size:
        got = sha256_file(part)
        bar.update(pinned.size)
    else:
        got = _fetch(url, part, bar)
    size = part.stat().st_size
    if size < pinned.size:  # a server that gave no Content-Length
        raise DataError(_ended(url, part, size, pinned.size))
    if size != pinned.size or got != pinned.sha256:
        part.unlink()
        raise DataError(f"{url} is not the pinned file (SHA-256 {got}, {size} bytes; expected {pinned.sha256}, "
                        f"{pinned.size} bytes); nothing was put in place: check the source or the mirror")
    make_dirs(final.parent)
    fsync_file(part)  # the checked bytes reach the disk before their name does
    os.replace(part, final)
    fsync_dir(final.parent)


def _check_present(pinned: PinnedFile, dest: Path) -> bool:
    """True when the file is in place with its pinned bytes; a DataError when something else is there."""
    final = dest / pinned.dest
    if not final.exists():
        return False
    if final.is_file() and final.stat().st_size == pinned.size and sha256_file(final) == pinned.sha256:
        return True
    raise DataError(f"{final} is not the pinned file (expected SHA-256 {pinned.sha256}, {pinned.size} bytes): "
                    "it was changed or damaged; remove it and rerun to download it again")


def _prune(dest: Path) -> None:
    """Remove the empty folders of finished transfers (the partial folder itself when nothing is left)."""
    root = dest / PARTIAL
    if not root.is_dir():
        return
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    if not any(root.iterdir()):
        root.rmdir()


def download_files(source: Source, dest: str | Path, mirror: str | None = None, progress: bool = True,
                   folder: Path | None = None) -> Path:
    """The pinned files of `source` under `dest` (those already in place are verified, not fetched again);
    `folder`: a local mirror, read in either of its layouts (`local_mirror`)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    todo = [f for f in source.files() if not _check_present(f, dest)]
    try:
        with tqdm(total=sum(f.size for f in todo), unit="B", unit_scale=True, desc=source.name, delay=1.0,
                  disable=not progress or not todo) as bar:
            for pinned in todo:
                _install(pinned, dest, mirror, bar, folder)
    finally:
        _prune(dest)
    return dest / source.where


def download_corpus(name: str, dest: str | Path, mirror: str | None = None, progress: bool = True,
                    lama_url: str | None = None, lama_sha256: str | None = None) -> Path:
    """Download the corpus `name` (see `eval.sources.SOURCES`) into `dest`; the folder that holds it. A local
    `mirror` (`local_mirror`) is copied from, never written into."""
    folder = local_mirror(mirror) if mirror else None
    source = BY_NAME[name]
    if folder is not None:
        _check_local(source, absolute_path(dest), folder, lama_url)
        mirror = folder.as_uri()
    if source.archive is not None:
        url = lama_url or mirrored(source.archive.url, mirror)
        download_lama(dest, url, lama_sha256 or source.archive.sha256 or LAMA_SHA256, progress)
    return download_files(source, dest, mirror, progress, folder)


def download_lama(dest: str | Path, url: str = LAMA_URL, sha256: str | None = LAMA_SHA256,
                  progress: bool = True) -> Path:
    """Download into `DEST/.download` (resumable), verify, unpack beside `dest/lama`, then rename into place."""
    dest = Path(dest)
    final = dest / "lama"
    if (final / "relations.jsonl").is_file():
        return final
    check_url(url)
    if final.exists():
        raise DataError(f"{final} exists but holds no relations.jsonl (an unfinished copy?); "
                        "remove it or choose another --dest")
    part = dest / PARTIAL / "lama-data.zip.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tqdm(unit="B", unit_scale=True, desc="LAMA data.zip", delay=1.0, disable=not progress) as bar:
            got = _fetch(url, part, bar)
        if sha256 and got != sha256:
            part.unlink()
            raise DataError(f"checksum mismatch for {url}: expected {sha256}, got {got}")
        with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
            try:
                with zipfile.ZipFile(part) as zf:
                    zf.extractall(Path(tmp) / "unpacked")
            except zipfile.BadZipFile:
                part.unlink()
                raise DataError(f"{url} is not a valid zip archive") from None
            roots = list((Path(tmp) / "unpacked").rglob("relations.jsonl"))
            if not roots:
                part.unlink()
                raise DataError(f"{url}: archive holds no relations.jsonl")
            staged = roots[0].parent
            (staged / "SHA256").write_text(got + "\n")
            fsync_tree(staged)  # a power cut keeps the whole unpacked copy or none of it
            staged.rename(final)
            fsync_dir(dest)
        part.unlink()
    finally:
        _prune(dest)
    return final


def status(source: Source, dest: str | Path) -> str:
    """`present` (every file in place with its pinned bytes), `partial`, `missing`, or `changed` (a file in place
    that is not the pinned one)."""
    dest = Path(dest)
    files = source.files()
    try:
        present = [pinned for pinned in files if _check_present(pinned, dest)]
    except DataError:
        return "changed"
    found, total = len(present), len(files)
    if source.archive:
        total += 1
        found += (dest / source.archive.dest / source.archive.marker).is_file()
    if found == total:
        return "present"
    # a file another corpus pins too (BEAR's README beside BEAR-big's) says nothing of this one's download
    others = {f.dest for other in BY_NAME.values() if other.name != source.name for f in other.files()}
    started = any((dest / PARTIAL / f"{f.dest}.part").is_file() for f in files)
    return "partial" if started or found > sum(f.dest in others for f in present) else "missing"
