"""`kbc compare` of a `--limit` run says which sample its counts are over, so they are never read as every fact's."""

import json

from cli_support import run_kbc


def test_compare_of_a_sample_says_the_sample(tmp_path, lama_dir, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, other = tmp_path / "run", tmp_path / "other"
    for where, seed in ((out, "3"), (other, "4")):
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--predictors",
                                "freq", "random", "--limit", "7", "--seed", seed, "--bootstrap", "0", "--data-dir",
                                str(lama_dir), "--quiet", "--out", str(where)], capsys)
        assert code == 0, err
    sample = ("Sample: at most 7 facts per relation, drawn with seed 3 (`--limit 7 --seed 3`), not every fact of "
              "the data.")
    code, text, err = run_kbc(["compare", str(out), "freq", "random"], capsys)
    assert code == 0, err
    assert text.splitlines()[1] == sample
    code, text, err = run_kbc(["compare", str(out), "freq", "random", "--json"], capsys)
    assert code == 0 and json.loads(text)["samples"] == {str(out): sample}
    code, text, err = run_kbc(["compare", str(out), "freq", "random", "--b-run", str(other)], capsys)
    assert code == 0 and f"{out}: {sample}" in text.splitlines()
    assert f"{other}: {sample.replace('seed 3', 'seed 4').replace('--seed 3', '--seed 4')}" in text.splitlines()
