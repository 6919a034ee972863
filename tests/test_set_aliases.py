"""LM-KBC answers are disambiguated by alias too: the Wikidata aliases of X-FACTR's list beside the data."""

from __future__ import annotations

import json
import shutil

from eval.datadir import fingerprint
from eval.disambiguate import LabelIndex
from eval.lmkbc import alias_file, load_lmkbc, object_aliases, read_rows, resolve_lmkbc_dir
from eval.set_metrics import pair_from_record
from eval.types import Answer, Prediction, Query


def test_alias_only_answer_maps_to_its_id(lama_dir, shared_data):
    from bridge.experiments.lmkbc import LmkbcExperiment

    root = resolve_lmkbc_dir(lama_dir)
    assert alias_file(root) == shared_data / "xfactr" / "alias_TREx_en.txt"
    exp = LmkbcExperiment()
    index = exp._labels(lama_dir)
    # "Dwight Eisenhower" is no label of the data (it writes "Dwight D. Eisenhower"), only an alias of Q9916;
    # "Dominion of Canada" an alias of Q16; lower-case codes ("no", "it") are words, not Norway and Italy
    assert [index.resolve(t) for t in ("Dwight Eisenhower", "Dominion of Canada", "no", "it", "IT", "ca")] == [
        "Q9916", "Q16", "no", "it", "Q38", "ca"]
    fact = next(f for f in load_lmkbc(lama_dir, "train", ["awardWonBy"]).facts if f.subject.id == "Q207826")
    assert "Dwight Eisenhower" not in fact.labels and "Q9916" in [o.id for o in fact.objects]
    query = Query(fact.uid, fact.uid, fact.corpus, fact.relation, fact.subject, "object", "[X] was won by [Y] .")
    pred = Prediction(fact.uid, (Answer("Dwight Eisenhower", 0.5), Answer("no", 0.3), Answer("Dominion of Canada",
                                                                                             0.1)))
    record = exp.record("", query, fact, pred, {})
    assert record["predicted"] == ["Q9916", "no", "Q16"]
    score = pair_from_record(record)  # Time Person of the Year: 46 winners, Eisenhower one of them
    assert (score.tp, score.n_pred, score.n_gold) == (1, 3, 46)


def test_object_aliases_cover_only_the_data_objects(lama_dir):
    root = resolve_lmkbc_dir(lama_dir)
    rows = [r for _, r in read_rows(root / "val.jsonl")]
    aliases = object_aliases(root, rows)
    objects = {q for r in rows for q in r["ObjectEntitiesID"]}
    # Earth (Q2) is in the list but no object of the data
    assert set(aliases) <= objects and "Q16" in aliases and "Q2" not in objects | set(aliases)


def test_short_aliases_match_only_as_written():
    index = LabelIndex({"Q38": "Italy"}, {"Q38": ["IT", "it", "ITA", "Italia"], "Q20": ["no", "NOR"]})
    assert [index.resolve(t) for t in ("IT", "it", "It", "ita", "ITA", "italia", "no", "NOR", "nor")] == [
        "Q38", "it", "It", "ita", "Q38", "Q38", "no", "Q20", "nor"]


def test_an_edited_alias_list_is_refused_on_rerun(shared_data, tmp_path, monkeypatch, capsys):
    """The aliases decide the ids written in each record: a rerun with another list would mix two mappings."""
    from cli_support import run_kbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    (data / "xfactr").mkdir(parents=True)
    shutil.copytree(shared_data / "lmkbc2024", data / "lmkbc2024")
    aliases = data / "xfactr" / "alias_TREx_en.txt"
    aliases.write_text("Q9916\tDwight Eisenhower\n", encoding="utf-8")
    argv = ["run", "lmkbc", "--predictors", "freq", "--set", "freq.set=top:1", "--relations", "awardWonBy",
            "--data-dir", str(data / "lmkbc2024"), "--out", str(tmp_path / "run"), "--quiet"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["settings"]["aliases"] == fingerprint([aliases])
    assert run_kbc(argv, capsys)[0] == 0  # the same list: a rerun as usual
    aliases.write_text("Q9916\tIke\n", encoding="utf-8")
    code, _, err = run_kbc(argv, capsys)
    last = err.splitlines()[-1]
    assert code == 2 and last.startswith(f"error: {tmp_path / 'run'} holds results made with ")
    assert last.endswith(" (the content of the alias file changed since); use another --out or the same settings")
