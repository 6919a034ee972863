"""A cache costs time, never a different number: damaged, edited, read-only or earlier-format caches of computed
results are recomputed (or refused in one line), and a model edited in place is never taken for the old one."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import lm_fixtures
import numpy as np
import pytest
from cli_support import run_kbc

from eval import file_digests
from eval.checked_json import read_checked, write_checked
from lm.cache import ResultCache, row_checksum
from lm.loading import files_fingerprint

tiny_models = lm_fixtures.tiny_models


@pytest.fixture
def bert(tiny_models, tmp_path, monkeypatch) -> Path:
    """A private copy of a tiny BERT (to edit) and a private cache."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "bert"
    shutil.copytree(tiny_models("bert-cased"), path)
    return path


def _run(capsys, lama_dir: Path, model: Path, out: Path, *extra: str) -> tuple[list[dict], str]:
    """Records of a tiny-BERT run over three P19 facts, and its stderr; the run must succeed."""
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3", "--predictors",
                            f"bert={model}", "--data-dir", str(lama_dir), "--out", str(out), "--quiet", *extra],
                           capsys)
    assert code == 0 and "Traceback" not in err, err
    path = out / "predictions" / "trex" / "bert" / "P19.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()], err


def _results(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "lm" / "results.sqlite"


def _warnings(err: str) -> list[str]:
    """The lines of stderr but the loader's report."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith("trex: ")]


# -- the LM result cache: edited, damaged, earlier format, read-only -----------------------------
TEXTS = ["Rome is in [MASK] .", "Paris is the capital of [MASK] .", "Dante was born in [MASK] ."]


@pytest.fixture(scope="module")
def engine(tiny_models):
    """A tiny BERT, its candidates, and the answers it gives without a cache (what any cache must give back)."""
    from lm.loading import load
    from lm.vocab import full_vocab, token_labels

    loaded = load(str(tiny_models("bert-cased")), "masked")
    cands = full_vocab(token_labels(loaded.tokenizer, loaded.model.config.vocab_size))
    fresh, passes = _score(loaded, cands, None)
    assert passes > 0
    return loaded, cands, fresh


def _score(loaded, cands, cache: ResultCache | None, texts: list[str] = TEXTS) -> tuple[list[tuple[list, list]], int]:
    """Top-5 positions and log-probabilities of `texts`, and the forward passes run to get them."""
    from lm.masked import MaskedLMScorer

    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, cache=cache)
    results = scorer.score(texts, cands, 5)
    return [(r.pos.tolist(), r.logp.tolist()) for r in results], scorer.forward_calls


def _same_answers(again: list[tuple[list, list]], fresh: list[tuple[list, list]]) -> bool:
    """The same positions in the same order, log-probabilities equal to float32 rounding: rows recomputed in a
    smaller batch than the first time may differ in float32's last places on some CPUs (docs/reliability.md)."""
    return len(again) == len(fresh) and all(
        pos == pos0 and all(abs(x - y) <= 1e-6 * abs(y) + 1e-7 for x, y in zip(logp, logp0, strict=True))
        for (pos, logp), (pos0, logp0) in zip(again, fresh))


def _tamper(db_path: Path, sql: str, *args) -> int:
    db = sqlite3.connect(db_path)
    with db:
        changed = db.execute(sql, args).rowcount
    db.close()
    return changed


DAMAGE = "cached results failed their integrity check (a damaged or edited cache); they are not used but computed again"


@pytest.mark.parametrize("edit", [
    ("UPDATE results SET score = ?", np.zeros(5, dtype=np.float32).tobytes()),  # every value edited to 0.0
    ("UPDATE results SET score = substr(score, 1, 6)",),  # a short blob
    ("UPDATE results SET pos = (SELECT pos FROM results ORDER BY key LIMIT 1)",),  # another row's value
    ("UPDATE results SET depth = depth + 1",),
    ("UPDATE results SET extra = extra + 1",),
    ("UPDATE results SET checksum = NULL",),
])
def test_edited_rows_are_never_served(engine, tmp_path, caplog, edit):
    loaded, cands, fresh = engine
    path = tmp_path / "results.sqlite"
    assert _score(loaded, cands, ResultCache(path))[0] == fresh
    assert _tamper(path, *edit) > 0
    caplog.clear()
    again, passes = _score(loaded, cands, ResultCache(path))
    assert _same_answers(again, fresh) and passes > 0
    assert caplog.messages == [f"{path}: {DAMAGE}"]
    caplog.clear()
    assert _score(loaded, cands, ResultCache(path)) == (again, 0)  # the rows were replaced: served, no warning
    assert caplog.messages == []


@pytest.mark.heavy
def test_values_edited_to_zero_are_not_served_by_kbc_run(bert, lama_dir, tmp_path, capsys):
    fresh, _ = _run(capsys, lama_dir, bert, tmp_path / "first")
    assert _tamper(_results(tmp_path), "UPDATE results SET score = zeroblob(length(score))") > 0
    again, err = _run(capsys, lama_dir, bert, tmp_path / "second")
    assert again == fresh and _warnings(err) == [f"{_results(tmp_path)}: {DAMAGE}"]


def test_truncated_cache_is_rebuilt(engine, tmp_path, caplog):
    loaded, cands, fresh = engine
    path = tmp_path / "results.sqlite"
    cache = ResultCache(path)
    _score(loaded, cands, cache)
    cache.put_many((ResultCache.key(str(i)), np.arange(5), np.zeros(5), 1) for i in range(3000))  # pages to lose
    cache.close()
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    caplog.clear()
    assert _score(loaded, cands, ResultCache(path))[0] == fresh
    assert len(caplog.messages) == 1 and caplog.messages[0].startswith(f"{path}: damaged result cache (") and \
        caplog.messages[0].endswith("); dropped and rebuilt, its results are computed again"), caplog.messages
    assert _score(loaded, cands, ResultCache(path)) == (fresh, 0)


def test_earlier_format_is_dropped_with_a_note(engine, tmp_path, caplog):
    loaded, cands, fresh = engine
    path = tmp_path / "results.sqlite"
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, depth INTEGER, pos BLOB, score BLOB, extra INTEGER)")
        db.execute("INSERT INTO results VALUES ('k', 1, x'00000000', x'00000000', 1)")
    db.close()
    caplog.clear()
    assert _score(loaded, cands, ResultCache(path))[0] == fresh
    assert caplog.messages == [f"{path}: a result cache of an earlier kbc version; dropped and rebuilt"]
    assert ResultCache(path).get_rows(["k"]) == {}


