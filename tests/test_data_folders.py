"""Every corpus beside LAMA is found the same way by `kbc run`, `kbc data stats`, `kbc serve` and the Python API:
in the folder named (whatever its name), in its subfolder of the corpus's name, or beside the LAMA copy."""

from __future__ import annotations

import json
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc

import kbcompare
from eval.corpora import load_corpus, resolve_run_data_dir
from eval.errors import DataError

# corpus -> (its folder's name in the data layout, a relation, the file of that relation read below the folder)
CORPORA = {
    "lmkbc2024": ("lmkbc2024", "countryLandBordersCountry", "val.jsonl"),
    "negated-trex": ("negated_misprimed_lama", "P19", "TREx/random/P19_random.jsonl"),
    "bear": ("bear", "P19", "BEAR/P19.jsonl"),
    "fewrel": ("fewrel", "P177", "val_wiki.json"),
}


def _linked_copy(source: Path, folder: Path) -> Path:
    """`folder` holding links to each entry of `source`: the same data under another folder name."""
    folder.mkdir(parents=True)
    for entry in source.iterdir():
        (folder / entry.name).symlink_to(entry)
    return folder


def _layout(shared_data: Path, tmp_path: Path, corpus: str, layout: str) -> tuple[Path, Path]:
    """(the folder given as --data-dir, the corpus folder the data is in) for one layout of a corpus's data."""
    name = CORPORA[corpus][0]
    if layout == "the folder itself":
        return (held := _linked_copy(shared_data / name, tmp_path / "mine")), held
    if layout == "its named subfolder":
        return tmp_path / "data", _linked_copy(shared_data / name, tmp_path / "data" / name)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lama").symlink_to(shared_data / "lama")
    return tmp_path / "data" / "lama", _linked_copy(shared_data / name, tmp_path / "data" / name)


@pytest.mark.parametrize("layout", ["the folder itself", "its named subfolder", "beside the LAMA copy"])
@pytest.mark.parametrize("corpus", list(CORPORA))
def test_a_run_reads_the_files_data_stats_reads(shared_data, tmp_path, monkeypatch, corpus, layout):
    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.delenv("KBC_BEAR", raising=False)
    given, held = _layout(shared_data, tmp_path, corpus, layout)
    _, relation, read = CORPORA[corpus]
    stats = load_corpus(corpus, given, [relation])  # as `kbc data stats --data-dir` reads it
    run = load_corpus(corpus, resolve_run_data_dir([corpus], given), [relation])
    assert run.files == stats.files
    assert held / read in run.files and all(f.is_relative_to(held) for f in run.files)
    assert [f.uid for f in run.facts] == [f.uid for f in stats.facts]


@pytest.mark.parametrize("layout, run_dir", [("the folder itself", "mine"), ("its named subfolder", "data/lama"),
                                             ("beside the LAMA copy", "data/lama")])
def test_lm_kbc_runs_in_the_lama_copy_where_its_loader_finds_the_same_folder(shared_data, tmp_path, monkeypatch,
                                                                             layout, run_dir):
    """Masked LMs read the common vocabulary in the run's data directory: the LAMA copy wherever one goes with the
    LM-KBC folder, else the LM-KBC folder itself."""
    monkeypatch.delenv("KBC_DATA", raising=False)
    given, _ = _layout(shared_data, tmp_path, "lmkbc2024", layout)
    if layout == "its named subfolder":
        (tmp_path / "data" / "lama").symlink_to(shared_data / "lama")
    assert resolve_run_data_dir(["lmkbc2024"], given) == tmp_path / run_dir
    # named otherwise, the folder beside a LAMA copy is the run's own: from the copy its loader would not find it
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "lama").symlink_to(shared_data / "lama")
    renamed = _linked_copy(shared_data / "lmkbc2024", tmp_path / "other" / "lm2")
    assert resolve_run_data_dir(["lmkbc2024"], renamed) == renamed


