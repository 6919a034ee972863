"""`kbc data stats`: a BEAR folder read without `--corpus bear` says which flag reads it; counts in words."""

from __future__ import annotations

from cli_support import run_kbc


def test_bear_folder_without_corpus_names_the_flag(shared_data, monkeypatch, capsys):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    bear = shared_data / "bear"
    code, _, err = run_kbc(["data", "stats", "--data-dir", str(bear)], capsys)
    assert (code, err) == (2, f"error: {bear} holds no LAMA data (no relations.jsonl); it holds BEAR data: add "
                              "--corpus bear\n")
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(bear), "--corpus", "bear"], capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("# bear: 7731 facts, 60 relations, version ")


def test_one_relation_is_singular(lama_dir, capsys):
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(lama_dir), "--corpus", "squad"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "# squad: 305 facts, 1 relation, version 4fba0fb977f04a82"


def test_bear_summary_is_headed_bear(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "bear", "--relations", "P19", "--predictors", "freq",
                            "--limit", "5", "--data-dir", str(shared_data / "bear"), "--out", str(out), "--quiet"],
                           capsys)
    assert code == 0, err
    assert (out / "summary.md").read_text().splitlines()[0] == "# BEAR probe"


SPLIT_NOTE = (
    "seeded split train/dev/test 8:1:1 (seed 0) of all 16 relations: the 1120 test sentences are the ones asked "
    "(--relations and --limit narrow only these); the other 10080, of all 16 relations whatever --relations says, "
    "train and select the fine-tuned models")


def test_fewrel_lists_each_relation_with_its_split(shared_data, capsys):
    code, out, err = run_kbc(["data", "stats", "--data-dir", str(shared_data / "fewrel"), "--corpus", "fewrel"],
                             capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == ("fewrel: 16 relations, read 11200: 8960 train, 1120 dev, 1120 test, 0 dropped; asked: 1120 "
                        "of the test part's 1120")
    assert lines[2].endswith("val_wiki.json: read 11200: 8960 train, 1120 dev, 1120 test, 0 dropped; " + SPLIT_NOTE)
    assert len(lines) == 3 + 16
    assert lines[3] == "  fewrel/P25 mother: read 700: 560 train, 70 dev, 70 test, 0 dropped"
    assert lines[-1] == "  fewrel/P2094 competition class: read 700: 560 train, 70 dev, 70 test, 0 dropped"


def _own_lama(root, line: str):
    """A LAMA-layout folder of one relation X1 whose data file holds `line`, with a BEAR copy beside it."""
    (root / "lama" / "TREx").mkdir(parents=True)
    (root / "lama" / "relations.jsonl").write_text('{"relation": "X1", "template": "[X] likes [Y] ."}\n')
    (root / "lama" / "TREx" / "X1.jsonl").write_text(line)
    (root / "bear" / "BEAR").mkdir(parents=True)
    (root / "bear" / "BEAR" / "metadata_relations.json").write_text('{"X1": {"templates": ["[X] likes [Y]."]}}')
    return root / "lama"


def test_a_malformed_file_keeps_its_own_fix_not_a_corpus_hint(tmp_path, monkeypatch, capsys):
    """A data file with classic Mac line ends was told "it holds BEAR data: add --corpus bear" in place of its fix
    (save the file with LF line ends), because a BEAR copy lay beside the folder."""
    monkeypatch.delenv("KBC_BEAR", raising=False)
    lama = _own_lama(tmp_path, '{"sub_label": "a", "obj_label": "b"}\r{"sub_label": "c", "obj_label": "d"}\r')
    code, _, err = run_kbc(["data", "stats", "--data-dir", str(lama), "--corpus", "trex"], capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: {lama / 'TREx' / 'X1.jsonl'}:1: malformed JSON: lines end in a "
                                               "carriage return alone; save the file with LF (or CRLF) line ends")


def test_a_bear_copy_beside_the_folder_is_not_said_to_be_in_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KBC_BEAR", raising=False)
    lama = _own_lama(tmp_path, '{"sub_label": "a", "obj_label": "b"}\n')
    code, _, err = run_kbc(["data", "stats", "--data-dir", str(lama)], capsys)
    assert code == 2 and "holds BEAR data" not in err and "--corpus was not given" in err, err