READ_ONLY = ("); results are computed without being stored (make it writable, or set KBC_CACHE to a writable "
             "folder)")


def _read_only_connect(monkeypatch) -> None:
    """What SQLite does where the OS refuses to open the file for writing: it opens it read-only."""
    real = sqlite3.connect

    def connect(database, *args, **kwargs):
        if isinstance(database, Path):
            return real(f"file:{database}?mode=ro", *args, uri=True, **kwargs)
        return real(database, *args, **kwargs)

    monkeypatch.setattr("lm.cache.sqlite3.connect", connect)


def test_read_only_cache_is_read_and_not_written(engine, tmp_path, caplog, monkeypatch):
    loaded, cands, fresh = engine
    path = tmp_path / "results.sqlite"
    stored = _score(loaded, cands, ResultCache(path), TEXTS[:2])[0]
    alone = _score(loaded, cands, None, TEXTS[2:])[0]  # a batch of one: the last float bits may differ
    ResultCache(path).close()
    before = path.read_bytes()
    _read_only_connect(monkeypatch)
    caplog.clear()
    cache = ResultCache(path)
    again, passes = _score(loaded, cands, cache)
    assert again == stored + alone and passes == 1 and (cache.hits, cache.misses) == (2, 1)
    assert len(caplog.messages) == 1 and caplog.messages[0].startswith(
        f"{path}: cannot write the result cache (") and caplog.messages[0].endswith(READ_ONLY), caplog.messages
    assert path.read_bytes() == before and len(cache) == 2


def test_read_only_file_for_real(engine, tmp_path, caplog):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod does not block writes (test_read_only_cache_is_read_and_not_written "
                    "covers the same path)")
    loaded, cands, fresh = engine
    folder = tmp_path / "lm"
    folder.mkdir()
    _score(loaded, cands, ResultCache(folder / "results.sqlite"))
    ResultCache(folder / "results.sqlite").close()
    for file in folder.iterdir():
        file.chmod(0o444)
    folder.chmod(0o555)
    try:
        again, passes = _score(loaded, cands, ResultCache(folder / "results.sqlite"))
        assert again == fresh and passes == 0
        extra = ResultCache(folder / "results.sqlite")
        extra.put_many([("k", np.arange(5), np.zeros(5), 1)])
        assert "cannot write the result cache" in caplog.text and len(extra) == len(TEXTS)
    finally:
        folder.chmod(0o755)