def _repro(shared_data: Path, tmp_path: Path) -> None:
    """The user's copies: LM-KBC's files in `lm2`, negated LAMA in `neg2`, BEAR staged in `data/bear`."""
    (tmp_path / "lm2").mkdir()
    for name in ("train.jsonl", "val.jsonl", "prompt_templates"):
        (tmp_path / "lm2" / name).symlink_to(shared_data / "lmkbc2024" / name)
    _linked_copy(shared_data / "negated_misprimed_lama", tmp_path / "neg2")
    _linked_copy(shared_data / "bear", tmp_path / "data" / "bear")


@pytest.fixture
def user_folder(shared_data, tmp_path, monkeypatch):
    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.delenv("KBC_BEAR", raising=False)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    _repro(shared_data, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_kbc_run_and_the_api_read_a_folder_of_any_name(user_folder, capsys):
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--relations", "countryLandBordersCountry",
                            "--limit", "3", "--data-dir", "lm2", "--out", "lmkbc-cli", "--quiet"], capsys)
    assert code == 0, err
    assert "lmkbc2024: 1 relation, read 378, 310 of other relations, kept 68, dropped 0; asking a sample of 3 " \
           "(--limit 3, seed 0)\n" in err
    result = kbcompare.run("lmkbc", predictors="freq", relations="countryLandBordersCountry", limit=3, data_dir="lm2",
                           out="lmkbc-api")
    assert result.run_dir == Path("lmkbc-api")
    summaries = [json.loads((user_folder / out / "summary.json").read_text()) for out in ("lmkbc-cli", "lmkbc-api")]
    assert summaries[0] == summaries[1] and len(summaries[0]) == 36
    for out in ("lmkbc-cli", "lmkbc-api"):
        assert json.loads((user_folder / out / "config.json").read_text())["data_dir"] == str(user_folder / "lm2")
    code, _, err = run_kbc(["run", "negated", "--corpus", "negated-trex", "--predictors", "freq", "--relations",
                            "P19", "--limit", "2", "--data-dir", "neg2", "--out", "negated", "--quiet"], capsys)
    assert code == 0, err
    assert f"negated-trex: negated and misprimed sentences from {user_folder}/neg2/TREx/random/\n" in err


def test_a_folder_without_the_data_is_named_with_the_fix(user_folder, capsys):
    (user_folder / "empty").mkdir()
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "freq", "--data-dir", "empty", "--out", "x"], capsys)
    assert (code, err) == (2, "error: no LM-KBC data (train.jsonl / val.jsonl) found (looked in empty, "
                              "empty/lmkbc2024, lmkbc2024); run `kbc data download lmkbc2024` (into ./data/) or point "
                              "--data-dir or KBC_DATA at the folder holding them\n")
    assert not (user_folder / "x").exists()


def test_ask_reads_what_run_reads(user_folder, capsys):
    code, _, err = run_kbc(["run", "bear", "--predictors", "freq", "--relations", "P19", "--limit", "2",
                            "--data-dir", "data/bear", "--out", "bear", "--quiet"], capsys)
    assert code == 0, err
    first = json.loads((user_folder / "data" / "bear" / "BEAR" / "P19.jsonl").read_text().splitlines()[0])
    answers = kbcompare.ask(first["sub_label"], "P19", corpus="bear", data_dir="data/bear", predictors=["freq"])
    assert (answers.prompt, answers.gold) == (f"{first['sub_label']} was born in [MASK].", [first["obj_label"]])
    answers = kbcompare.ask("Dante", "P19", corpus="negated-trex", data_dir="neg2", predictors=["freq"])
    assert [c["name"] for c in answers.columns] == ["gold KB", "inferred graph", "freq"]
    # LM-KBC's gold is a set per pair, read from the renamed folder as `kbc run lmkbc` reads it
    pair = next(json.loads(line) for line in (user_folder / "lm2" / "val.jsonl").read_text().splitlines()
                if json.loads(line)["Relation"] == "countryLandBordersCountry")
    answers = kbcompare.ask(pair["SubjectEntity"], "countryLandBordersCountry", corpus="lmkbc2024", data_dir="lm2",
                            predictors=["freq"])
    assert sorted(answers.gold) == sorted(pair["ObjectEntities"]) and answers.sets["freq"]


