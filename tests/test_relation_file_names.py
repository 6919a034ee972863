"""Relation ids in other scripts (首都, Столица, عاصمة) each have prediction files of their own, while every ASCII id
keeps the file name it always had, so runs made before resume with nothing asked again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from cli_support import run_kbc

from bridge.report.sections import _slug
from bridge.run import attempts, directory, name_clashes, results
from bridge.run.older_names import older_file, recorded_path
from bridge.run.results import forget_records
from eval import relations
from eval.errors import DataError
from eval.relations import check_relation_id, older_slug, slug

RELATIONS = {
    "首都": ("[X]の首都は[Y]です。", [("日本", "東京"), ("フランス", "パリ"), ("ドイツ", "ベルリン")]),
    "出身地": ("[X]は[Y]で生まれた。", [("太郎", "東京"), ("花子", "大阪"), ("次郎", "東京")]),
    "P19": ("[X] was born in [Y] .", [("Alice", "Paris"), ("Bob", "Paris"), ("Carol", "Rome")]),
    "schema:birthPlace": ("[X] is from [Y] .", [("Dan", "Oslo"), ("Eve", "Oslo"), ("Fay", "Bern")]),
}


def _data(root: Path, relations: list[str]) -> Path:
    """A LAMA-layout folder (docs/own-data.md) of `relations`, three facts each, no Wikidata ids."""
    (root / "TREx").mkdir(parents=True)
    (root / "relations.jsonl").write_text("".join(json.dumps({"relation": r, "template": RELATIONS[r][0]},
                                                             ensure_ascii=False) + "\n" for r in relations),
                                          encoding="utf-8")
    for r in relations:
        (root / "TREx" / f"{r}.jsonl").write_text("".join(
            json.dumps({"sub_label": s, "obj_label": o}, ensure_ascii=False) + "\n" for s, o in RELATIONS[r][1]),
            encoding="utf-8")
    return root


def _run(data: Path, out: Path, capsys) -> str:
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "freq", "gold", "--data-dir",
                            str(data), "--out", str(out)], capsys)
    assert code == 0, err
    return err


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes()
            for folder in ("predictions", ".kbc-records") for p in sorted((out / folder).rglob("*")) if p.is_file()}


def test_ascii_ids_keep_their_file_names():
    for rel in ("P19", "schema:birthPlace", "a b", "my:likes", "a::b", "x.y-z_1", ":::", ""):
        assert slug(rel) == (re.sub(r"[^A-Za-z0-9._-]+", "_", rel).strip("_") or "predictor") == older_slug(rel)
    assert slug("schema:birthPlace") == "schema_birthPlace" and slug("P19") == "P19"


def test_ids_in_other_scripts_have_safe_names_apart():
    ids = ["首都", "出身地", "Столица", "столица", "عاصمة", "राजधानी", "café", "caf", "P19首都", "P19"]
    names = [slug(r) for r in ids]
    assert len(set(names)) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names)
    assert slug("cafe\u0301") == slug("caf\u00e9")  # one name in either Unicode spelling, as on macOS
    files: dict[str, tuple[str, str]] = {}
    for i, rel in enumerate(ids):
        check_relation_id(rel, f"relations.jsonl:{i + 1}", files)


def test_report_figure_names_of_other_scripts_are_apart():
    """Two runs' folders named `実験` and `試験`: their predictors' figures were both `confusion_freq`."""
    assert _slug("実験:freq") != _slug("試験:freq")
    assert re.fullmatch(r"[a-z0-9_]+", _slug("実験:freq"))
    assert (_slug("p@1"), _slug("A (run):bert-base")) == ("p_at_1", "a_run_bert_base")


def test_own_data_in_two_scripts_runs_and_every_command_reads_it(tmp_path, capsys):
    out = tmp_path / "run"
    _run(_data(tmp_path / "data", list(RELATIONS)), out, capsys)
    names = {p.name for p in (out / "predictions" / "trex" / "freq").iterdir()}
    assert names == {f"{slug(r)}.jsonl" for r in RELATIONS} and {"P19.jsonl", "schema_birthPlace.jsonl"} <= names
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    p1 = {r["group"]: r["value"] for r in summary
          if (r["predictor"], r["scope"], r["setting"], r["metric"]) == ("freq", "own", "raw", "p@1")}
    assert p1["首都"] == 100 / 3 and p1["出身地"] == 200 / 3  # Freq answers 東京 for every subject of each

    code, text, err = run_kbc(["show", str(out), "--subject", "花子", "--relation", "出身地"], capsys)
    assert code == 0, err
    assert "gold:        大阪" in text and "freq  gold rank raw 2" in text
    code, _, err = run_kbc(["show", str(out), "--subject", "nobody", "--relation", "首都"], capsys)
    assert code != 0 and "no fact with subject 'nobody' and relation '首都'" in err
    code, _, err = run_kbc(["show", str(out), "--subject", "nobody", "--relation", "首"], capsys)
    assert code != 0 and "has no relation '首'; did you mean '首都'?" in err and slug("首都") not in err

    code, text, err = run_kbc(["compare", str(out), "freq", "gold", "--bootstrap", "0"], capsys)
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:5] for line in text.splitlines() if line.split()}
    assert rows["首都"] == ["3", "1", "0", "2"] and rows["出身地"] == ["3", "2", "0", "1"]
    assert rows["all"] == ["12", "7", "0", "5"]

    code, _, err = run_kbc(["analyze", "evidence", str(out)], capsys)  # every relation of the run, by its id
    assert code == 0, err
    assert "trex: 4 relations, read 12" in err

    code, _, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "首都" in page and "出身地" in page


def test_a_run_of_ascii_ids_resumes_with_nothing_asked_again(tmp_path, capsys):
    data, out = _data(tmp_path / "data", ["P19", "schema:birthPlace"]), tmp_path / "run"
    _run(data, out, capsys)
    before = _files(out)
    assert {"predictions/trex/freq/P19.jsonl", "predictions/trex/freq/schema_birthPlace.jsonl"} <= set(before)
    err = _run(data, out, capsys)
    assert "trex / freq: all 6 queries done, skipped" in err and "trex / gold: all 6 queries done, skipped" in err
    assert _files(out) == before


def test_a_run_an_older_kbc_wrote_for_an_id_in_another_script_resumes(tmp_path, capsys, monkeypatch):
    """An older kbc wrote 首都's records to `predictor.jsonl`: a rerun asked them again into a second file, and
    instances.parquet held each fact twice."""
    data, out = _data(tmp_path / "data", ["首都", "P19"]), tmp_path / "run"
    for module in (relations, results, directory, attempts, name_clashes):  # the names an older kbc gave
        monkeypatch.setattr(module, "slug", older_slug)
    _run(data, out, capsys)
    monkeypatch.undo()
    held = _files(out)
    assert "predictions/trex/freq/predictor.jsonl" in held
    # read as it is before any rerun
    code, text, err = run_kbc(["show", str(out), "--subject", "日本", "--relation", "首都"], capsys)
    assert code == 0 and "freq  gold rank raw 1" in text, err
    code, _, err = run_kbc(["show", str(out), "--subject", "nobody", "--relation", "首"], capsys)
    assert "did you mean '首都'? (known: P19, 首都)" in err
    code, text, err = run_kbc(["report", str(out), "--out", str(tmp_path / "report")], capsys)
    assert code == 0, err
    assert _files(out) == held
    err = _run(data, out, capsys)
    assert "trex / freq: all 6 queries done, skipped" in err
    now = _files(out)
    assert now[f"predictions/trex/freq/{slug('首都')}.jsonl"] == held["predictions/trex/freq/predictor.jsonl"]
    assert not any("predictor." in name for name in now)
    facts = pd.read_parquet(out / "instances.parquet").groupby(["predictor", "relation"]).size()
    assert facts.to_dict() == {(p, r): 3 for p in ("freq", "gold") for r in ("P19", "首都")}
    code, text, err = run_kbc(["show", str(out), "--subject", "日本", "--relation", "首都"], capsys)
    assert code == 0 and "gold:        東京" in text, err


def test_a_file_of_an_ascii_id_under_the_older_name_stays_its_own(tmp_path):
    """`caf.jsonl` is the file of relation `caf`, and was that of `café` under an older kbc: only records of
    `café` are read or moved as `café`'s."""
    folder = tmp_path / "predictions" / "trex" / "freq"
    folder.mkdir(parents=True)
    present = folder / f"{slug('café')}.jsonl"
    for rel, expected in (("caf", None), ("café", folder / "caf.jsonl")):
        (folder / "caf.jsonl").write_text(json.dumps({"uid": f"{rel}:1", "relation": rel}) + "\n", encoding="utf-8")
        forget_records(tmp_path)
        assert older_file(present, "café") == expected
        assert recorded_path(tmp_path, "trex", "freq", "café") == (expected or present)
    assert recorded_path(tmp_path, "trex", "freq", "caf") == folder / "caf.jsonl"
    assert attempts._has_records(tmp_path, "trex", "freq", "café")  # a relation left part-asked is found so
    (folder / "caf.jsonl").write_text(json.dumps({"uid": "caf:1", "relation": "caf"}) + "\n", encoding="utf-8")
    forget_records(tmp_path)
    assert attempts._has_records(tmp_path, "trex", "freq", "caf")
    assert not attempts._has_records(tmp_path, "trex", "freq", "café")


def test_a_refused_id_in_another_script_is_told_an_id_to_type():
    """The suggestion was the id's file name: `predictor` for `首 都` (now a hash), no id anyone meant."""
    for rel, suggested in (("首 都", "首_都"), ("首/都", "首_都"), ("a b", "a_b"), ("a\x1bb", "a_b"), ("..", "X1")):
        with pytest.raises(DataError, match=re.escape(f"({suggested!r})")):
            check_relation_id(rel, "relations.jsonl:1", {})