def test_unwritable_folder_computes_without_a_cache(engine, tmp_path, caplog, monkeypatch):
    loaded, cands, fresh = engine

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr("lm.cache.sqlite3.connect", refuse)
    caplog.clear()
    assert _score(loaded, cands, ResultCache(tmp_path / "results.sqlite"))[0] == fresh
    assert caplog.messages == [f"{tmp_path / 'results.sqlite'}: cannot write the result cache (unable to open "
                               f"database file{READ_ONLY}"]


def test_a_row_is_bound_to_its_key(tmp_path):
    """A value moved under another key fails its check, as an edited one does."""
    cache = ResultCache(tmp_path / "c.sqlite")
    cache.put_many([("a", np.array([1, 2]), np.array([-1.0, -2.0]), 3), ("b", np.array([4, 5]), np.array([-3.0, -4.0]),
                                                                         3)])
    db = sqlite3.connect(tmp_path / "c.sqlite")
    with db:
        db.execute("UPDATE results SET pos = (SELECT pos FROM results WHERE key = 'b'), "
                   "score = (SELECT score FROM results WHERE key = 'b') WHERE key = 'a'")
    db.close()
    found = cache.get_many(["a", "b"], 2)
    assert list(found) == ["b"] and found["b"][0].tolist() == [4, 5] and found["b"][1].tolist() == [-3.0, -4.0]
    assert len(cache) == 1  # the row that failed is gone, so a fresh result replaces it


def test_statement_rows_are_checked(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    cache.put_rows([("s", [-1.5, -0.25])])
    assert cache.get_rows(["s"])["s"].tolist() == [-1.5, -0.25]
    _tamper(tmp_path / "c.sqlite", "UPDATE results SET score = ?", np.zeros(2, dtype=np.float32).tobytes())
    assert cache.get_rows(["s"]) == {}


# -- a model edited in place ---------------------------------------------------------------------
def _past_the_clock_tick(path: Path) -> None:
    """Returns once a file written now next to `path` gets a later change time than `path` has: file times move in
    the file system's clock ticks (a jiffy on most, a second on some), and an edit within the tick of a remembered
    digest would look unchanged. A hidden file, which a fingerprint leaves out."""
    probe = path.with_name(".tick")
    deadline = time.monotonic() + 30  # a deadlock guard: ticks are at most seconds long
    try:
        while True:
            probe.write_bytes(b"")
            if probe.stat().st_ctime_ns > path.stat().st_ctime_ns:
                return
            assert time.monotonic() < deadline, f"{path}: the file system's clock did not move in 30 s"
            time.sleep(0.01)
    finally:
        probe.unlink(missing_ok=True)


def _edit_middle(path: Path) -> None:
    """Scale 64 KiB of float32 weights in the middle of a safetensors file by 1.5, and put the mtime back."""
    stat = path.stat()
    start = 8 + int.from_bytes(path.read_bytes()[:8], "little")  # the header's end: tensor data from here
    offset = start + ((stat.st_size - start) // 2) // 4 * 4
    with path.open("r+b") as handle:
        handle.seek(offset)
        values = np.frombuffer(handle.read(1 << 16), dtype=np.float32) * np.float32(1.5)
        handle.seek(offset)
        handle.write(values.tobytes())
    assert path.stat().st_size == stat.st_size > 2 * (1 << 20)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns


@pytest.fixture
def remembering(monkeypatch):
    """Digests remembered at once (no settling time), so the memo itself is what is tested."""
    monkeypatch.setattr(file_digests, "RACY_NS", -1)
    monkeypatch.setattr(file_digests, "_MEMO", {})


def test_edit_in_the_middle_changes_the_fingerprint(bert, remembering):
    weights = bert / "model.safetensors"
    before = files_fingerprint(bert)
    assert file_digests._MEMO  # remembered
    _past_the_clock_tick(weights)  # as any later edit is
    _edit_middle(weights)
    after = files_fingerprint(bert)
    assert after != before and after.startswith("sha256:")
    file_digests._MEMO.clear()
    assert files_fingerprint(bert) == after  # from the remembered entry, as a new process sees it


def test_remembered_digest_is_used_and_checked(tmp_path, monkeypatch, remembering):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "w.bin"
    path.write_bytes(os.urandom(3 << 20))
    digest = file_digests.file_sha256(path)
    file_digests._MEMO.clear()
    real_open = Path.open

    def no_read(self, *args, **kwargs):
        if self == path:
            raise AssertionError("the file was read again")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", no_read)
    assert file_digests.file_sha256(path) == digest
    monkeypatch.setattr(Path, "open", real_open)
    entry = next((tmp_path / "cache" / "digests").iterdir())
    stored = json.loads(entry.read_text())
    stored["sha256"] = "0" * 64  # an edited entry (its check left as it was) is not used
    entry.write_text(json.dumps(stored))
    file_digests._MEMO.clear()
    assert file_digests.file_sha256(path) == digest
    entry.write_text("{")  # nor is a damaged one
    file_digests._MEMO.clear()
    assert file_digests.file_sha256(path) == digest


def test_recently_changed_files_are_not_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(file_digests, "_MEMO", {})
    path = tmp_path / "w.bin"
    path.write_bytes(b"x" * 100)
    file_digests.file_sha256(path)
    assert file_digests._MEMO == {} and not (tmp_path / "cache" / "digests").exists()


@pytest.mark.heavy
def test_edited_model_is_scored_anew_and_refused_in_its_run(bert, lama_dir, tmp_path, capsys, remembering):
    first, _ = _run(capsys, lama_dir, bert, tmp_path / "run")
    _past_the_clock_tick(bert / "model.safetensors")
    _edit_middle(bert / "model.safetensors")
    fresh, _ = _run(capsys, lama_dir, bert, tmp_path / "fresh", "--set", "cache=off")
    again, _ = _run(capsys, lama_dir, bert, tmp_path / "second")  # the cache holds the first model's results
    assert again == fresh and fresh != first
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "3",
                            "--predictors", f"bert={bert}", "--data-dir", str(lama_dir), "--out",
                            str(tmp_path / "run"), "--quiet"], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'run'}: predictor 'bert' was run with other files at {bert} (they were replaced or "
        "edited since); give it another name (NAME=SPEC) or use another --out")


