"""FewRel relation classification: the staged file and its split, E-BERT Appendix A's three input forms, the macro
scores (against scikit-learn), fine-tuning with resuming, the AVG ensemble, and the KB's relations between ids."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from fewrel_fixtures import fewrel_slice

from eval.classification import bootstrap_intervals, confusion, macro_scores, per_class
from eval.errors import DataError
from eval.fewrel import load_fewrel, load_split, read_sentences, resolve_fewrel_dir, split
from eval.types import Entity
from lm.relation_inputs import RelationInputBuilder

TOKENIZERS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tokenizers"


@pytest.fixture(scope="module")
def fast_cased():
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(TOKENIZERS / "bert-base-cased", do_lower_case=False)


def _appendix_sentence():
    from eval.fewrel import Sentence

    words = "Tangier 's Ibn Battouta Airport is the busiest airport in the region .".split()
    return Sentence("P931:0", "P931", tuple(words), Entity("Ibn Battouta Airport", "Q1"), (2, 5),
                    Entity("Tangier", "Q2"), (0, 1))


def test_the_three_input_forms_are_the_appendix_example(fast_cased):
    titles = ["Tangier", "Tangier Ibn Battouta Airport"]
    rows = {"Q2": 0, "Q1": 1}
    builder = RelationInputBuilder(fast_cased, lambda e: rows.get(e.id))
    s = _appendix_sentence()
    bert, ebert, concat = (builder.build([s], form)[0] for form in ("bert", "ebert", "concat"))
    tail = ["is", "the", "busiest", "airport", "in", "the", "region", ".", "[SEP]"]
    assert builder.view(bert, titles) == ["[CLS]", "$", "Tang", "##ier", "$", "'", "s", "#", "Ibn", "Bat", "##to",
                                          "##uta", "Airport", "#", *tail]
    assert builder.view(ebert, titles) == ["[CLS]", "$", "Tangier", "$", "'", "s", "#",
                                           "Tangier_Ibn_Battouta_Airport", "#", *tail]
    assert builder.view(concat, titles) == ["[CLS]", "$", "Tangier", "/", "Tang", "##ier", "$", "'", "s", "#",
                                            "Tangier_Ibn_Battouta_Airport", "/", "Ibn", "Bat", "##to", "##uta",
                                            "Airport", "#", *tail]
    assert ebert.entities == ((2, 0), (7, 1)) and concat.entities == ((2, 0), (10, 1))
    assert ebert.ids[2] == fast_cased.unk_token_id and (bert.fallback, ebert.fallback) == (0, 0)


def test_an_entity_without_a_vector_keeps_its_word_pieces(fast_cased):
    builder = RelationInputBuilder(fast_cased, lambda e: 0 if e.id == "Q1" else None)
    s = _appendix_sentence()
    ebert = builder.build([s], "ebert")[0]
    assert builder.view(ebert, ["Tangier_Ibn_Battouta_Airport"])[:8] == [
        "[CLS]", "$", "Tang", "##ier", "$", "'", "s", "#"]
    assert ebert.fallback == 1 and ebert.entities == ((8, 0),)


SPLIT_NOTE = (
    "seeded split train/dev/test 8:1:1 (seed 0) of all 16 relations: the 1120 test sentences are the ones asked "
    "(--relations and --limit narrow only these); the other 10080, of all 16 relations whatever --relations says, "
    "train and select the fine-tuned models")


def test_the_staged_file_splits_8_1_1_per_relation_seeded(shared_data):
    parts = load_split(shared_data / "fewrel")
    assert {k: len(v) for k, v in parts.items()} == {"train": 8960, "dev": 1120, "test": 1120}
    uids = [s.uid for p in parts.values() for s in p]
    assert len(set(uids)) == 11200
    assert sum(1 for s in parts["test"] if s.relation == "P177") == 70
    again = load_split(shared_data / "fewrel")
    assert [s.uid for s in again["test"]] == [s.uid for s in parts["test"]]
    corpus = load_fewrel(shared_data)
    assert len(corpus.relations) == 16 and len(corpus.facts) == 1120
    assert corpus.summary().splitlines()[0] == ("fewrel: 16 relations, read 11200: 8960 train, 1120 dev, 1120 test, "
                                                "0 dropped; asked: 1120 of the test part's 1120")
    assert corpus.reports[1].summary() == "fewrel/P177: read 700: 560 train, 70 dev, 70 test, 0 dropped"
    assert corpus.reports[0].summary().endswith(
        "val_wiki.json: read 11200: 8960 train, 1120 dev, 1120 test, 0 dropped; " + SPLIT_NOTE)
    assert corpus.relations["P177"].label == "crosses"
    first = corpus.facts[0]
    assert (first.subject.id, first.object.id, first.relation) == (parts["test"][0].head.id,
                                                                   parts["test"][0].tail.id, "P177")
    assert resolve_fewrel_dir(shared_data / "lama") == shared_data / "fewrel"


@pytest.mark.parametrize("row, message", [
    ({"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[5]]]}, "row 1, t: positions [5]"),
    ({"tokens": ["a", "b", "c"], "h": ["a", "Q1", [[0, 2]]], "t": ["b", "Q2", [[1]]]},
     "row 1, h: positions [0, 2] are not consecutive"),
    ({"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]]}, "row 1: expected an object with tokens, h and t"),
    ({"tokens": ["a", "b"], "h": ["a", "Q1", [[0, 1]]], "t": ["b", "Q2", [[1]]]},
     "row 1: head and tail mentions overlap"),
])
def test_a_bad_row_is_one_error_naming_it(tmp_path, row, message):
    good = {"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}
    path = tmp_path / "val_wiki.json"
    path.write_text(json.dumps({"P1": [good, row]}))
    with pytest.raises(DataError, match="relation P1, " + message.replace("[", r"\[").replace("]", r"\]")):
        read_sentences(path)


def test_a_byte_order_mark_is_ignored(tmp_path):
    good = {"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}
    path = tmp_path / "val_wiki.json"
    path.write_text("\ufeff" + json.dumps({"P1": [good]}), encoding="utf-8")
    assert [s.relation for s in read_sentences(path)] == ["P1"]


@pytest.mark.parametrize("name, kind", [("val_wiki.json", "directory"), ("pid2name.json", "directory"),
                                        ("val_wiki.json", "pipe")])
def test_a_folder_or_pipe_for_a_file_is_named_not_taken_for_no_data(shared_data, tmp_path, name, kind):
    folder = fewrel_slice(shared_data, tmp_path, 20)
    (folder / name).unlink()
    (folder / name).mkdir() if kind == "directory" else os.mkfifo(folder / name)
    with pytest.raises(DataError, match=f"^{folder / name}: the FewRel .*is (a directory|not a regular file)"):
        load_fewrel(folder)


def test_pid2name_not_utf8_is_one_error(shared_data, tmp_path):
    folder = fewrel_slice(shared_data, tmp_path, 20)
    (folder / "pid2name.json").write_bytes(b'{"P177": ["cr\xffsses", ""]}')
    with pytest.raises(DataError, match=r"pid2name\.json: not UTF-8 text"):
        load_fewrel(folder)


def test_split_keeps_file_order_within_parts(shared_data, tmp_path):
    folder = fewrel_slice(shared_data, tmp_path, 20)
    parts = split(read_sentences(folder / "val_wiki.json"))
    assert {k: len(v) for k, v in parts.items()} == {"train": 48, "dev": 6, "test": 6}
    for part in parts.values():
        rows = [(s.relation, int(s.uid.split(":")[1])) for s in part]
        assert rows == sorted(rows, key=lambda r: (["P177", "P364", "P2094"].index(r[0]), r[1]))


def test_macro_scores_match_scikit_learn():
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    rng = np.random.default_rng(3)
    labels = ["P1", "P2", "P3", "P4"]
    gold = [labels[i] for i in rng.integers(0, 4, 200)]
    pred = [labels[i] if i < 4 else None for i in rng.integers(0, 5, 200)]  # some without an answer
    pred[:5] = ["P9"] * 5  # a class outside the list counts for none of them
    mine = macro_scores(gold, pred, labels)
    as_str = [p if p is not None else "none" for p in pred]
    p, r, f, _ = precision_recall_fscore_support(gold, as_str, labels=labels, average="macro", zero_division=0)
    assert mine["precision"] == pytest.approx(100 * p, abs=1e-9)
    assert mine["recall"] == pytest.approx(100 * r, abs=1e-9)
    assert mine["f1"] == pytest.approx(100 * f, abs=1e-9)
    assert mine["accuracy"] == pytest.approx(100 * accuracy_score(gold, as_str), abs=1e-9)
    assert mine["coverage"] == pytest.approx(100 * sum(x is not None for x in pred) / 200, abs=1e-9)
    each = precision_recall_fscore_support(gold, as_str, labels=labels, zero_division=0)
    assert [per_class(gold, pred, labels)[x].f1 for x in labels] == pytest.approx(list(100 * each[2]), abs=1e-9)


def test_exact_scores_and_confusion_on_a_hand_made_case():
    gold = ["A", "A", "B", "B", "C"]
    pred = ["A", "B", "B", None, "A"]
    scores = macro_scores(gold, pred, ["A", "B", "C"])
    # A: P 1/2 R 1/2; B: P 1/2 R 1/2; C: P 0 R 0
    assert scores == pytest.approx({"f1": 100 / 3, "precision": 100 / 3, "recall": 100 / 3, "accuracy": 40.0,
                                    "coverage": 80.0})
    assert confusion(gold, pred, ["A", "B", "C"]).tolist() == [[1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 0, 0]]
    found = bootstrap_intervals(gold, pred, ["A", "B", "C"], 200, np.random.default_rng(0))
    low, high = found["all"]["f1"].ci_low, found["all"]["f1"].ci_high
    assert 0.0 <= low <= scores["f1"] <= high <= 100.0
    again = bootstrap_intervals(gold, pred, ["A", "B", "C"], 200, np.random.default_rng(0))
    assert again["all"]["f1"] == found["all"]["f1"]


def test_each_bootstrap_resample_scores_macro_precision_as_scikit_learn_does():
    """A predictor answering 1 of P361's and 2 of P364's 40 sentences, rightly, and none of P177's: macro P 66.67,
    the top of its interval, as every resample's macro P (scikit-learn's rule, recomputed here) is at most that."""
    from sklearn.metrics import precision_score

    labels = ["P177", "P361", "P364"]
    gold = [x for x in labels for _ in range(40)]
    pred = [None] * 120
    pred[40], pred[80], pred[81] = "P361", "P364", "P364"
    assert macro_scores(gold, pred, labels)["precision"] == pytest.approx(200 / 3)
    found = bootstrap_intervals(gold, pred, labels, 300, np.random.default_rng(5))["all"]["precision"]
    rng, g = np.random.default_rng(5), np.array(gold)
    strata = [np.flatnonzero(g == x) for x in labels]
    values = []
    for _ in range(300):
        idx = np.concatenate([s[rng.integers(0, len(s), len(s))] for s in strata])
        values.append(100 * precision_score([gold[i] for i in idx], [pred[i] or "none" for i in idx], labels=labels,
                                            average="macro", zero_division=0))
    assert found.ci_low == pytest.approx(np.percentile(values, 2.5), abs=1e-9)
    assert found.ci_high == pytest.approx(np.percentile(values, 97.5), abs=1e-9) == pytest.approx(200 / 3)
    assert max(values) == pytest.approx(200 / 3)


def test_the_summary_states_the_macro_precision_rule_beside_coverage_and_the_precision_of_answers():
    from bridge.experiments.fewrel import PRECISION_NOTE, precision_note

    rows = [{"scope": "shared", "setting": "raw", "group": "all", "predictor": p, "metric": m, "value": v}
            for p, m, v in [("bert", "precision-macro", 10.0), ("bert", "coverage", 100.0), ("bert", "accuracy", 20.0),
                            ("kb", "precision-macro", 200 / 3), ("kb", "coverage", 2.5), ("kb", "accuracy", 2.5)]]
    assert precision_note(rows) == [
        "## Macro precision and abstaining predictors", "", PRECISION_NOTE, "",
        "| predictor | macro P | coverage | precision of its answers |", "|---|---|---|---|",
        "| bert | 10.00 | 100.00 | 20.00 |", "| kb | 66.67 | 2.50 | 100.00 |", ""]
    assert "zero_division=0" in PRECISION_NOTE


def test_the_confusion_json_has_a_row_per_gold_relation_only(tmp_path):
    from bridge.experiments.fewrel import FewrelExperiment

    units = {"a": {"relation": "P1", "predicted": "P9"}, "b": {"relation": "P1", "predicted": "P1"},
             "c": {"relation": "P2", "predicted": None}}
    FewrelExperiment().write_outputs(tmp_path, "fewrel", "kb", units)
    found = json.loads((tmp_path / "figures" / "confusion-kb.json").read_text())
    assert found == {"predictor": "kb", "gold": ["P1", "P2"], "predicted": ["P1", "P2", "P9", "none"],
                     "counts": [[1, 0, 1, 0], [0, 0, 0, 1]]}


def test_resamples_that_cannot_vary_give_no_interval():
    """One test sentence per relation: every resample within relations is the sample itself, so no cell gets a
    (zero-width) interval; a relation with one sentence among larger ones keeps F1 and precision intervals only,
    as other relations' sentences still move its precision."""
    assert bootstrap_intervals(["A", "B", "C"], ["A", "A", None], ["A", "B", "C"], 100,
                               np.random.default_rng(0)) == {}
    found = bootstrap_intervals(["A", "A", "B", "B", "C"], ["A", "C", "B", None, "C"], ["A", "B", "C"], 100,
                                np.random.default_rng(0))
    assert set(found) == {"all", "A", "B", "C"}
    assert set(found["C"]) == {"f1", "precision"}
    assert set(found["A"]) == {"f1", "precision", "recall", "accuracy", "coverage"}
    # C's precision: 1/2 on the sample, 1/3 where A's wrong answer is drawn twice, 1 where it is not drawn
    assert (found["C"]["precision"].ci_low, found["C"]["precision"].ci_high) == (pytest.approx(100 / 3), 100.0)


