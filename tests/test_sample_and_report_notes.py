"""A run's summary.md and report say when their scores are over a `--limit` sample, and a run that changes the
summaries its own report was made from says the report no longer shows them."""

from cli_support import run_kbc


def test_sample_notes_and_a_stale_report(tmp_path, lama_dir, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"

    def run(*relations):
        return run_kbc(["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors", "freq",
                        "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--limit", "50", "--seed", "3",
                        "--bootstrap", "0"], capsys)

    assert run("P19")[0] == 0
    note = ("Sample: at most 50 facts per relation, drawn with seed 3 (`--limit 50 --seed 3`), not every fact of the "
            "data.")
    assert f"- {note}" in (out / "summary.md").read_text().splitlines()
    assert run_kbc(["report", str(out)], capsys)[0] == 0
    assert note in (out / "report" / "report.md").read_text().splitlines()
    stale = (f"{out / 'report'} was made from earlier summaries and does not show these; run `kbc report {out}` to "
             "remake it")
    code, _, err = run("P19")  # nothing new: the report still shows its summaries
    assert (code, stale in err) == (0, False)
    code, _, err = run("P19", "P36")  # a relation added: the report lacks it
    assert (code, [line for line in err.splitlines() if "report" in line]) == (0, [stale])
    assert run_kbc(["report", str(out)], capsys)[0] == 0
    assert stale not in run("P19", "P36")[2]
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "freq",
                            "--data-dir", str(lama_dir), "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0
    assert ("- Samples: the facts asked by the run's attempts with `--limit 50 --seed 3`, no `--limit` (every fact), "
            "together (each relation's union of them).") in (out / "summary.md").read_text().splitlines()
