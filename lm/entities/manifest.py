"""The SHA-256 digests of the files a training run wrote, kept in a JSON file beside them.

wikipedia2vec's intermediates are pickles (and its dump database holds pickled pages), which run
any code they hold when loaded. Resuming loads them, so a step's output is reused only when its
digest matches the one recorded when this training wrote it; a file with no record is rebuilt,
never loaded, and a file whose digest differs is refused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from eval.durable import fsync_file, write_atomic
from eval.errors import DataError

VERSION = 1
CHUNK = 1 << 20


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class Manifest:
    """`{"version": 1, "files": {name: sha256}, "settings": {name: {...}}}` for the files of one folder (the settings
    each was built with, so a rerun with others rebuilds it), rewritten atomically on each record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, str] = {}
        self.settings: dict[str, dict] = {}
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise DataError(f"{path}: not a readable training manifest ({exc}); delete it and the files beside it "
                            "to train again") from None
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise DataError(f"{path}: a training manifest holds {{\"files\": {{name: sha256}}}}; delete it and the "
                            "files beside it to train again")
        self.files = dict(files)
        settings = data.get("settings", {})
        if not isinstance(settings, dict) or not all(isinstance(v, dict) for v in settings.values()):
            raise DataError(f"{path}: its \"settings\" are not {{name: {{setting: value}}}}; delete it and the files "
                            "beside it to train again")
        self.settings = dict(settings)

    def settings_of(self, file: Path) -> dict | None:
        """The settings `file` was built with, None where its record (of an earlier version) has none."""
        return self.settings.get(file.name)

    def verified(self, file: Path) -> bool:
        """Whether `file` may be loaded: True when its digest is the recorded one; False when it is absent or was not
        recorded (to be rebuilt); a DataError when it differs from the record."""
        if not file.exists():
            return False
        recorded = self.files.get(file.name)
        if recorded is None:
            return False
        actual = sha256(file)
        if actual != recorded:
            raise DataError(f"{file}: its SHA-256 ({actual[:16]}...) differs from the one recorded in {self.path} "
                            f"when training wrote it ({recorded[:16]}...); it was changed since, and loading it could "
                            "run code it holds: delete it to rebuild it")
        return True

    def forget(self, file: Path) -> None:
        """Drop the record and the file itself (it is about to be rebuilt)."""
        had = self.files.pop(file.name, None) is not None
        if self.settings.pop(file.name, None) is not None or had:
            self._save()
        file.unlink(missing_ok=True)

    def record(self, file: Path, settings: dict | None = None) -> None:
        fsync_file(file)  # on disk before the manifest vouches for it: a power cut costs no finished step
        self.files[file.name] = sha256(file)
        self.settings[file.name] = dict(settings or {})
        self._save()

    def _save(self) -> None:
        data = {"version": VERSION, "files": self.files, "settings": self.settings}
        write_atomic(self.path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"),
                     self.path.with_name(self.path.name + ".tmp"))