# -- other caches of computed results ------------------------------------------------------------
@pytest.mark.parametrize("name", ["x.report.json", "x.json.gz"])
def test_checked_json_refuses_edits(tmp_path, caplog, name):
    path = tmp_path / name
    write_checked(path, {"precision": 0.25, "rows": [1, 2]})
    assert read_checked(path) == {"precision": 0.25, "rows": [1, 2]}
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    edited = raw.replace(b"0.25", b"0.95")
    path.write_bytes(gzip.compress(edited) if name.endswith(".gz") else edited)
    assert read_checked(path, "extraction") is None
    assert caplog.messages == [f"{path}: damaged, edited or from an earlier kbc version (its content does not match "
                               "its checksum); the extraction is computed again"]
    path.write_text('{"precision": 0.25}')  # an earlier version's file, unchecked
    assert read_checked(path) is None
    assert read_checked(tmp_path / "absent.json") is None and len(caplog.messages) == 2


def test_cached_entity_map_is_checked(tmp_path):
    from eval.errors import DataError
    from lm.entities.mapping import LinearMap

    lmap = LinearMap(np.arange(6, dtype=np.float32).reshape(2, 3), "lstsq", 0.5, 10, {"model": "m"})
    path = tmp_path / "map.npz"
    lmap.save(path)
    assert LinearMap.load(path, checked=True).W.tolist() == lmap.W.tolist()
    with np.load(path) as data:
        meta = str(data["meta"])
    np.savez(path, W=np.zeros((2, 3), dtype=np.float32), meta=np.array(meta))  # values edited, archive valid
    with pytest.raises(DataError, match="does not match its checksum"):
        LinearMap.load(path)
    np.savez(path, W=lmap.W, meta=np.array(json.dumps({"kind": "lstsq", "r2": 0.5, "n_words": 10, "info": {}})))
    assert LinearMap.load(path).n_words == 10  # a user's map of an earlier version is read ...
    with pytest.raises(DataError, match="does not match its checksum"):
        LinearMap.load(path, checked=True)  # ... but a cached one must carry its check


def test_edited_uhn_data_set_is_built_again(lama_dir, tmp_path, monkeypatch, caplog):
    from test_uhn import _small_data

    from eval.corpora import load_corpus
    from eval.uhn import uhn_data_dir

    root = _small_data(lama_dir, tmp_path)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    fresh = [f.uid for f in load_corpus("trex-uhn", root, relations=["P176"]).facts]
    folder = uhn_data_dir(root)
    kept = folder / "TREx" / "P176.jsonl"
    kept.write_bytes(kept.read_bytes().splitlines(keepends=True)[0])  # one fact left of the filtered four
    caplog.clear()
    again = [f.uid for f in load_corpus("trex-uhn", root, relations=["P176"]).facts]
    assert again == fresh and len(fresh) == 4
    assert caplog.messages == [f"{folder}: files differ from those it was built with (edited or damaged); the "
                               "LAMA-UHN data set is built again"]
    (folder / "files.sha256.json").unlink()  # a build of an earlier version, without its manifest
    caplog.clear()
    assert [f.uid for f in load_corpus("trex-uhn", root, relations=["P176"]).facts] == fresh
    assert caplog.messages == [f"{folder}: a LAMA-UHN data set of an earlier kbc version (no checksums); built again"]


