"""Untrusted input: labels that look like slots or mask tokens, and pickles given as model files.

A label is data: it must never be read as a template slot or a second mask. A pickle runs code
when it is loaded, so wikipedia2vec vectors are read from `.npz` / word2vec text only, and a
`.pkl` is converted once, on explicit trust, by `kbc entities convert --trust-pickle`.
"""

from __future__ import annotations

import os
from pathlib import Path

import lm_fixtures
import numpy as np
import pytest
from cli_support import run_kbc

from eval.errors import ConfigError, DataError
from eval.types import Entity, Fact, Query

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests

TEXT_MODEL = "3 4\nParis 0.1 0.2 0.3 0.4\nENTITY/Paris 0.5 0.6 0.7 0.8\nENTITY/Lyon 0.4 0.3 0.2 0.1\n"


def _query(label: str, template: str = "[X] was born in [Y] .", slot: str = "object") -> Query:
    return Query("q1", "f1", "trex", "P19", Entity(label, "Q1"), slot, template)


@pytest.mark.parametrize("label", ["Agent [Y] Smith", "[X]", "The [MASK] Singer", "[X][Y]", "<mask>"])
def test_query_text_inserts_labels_verbatim(label):
    assert _query(label).text("[MASK]") == f"{label} was born in [MASK] ."
    assert _query(label).text("<mask>") == f"{label} was born in <mask> ."


def test_query_text_fills_every_slot_once_in_both_directions():
    q = _query("Y [Y] X [X]", "[Y] is where [X] lives, says [X] .", slot="subject")
    assert q.text("?") == "Y [Y] X [X] is where ? lives, says ? ."
    assert _query("[Y]", "[X] and [X] in [Y]").text("[X]") == "[Y] and [Y] in [X]"


@pytest.mark.parametrize("label", ["{0}", "{1} {}", "{x}", "}{", "{{0}}", "a {0!r:>9} b"])
def test_query_text_keeps_braces_in_labels_and_templates(label):
    # a template becomes a format pattern once: its braces are text, and a label's braces are never read as fields
    template = "{[X]} said {0} {} }{ [Y] {{1}} ."
    assert _query(label, template).text("[MASK]") == "{" + label + "} said {0} {} }{ [MASK] {{1}} ."
    assert _query(label, template, slot="subject").text("{1}") == "{{1}} said {0} {} }{ " + label + " {{1}} ."
    assert _query(label, "no slot {here}").text("[MASK]") == "no slot {here}"


def _fact(uid: str, subject: str, obj: str = "Paris") -> Fact:
    return Fact(uid, "trex", "P19", Entity(subject, f"Q{uid}"), Entity(obj, "Q90"))


def _masked_predictor(path: Path):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, full_vocab, token_labels

    loaded = load(str(path), "masked", "cpu", "float32")
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, cache=None)
    return MaskedLMPredictor(str(path), scorer, AnswerSpace(token_labels(loaded.tokenizer, scorer.vocab_size),
                                                            fixed=full_vocab(token_labels(loaded.tokenizer))))


@pytest.mark.parametrize("kind,mask", [("bert-cased", "[MASK]"), ("roberta", "<mask>")])
def test_masked_lm_drops_a_fact_whose_subject_holds_the_mask_token(tiny_models, kind, mask):
    pred = _masked_predictor(tiny_models(kind))
    facts = [_fact("1", "Alan Turing"), _fact("2", f"The {mask} Singer"), _fact("3", "Agent [Y] Smith")]
    kept, dropped = pred.filter_facts(facts)
    assert [f.uid for f in kept] == ["1", "3"]
    assert dropped == {f"subject label contains the mask token {mask}": 1}
    # what is kept can be scored: the label's slot marker is plain text, the prompt has one mask
    query = Query("3", "3", "trex", "P19", kept[1].subject, "object", "[X] was born in [Y] .")
    assert pred.prompt(query).count(mask) == 1
    (prediction,) = pred.predict([query], depth=5)
    assert len(prediction.answers) == 5


