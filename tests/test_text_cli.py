"""`kbc index build|stats|search` and `kbc cooccur`, including one-line errors with exit status 2."""

from __future__ import annotations

import contextlib
import json

import pytest

from bridge.cli import main


def _kbc(capsys, *argv) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_build_stats_search_and_cooccur(tmp_path, capsys):
    src = tmp_path / "p.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"title": "Dante", "text": "Dante was born in Florence", "links": ["Florence"]},
        {"title": "Dante", "text": "Dante died in Ravenna"},
        {"title": "Florence", "text": "Florence is a city in Italy"},
    ]) + "\n")
    loc = str(tmp_path / "idx")
    code, out, _ = _kbc(capsys, "index", "build", "--source", "jsonl", "--input", str(src), "--out", loc, "--quiet")
    assert code == 0
    assert "2 pages, 3 paragraphs" in out and f"index: 3 paragraphs in {loc} (tantivy)" in out
    code, out, _ = _kbc(capsys, "index", "stats", "--index", loc)
    assert code == 0 and json.loads(out)["paragraphs"] == 3
    from datetime import UTC, datetime

    from kb.text.index import open_index

    with contextlib.closing(open_index("tantivy", loc)) as idx:
        built = idx.stats()["built_at"]
    assert json.loads(out)["built_at"] == datetime.fromtimestamp(built, UTC).isoformat(timespec="seconds")
    assert json.loads(out)["built_at"].endswith("+00:00")
    code, out, _ = _kbc(capsys, "index", "search", "born Florence", "-k", "2", "--index", loc, "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == ["Dante#0", "Florence#0"]
    code, out, _ = _kbc(capsys, "cooccur", "Dante", "Florence", "--index", loc)
    assert code == 0 and "A='Dante': 2  B='Florence': 2  both: 1  of 3 paragraphs" in out


def test_search_shows_a_paragraphs_control_characters_escaped(tmp_path, capsys):
    """A paragraph's text is data: an escape sequence or carriage return in it is printed visibly, not obeyed."""
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "Dante", "text": "Dante was born\x1b[2J in Florence\rgone"}) + "\n")
    loc = str(tmp_path / "idx")
    assert _kbc(capsys, "index", "build", "--source", "jsonl", "--input", str(src), "--out", loc, "--quiet")[0] == 0
    code, out, _ = _kbc(capsys, "index", "search", "Florence", "--index", loc)
    assert code == 0 and out.rstrip("\n").endswith("Dante#0: Dante was born\\x1b[2J in Florence\\rgone"), out
    code, out, _ = _kbc(capsys, "index", "search", "Florence", "--index", loc, "--json")
    assert json.loads(out)["text"] == "Dante was born\x1b[2J in Florence\rgone"


def test_errors_are_one_line(tmp_path, capsys):
    code, _, err = _kbc(capsys, "index", "stats", "--index", str(tmp_path / "none"))
    assert code == 2 and err.startswith("error: ") and "no text index there" in err and err.count("\n") == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = _kbc(capsys, "index", "verify", "--index", str(other))
    assert (code, err) == (2, f"error: {other}: no text index there (the folder holds other files); name the folder "
                              "of one, or build one into a new folder with `kbc index build --out DIR ...`\n")
    code, _, err = _kbc(capsys, "index", "build", "--source", "dump", "--out", str(tmp_path / "i"))
    assert code == 2 and "--source dump needs --input FILE" in err
    bad = tmp_path / "cut.xml.bz2"
    bad.write_bytes(b"BZh91AY&SY")
    code, _, err = _kbc(capsys, "index", "build", "--source", "dump", "--input", str(bad), "--out",
                        str(tmp_path / "i"), "--quiet")
    assert code == 2 and "cut.xml.bz2" in err and not (tmp_path / "i" / "CURRENT").exists()
    code, _, err = _kbc(capsys, "index", "stats", "--backend", "elasticsearch", "--es-url", "http://127.0.0.1:9")
    assert code == 2 and "Elasticsearch at http://127.0.0.1:9 is unreachable" in err
