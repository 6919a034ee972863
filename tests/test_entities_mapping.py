"""The E-BERT map: least squares recovers a planted transform, Procrustes is orthogonal, save/load."""

from __future__ import annotations

import numpy as np
import pytest

from eval.errors import DataError
from lm.entities.mapping import LinearMap, fit, fit_to_embeddings, r_squared, shared_words


def _planted(n=400, d_in=16, d_out=24, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d_in))
    W = rng.normal(size=(d_in, d_out))
    return X, W


def test_lstsq_recovers_planted_transform():
    X, W = _planted()
    lmap = fit(X, X @ W, "lstsq")
    assert np.allclose(lmap.W, W, atol=1e-5)
    assert lmap.r2 == pytest.approx(1.0, abs=1e-9)
    assert lmap.n_words == 400 and lmap.W.shape == (16, 24)


def test_lstsq_with_noise_has_r2_below_one():
    X, W = _planted()
    Y = X @ W
    noisy = Y + np.random.default_rng(1).normal(scale=0.5 * Y.std(), size=Y.shape)
    lmap = fit(X, noisy, "lstsq")
    assert 0.75 < lmap.r2 < 0.85  # noise variance a quarter of the signal's: R² ~ 1 / 1.25
    assert np.abs(lmap.W - W).mean() < 0.15


def test_procrustes_recovers_planted_rotation_and_is_orthogonal():
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    X = rng.normal(size=(300, 20))
    lmap = fit(X, X @ Q, "procrustes")
    assert np.allclose(lmap.W, Q, atol=1e-5)
    assert lmap.r2 == pytest.approx(1.0, abs=1e-9)
    general = fit(X, X @ rng.normal(size=(20, 20)), "procrustes")
    assert np.allclose(general.W.T @ general.W, np.eye(20), atol=1e-5)
    assert general.r2 < 1.0


def test_procrustes_rectangular_is_semi_orthogonal():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 8))
    lmap = fit(X, rng.normal(size=(200, 12)), "procrustes")
    assert lmap.W.shape == (8, 12)
    assert np.allclose(lmap.W @ lmap.W.T, np.eye(8), atol=1e-5)


def test_r_squared_exact():
    target = np.array([[1.0], [2.0], [3.0]])
    assert r_squared(np.array([[1.0], [2.0], [4.0]]), target) == pytest.approx(1 - 1 / 2)
    assert r_squared(target, target) == 1.0


def test_save_load_round_trip(tmp_path):
    X, W = _planted()
    lmap = fit(X, X @ W, "lstsq", {"model": "m"})
    lmap.save(tmp_path / "map.npz")
    back = LinearMap.load(tmp_path / "map.npz")
    assert np.array_equal(back.W, lmap.W)
    assert (back.kind, back.n_words, back.info) == ("lstsq", 400, {"model": "m"})
    assert back.r2 == lmap.r2
    (tmp_path / "bad.npz").write_text("not a map")
    with pytest.raises(DataError, match="bad.npz"):
        LinearMap.load(tmp_path / "bad.npz")


def test_bad_inputs_are_data_errors():
    X, W = _planted(n=10)
    with pytest.raises(DataError, match="only 10 shared words"):
        fit(X, X @ W, "lstsq")
    with pytest.raises(DataError, match="unknown map kind"):
        fit(X, X @ W, "cca")
    with pytest.raises(DataError, match="paired"):
        fit(X, (X @ W)[:5], "lstsq")


def test_shared_words_skips_pieces_specials_and_case():
    vocab = {"[CLS]": 0, "Paris": 1, "##is": 2, "paris": 3, "the": 4, "[unused1]": 5, "is": 6}
    words = ["Paris", "the", "is", "[CLS]", "##is"]
    assert shared_words(words, False, vocab) == [(0, 1), (1, 4), (2, 6)]
    # a lowercased wikipedia2vec model can only meet tokens that are their own lowercase form
    assert shared_words(["paris", "the"], True, vocab) == [(0, 3), (1, 4)]


@pytest.mark.parametrize("mark", ["Ġ", "▁"])
def test_shared_words_of_a_word_start_vocabulary_are_its_marked_tokens(mark):
    """In BPE / SentencePiece "the" is a mid-word piece (breat|he): only "Ġthe" is the word, paired once."""
    vocab = {"<s>": 0, f"{mark}the": 1, "the": 2, f"{mark}Paris": 3, "is": 4, f"{mark}is": 5, "ing": 6}
    assert shared_words(["the", "Paris", "is", "ing"], False, vocab) == [(0, 1), (1, 3), (2, 5)]


