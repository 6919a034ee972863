"""`kbc data download` on a local archive (file:// URL): checksum, atomic unpack, clear errors."""

import hashlib
import zipfile

import pytest

from eval.download import download_lama
from eval.errors import DataError


def _archive(tmp_path):
    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data/relations.jsonl", '{"relation": "P19", "template": "[X] was born in [Y] ."}\n')
        zf.writestr("data/TREx/P19.jsonl", '{"sub_label": "A", "obj_label": "B"}\n')
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_download_verifies_and_unpacks(tmp_path):
    archive, digest = _archive(tmp_path)
    dest = tmp_path / "dest"
    final = download_lama(dest, archive.as_uri(), digest)
    assert final == dest / "lama"
    assert (final / "TREx" / "P19.jsonl").is_file()
    assert (final / "SHA256").read_text().strip() == digest
    assert [p.name for p in dest.iterdir()] == ["lama"]  # no temporary leftovers


def test_checksum_mismatch_leaves_nothing(tmp_path):
    archive, _ = _archive(tmp_path)
    dest = tmp_path / "dest"
    with pytest.raises(DataError, match="checksum mismatch"):
        download_lama(dest, archive.as_uri(), "0" * 64)
    assert list(dest.iterdir()) == []


def test_not_a_zip(tmp_path):
    bad = tmp_path / "data.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a valid zip archive"):
        download_lama(tmp_path / "dest", bad.as_uri())
