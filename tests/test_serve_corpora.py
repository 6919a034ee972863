"""The live view on corpora whose facts are cloze sentences (negated LAMA, SQuAD): the gold is the corpus's own
objects of the subject and relation, asked with their sentence; what cannot be asked by subject and relation (SQuAD,
FewRel) is refused in one line."""

from __future__ import annotations

import pytest
from cli_support import run_kbc

import kbcompare
from eval.corpora import load_corpus


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve-corpora")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        yield root


@pytest.fixture(scope="module")
def negated(cache, lama_dir):
    with kbcompare.Sides(["freq"], corpus="negated-trex", relations=["P1001", "P19"], data_dir=lama_dir) as sides:
        yield sides


def test_negated_gold_is_the_corpus_objects_asked_with_their_sentence(negated):
    answers = negated.ask("Knesset", "P1001", k=3)
    assert answers.prompt == "Knesset is a legal term in [MASK] ."
    assert answers.gold == ["Israel"]
    gold = answers.side("gold KB")
    assert (gold["status"], gold["message"]) == ("ok", "")
    assert gold["answers"] == [{"label": "Israel", "score": 1.0, "id": None, "gold": True,
                                "sentence": "Knesset is a legal term in Israel ."}]
    assert gold["source"] == "the facts of negated-trex (cloze sentences; no gold graph)"
    inferred = answers.side("inferred graph")
    assert inferred["status"] == "not applicable"
    freq = answers.side("freq")  # Freq's P1001 objects, most frequent first: Canada (40), Australia (22), Germany
    assert [(a["label"], a["gold"]) for a in freq["answers"]] == [("Canada", False), ("Australia", False),
                                                                  ("Germany", False)]
    assert freq["gold_rank"] == {"rank": None, "exact": False, "of": 3}
    canadian = negated.ask("Parks Canada", "P1001", k=3)
    assert canadian.prompt == "Parks Canada is a legal term in [MASK] ." and canadian.gold == ["Canada"]
    assert [a["gold"] for a in canadian.side("freq")["answers"]] == [True, False, False]
    assert canadian.side("freq")["gold_rank"] == {"rank": 1, "exact": False, "of": 3}


def test_a_subject_the_sentences_lack_asks_nothing(negated):
    answers = negated.ask("Allan Peiper", "P19", k=3)  # a T-REx subject that negated LAMA does not ask
    why = ("negated-trex asks each fact with its own sentence and has no fact of 'Allan Peiper' for P19: there is no "
           "sentence to ask (write a cloze with [MASK] instead)")
    assert answers.prompt is None and answers.gold == []
    assert (answers.side("gold KB")["status"], answers.side("gold KB")["message"]) == ("ok", why)
    assert (answers.side("freq")["status"], answers.side("freq")["message"]) == ("not applicable", why)
    assert answers.body["subject"]["in_corpus"] is False


def test_negated_page_and_suggestions(negated):
    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app

    with TestClient(create_app(negated.explorer)) as c:
        assert c.get("/api/suggest", params={"prefix": "knes"}).json()["labels"] == ["Knesset"]
        page = c.get("/", params={"subject": "Knesset", "relation": "P1001", "k": 3}).text
        assert '<h2 id="prompt">Knesset is a legal term in [MASK] .</h2>' in page
        assert "&ldquo;Knesset is a legal term in Israel .&rdquo;" in page
        assert "holds no object" not in page
        page = c.get("/", params={"subject": "Allan Peiper", "relation": "P19"}).text
        assert '<h2 id="prompt">Allan Peiper · P19</h2>' in page


def test_squad_cannot_be_asked_by_subject_and_relation(cache, lama_dir):
    with kbcompare.Sides(["freq"], corpus="squad", data_dir=lama_dir) as sides:
        with pytest.raises(kbcompare.ConfigError) as err:
            sides.ask("Squad", "squad")
        assert str(err.value) == (
            "squad cannot be asked by subject and relation: each of its facts is a question about a passage, all "
            "labelled with the one subject 'Squad'; write a cloze with [MASK] instead (e.g. one of its sentences)")
        first = sides.explorer.corpus.facts[0]
        (example,) = sides.explorer.examples()
        assert example["params"] == {"cloze": first.cloze.replace("[Y]", "[MASK]")}
        cloze = sides.ask(cloze=example["params"]["cloze"])
        assert cloze.side("gold KB")["status"] == "not applicable"


FEWREL_REFUSED = ("fewrel asks which relation a sentence states (relation classification), not the object of a "
                  "subject and relation: the live view cannot ask it; `kbc run fewrel` scores the classifiers, and "
                  "`kbc show RUN --uid UID` (or `kbc serve --run RUN`: /runs/RUN/facts/UID) shows each sentence with "
                  "every classifier's answer")


def test_fewrel_is_refused_in_one_line(cache, lama_dir, capsys):
    for relation in ("P19", "P177"):
        with pytest.raises(kbcompare.ConfigError) as err:
            kbcompare.ask("X", relation=relation, corpus="fewrel", data_dir=lama_dir)
        assert str(err.value) == FEWREL_REFUSED
    code, _, err = run_kbc(["serve", "--corpus", "fewrel", "--data-dir", str(lama_dir), "--port", "0"], capsys)
    assert (code, err.strip()) == (2, f"error: {FEWREL_REFUSED}")
    with pytest.raises(kbcompare.DataError) as bad:
        load_corpus("fewrel", lama_dir, ["P19"])
    assert str(bad.value) == ("unknown relation id(s) P19 in FewRel (P19: did you mean P59?); known: P155, P177, "
                              "P206, P2094, P25, P26, P361, P364, P40, P410, P412, P413, P463, P59, P641, P921")
