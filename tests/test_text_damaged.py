"""Damaged text indexes fail loudly with the command that rebuilds them; bad Elasticsearch answers
and URLs are one-line errors; result counts are bounded.

tantivy quietly opens a fresh empty index where its `meta.json` is gone, which would make every
search return nothing and a retrieval run score 0.00: each damage below must be a DataError instead.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_support import run_kbc

from eval.errors import ConfigError, DataError, KbcError
from kb.text.index import Mention, open_index
from kb.text.paragraphs import Paragraph

PARAGRAPHS = [
    Paragraph("Dante#0", "Dante", 0, "Dante was born in Florence", ("Florence",)),
    Paragraph("Dante#1", "Dante", 1, "Dante died in Ravenna"),
    Paragraph("Florence#0", "Florence", 0, "Florence is a city in Italy"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from kb.text.index import build_index

    root = tmp_path_factory.mktemp("text") / "idx"
    build_index(PARAGRAPHS, "tantivy", root, meta={"source": "jsonl:paragraphs.jsonl"}).close()
    return root


def _generation(root: Path) -> Path:
    return root / (root / "CURRENT").read_text().strip()


def _segment_file(root: Path, ext: str) -> Path:
    return next(_generation(root).glob(f"*.{ext}"))


def _overwrite_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[5:40] = b"\xff" * 35
    path.write_bytes(bytes(data))


def _set_byte(path: Path, offset: int, value: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = value
    path.write_bytes(bytes(data))


def _edit_kbc_meta(root: Path, edit: Callable[[dict], None]) -> None:
    path = _generation(root) / "kbc-meta.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


def _edit_tantivy_meta(root: Path, edit: Callable[[dict], None]) -> None:
    path = _generation(root) / "meta.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


DAMAGE: dict[str, tuple[Callable[[Path], object], str]] = {
    "tantivy meta.json missing": (lambda r: (_generation(r) / "meta.json").unlink(), "meta.json is missing"),
    "tantivy meta.json empty": (lambda r: (_generation(r) / "meta.json").write_text(""),
                                "its file meta.json has 0 bytes, not the"),
    "kbc-meta.json missing": (lambda r: (_generation(r) / "kbc-meta.json").unlink(), "kbc-meta.json is missing"),
    "kbc-meta.json malformed": (lambda r: (_generation(r) / "kbc-meta.json").write_text("{oops"), "unreadable"),
    "kbc-meta.json an array": (lambda r: (_generation(r) / "kbc-meta.json").write_text("[1]"), "JSON list"),
    "kbc-meta.json not UTF-8": (lambda r: (_generation(r) / "kbc-meta.json").write_bytes(b"\xff\xfe"), "unreadable"),
    "segment store missing": (lambda r: _segment_file(r, "store").unlink(), ".store is missing"),
    "segment terms missing": (lambda r: _segment_file(r, "term").unlink(), ".term is missing"),
    "segment file truncated": (lambda r: _segment_file(r, "idx").write_bytes(b"\0" * 10), ".idx has 10 bytes, not"),
    "positions overwritten": (lambda r: _overwrite_middle(_segment_file(r, "pos")),
                              ".pos differs from the one it was built with: SHA-256 mismatch"),
    "norms overwritten": (lambda r: _set_byte(_segment_file(r, "fieldnorm"), 6, 0x0A),
                          ".fieldnorm differs from the one it was built with: SHA-256 mismatch"),
    "document count changed": (lambda r: _edit_tantivy_meta(r, lambda m: m["segments"][0].update(max_doc=99)),
                               "its file meta.json"),
    "no checksums recorded": (lambda r: _edit_kbc_meta(r, lambda m: m.pop("files")),
                              "it records no file checksums (built by an older kbcompare)"),
    "CURRENT names a missing folder": (lambda r: (r / "CURRENT").write_text("gen-gone"), "folder gen-gone"),
    "CURRENT empty": (lambda r: (r / "CURRENT").write_text(""), "names no index folder"),
    "CURRENT points outside": (lambda r: (r / "CURRENT").write_text("/etc"), "names no index folder"),
    "CURRENT a directory": (lambda r: ((r / "CURRENT").unlink(), (r / "CURRENT").mkdir()), "is not a file"),
    "CURRENT not UTF-8": (lambda r: (r / "CURRENT").write_bytes(b"\xff\xfe"), "unreadable"),
}


@pytest.fixture
def damaged(built, tmp_path) -> Iterator[Callable[[str], Path]]:
    def make(kind: str) -> Path:
        root = tmp_path / "idx"
        shutil.copytree(built, root)
        DAMAGE[kind][0](root)
        return root

    yield make


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_index_is_an_error_with_the_rebuild_command(damaged, kind):
    root = damaged(kind)
    with pytest.raises(DataError) as info:
        with open_index("tantivy", root) as idx:  # damage found on first read counts as well
            idx.search("Dante Florence", 5)
            idx.count(Mention.of("Dante"), Mention.of("born in"))
            list(idx.matching(Mention.of("Florence")))
    message = str(info.value)
    assert DAMAGE[kind][1] in message
    assert message.startswith(f"{root}: the text index is damaged") and "\n" not in message
    assert "rebuild it with `kbc index build " in message and f"--out {root}" in message
    if not kind.startswith(("kbc-meta", "CURRENT")):  # kbc-meta.json still readable
        assert "--source jsonl --input paragraphs.jsonl" in message  # the exact command, from the metadata


def test_intact_copy_opens_and_answers(built, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(built, root)
    with open_index("tantivy", root) as idx:
        assert len(idx) == 3 and [h.paragraph.pid for h in idx.search("born Florence", 2)] == ["Dante#0",
                                                                                            "Florence#0"]


def test_damaged_norms_would_change_scores_silently(built, damaged, monkeypatch):
    """tantivy reads a norms file with one length changed without complaint: only the checksums catch it."""
    from kb.text import tantivy_index

    with open_index("tantivy", built) as idx:
        intact = [(round(h.score, 4), h.paragraph.pid) for h in idx.search("Dante Florence", 3)]
    assert intact == [(0.94, "Dante#0"), (0.5119, "Dante#1"), (0.4345, "Florence#0")]
    root = damaged("norms overwritten")
    monkeypatch.setattr(tantivy_index, "check_files", lambda generation, recorded: None)
    with open_index("tantivy", root) as idx:
        assert [(round(h.score, 4), h.paragraph.pid) for h in idx.search("Dante Florence", 3)] == [
            (0.6671, "Dante#0"), (0.5119, "Dante#1"), (0.4345, "Florence#0")]


def test_an_unchanged_index_opens_without_hashing_again(built, tmp_path, monkeypatch):
    from kb.text import integrity

    root = tmp_path / "copy"
    shutil.copytree(built, root, copy_function=shutil.copy)  # new times: the first open hashes, and remembers
    hashed: list[str] = []
    real = integrity._sha256
    monkeypatch.setattr(integrity, "_sha256", lambda path: hashed.append(path.name) or real(path))
    open_index("tantivy", root).close()
    first = len(hashed)
    open_index("tantivy", root).close()
    assert first == len(json.loads((_generation(root) / "kbc-meta.json").read_text())["files"]) > 0
    assert len(hashed) == first


def test_rebuilding_a_damaged_index_repairs_it(damaged):
    from kb.text.index import build_index

    root = damaged("tantivy meta.json missing")
    build_index(PARAGRAPHS, "tantivy", root).close()
    with open_index("tantivy", root) as idx:
        assert len(idx) == 3


def test_search_never_asks_for_more_hits_than_paragraphs(built):
    with open_index("tantivy", built) as idx:  # tantivy would try to allocate room for k hits
        assert len(idx.search("Dante", 10**11)) == 2


def test_cli_on_a_damaged_index_is_one_line(damaged, capsys):
    root = damaged("tantivy meta.json missing")
    for argv in (["index", "stats", "--index", str(root)], ["index", "search", "Dante", "--index", str(root)],
                 ["cooccur", "Dante", "Florence", "--index", str(root)]):
        code, out, err = run_kbc(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1, (argv, err)
        assert err.startswith(f"error: {root}: the text index is damaged") and "rebuild it with" in err


@pytest.mark.parametrize("k", ["0", "10001", "100000000000"])
def test_cli_bounds_k(built, capsys, k):
    code, _, err = run_kbc(["index", "search", "Dante", "-k", k, "--index", str(built)], capsys)
    assert code == 2 and err.startswith("error: Invalid value for '-k'") and "1<=x<=10000" in err


class _Answer(http.server.BaseHTTPRequestHandler):
    status = 500
    body = b"internal failure"

    def _reply(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    do_GET = do_HEAD = do_POST = do_PUT = _reply

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_elasticsearch_http_500_is_one_line(failing_server, capsys):
    with pytest.raises(KbcError, match=r"HTTP 500: internal failure"):
        open_index("elasticsearch", "idx", failing_server)
    code, _, err = run_kbc(["index", "stats", "--backend", "elasticsearch", "--es-url", failing_server], capsys)
    assert code == 2 and err == f"error: Elasticsearch at {failing_server}: HTTP 500: internal failure\n"


@pytest.mark.parametrize("url", ["localhost:9200", "http://", "htp://host:9200", "http://[::1", "http://h:99999",
                                 "not a url"])
def test_malformed_elasticsearch_url_is_a_config_error(url, capsys):
    with pytest.raises(ConfigError, match="Elasticsearch URL"):
        open_index("elasticsearch", "idx", url)
    code, _, err = run_kbc(["index", "search", "x", "--backend", "elasticsearch", "--es-url", url], capsys)
    assert code == 2 and err.startswith("error: Elasticsearch URL") and err.count("\n") == 1