@pytest.mark.heavy
def test_run_of_an_earlier_fingerprint_is_refused_as_such(bert, lama_dir, tmp_path, capsys):
    out = tmp_path / "run"
    _run(capsys, lama_dir, bert, out)
    config = json.loads((out / "config.json").read_text())
    config["predictor_specs"]["bert"]["files"]["spec"] = "files:0123456789abcdef"  # as earlier versions wrote it
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--limit", "3",
                            "--predictors", f"bert={bert}", "--data-dir", str(lama_dir), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {out}: predictor 'bert' was run with other files at {bert} (recorded by an earlier kbc version, "
        "which did not hash every byte: whether they changed cannot be known); give it another name (NAME=SPEC) "
        "or use another --out")


def test_model_changed_while_loading_is_refused(bert, monkeypatch):
    from eval.errors import KbcError
    from lm import loading

    seen = iter(["sha256:before", "sha256:after"])
    monkeypatch.setattr(loading, "files_fingerprint", lambda path: next(seen))
    with pytest.raises(KbcError) as info:
        loading.load(str(bert), "masked")
    assert str(info.value) == (f"{bert}: its files changed while the model was loaded; load it again once they "
                               "are written")


def test_damaged_read_only_cache_is_one_error(tmp_path, monkeypatch):
    from eval.errors import DataError

    path = tmp_path / "results.sqlite"
    cache = ResultCache(path)
    cache.put_many((ResultCache.key(str(i)), np.arange(5), np.zeros(5), 1) for i in range(3000))
    cache.close()
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    real_access = os.access
    monkeypatch.setattr("lm.cache.os.access", lambda p, mode: mode != os.W_OK and real_access(p, mode))
    with pytest.raises(DataError) as info:
        ResultCache(path).get_many([ResultCache.key(str(i)) for i in range(3000)], 1)
    assert str(info.value).startswith(f"{path}: a damaged result cache that cannot be rebuilt here (")
    assert str(info.value).endswith("); delete it to start an empty cache, set KBC_CACHE to another folder, or run "
                                    "with --set cache=off")


def test_edited_cached_entity_map_is_fitted_again(tmp_path, caplog):
    from types import SimpleNamespace

    from bridge.predictors.entities import _map_for

    words = ["paris", "rome", "city", "river", "north"]
    rng = np.random.default_rng(0)
    emb = SimpleNamespace(word_vectors=rng.normal(size=(5, 3)).astype(np.float32), words=words, lowercase=True)
    inputs = rng.normal(size=(5, 4)).astype(np.float32)
    lm = SimpleNamespace(fingerprint="sha256:tiny", tokenizer=SimpleNamespace(get_vocab=lambda: {w: i for i, w in
                                                                                                 enumerate(words)}),
                         input_embeddings=lambda: inputs)
    w2v = tmp_path / "w2v.txt"
    w2v.write_text("vectors\n")
    ctx = SimpleNamespace(options={}, cache_dir=tmp_path / "cache")
    fresh = _map_for(ctx, lm, emb, "m", str(w2v))
    [path] = (tmp_path / "cache" / "entities").iterdir()
    with np.load(path) as data:
        meta = str(data["meta"])
    np.savez(path, W=np.zeros_like(fresh.W), meta=np.array(meta))  # values edited, the archive itself valid
    caplog.clear()
    again = _map_for(ctx, lm, emb, "m", str(w2v))
    assert again.W.tolist() == fresh.W.tolist()
    assert caplog.messages == [f"{path}: a cached entity map that is damaged, edited or of an earlier kbc version; "
                               "fitted again"]
    w2v.write_text("other vectors\n")  # other vector files: another map, never the cached one
    _map_for(ctx, lm, emb, "m", str(w2v))
    assert len(list((tmp_path / "cache" / "entities").iterdir())) == 2