def test_the_summary_header_says_the_plus_minus_is_a_bootstrap_standard_error():
    from bridge.experiments.fewrel import FewrelExperiment
    from eval.report import markdown

    rows = [{"corpus": "fewrel", "predictor": "bert", "setting": "raw", "scope": "shared", "group": "all",
             "metric": "f1-macro", "value": 29.21, "n_facts": 100, "stderr": 4.18, "ci_low": 21.37, "ci_high": 38.72}]
    text = markdown(rows, metrics=("f1-macro",), spread=FewrelExperiment.spread)
    assert "of the mean over relations, or over every question" not in text
    assert "Cells: value ± bootstrap standard error: the standard deviation of seeded resamples" in text
    assert "| fewrel | bert | - | 100 | 29.21 ± 4.18 | [21.37, 38.72] |" in text


def test_kbc_ls_lists_what_kbc_run_fewrel_takes_of_a_predictor_it_fine_tunes(capsys):
    from cli_support import run_kbc

    code, text, err = run_kbc(["ls", "ebert-concat"], capsys)
    assert code == 0, err
    lines = text.splitlines()
    at = lines.index("  in `kbc run fewrel` (a relation classifier fine-tuned on ebert-concat's input form):")
    assert [line.split("=")[0].strip() for line in lines[at + 1:]] == [
        f"--set ebert-concat.{k}" for k in ("model", "wikipedia2vec", "map", "map_kind", "titles", "redirects",
                                            "mentions", "lr", "train_batch", "epochs", "train_seed")]
    code, text, err = run_kbc(["ls", "freq"], capsys)
    assert code == 0 and "kbc run fewrel" not in text


def test_fewrel_help_says_limit_and_relations_narrow_the_test_sentences_not_training(capsys):
    """A quick check with --limit still fine-tunes on the whole train part: the help says so where it is read."""
    from cli_support import run_kbc

    code, out, _ = run_kbc(["run", "fewrel", "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "at most N test sentences per relation is asked; training still reads the whole train and dev parts" in text
    assert "Only these relations' test sentences are asked; every model still trains" in text
    code, out, _ = run_kbc(["run", "lama", "--help"], capsys)
    assert "training" not in " ".join(out.split())  # the other experiments train nothing
