"""Intervals that do not depend on a predictor's name, the missing-data-file note only where it concerns the run,
corpus snapshots under a run's cache dir, and the shared hashing of data files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_support import run_kbc

from bridge.run.runner import RunConfig, run_lama
from eval.datadir import fingerprint, hash_files
from eval.snapshot import read_sources, snapshot_path

NOTE = "trex relations.jsonl: 1 relation has no data file: P36"


def _rows(out: Path) -> dict[tuple, dict]:
    return {(r["predictor"], r["scope"], r["setting"], r["group"], r["metric"]): r
            for r in json.loads((out / "summary.json").read_text(encoding="utf-8"))}


def _run_p19_p20(lama_dir: Path, out: Path, capsys) -> str:
    code, printed, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P20", "--predictors",
                                  "a=freq", "b=freq", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"],
                                 capsys)
    assert code == 0, err
    return printed + err


def test_predictors_answering_alike_under_other_names_get_identical_intervals(lama_dir, tmp_path, capsys,
                                                                               monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    printed = _run_p19_p20(lama_dir, tmp_path / "run", capsys)
    rows = _rows(tmp_path / "run")
    a = {key[1:]: row for key, row in rows.items() if key[0] == "a"}
    b = {key[1:]: row for key, row in rows.items() if key[0] == "b"}
    assert a.keys() == b.keys() and len(a) == 64
    fields = ("value", "n_facts", "stderr", "ci_low", "ci_high")
    assert all([a[k][f] for f in fields] == [b[k][f] for f in fields] for k in a)
    total = a[("own", "raw", "all", "p@1")]
    assert (total["value"], total["stderr"], total["ci_low"], total["ci_high"]) == (
        pytest.approx(8.319123819517314), pytest.approx(0.6322974746681672), pytest.approx(7.155246534138404),
        pytest.approx(9.57537915503228))
    for name in ("a", "b"):
        assert f"| trex | {name} | 280.5 | 1897 | 6.25 ± 0.79 | 10.39 ± 0.99 | 8.32 ± 0.63 | [7.16, 9.58] |" in printed


def test_relations_that_all_have_data_files_get_no_missing_file_note(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    printed = _run_p19_p20(lama_dir, tmp_path / "run", capsys)
    assert "trex: 2 relations, read 1897, kept 1897, dropped 0" in printed
    assert "have no data file" not in printed
    config = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert [r["source"] for r in config["load_reports"]["trex"]] == ["trex/P19 (TREx/P19.jsonl)",
                                                                    "trex/P20 (TREx/P20.jsonl)"]


@pytest.fixture
def small_lama(lama_dir: Path, tmp_path: Path) -> Path:
    """P19 and P20 (their first 30 facts) with data files, P36 listed in relations.jsonl without one."""
    root = tmp_path / "lama"
    (root / "TREx").mkdir(parents=True)
    listed = [json.loads(line) for line in (lama_dir / "relations.jsonl").read_text(encoding="utf-8").splitlines()]
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in listed
                                                  if r["relation"] in ("P19", "P20", "P36")), encoding="utf-8")
    for rel in ("P19", "P20"):
        lines = (lama_dir / "TREx" / f"{rel}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:30]
        (root / "TREx" / f"{rel}.jsonl").write_text("".join(lines), encoding="utf-8")
    return root


def test_the_missing_file_note_stays_where_the_whole_corpus_is_read(small_lama, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    base = ["run", "lama", "--corpus", "trex", "--predictors", "freq", "--data-dir", str(small_lama), "--quiet"]
    code, _, err = run_kbc([*base, "--out", str(tmp_path / "whole")], capsys)
    assert code == 0, err
    assert f"trex: 2 relations, read 60, kept 60, dropped 0\n  {NOTE}" in err
    code, _, err = run_kbc([*base, "--relations", "P19", "--out", str(tmp_path / "one")], capsys)
    assert code == 0, err
    assert "trex: 1 relation, read 30, kept 30, dropped 0" in err and "have no data file" not in err
    code, out, err = run_kbc(["data", "stats", "--corpus", "trex", "--data-dir", str(small_lama)], capsys)
    assert code == 0, err
    assert f"  {NOTE}\n" in out


def test_a_runs_cache_dir_holds_its_corpus_snapshot(small_lama, tmp_path, monkeypatch):
    env_cache, run_cache = tmp_path / "env-cache", tmp_path / "run-cache"
    monkeypatch.setenv("KBC_CACHE", str(env_cache))
    run_lama(RunConfig(["trex"], ["freq"], tmp_path / "run", str(small_lama), cache_dir=run_cache), progress=False)
    name = snapshot_path("trex", small_lama.resolve(), {}).name  # the file's name does not depend on the cache
    assert [p.name for p in (run_cache / "snapshots").iterdir()] == [name]
    assert not (env_cache / "snapshots").exists()


def test_data_versions_and_file_digests_come_from_one_hashing(lama_dir):
    files = [lama_dir / "TREx" / "P20.jsonl", lama_dir / "relations.jsonl", lama_dir / "TREx" / "P19.jsonl"]
    ordered = sorted(files)
    version, digests = hash_files(files, each=True)
    assert digests == [hashlib.sha256(p.read_bytes()).hexdigest() for p in ordered]
    assert version == fingerprint(files) == hash_files(files)[0] and hash_files(files)[1] == []
    sources, again = read_sources(files)
    assert again == version
    assert sources == [(str(p), p.stat().st_size, p.stat().st_mtime_ns, d) for p, d in zip(ordered, digests)]


def test_freq_names_relations_where_every_object_is_equally_frequent():
    """BEAR balances its answers: Freq's order there is the file's, which a run must say."""
    from eval.types import Entity, Fact
    from kb.freq import FreqPredictor

    def fact(i: int, rel: str, obj: str) -> Fact:
        return Fact(f"u{i}", "c", rel, Entity(f"s{i}"), Entity(obj))

    facts = [fact(0, "P1", "a"), fact(1, "P1", "b"), fact(2, "P1", "a"), fact(3, "P1", "b"),
             fact(4, "P2", "a"), fact(5, "P2", "a"), fact(6, "P2", "b"), fact(7, "P3", "a")]
    freq = FreqPredictor(facts)
    assert freq.flat_relations() == ["P1"]  # P2 has a most frequent object; P3 a single one
    assert freq.describe()["all_tied"] == ["P1"]
    assert "all_tied" not in FreqPredictor(facts[4:]).describe()
