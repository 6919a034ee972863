"""Mistakes that need no data are reported before any corpus is parsed."""

from __future__ import annotations

import pytest
from cli_support import run_kbc

import eval.lama


@pytest.fixture
def no_parsing(monkeypatch):
    """Any attempt to parse a corpus fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a corpus was parsed before the check")

    for name in ("trex", "google_re", "squad", "conceptnet"):
        monkeypatch.setitem(eval.lama.LOADERS, name, refuse)
    monkeypatch.setattr(eval.lama, "load_trex", refuse)
    monkeypatch.setattr(eval.lama, "load_google_re", refuse)


@pytest.mark.parametrize("corpora, relations, message", [
    (["trex", "google_re"], ["P999"], "error: --relations P999: no chosen corpus (trex, google_re) has this relation; "
     "`kbc data stats --corpus trex --corpus google_re` lists their 44 relations"),
    (["trex"], ["P1001x"],
     "error: --relations P1001x: no chosen corpus (trex) has this relation (did you mean 'P1001'?)"),
    (["trex"], ["p36"], "error: --relations p36: no chosen corpus (trex) has this relation (did you mean 'P36'?)"),
    (["trex"], ["P19", "place_of_birth"],
     "error: --relations place_of_birth: no chosen corpus (trex) has this relation; `kbc data stats --corpus trex` "
     "lists its 41 relations"),
    (["trex", "google_re"], ["P19"],
     "error: --relations names no relation of corpus google_re; drop --corpus google_re or add one of its relations "
     "(e.g. place_of_birth)"),
    (["squad", "trex"], ["squad"],
     "error: --relations names no relation of corpus trex; drop --corpus trex or add one of its relations (e.g. P19)"),
])
def test_relation_ids_are_checked_before_any_corpus_is_parsed(no_parsing, lama_dir, tmp_path, capsys, monkeypatch,
                                                              corpora, relations, message):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, _, err = run_kbc(["run", "lama", "--corpus", *corpora, "--predictors", "freq", "--relations", *relations,
                            "--data-dir", str(lama_dir), "--out", str(tmp_path / "run"), "--quiet"], capsys)
    assert (code, err.strip()) == (2, message)
    assert not (tmp_path / "run").exists()
