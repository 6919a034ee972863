"""Which folders a graph store or a text index is written into, and what a damaged store leaves a user to do."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import pyoxigraph as ox
import pytest
from cli_support import run_kbc
from rdflib import Dataset, Literal
from tests_support_facts import toy_facts

from eval.types import Entity
from kb.store import LOADED, GraphStore, fact_quads, graph_iri
from kb.store_disk import LIVE, MARK

PARIS, FRANCE = Entity("Paris", "Q90"), Entity("France", "Q142")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _paragraphs(tmp_path: Path) -> Path:
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "Dante", "text": "Dante was born in Florence"}) + "\n")
    return src


def test_a_refused_index_build_leaves_the_store_and_the_data_as_they_were(tmp_path, capsys):
    store_dir, data = tmp_path / "store", tmp_path / "lama"
    with GraphStore.open(store_dir) as store:
        store.ensure_facts(toy_facts(), "toy@1")
    data.mkdir()
    (data / "relations.jsonl").write_text('{"relation": "P19"}\n')
    before = {"store": _tree(store_dir), "data": _tree(data)}
    for out in (store_dir, data):
        code, _, err = run_kbc(["index", "build", "--source", "jsonl", "--input", str(_paragraphs(tmp_path)),
                                "--out", str(out), "--quiet"], capsys)
        why = "is not empty" if out == store_dir else "is inside the LAMA data directory"
        assert code == 2 and err.startswith(f"error: --out {out} {why}"), err
    assert {"store": _tree(store_dir), "data": _tree(data)} == before
    with GraphStore.open(store_dir) as store:
        assert store.objects(PARIS, "P131") == [FRANCE]


def test_an_index_is_built_into_an_empty_folder_and_over_its_own(tmp_path, capsys):
    (tmp_path / "idx").mkdir()
    argv = ["index", "build", "--source", "jsonl", "--input", str(_paragraphs(tmp_path)), "--out",
            str(tmp_path / "idx"), "--quiet"]
    for _ in range(2):
        code, out, err = run_kbc(argv, capsys)
        assert code == 0, err
        assert out.splitlines()[-1] == f"index: 1 paragraph in {tmp_path / 'idx'} (tantivy), built"
    assert [p.name for p in (tmp_path / "idx").iterdir() if p.is_dir()] == [(tmp_path / "idx" / "CURRENT").read_text()]


def _old_layout_store(path: Path, graph_name: str = "gold") -> None:
    """A store as earlier versions wrote it: one RocksDB folder, opened by one process at a time."""
    ds = Dataset(store="Oxigraph")
    ds.open(str(path))
    ds.addN(fact_quads(toy_facts(), graph_name))
    ds.addN([(graph_iri(graph_name), LOADED, Literal("toy@1"), graph_iri("meta"))])
    ds.close()
    gc.collect()  # rdflib's reference cycles keep the database open until collected


def test_a_store_of_the_one_folder_layout_moves_into_its_first_generation(tmp_path):
    path = tmp_path / "store"
    _old_layout_store(path)
    with GraphStore.open(path) as store:
        assert store.loaded_versions() == {"toy@1"}
        assert store.objects(PARIS, "P131") == [FRANCE]
    assert sorted(p.name for p in path.iterdir()) == sorted([MARK, LIVE, "writer.lock", (path / LIVE).read_text()])
    with GraphStore.open(path) as again, GraphStore.open(path) as beside:
        assert again.relations() == beside.relations() == {"P131": 2, "P47": 3, "date_of_birth": 1}


@pytest.mark.parametrize("graph", [ox.NamedNode("http://g"), ox.DefaultGraph()])
def test_an_oxigraph_database_kbc_did_not_write_is_refused(tmp_path, capsys, graph):
    path = tmp_path / "theirs"
    theirs = ox.Store(str(path))
    theirs.add(ox.Quad(ox.NamedNode("http://a"), ox.NamedNode("http://b"), ox.Literal("c"), graph))
    del theirs
    before = _tree(path)
    code, _, err = run_kbc(["kb", "stats", "--store", str(path)], capsys)
    assert (code, err.splitlines()) == (2, [f"error: --store {path} holds an Oxigraph database that kbc did not write; "
                                            "pass another --store DIR, or another cache with KBC_CACHE=DIR"])
    assert _tree(path) == before


def test_a_damaged_store_deleted_as_told_is_rebuilt(tmp_path, capsys, lama_dir):
    path = tmp_path / "store"
    argv = ["kb", "load", "--corpus", "google_re", "--data-dir", str(lama_dir), "--store", str(path)]
    assert run_kbc(argv, capsys)[0] == 0
    live = path / (path / LIVE).read_text()
    (live / "CURRENT").write_text("MANIFEST-999999\n")
    code, _, err = run_kbc(argv, capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: the graph store {path} is damaged (IO error: No such file or "
                                               "directory: While opening a file for sequentially reading: "
                                               f"{live}/MANIFEST-999999: No such file or directory); it is a cache: "
                                               f"delete the folder {path} and kbc rebuilds what it needs from the data")
    shutil.rmtree(path)
    code, out, _ = run_kbc(argv, capsys)
    assert code == 0 and out.startswith("google_re: 5527 facts loaded (graph gold-google_re: "), out
