"""Where the LAMA data lives: `--data-dir`, else `$KBC_DATA`, else `./data/lama`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from eval.errors import DataError

ENV_VAR = "KBC_DATA"
DEFAULT_DIR = Path("data") / "lama"
HOW_TO_GET = (
    "run `kbc data download` (fetches the official LAMA release), "
    f"or point --data-dir / {ENV_VAR} at a copy"
)


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The directory holding `relations.jsonl`; accepts the LAMA dir itself or a parent of it."""
    given = data_dir or os.environ.get(ENV_VAR) or DEFAULT_DIR
    root = Path(given).expanduser()
    for cand in (root, root / "lama", root / "data"):
        if (cand / "relations.jsonl").is_file():
            return cand.resolve()
    if not root.exists():
        raise DataError(f"LAMA data directory {root} does not exist; {HOW_TO_GET}")
    raise DataError(f"{root} holds no LAMA data (no relations.jsonl); {HOW_TO_GET}")


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """`cache_dir`, else `$KBC_CACHE`, else `~/.cache/kbcompare`: one root for every cache the project keeps."""
    return Path(cache_dir or os.environ.get("KBC_CACHE") or Path.home() / ".cache" / "kbcompare").expanduser()


def fingerprint(paths: list[Path]) -> str:
    """A short content hash of the data files a run read, stored in its config."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]