def test_a_shorter_max_length_is_never_served_the_longer_inputs_scores(engine, tmp_path):
    """`max_length` cuts a long context: scores kept for full inputs are another computation's."""
    from lm.masked import MaskedLMScorer

    loaded, cands, _ = engine
    context = " ".join(["Rome is a city in Italy and the capital of the country ."] * 6)
    texts = [(context, "Dante was born in [MASK] ."), (context, "Paris is the capital of [MASK] .")]

    def scored(cache, max_length):
        scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, cache=cache,
                                max_length=max_length)
        return [(r.n_tokens, r.pos.tolist(), r.logp.tolist()) for r in scorer.score(texts, cands, 5)]

    cache = ResultCache(tmp_path / "results.sqlite")
    full = scored(cache, None)
    short = scored(cache, 16)
    assert short == scored(None, 16)
    assert [n for n, *_ in short] == [16, 16] and [n for n, *_ in full] != [16, 16]
    assert scored(cache, None) == full


def test_row_checksum_is_sha256_over_length_prefixed_parts():
    """The checksum a cache file stores: computing it faster must not change it (older files stay readable)."""
    parts = ("k" * 64, 11, bytes(range(44)), b"\x02" * 44, 12)
    digest = hashlib.sha256()
    for part in (parts[0].encode(), b"11", parts[2], parts[3], b"12"):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    assert row_checksum(*parts) == digest.digest()
    assert row_checksum("é", 0, b"", b"", 0).hex()[:16] == hashlib.sha256(
        b"".join([(2).to_bytes(8, "little"), "é".encode(), (1).to_bytes(8, "little"), b"0", bytes(16),
                  (1).to_bytes(8, "little"), b"0"])).hexdigest()[:16]


def test_a_ctrl_c_keeps_the_batches_scored_before_it(engine, tmp_path):
    """Nothing computed is lost: batches scored before a Ctrl-C are in the result cache, and asking again scores
    only the rest, with the answers of an uninterrupted run."""
    from lm.masked import MaskedLMScorer

    loaded, cands, fresh = engine
    path = tmp_path / "results.sqlite"
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, batch_size=1,
                            cache=ResultCache(path))
    forward, calls = scorer._candidate_logp, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == len(TEXTS):  # the last batch: the ones before it were scored and collected
            raise KeyboardInterrupt
        return forward(*args)

    scorer._candidate_logp = interrupted
    with pytest.raises(KeyboardInterrupt):
        scorer.score(TEXTS, cands, 5)
    assert len(ResultCache(path)) == len(TEXTS) - 2  # the batch in flight when it came is not yet collected
    again, passes = _score(loaded, cands, ResultCache(path))
    assert passes == 1 and _same_answers(again, fresh)


def test_a_run_says_how_many_results_its_result_cache_gave(bert, lama_dir, tmp_path, capsys):
    """A cold run says nothing of the cache; a warm one names it and its counts, and the two runs' records agree."""
    def cache_lines(out: Path) -> tuple[list[dict], list[str]]:
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3",
                                "--predictors", f"bert={bert}", "--data-dir", str(lama_dir), "--out", str(out)],
                               capsys)
        assert code == 0, err
        records = (out / "predictions" / "trex" / "bert" / "P19.jsonl").read_text()
        return records, [line for line in err.splitlines() if "result cache" in line]

    fresh, cold = cache_lines(tmp_path / "first")
    again, warm = cache_lines(tmp_path / "second")
    assert cold == [] and again == fresh
    assert warm == [f"trex / bert: 3 of 3 scored results read from the result cache ({_results(tmp_path)}), "
                    "0 computed"]


def test_a_run_beside_another_process_leaves_a_damaged_cache_to_it(bert, lama_dir, tmp_path, capsys):
    """`kbc run` finds the shared cache damaged while another kbc process has it open: the same records, computed,
    one warning, and the file is not deleted under the other process (the last one to use it rebuilds it)."""
    from test_cache_sharing import Holder, _damage, _filled

    fresh, _ = _run(capsys, lama_dir, bert, tmp_path / "first")
    path = _results(tmp_path)
    _filled(path)
    other = Holder(path)
    try:
        _damage(path)
        inode = path.stat().st_ino
        again, err = _run(capsys, lama_dir, bert, tmp_path / "second")
        assert path.stat().st_ino == inode
    finally:
        other.stop()
    assert again == fresh and _warnings(err) == [
        f"{path}: damaged result cache (database disk image is malformed), in use by another kbc process; results "
        "are computed without the cache until a kbc run that uses it alone rebuilds it"
    ]