def test_shared_words_of_a_real_bpe_vocabulary_pair_each_word_once(shared_data):
    import json

    vocab = json.loads((shared_data / "tokenizers" / "roberta-base" / "vocab.json").read_text())
    words = ["the", "of", "Paris", "breathe"]  # each both a word ("Ġthe") and a piece ("the") but breathe
    pairs = shared_words(words, False, vocab)
    assert pairs == sorted((row, vocab["Ġ" + word]) for row, word in enumerate(words))


def test_fit_to_embeddings_uses_the_intersection():
    rng = np.random.default_rng(4)
    vocab = {w: i for i, w in enumerate(["[PAD]", "a", "b", "c", "d", "##e", "f", "g", "h", "i", "j"])}
    E = rng.normal(size=(len(vocab), 4))
    words = ["j", "i", "h", "g", "f", "##e", "d", "c", "b", "a", "zz"]
    W_true = rng.normal(size=(3, 4))
    F = np.zeros((len(words), 3))
    for row, word in enumerate(words):  # F(x) W_true = E(x) exactly on shared words
        if word in vocab and not word.startswith("##"):
            F[row] = np.linalg.lstsq(W_true.T, E[vocab[word]], rcond=None)[0]
    lmap = fit_to_embeddings(F, words, False, vocab, E @ np.linalg.pinv(W_true) @ W_true, "lstsq")
    assert lmap.n_words == 9
    assert lmap.r2 == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(DataError, match="no word"):
        fit_to_embeddings(F, ["zz"], False, vocab, E)


def test_a_map_cached_by_an_earlier_fitting_rule_is_fitted_again(tmp_path):
    """The cache is keyed by the fitting rule too: a map fitted before a rule changed (BPE models paired their
    mid-word pieces) would otherwise be reused for the same model and vectors."""
    import hashlib
    from types import SimpleNamespace

    from bridge.predictors.entities import _map_for
    from lm.entities.embeddings import EntityEmbeddings, load_embeddings, save_npz
    from lm.loading import files_fingerprint

    X, W = _planted(n=40, d_in=4, d_out=3)
    words = [f"w{i}" for i in range(len(X))]
    path = save_npz(
        EntityEmbeddings(words, X.astype(np.float32), [], np.zeros((0, 4), np.float32), False), tmp_path / "e.npz"
    )
    lm = SimpleNamespace(
        fingerprint="model-fp",
        tokenizer=SimpleNamespace(get_vocab=lambda: {w: i for i, w in enumerate(words)}),
        input_embeddings=lambda: (X @ W).astype(np.float32),
    )
    ctx = SimpleNamespace(options={}, cache_dir=str(tmp_path / "cache"))
    old_key = hashlib.sha256(f"model-fp|{files_fingerprint(path)}|lstsq".encode()).hexdigest()[:16]
    LinearMap(np.zeros((4, 3), np.float32), "lstsq", 0.0, 40, {}).save(
        tmp_path / "cache" / "entities" / f"map-{old_key}.npz"
    )
    lmap = _map_for(ctx, lm, load_embeddings(path), "model", str(path))
    assert np.allclose(lmap.W, W, atol=1e-4)


def test_map_out_overwrites_only_a_map(tmp_path, capsys):
    """An existing --out that is not a map is refused before any model loads; one written before may be redone."""
    from cli_support import run_kbc

    from bridge.cli.entities import _map_or_new

    notes = tmp_path / "notes.npz"
    notes.write_text("mine\n")
    code, _, err = run_kbc(["entities", "map", "--model", str(tmp_path / "no-model"), "--wikipedia2vec",
                            str(tmp_path / "no-vectors.npz"), "--out", str(notes)], capsys)
    assert (code, err) == (2, f"error: --out {notes} exists and is not an entity map; `kbc entities map` overwrites "
                              "only its own outputs: name a new file\n")
    assert notes.read_text() == "mine\n"
    earlier = tmp_path / "map.npz"
    LinearMap(np.eye(2, dtype=np.float32), "lstsq", 1.0, 2, {}).save(earlier)
    _map_or_new(str(earlier))  # no error: its own output
