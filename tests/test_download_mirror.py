"""`kbc data download` and `kbc data list` against a real HTTP server on localhost that serves the staged files
at their upstream paths (`HOST/OWNER/REPO/COMMIT/PATH`), as a mirror of GitHub and of LAMA's release host would."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import re
import threading
import zipfile
from pathlib import Path

import pytest
from cli_support import run_kbc

from eval.sources import BY_NAME, MIRROR_ENV, SOURCES

SMALL = ("lmkbc2024", "pararel", "coherency-prompts", "bear")
USED = (*SMALL, "lama", "xfactr", "fewrel")


class MirrorHandler(http.server.BaseHTTPRequestHandler):
    """GET with single `bytes=N-` ranges (416 past the end); `server.cut` ends a file's answer early,
    `server.tampered` serves other bytes for a path, and `server.ranges` records the range asked for each path."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        data = self.server.tampered.get(self.path)
        if data is None:
            path = self.server.root / self.path.lstrip("/")
            if not path.is_file():
                self.send_error(404)
                return
            data = path.read_bytes()
        asked = self.headers.get("Range")
        self.server.ranges.append((self.path, asked))
        start = int(re.fullmatch(r"bytes=(\d+)-", asked).group(1)) if asked else 0
        if start >= len(data) > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.end_headers()
            return
        self.send_response(206 if asked else 200)
        if asked:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        cut = self.server.cut.get(self.path)
        self.wfile.write(data[start:cut])
        if cut is not None:
            self.close_connection = True

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory, shared_data):
    """A server over links to the staged copies of the corpora these tests fetch, at their upstream paths, plus a
    LAMA release archive."""
    root = tmp_path_factory.mktemp("mirror")
    for f in {f for name in USED for f in BY_NAME[name].files()}:  # a file two corpora share is served once
        link = root / f.url.removeprefix("https://")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(shared_data / f.dest)
    archive = root / "dl.fbaipublicfiles.com" / "LAMA" / "data.zip"
    archive.parent.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ("relations.jsonl", "TREx/P108.jsonl"):
            zf.write(shared_data / "lama" / name, f"data/{name}")
    archive.write_bytes(buf.getvalue())
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MirrorHandler)
    server.root = root
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def mirror(server, monkeypatch):
    """The server, serving every file whole and untouched, named by `KBC_DATA_MIRROR`."""
    server.cut, server.tampered, server.ranges = {}, {}, []
    monkeypatch.setenv(MIRROR_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    return server


def _path(name: str, dest: str) -> str:
    """The server path of a pinned file."""
    pinned = next(f for f in BY_NAME[name].files() if f.dest == dest)
    return "/" + pinned.url.removeprefix("https://")


def _same_as_staged(dest: Path, shared: Path, names) -> int:
    n = 0
    for name in names:
        for f in BY_NAME[name].files():
            assert (dest / f.dest).read_bytes() == (shared / f.dest).read_bytes(), f.dest
            n += 1
    return n


def test_download_lays_out_what_the_loaders_read(mirror, tmp_path, shared_data, capsys, monkeypatch):
    dest = tmp_path / "data"
    code, out, err = run_kbc(["data", "download", *SMALL, "--dest", str(dest), "--quiet"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"lmkbc2024: ready in {dest / 'lmkbc2024'} (4 files, SHA-256 checked)",
        f"pararel: ready in {dest / 'pararel/patterns'} (39 files, SHA-256 checked)",
        f"coherency-prompts: ready in {dest / 'prompts/coherency'} (1 file, SHA-256 checked)",
        f"bear: ready in {dest / 'bear'} (64 files, SHA-256 checked)",
    ]
    assert _same_as_staged(dest, shared_data, SMALL) == 108
    assert sorted(p.name for p in dest.iterdir()) == ["bear", "lmkbc2024", "pararel", "prompts"]  # no leftovers

    from eval.bear import load_bear
    from eval.lama import load_relations
    from eval.lmkbc import load_lmkbc
    from eval.prompts import load_prompts
    from lm.causal import read_extended_templates

    # as a user who then sets KBC_DATA to the LAMA folder the download lays out beside them
    monkeypatch.setenv("KBC_DATA", str(dest / "lama"))
    assert len(load_lmkbc().facts) == 378
    bear = load_bear("bear")
    assert (len(bear.relations), len(bear.facts)) == (60, 7731)
    relations = load_relations(shared_data / "lama" / "relations.jsonl")
    prompts = load_prompts("pararel", dest / "lama", {r: relations[r] for r in ("P19", "P101")})
    assert (len(prompts["P19"]), len(prompts["P101"])) == (13, 13)  # the lines of each patterns file
    assert len(read_extended_templates(dest / "prompts" / "coherency" / "relations_autregressive.jsonl")) == 92

    # a second run verifies what is in place and fetches nothing
    asked = len(mirror.ranges)
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    assert (code, len(mirror.ranges)) == (0, asked)


def test_lama_release_and_vocabularies_from_the_mirror(mirror, tmp_path, shared_data, capsys):
    dest = tmp_path / "data"
    code, out, err = run_kbc(["data", "download", "--dest", str(dest), "--quiet"], capsys)
    assert (code, err) == (0, "")
    lama = dest / "lama"
    digest = hashlib.sha256((mirror.root / "dl.fbaipublicfiles.com/LAMA/data.zip").read_bytes()).hexdigest()
    assert out.splitlines() == [
        f"lama: ready in {lama} (3 files, SHA-256 checked; LAMA's release archive has no pinned digest, so it was "
        f"not checked: its SHA-256 {digest} is stored in {lama / 'SHA256'}; pass --sha256 to check it)",
        f"use --data-dir {lama} or export KBC_DATA={lama}; the other corpora are read beside it"]
    assert _same_as_staged(dest, shared_data, ["lama"]) == 3
    assert (lama / "SHA256").read_text() == digest + "\n"
    from eval.lama import load_trex

    assert len(load_trex(lama).relations) == 1


def test_an_interrupted_release_archive_resumes(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    zip_path = "/dl.fbaipublicfiles.com/LAMA/data.zip"
    whole = (mirror.root / zip_path.lstrip("/")).read_bytes()
    mirror.cut[zip_path] = 100_000
    code, out, err = run_kbc(["data", "download", "lama", "--dest", str(dest), "--quiet"], capsys)
    kept = dest / ".download"
    assert (code, err) == (2, f"error: cannot download {mirror_url(mirror)}{zip_path}: the transfer ended after "
                              f"100000 of {len(whole)} bytes; they are kept in {kept}: rerun the same command to "
                              "resume\n")
    assert not (dest / "lama").exists()

    del mirror.cut[zip_path]
    code, out, err = run_kbc(["data", "download", "lama", "--dest", str(dest), "--quiet"], capsys)
    assert code == 0
    assert [r for p, r in mirror.ranges if p == zip_path] == [None, "bytes=100000-"]
    assert (dest / "lama" / "SHA256").read_text() == hashlib.sha256(whole).hexdigest() + "\n"
    assert sorted(p.name for p in dest.iterdir()) == ["lama"]

    # a kept archive that is already whole: the server has nothing after it (416) and it is used as it is
    again = tmp_path / "again"
    (again / ".download").mkdir(parents=True)
    (again / ".download" / "lama-data.zip.part").write_bytes(whole)
    code, out, err = run_kbc(["data", "download", "lama", "--dest", str(again), "--quiet"], capsys)
    assert code == 0
    assert [r for p, r in mirror.ranges if p == zip_path][2:] == [f"bytes={len(whole)}-"]
    assert (again / "lama" / "relations.jsonl").read_bytes() == (dest / "lama" / "relations.jsonl").read_bytes()


def test_a_tampered_file_is_one_error_line_and_never_put_in_place(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    val = _path("lmkbc2024", "lmkbc2024/val.jsonl")
    good = (mirror.root / val.lstrip("/")).read_bytes()
    mirror.tampered[val] = good.replace(b"Germany", b"Germanz", 1)
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"error: {mirror_url(mirror)}{val} is not the pinned file")
    assert "nothing was put in place" in err
    assert not (dest / "lmkbc2024" / "val.jsonl").exists()
    assert not (dest / ".download").exists()

    del mirror.tampered[val]  # the mirror is repaired: the next run completes
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    assert code == 0 and (dest / "lmkbc2024" / "val.jsonl").read_bytes() == good


def test_a_failed_download_into_a_new_folder_leaves_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, "http://127.0.0.1:9")  # nothing listens on the discard port
    dest = tmp_path / "data"
    code, _, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    assert code == 2 and err.startswith("error: cannot download http://127.0.0.1:9/") and err.count("\n") == 1
    assert not dest.exists()


def test_a_corpus_that_fails_leaves_the_others_downloaded(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    val = _path("lmkbc2024", "lmkbc2024/val.jsonl")
    mirror.tampered[val] = b"{}\n"
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "coherency-prompts", "--dest", str(dest), "--quiet"],
                             capsys)
    assert code == 2
    assert out == f"coherency-prompts: ready in {dest / 'prompts/coherency'} (1 file, SHA-256 checked)\n"
    failed, last = err.splitlines()
    assert failed.startswith(f"lmkbc2024: not downloaded: cannot download {mirror_url(mirror)}{val}: the transfer "
                             "ended after 3 of 111459 bytes")
    assert last == ("error: 1 of 2 corpora could not be downloaded (lmkbc2024: why is said above); the other 1 are "
                    "ready; rerun the same command to fetch what is missing (what is in place is checked, not fetched "
                    "again)")
    assert not (dest / "lmkbc2024" / "val.jsonl").exists() and (dest / "prompts" / "coherency").is_dir()


def mirror_url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_an_interrupted_transfer_resumes(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    val = _path("lmkbc2024", "lmkbc2024/val.jsonl")
    good = (mirror.root / val.lstrip("/")).read_bytes()
    mirror.cut[val] = 40_000
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    kept = dest / ".download" / "lmkbc2024"
    assert (code, err) == (2, f"error: cannot download {mirror_url(mirror)}{val}: the transfer ended after 40000 "
                              f"of 111459 bytes; they are kept in {kept}: rerun the same command to resume\n")
    part = dest / ".download" / "lmkbc2024" / "val.jsonl.part"
    assert part.read_bytes() == good[:40_000]
    assert not (dest / "lmkbc2024" / "val.jsonl").exists()

    del mirror.cut[val]
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(dest), "--quiet"], capsys)
    assert code == 0
    assert [r for p, r in mirror.ranges if p == val] == [None, "bytes=40000-"]
    assert (dest / "lmkbc2024" / "val.jsonl").read_bytes() == good
    assert not (dest / ".download").exists()