def _write_pickled_model(path: Path, marker: Path) -> None:
    """A real wikipedia2vec pickle that also creates `marker` when it is unpickled."""
    import joblib
    from wikipedia2vec import Wikipedia2Vec

    text = path.with_suffix(".txt")
    text.write_text(TEXT_MODEL)
    state = Wikipedia2Vec.load_text(str(text)).serialize()
    state["payload"] = _Payload(str(marker))
    joblib.dump(state, path)
    text.unlink()


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def test_pickle_is_refused_without_trust_and_converted_with_it(tmp_path, capsys):
    pkl, marker, npz = tmp_path / "model.pkl", tmp_path / "unpickled-marker", tmp_path / "model.npz"
    _write_pickled_model(pkl, marker)
    for argv in (["entities", "convert", str(pkl), "--out", str(npz)],
                 ["entities", "search", "Paris", "--wikipedia2vec", str(pkl)],
                 ["entities", "link-stats", "--wikipedia2vec", str(pkl)],
                 ["entities", "map", "--model", "unused", "--wikipedia2vec", str(pkl), "--out", str(tmp_path / "m")]):
        code, _, err = run_kbc(argv, capsys)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (argv, err)
        assert "--trust-pickle" in err and "kbc entities convert" in err
        assert not marker.exists(), argv
    assert not npz.exists()

    code, out, err = run_kbc(["entities", "convert", str(pkl), "--out", str(npz), "--trust-pickle"], capsys)
    assert code == 0 and marker.exists()  # trusted: the pickle was really loaded
    assert out.startswith(f"wrote {npz}: 1 words, 2 entities, dim 4")
    marker.rmdir()
    code, out, _ = run_kbc(["entities", "search", "Paris", "--wikipedia2vec", str(npz), "-k", "1"], capsys)
    assert code == 0 and out.split() == ["0.6", "Lyon"] and not marker.exists()


def test_npz_round_trip_keeps_vectors_and_link_tables(tmp_path):
    from lm.entities.embeddings import LinkTables, load_embeddings, save_npz

    text = tmp_path / "m.txt"
    text.write_text(TEXT_MODEL)
    emb = load_embeddings(text)
    emb.links = LinkTables({"Paree": "Paris"}, {"city of light": [("Paris", 0.9), ("Lyon", 0.1)]})
    back = load_embeddings(save_npz(emb, tmp_path / "m.npz"))
    assert (back.words, back.titles, back.lowercase) == (["Paris"], ["Paris", "Lyon"], False)
    assert np.array_equal(back.entity_vectors, emb.entity_vectors)
    assert back.links.redirects == {"Paree": "Paris"}
    assert back.links.mention_lookup("City of Light") == [("Paris", pytest.approx(0.9)), ("Lyon", pytest.approx(0.1))]


def test_npz_with_pickled_objects_is_refused(tmp_path):
    from lm.entities.embeddings import load_embeddings

    path = tmp_path / "objects.npz"
    np.savez(path, format=np.array("kbc-wikipedia2vec/1"), words=np.array([_Payload("x")], dtype=object),
             word_vectors=np.zeros((1, 2)), titles=np.zeros(0, np.uint8), entity_vectors=np.zeros((0, 2)),
             lowercase=np.array(False))
    with pytest.raises(DataError, match="objects.npz: not a readable wikipedia2vec .npz"):
        load_embeddings(path)
    assert not Path("x").exists()


@pytest.mark.parametrize("name", ["model.pkl", "model.pickle", "model.joblib"])
def test_pickle_suffixes_are_refused_before_reading(tmp_path, name):
    from lm.entities.embeddings import load_embeddings
    from lm.entities.linking import read_mentions

    with pytest.raises(ConfigError, match="is a pickle"):
        load_embeddings(tmp_path / name)  # refused even when missing: nothing is opened
    with pytest.raises(ConfigError, match="mention dictionary"):
        read_mentions(tmp_path / name)


@pytest.mark.parametrize("side", ["enwiki_mention.pkl", "enwiki_dic.pkl", "enwiki_lg.pkl", "enwiki.pkl"])
def test_a_link_table_given_as_a_side_file_names_the_model_to_convert(tmp_path, side):
    from lm.entities.linking import read_redirects

    with pytest.raises(ConfigError, match=f"kbc entities convert {tmp_path / 'enwiki.pkl'} --trust-pickle"):
        read_redirects(tmp_path / side)


def test_convert_names_a_missing_file_before_asking_for_trust(tmp_path):
    """Nothing to vouch for: --trust-pickle would only lead to the missing file's error."""
    from lm.entities.convert import convert

    with pytest.raises(DataError, match="none.pkl: no such wikipedia2vec model file"):
        convert(tmp_path / "none.pkl")
    (tmp_path / "some.pkl").write_bytes(b"x")
    with pytest.raises(ConfigError, match="refusing to unpickle .*--trust-pickle"):
        convert(tmp_path / "some.pkl")
    with pytest.raises(ConfigError, match="written as .npz"):
        convert(tmp_path / "none.pkl", tmp_path / "out.txt", trust_pickle=True)
