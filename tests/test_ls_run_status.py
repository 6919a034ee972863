"""`kbc ls RUN` from another terminal: where a run directory stands, never a model folder's error."""

import json

from cli_support import run_kbc


def _freq_run(tmp_path, lama_dir, capsys, monkeypatch):
    """A finished Freq run of 9 facts of P19 and P36 each."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "P36", "--predictors", "freq",
                            "--limit", "9", "--bootstrap", "0", "--data-dir", str(lama_dir), "--quiet", "--out",
                            str(out)], capsys)
    assert code == 0, err
    return out


def test_ls_of_a_run_directory_says_its_records_and_how_it_ended(tmp_path, lama_dir, capsys, monkeypatch):
    out = _freq_run(tmp_path, lama_dir, capsys, monkeypatch)
    code, text, err = run_kbc(["ls", str(out)], capsys)
    finished = json.loads((out / "config.json").read_text())["runs"][-1]["finished"]
    assert (code, err) == (0, "")
    assert text.splitlines() == [f"{out}: lama, 1 attempt(s); last attempt finished {finished}",
                                 "  sample: --limit 9 --seed 0",
                                 "  trex / freq: 18 records; 2 of 2 relations recorded whole"]
    # an attempt killed mid-write: its torn last line is not counted, and the relation is under way
    config = json.loads((out / "config.json").read_text())
    del config["runs"][-1]["finished"]
    config["runs"][-1]["done"] = {}
    (out / "config.json").write_text(json.dumps(config))
    path = out / "predictions/trex/freq/P36.jsonl"
    path.write_bytes(path.read_bytes()[:-40])
    code, text, err = run_kbc(["ls", str(out)], capsys)
    assert code == 0 and text.splitlines()[2:] == ["  trex / freq: 17 records; 0 of 2 relations recorded whole",
                                                   "    under way: P19 9, P36 8"]
    assert "no end recorded" in text.splitlines()[0]


def test_ls_json_of_a_run_directory_is_json(tmp_path, lama_dir, capsys, monkeypatch):
    """`--json` gives a run directory's standing as JSON, as it gives a predictor's options: the same counts."""
    out = _freq_run(tmp_path, lama_dir, capsys, monkeypatch)
    code, text, err = run_kbc(["ls", str(out), "--json"], capsys)
    assert (code, err) == (0, "")
    body = json.loads(text)
    finished = json.loads((out / "config.json").read_text())["runs"][-1]["finished"]
    assert body["experiment"] == "lama" and body["attempts"] == 1 and body["state"] == "finished"
    assert body["finished"] == finished and body["sample"] == {"limit": 9, "seed": 0}
    assert body["predictors"] == [{"corpus": "trex", "predictor": "freq", "records": 18, "relations": 2,
                                   "relations_whole": 2, "under_way": {}}]
