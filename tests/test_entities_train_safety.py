"""`kbc entities train` loads only intermediates it wrote: a pickle planted in its work directory is rebuilt
over (no record of it) or refused (its digest differs from the record), and never unpickled."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

from cli_support import run_kbc
from test_entities_support import DUMP, W2V_DIM, first_pages, trained_w2v


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

FAST = ["--dim", str(W2V_DIM), "--iterations", "1", "--word-neg-power", "0", "--min-entity-count", "1",
        "--pool-size", "2"]


class Planted:
    """Unpickling this creates the marker file (as a planted pickle could run any command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return Path.touch, (self.marker,)


def plant(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(Planted(marker)))


def test_the_planted_pickle_is_live(tmp_path):
    marker = tmp_path / "marker"
    plant(tmp_path / "x.pkl", marker)
    pickle.loads((tmp_path / "x.pkl").read_bytes())
    assert marker.exists()  # so the tests below would see it, had training unpickled their plant


def test_a_changed_intermediate_is_refused_in_one_line(shared_data, tmp_path, capsys):
    work = tmp_path / "w2v"
    shutil.copytree(trained_w2v(shared_data).parent, work)
    marker = tmp_path / "marker"
    dic = work / "sample_dic.pkl"
    recorded = json.loads((work / "sample_manifest.json").read_text())["files"]["sample_dic.pkl"]
    plant(dic, marker)
    code, _, err = run_kbc(["entities", "train", str(shared_data / DUMP), "--out", str(work / "sample.pkl"), *FAST],
                           capsys)
    assert code == 2 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {dic}: its SHA-256 ({sha256(dic)[:16]}...) differs from the one recorded in "
        f"{work / 'sample_manifest.json'} when training wrote it ({recorded[:16]}...); it was changed since, and "
        "loading it could run code it holds: delete it to rebuild it"]
    assert not marker.exists()


def test_unrecorded_intermediates_are_rebuilt_never_loaded(shared_data, tmp_path):
    from lm.entities.embeddings import load_embeddings
    from lm.entities.train import TrainSettings, train

    work = tmp_path / "w2v"
    work.mkdir()
    marker = tmp_path / "marker"
    names = ("sample_dic.pkl", "sample_lg.pkl", "sample_mention.pkl", "sample.pkl")
    for name in names:
        plant(work / name, marker)
    settings = TrainSettings(dim=W2V_DIM, iterations=1, word_neg_power=0.0, entity_neg_power=0.0,
                             min_entity_count=1, pool_size=2)
    dump = first_pages(shared_data / DUMP, 80, tmp_path / "first80.xml.bz2")  # every step, in seconds
    safe = train(dump, work / "sample.pkl", settings)
    assert not marker.exists()
    files = json.loads((work / "sample_manifest.json").read_text())["files"]
    assert sorted(files) == sorted([*names, "sample.db"])
    assert all(files[name] == sha256(work / name) for name in files)
    assert load_embeddings(safe).dim == W2V_DIM
