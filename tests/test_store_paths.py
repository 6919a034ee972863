"""Where an embedded store may live: never inside a LAMA data directory; `file://` URLs are paths."""

from pathlib import Path

import pytest
from cli_support import run_kbc

from eval.errors import ConfigError
from kb.store import open_store, store_path


def _data(root: Path) -> Path:
    (root / "lama").mkdir(parents=True)
    (root / "lama" / "relations.jsonl").write_text('{"relation": "P19", "template": "[X] was born in [Y] ."}\n')
    return root / "lama"


def test_a_store_inside_the_data_directory_is_refused_before_writing(tmp_path, capsys):
    data = _data(tmp_path / "data")
    before = sorted(p.name for p in data.iterdir())
    for location, where in ((data, f"is inside the LAMA data directory {data}"),
                            (data / "store", f"is inside the LAMA data directory {data}"),
                            (tmp_path / "data", f"holds the LAMA data directory {data}")):
        code, _, err = run_kbc(["kb", "stats", "--store", str(location)], capsys)
        assert code == 2
        assert err.strip().splitlines() == [
            f"error: --store {location} {where}, and a store writes its database files into its directory; "
            "pass a directory outside the data, or leave --store out to use the cache"]
    assert sorted(p.name for p in data.iterdir()) == before
    assert not (data / "store").exists()


def test_file_urls_name_the_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_store(f"file://{tmp_path}/st", None, tmp_path / "default") as store:
        assert store.location == f"{tmp_path}/st"
    assert (tmp_path / "st").is_dir()
    assert not (tmp_path / "file:").exists()
    assert store_path("file://localhost/srv/kb%20store") == Path("/srv/kb store")


@pytest.mark.parametrize("location", ["file://host/srv/kb", "file:relative", "ftp://host/kb"])
def test_other_urls_are_refused(location):
    with pytest.raises(ConfigError, match="use a directory path, a file:///absolute/path URL or an http"):
        store_path(location)



def test_a_store_opened_lazily_is_made_at_its_first_use(tmp_path):
    """A run opens its store lazily: the location is checked at once, the folder made (or refused) only when a
    reader first asks; a store nothing asked is closed without ever being made."""
    from kb.store_disk import MARK

    data = _data(tmp_path / "data")
    with pytest.raises(ConfigError, match="is inside the LAMA data directory"):
        open_store(str(data / "store"), None, tmp_path / "default", lazy=True)
    with open_store(str(tmp_path / "unused"), None, tmp_path / "default", lazy=True):
        pass
    assert not (tmp_path / "unused").exists()
    with open_store(str(tmp_path / "used"), None, tmp_path / "default", lazy=True) as store:
        assert not (tmp_path / "used").exists()
        assert store.graph_names() == []
        assert (tmp_path / "used" / MARK).is_file()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with open_store(str(tmp_path / "other"), None, tmp_path / "default", lazy=True) as store:
        with pytest.raises(ConfigError, match="is not empty .notes.txt. and holds no kbc graph store"):
            store.graph_names()