def test_a_masked_lm_without_its_common_vocabulary_is_refused_before_any_predictor_runs(user_folder, capsys):
    tiny = lm_fixtures.tiny_model_dir("bert-uncased", user_folder / "models")
    cased = lm_fixtures.tiny_model_dir("bert-cased", user_folder / "models")
    capsys.readouterr()  # what building them wrote
    argv = ["run", "lmkbc", "--predictors", "gold", "freq", "tuned=freq", f"bert={tiny}", "--set",
            "tuned.set=threshold-tuned", "--relations", "countryLandBordersCountry", "--limit", "2", "--data-dir",
            "lm2", "--quiet"]
    code, _, err = run_kbc([*argv, "--out", "run"], capsys)
    assert (code, err) == (2, f"error: {user_folder}/lm2/common_vocab_lowercased.txt is missing: masked LMs rank "
                              "LAMA's common vocabulary by default, which ships with the LAMA data; copy it there, or "
                              "pass --set candidates=full or --set vocab_file=PATH\n")
    assert not (user_folder / "run").exists()
    (user_folder / "lm2" / "common_vocab_lowercased.txt").write_text("paris\nfrance\n")
    code, _, err = run_kbc([*argv, "--out", "run"], capsys)
    assert code == 0, err
    # the cased file only where the model is cased; none where the LM ranks no common vocabulary
    argv[argv.index(f"bert={tiny}")] = f"bert={cased}"
    code, _, err = run_kbc([*argv, "--out", "cased"], capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: {user_folder}/lm2/common_vocab_cased.txt is missing: masked "
                                               "LMs rank LAMA's common vocabulary by default, which ships with the "
                                               "LAMA data; copy it there, or pass --set candidates=full or --set "
                                               "vocab_file=PATH")
    assert not (user_folder / "cased").exists()
    code, _, err = run_kbc([*argv, "--set", "bert.candidates=full", "--out", "full"], capsys)
    assert code == 0, err


def test_the_missing_data_of_a_bear_run_names_the_folders_tried(tmp_path, monkeypatch):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    with pytest.raises(DataError) as caught:
        resolve_run_data_dir(["bear"], tmp_path / "mine")
    mine = tmp_path / "mine"
    assert str(caught.value) == (f"no BEAR data (metadata_relations.json) found (looked in {mine}/BEAR, "
                                 f"{mine}/bear/BEAR, {tmp_path}/bear/BEAR); run `kbc data download bear` (into "
                                 "./data/) or point --data-dir or KBC_BEAR at the folder holding BEAR/")


def test_e_bert_without_its_common_vocabulary_is_refused_before_any_predictor_runs(user_folder, shared_data, capsys):
    """E-BERT ranks the common vocabulary unless `vocab_file` names another: its error names only that option."""
    cased = lm_fixtures.tiny_model_dir("bert-cased", user_folder / "models")
    capsys.readouterr()
    lama = user_folder / "lama2"
    lama.mkdir()
    for name in ("TREx", "relations.jsonl"):
        (lama / name).symlink_to(shared_data / "lama" / name)
    (user_folder / "vectors.npz").write_bytes(b"")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "2", "--predictors",
                            "freq", "ebert", "--set", f"ebert.model={cased}", "--set",
                            "ebert.wikipedia2vec=vectors.npz", "--data-dir", "lama2", "--out", "run", "--quiet"],
                           capsys)
    assert (code, err) == (2, f"error: {lama}/common_vocab_cased.txt is missing: masked LMs rank LAMA's common "
                              "vocabulary by default, which ships with the LAMA data; copy it there, or pass --set "
                              "vocab_file=PATH\n")
    assert not (user_folder / "run").exists()
