"""`kbc data download`: the official LAMA release, checksummed and unpacked atomically."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from tqdm import tqdm

from eval.errors import DataError

LAMA_URL = "https://dl.fbaipublicfiles.com/LAMA/data.zip"
LAMA_SHA256: str | None = None  # pass --sha256 to pin; the digest is always printed and stored


def check_url(url: str) -> str:
    """`url` if urllib can fetch it (http, https, ftp with a host; file); a DataError otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port out of range)
    except ValueError as exc:
        raise DataError(f"--url {url!r} is not a valid URL ({exc})") from None
    if parts.scheme == "file" and parts.path:
        return url
    if parts.scheme not in ("http", "https", "ftp") or not parts.hostname:
        raise DataError(f"--url {url!r} is not a URL to download from; expected e.g. {LAMA_URL} "
                        "(or file:///path/to/data.zip for a local copy)")
    return url


def _fetch(url: str, target: Path) -> str:
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, target.open("wb") as out:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc="LAMA data.zip") as bar:
                for block in iter(lambda: resp.read(1 << 20), b""):
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
    except (OSError, ValueError) as exc:  # urllib raises ValueError for URLs it cannot open
        raise DataError(f"cannot download {url}: {exc}; check the network or fetch it by hand") from None
    return digest.hexdigest()


def download_lama(dest: str | Path, url: str = LAMA_URL, sha256: str | None = LAMA_SHA256) -> Path:
    """Download into a temporary directory beside `dest`, verify, unpack, then rename into place."""
    dest = Path(dest)
    final = dest / "lama"
    if (final / "relations.jsonl").is_file():
        return final
    check_url(url)
    if final.exists():
        raise DataError(f"{final} exists but holds no relations.jsonl (an unfinished copy?); "
                        "remove it or choose another --dest")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        archive = Path(tmp) / "data.zip"
        got = _fetch(url, archive)
        if sha256 and got != sha256:
            raise DataError(f"checksum mismatch for {url}: expected {sha256}, got {got}")
        (Path(tmp) / "SHA256").write_text(got + "\n")
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(Path(tmp) / "unpacked")
        except zipfile.BadZipFile:
            raise DataError(f"{url} is not a valid zip archive") from None
        roots = list((Path(tmp) / "unpacked").rglob("relations.jsonl"))
        if not roots:
            raise DataError(f"{url}: archive holds no relations.jsonl")
        staged = roots[0].parent
        shutil.copy(Path(tmp) / "SHA256", staged / "SHA256")
        staged.rename(final)
    return final