def test_a_changed_file_in_place_is_refused_not_overwritten(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    assert run_kbc(["data", "download", "pararel", "--dest", str(dest), "--quiet"], capsys)[0] == 0
    edited = dest / "pararel" / "patterns" / "P19.jsonl"
    edited.write_text("{}\n")
    code, out, err = run_kbc(["data", "download", "pararel", "--dest", str(dest), "--quiet"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {edited} is not the pinned file") and "remove it and rerun" in err
    assert edited.read_text() == "{}\n"


def test_list_says_what_is_present_partial_changed_or_missing(mirror, tmp_path, capsys):
    dest = tmp_path / "data"
    assert run_kbc(["data", "download", "lmkbc2024", "xfactr", "--dest", str(dest), "--quiet"], capsys)[0] == 0
    (dest / "xfactr" / "TREx_multi_rel.txt").write_text("edited\n")
    mirror.cut[_path("fewrel", "fewrel/val_wiki.json")] = 1000
    assert run_kbc(["data", "download", "fewrel", "--dest", str(dest), "--quiet"], capsys)[0] == 2
    code, out, err = run_kbc(["data", "list", "--dest", str(dest)], capsys)
    assert code == 0
    rows = {line.split()[0]: re.split(r"\s{2,}", line, maxsplit=4) for line in out.splitlines()[1:-2]}
    assert list(rows) == [s.name for s in SOURCES]
    assert rows["lmkbc2024"] == ["lmkbc2024", "200 kB", "present", str(dest / "lmkbc2024"),
                                 "CC BY 4.0: LM-KBC 2024: set-valued facts of 5 relations, train and val, "
                                 "with prompt templates"]
    assert rows["xfactr"][2] == "changed"
    assert rows["fewrel"][1:4] == ["3.6 MB", "partial", str(dest / "fewrel")]
    assert rows["lama"][1:4] == ["459 kB+zip", "missing", str(dest / "lama")]
    assert {r[2] for n, r in rows.items() if n not in ("lmkbc2024", "xfactr", "fewrel")} == {"missing"}
    assert out.splitlines()[0].split() == ["name", "size", "status", "where", "licence:", "what"]
    assert out.splitlines()[-2:] == ["total 33.2 MB in 577 files of 14 corpora, plus LAMA's release archive",
                                     f"listed {dest} (--dest)"]


def test_a_corpus_whose_only_files_in_place_are_shared_with_another_is_missing(mirror, tmp_path, shared_data,
                                                                              capsys):
    """BEAR and BEAR-big pin the same relation_info.json: BEAR downloaded leaves BEAR-big missing, not
    partial; one BEAR-big file of its own in place makes it partial."""
    from eval.download import status
    from eval.sources import BY_NAME

    dest = tmp_path / "data"
    shared = {f.dest for f in BY_NAME["bear"].files()} & {f.dest for f in BY_NAME["bear-big"].files()}
    assert "bear/relation_info.json" in shared
    assert run_kbc(["data", "download", "bear", "--dest", str(dest), "--quiet"], capsys)[0] == 0
    assert (status(BY_NAME["bear"], dest), status(BY_NAME["bear-big"], dest)) == ("present", "missing")
    own = next(f for f in BY_NAME["bear-big"].files() if f.dest not in shared)
    (dest / own.dest).parent.mkdir(parents=True, exist_ok=True)
    (dest / own.dest).write_bytes((shared_data / own.dest).read_bytes())
    assert status(BY_NAME["bear-big"], dest) == "partial"


@pytest.mark.parametrize("given", ["lama", "."])
def test_list_looks_beside_the_lama_copy_of_kbc_data(shared_data, capsys, monkeypatch, given):
    monkeypatch.setenv("KBC_DATA", str(shared_data / given))
    code, out, err = run_kbc(["data", "list"], capsys)
    rows = {line.split()[0]: re.split(r"\s{2,}", line, maxsplit=4) for line in out.splitlines()[1:-2]}
    assert code == 0, err
    assert rows["lama"][2:4] == ["present", str(shared_data / "lama")]
    assert rows["negated-lama"][2:4] == ["present", str(shared_data / "negated_misprimed_lama")]
    assert out.splitlines()[-1] == f"listed {shared_data} (from KBC_DATA={shared_data / given})"


def test_list_without_dest_or_kbc_data_looks_in_data(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_kbc(["data", "list"], capsys)
    assert (code, out.splitlines()[-1]) == (0, f"listed {tmp_path / 'data'} (--dest default; KBC_DATA is not set): no "
                                               "such folder yet, so nothing is in it; `kbc data download` makes it")
    assert out.splitlines()[1].split()[:4] == ["lama", "459", "kB+zip", "missing"]


def test_list_of_a_dest_that_does_not_exist_says_so(tmp_path, capsys):
    """As `kbc data download --dest` takes it: a folder not made yet, which holds nothing."""
    dest = tmp_path / "nonexist"
    code, out, err = run_kbc(["data", "list", "--dest", str(dest)], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == (f"listed {dest} (--dest): no such folder yet, so nothing is in it; `kbc data "
                                    f"download --dest {dest}` makes it")
    assert not dest.exists()


def test_a_run_finds_what_the_default_download_put_in_data(mirror, tmp_path, capsys, monkeypatch):
    """`kbc data download` puts corpora in ./data/ by default; a run from the same folder, with no --data-dir,
    KBC_DATA or KBC_BEAR, reads them there."""
    monkeypatch.chdir(tmp_path)
    for var in ("KBC_DATA", "KBC_BEAR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, out, err = run_kbc(["data", "download", "bear", "fewrel", "lmkbc2024", "--quiet"], capsys)
    assert (code, err) == (0, ""), err
    code, out, err = run_kbc(["run", "bear", "--predictors", "freq", "--limit", "5", "--relations", "P19", "--out",
                              "runs/bear", "--quiet"], capsys)
    assert code == 0, err
    assert err.startswith("bear: 1 relation, read 150, kept 150, dropped 0; asking a sample of 5"), err
    rows = json.loads((tmp_path / "runs" / "bear" / "summary.json").read_text())
    assert {r["n_facts"] for r in rows if r["scope"] == "own" and r["group"] == "all"} == {5}

    from eval.fewrel import resolve_fewrel_dir
    from eval.lmkbc import resolve_lmkbc_dir

    data = tmp_path / "data"
    assert (resolve_fewrel_dir(), resolve_lmkbc_dir()) == (data / "fewrel", data / "lmkbc2024")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_local_data_folder_is_a_mirror_checked_file_by_file_and_never_written(tmp_path, shared_data, capsys,
                                                                                monkeypatch):
    """A data folder laid out as the download lays it out (not HOST/PATH), named by its path: its files are copied
    and checked against their pinned SHA-256; a file that differs is refused; the folder itself is left as it was."""
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    source = tmp_path / "copy"
    for name in ("lmkbc2024", "coherency-prompts"):
        for f in BY_NAME[name].files():
            (source / f.dest).parent.mkdir(parents=True, exist_ok=True)
            (source / f.dest).write_bytes((shared_data / f.dest).read_bytes())
    before = _tree(source)
    dest = tmp_path / "data"
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "coherency-prompts", "--mirror", str(source), "--dest",
                              str(dest), "--quiet"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"lmkbc2024: ready in {dest / 'lmkbc2024'} (4 files, SHA-256 checked)",
                                f"coherency-prompts: ready in {dest / 'prompts/coherency'} (1 file, SHA-256 checked)"]
    assert _same_as_staged(dest, shared_data, ["lmkbc2024", "coherency-prompts"]) == 5
    val = source / "lmkbc2024" / "val.jsonl"
    val.write_bytes(val.read_bytes().replace(b"Germany", b"Germanz", 1))
    before = {**before, "lmkbc2024/val.jsonl": val.read_bytes()}
    pinned = next(f for f in BY_NAME["lmkbc2024"].files() if f.dest == "lmkbc2024/val.jsonl")
    got = hashlib.sha256(val.read_bytes()).hexdigest()
    code, out, err = run_kbc(["data", "download", "lmkbc2024", "--mirror", val.parents[1].as_uri(), "--dest",
                              str(tmp_path / "other"), "--quiet"], capsys)
    assert (code, err) == (2, f"error: {val.as_uri()} is not the pinned file (SHA-256 {got}, {pinned.size} bytes; "
                              f"expected {pinned.sha256}, {pinned.size} bytes); nothing was put in place: check the "
                              "source or the mirror\n")
    assert not (tmp_path / "other" / "lmkbc2024" / "val.jsonl").exists()
    assert _tree(source) == before  # read, never written


def test_a_local_mirror_in_the_host_path_layout_gives_lama_and_its_archive(server, tmp_path, shared_data, capsys,
                                                                          monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    dest = tmp_path / "data"
    code, out, err = run_kbc(["data", "download", "lama", "--mirror", str(server.root), "--dest", str(dest),
                              "--quiet"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0].startswith(f"lama: ready in {dest / 'lama'} (3 files, SHA-256 checked; LAMA's release "
                                          "archive has no pinned digest, so it was not checked: its SHA-256 ")
    assert _same_as_staged(dest, shared_data, ["lama"]) == 3
    assert (dest / "lama" / "TREx" / "P108.jsonl").read_bytes() == (shared_data / "lama/TREx/P108.jsonl").read_bytes()


def test_list_names_every_corpus_of_the_lama_release(tmp_path, capsys, monkeypatch):
    """The release archive holds ConceptNet beside T-REx, Google-RE and SQuAD (`--corpus conceptnet` reads
    `lama/ConceptNet/test.jsonl` and its error says to download LAMA), so the list names all four."""
    monkeypatch.delenv("KBC_DATA", raising=False)
    code, out, _ = run_kbc(["data", "list", "--dest", str(tmp_path)], capsys)
    lama = next(line for line in out.splitlines() if line.startswith("lama "))
    assert code == 0
    assert [name for name in ("T-REx", "Google-RE", "SQuAD", "ConceptNet") if name not in lama] == []


def test_only_a_pinned_release_archive_is_said_to_be_checked(mirror, tmp_path, capsys):
    """No digest of LAMA's data.zip is pinned: an archive that is not the release unpacks all the same, so the ready
    line says it was not checked, unless --sha256 pinned it, and a wrong --sha256 puts nothing in place."""
    digest = hashlib.sha256((mirror.root / "dl.fbaipublicfiles.com/LAMA/data.zip").read_bytes()).hexdigest()
    code, out, err = run_kbc(["data", "download", "--dest", str(tmp_path / "a"), "--quiet"], capsys)
    assert code == 0 and "SHA-256 checked, and LAMA's release archive" not in out
    assert f"not checked: its SHA-256 {digest} is stored in" in out
    code, out, err = run_kbc(["data", "download", "--dest", str(tmp_path / "b"), "--sha256", digest, "--quiet"], capsys)
    assert (code, out.splitlines()[0]) == (
        0, f"lama: ready in {tmp_path / 'b' / 'lama'} (3 files, SHA-256 checked, and LAMA's release archive)")
    code, _, err = run_kbc(["data", "download", "--dest", str(tmp_path / "c"), "--sha256", "0" * 64, "--quiet"],
                           capsys)
    assert code == 2 and "checksum mismatch" in err and not (tmp_path / "c" / "lama").exists()


def test_a_download_that_fails_at_once_prints_no_progress_bar(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(MIRROR_ENV, "http://127.0.0.1:9")
    code, _, err = run_kbc(["data", "download", "lmkbc2024", "--dest", str(tmp_path / "data")], capsys)
    assert code == 2 and "%|" not in err and err.startswith("error: cannot download http://127.0.0.1:9/"), err
