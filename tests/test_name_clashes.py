"""Predictor names and relation ids whose prediction files would be one file on a case-insensitive file system
(macOS, Windows), or that Windows keeps for devices, are refused before any work with one line naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_kbc

from eval.file_names import case_clash, windows_device


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _lama_with(lama_dir: Path, root: Path, ids: dict[str, str]) -> Path:
    """A LAMA copy whose relations are `ids` (new id -> the T-REx relation whose template and first facts it takes)."""
    (root / "TREx").mkdir(parents=True)
    listed = {r["relation"]: r for r in map(json.loads, (lama_dir / "relations.jsonl").read_text().splitlines())}
    (root / "relations.jsonl").write_text("".join(json.dumps({**listed[was], "relation": new}) + "\n"
                                                  for new, was in ids.items()), encoding="utf-8")
    for new, was in ids.items():
        facts = [json.loads(line) for line in (lama_dir / "TREx" / f"{was}.jsonl").read_text().splitlines()[:10]]
        (root / "TREx" / f"{new}.jsonl").write_text("".join(json.dumps({**f, "predicate_id": new}) + "\n"
                                                            for f in facts), encoding="utf-8")
    return root


def _one_error(code: int, err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    return lines[0]


def test_names_of_one_file_on_case_insensitive_systems_and_device_names_are_found():
    assert case_clash(["bert", "gpt2", "BERT"]) == ("bert", "BERT") and case_clash(["P19", "P20", "P19"]) is None
    assert all(windows_device(n) for n in ("CON", "nul", "Com1", "LPT9", "aux.jsonl", "PRN "))
    assert not any(windows_device(n) for n in ("bert", "COM10", "CONSOLE", "P19", "nul-model"))


def test_a_predictor_named_as_one_the_run_holds_but_for_case_is_refused(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    base = ["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--data-dir", str(lama_dir),
            "--out", str(out), "--quiet", "--predictors"]
    code, _, err = run_kbc([*base, "bert=freq"], capsys)
    assert code == 0, err
    kept = _files(out)
    code, _, err = run_kbc([*base, "BERT=freq"], capsys)
    line = _one_error(code, err)
    assert line == (f"error: predictors 'bert' and 'BERT' differ only in case, which case-insensitive file systems "
                    f"(macOS, Windows) take for one folder ({out / 'predictions' / 'trex'}); name one of them apart "
                    "with NAME=SPEC"), err
    assert _files(out) == kept


@pytest.mark.parametrize("name", ["CON", "nul", "com1"])
def test_a_predictor_named_as_a_windows_device_is_refused(name, lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5", "--data-dir",
                            str(lama_dir), "--out", str(tmp_path / "run"), "--quiet", "--predictors", f"{name}=freq"],
                           capsys)
    assert _one_error(code, err).startswith(f"error: --predictors {name}: the predictor's folder would be named "
                                            f"{name!r}, a device name on Windows"), err
    assert not (tmp_path / "run").exists()


def test_relations_differing_only_in_case_or_named_as_a_device_are_refused(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = _lama_with(lama_dir, tmp_path / "lama", {"P19": "P19", "p19": "P20", "NUL": "P101"})
    base = ["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(data), "--quiet", "--out"]
    code, _, err = run_kbc([*base, str(tmp_path / "both"), "--relations", "P19", "p19"], capsys)
    assert _one_error(code, err) == ("error: trex relations 'P19' and 'p19' differ only in case, which "
                                     "case-insensitive file systems (macOS, Windows) take for one prediction file "
                                     "(P19.jsonl); ask one of them (--relations), or give one another id in the data")
    code, _, err = run_kbc([*base, str(tmp_path / "device"), "--relations", "NUL"], capsys)
    assert _one_error(code, err).startswith("error: trex relation 'NUL': its prediction file would be named "
                                            "NUL.jsonl, a device name on Windows"), err
    code, _, err = run_kbc([*base, str(tmp_path / "one"), "--relations", "P19"], capsys)
    assert code == 0, err  # one of them asked: no file is shared
    code, _, err = run_kbc([*base, str(tmp_path / "one"), "--relations", "p19"], capsys)
    assert "'P19' and 'p19' differ only in case" in _one_error(code, err)
    assert not (tmp_path / "both").exists() and not (tmp_path / "device").exists()


def test_two_predictors_of_one_run_named_apart_only_by_case_are_named_each_as_given(lama_dir, tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--data-dir", str(lama_dir),
                            "--out", str(tmp_path / "run"), "--predictors", "a=freq", "A=random"], capsys)
    assert _one_error(code, err) == ("error: --predictors: predictors 'a' (freq) and 'A' (random) differ only in "
                                     "case, which case-insensitive file systems (macOS, Windows) take for one "
                                     "folder; name them apart with NAME=SPEC")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("derived", "said"), [
    ("p36", "relation 'p36', which the trex questions ask beside the corpus's own, and trex relation 'P36' differ "
            "only in case, which case-insensitive file systems (macOS, Windows) take for one file name; give one of "
            "them another id"),
    ("NUL", "relation 'NUL', which the trex questions ask beside the corpus's own, is a device name on Windows (CON, "
            "PRN, AUX, NUL, COM1-9, LPT1-9), where no file can be named so (a relation id names the relation's "
            "files); give it another id")])
def test_kmir_relations_the_axioms_derive_are_checked_as_the_corpus_s_are(derived, said, lama_dir, tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    axioms = tmp_path / "axioms.ttl"
    axioms.write_text("@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
                      "@prefix wdt: <http://www.wikidata.org/prop/direct/> .\n"
                      f"wdt:{derived} a owl:ObjectProperty .\n"
                      f"wdt:P36 owl:inverseOf wdt:{derived} .\n", encoding="utf-8")
    code, _, err = run_kbc(["run", "kmir", "--corpus", "trex", "--relations", "P36", "--limit", "3",
                            "--questions-per-relation", "1", "--predictors", "kb", "--axioms", str(axioms),
                            "--data-dir", str(lama_dir), "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert _one_error(code, err) == f"error: {axioms}:3: {said}"
    assert not (tmp_path / "run").exists()
