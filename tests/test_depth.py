"""`--depth`: no P@k past the list a predictor returns is written, exact ranks keep every k, and runs of other
depths are compared only on what their depth leaves unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_kbc, run_kbc_captured

from eval.errors import ConfigError
from eval.metrics import Ranked, summarize
from eval.rank_table import RankTable, curve_table, summarize_table

RELATIONS = ("P19", "P36", "P101")


@pytest.fixture(scope="module")
def depths(lama_dir, tmp_path_factory) -> Iterator[dict[int, Path]]:
    """freq (ranks its list), random (exact ranks) and kb (every object it holds) over one sample, at depth 5
    and 100."""
    root = tmp_path_factory.mktemp("depth")
    out = {}
    patch = pytest.MonkeyPatch()
    patch.setenv("KBC_CACHE", str(root / "cache"))
    for depth in (5, 100):
        out[depth] = root / f"d{depth}"
        code, _, err = run_kbc_captured(["run", "lama", "--corpus", "trex", "--relations", *RELATIONS, "--predictors",
                                         "freq", "random", "kb", "--limit", "20", "--seed", "1", "--depth", str(depth),
                                         "--data-dir", str(lama_dir), "--out", str(out[depth]), "--quiet"])
        assert code == 0, err
    yield out
    patch.undo()


def _rows(run: Path, name: str = "summary.json") -> list[dict]:
    return json.loads((run / name).read_text(encoding="utf-8"))


def _records(run: Path, predictor: str) -> list[dict]:
    return [json.loads(line) for rel in RELATIONS
            for line in (run / "predictions" / "trex" / predictor / f"{rel}.jsonl").read_text().splitlines()]


def _total(run: Path, predictor: str, metric: str, setting: str = "raw", scope: str = "own") -> dict:
    return next(r for r in _rows(run) if (r["predictor"], r["metric"], r["setting"], r["scope"], r["group"])
                == (predictor, metric, setting, scope, "all"))


def test_no_p_at_k_past_the_depth_of_a_list(depths):
    five = depths[5]
    metrics = {(r["predictor"], r["metric"]) for r in _rows(five)}
    assert sorted(m for p, m in metrics if p == "freq") == ["answer_space", "mrr", "p@1"]
    assert sorted(m for p, m in metrics if p == "random") == ["answer_space", "mrr", "p@1", "p@10"]
    assert sorted(m for p, m in metrics if p == "kb") == ["mrr", "p@1", "p@10"]  # its list is whole (open space)
    ks = {(r["predictor"], r["scope"], r["setting"]): max(c["k"] for c in _rows(five, "curves.json")
                                                          if (c["predictor"], c["scope"], c["setting"])
                                                          == (r["predictor"], r["scope"], r["setting"]))
          for r in _rows(five, "curves.json")}
    assert ks == {(p, scope, setting): 5 if p == "freq" else 100
                  for p in ("freq", "random", "kb") for scope in ("own", "shared") for setting in ("raw", "filtered")}
    md = (five / "summary.md").read_text(encoding="utf-8")
    table = md.split("## P@10 (%), shared facts")[1].split("##")[0]
    assert "| trex | random |" in table and "| trex | kb |" in table and "| trex | freq |" not in table
    assert "- freq: ranked to --depth 5 (only the answers it returns), so no P@k past k = 5" in md
    assert "ranked to --depth" not in (depths[100] / "summary.md").read_text(encoding="utf-8")


def test_exact_ranks_keep_p_at_k_past_the_depth(depths):
    """random records the gold's exact rank below its list: its P@10 at depth 5 is that of depth 100, and the
    share of exact ranks <= 10 recomputed from its records."""
    recs = _records(depths[5], "random")
    assert sum(r["rank_raw"] is None and r["rank_exact_raw"] <= 10 for r in recs) == 1  # below the list, within 10
    per_rel = [100.0 * sum(r["rank_exact_raw"] <= 10 for r in recs if r["relation"] == rel) / 20 for rel in RELATIONS]
    assert per_rel == [5.0, 0.0, 5.0]
    for setting in ("raw", "filtered"):
        five, hundred = (_total(depths[d], "random", "p@10", setting) for d in (5, 100))
        assert five["value"] == hundred["value"] == pytest.approx(10 / 3, abs=1e-12)
    curve = {d: [c["value"] for c in _rows(depths[d], "curves.json")
                 if (c["predictor"], c["scope"], c["setting"]) == ("random", "own", "raw")] for d in (5, 100)}
    assert curve[5] == curve[100] and len(curve[5]) == 100


def test_runs_of_other_depths_mix_on_p_at_1_the_same_number_at_every_depth(depths, capsys):
    code, _, err = run_kbc(["leaderboard", str(depths[100]), str(depths[5]), "--metric", "p@10"], capsys)
    assert code == 2 and "differ in --depth (5 vs 100)" in err  # past the smaller depth: refused; P@1: ranked
    for predictor in ("freq", "random"):
        for setting in ("raw", "filtered"):
            five, hundred = (_total(depths[d], predictor, "p@1", setting) for d in (5, 100))
            assert [five[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")] == \
                [hundred[k] for k in ("value", "stderr", "ci_low", "ci_high", "n_facts")]
    assert _total(depths[5], "freq", "p@1")["value"] == 10.0
    code, out, err = run_kbc(["leaderboard", str(depths[100]), str(depths[5]), "--metric", "p@1", "--format", "json"],
                             capsys)
    assert code == 0, err
    assert [(Path(r["run"]).name, r["predictor"], r["value"]) for r in json.loads(out)["rows"]] == [
        ("d100", "kb", 100.0), ("d5", "kb", 100.0), ("d100", "freq", 10.0), ("d5", "freq", 10.0),
        ("d100", "random", 0.0), ("d5", "random", 0.0)]
    code, out, err = run_kbc(["compare", str(depths[100]), "freq", "freq", "--b-run", str(depths[5])], capsys)
    assert code == 0, err
    assert "all                    60     6       0       0       54  10.00  10.00          1" in out


@pytest.mark.parametrize("metric", ["p@10", "mrr"])
def test_runs_of_other_depths_are_not_mixed_where_depth_changes_the_metric(depths, metric, capsys, tmp_path):
    five, hundred = str(depths[5]), str(depths[100])
    want = (f"error: {five} and {hundred} differ in --depth (5 vs 100) for predictors that rank only the answers they "
            f"return: their {metric} depends on it; a leaderboard needs runs of one --depth for it (P@k up to k = 5 "
            "compares)")
    for scope in ("shared", "own"):
        code, out, err = run_kbc(["leaderboard", hundred, five, "--metric", metric, "--scope", scope], capsys)
        assert (code, out, err.strip()) == (2, "", want)
    import kbcompare

    with pytest.raises(ConfigError, match=r"differ in --depth \(5 vs 100\)"):
        kbcompare.leaderboard(depths[100], depths[5], metric=metric)
    from bridge.serve.runs import Runs
    from bridge.serve.runs import leaderboard as explorer_board

    with pytest.raises(ConfigError, match=r"differ in --depth \(5 vs 100\)"):
        explorer_board(Runs([depths[100], depths[5]]), metric=metric, chosen=["d100", "d5"])
    code, _, err = run_kbc(["report", hundred, "--compare", five, "--out", str(tmp_path / "report")], capsys)
    assert code == 2 and err.startswith(f"error: {five} and {hundred} differ in --depth (5 vs 100)") \
        and "their p@10 and mrr depend on it; `kbc report --compare` needs" in err


def test_one_run_ranks_p_at_k_past_its_depth_only_where_ranks_are_exact(depths, capsys):
    code, out, err = run_kbc(["leaderboard", str(depths[5]), "--metric", "p@10", "--format", "json"], capsys)
    assert code == 0, err
    assert [(r["predictor"], r["value"]) for r in json.loads(out)["rows"]] == [
        ("kb", 100.0), ("random", pytest.approx(10 / 3, abs=1e-12))]
    code, out, err = run_kbc(["leaderboard", str(depths[5]), "--metric", "p@10"], capsys)
    assert code == 0, err
    assert (f"note: trex: {depths[5]}/freq left out: ranked to --depth 5 (P@k past it unknown), has no p@10 (raw); "
            "rank by --metric p@1 to compare it") in out


def test_p_at_k_below_the_list_counts_the_exact_rank():
    """A gold below the returned list with an exact rank of 7 is within P@10; without one it is not."""
    rows = [Ranked("P1", None, None, 7, 6), Ranked("P1", 2, 2, 2, 2), Ranked("P1", None, None), Ranked("P1", 12, 1)]
    records = [{"relation": r.relation, "rank_raw": r.rank_raw, "rank_filtered": r.rank_filtered,
                "rank_exact_raw": r.exact_raw, "rank_exact_filtered": r.exact_filtered} for r in rows]
    table = RankTable.from_records(records)
    want = summarize(rows, {"P1": None})
    assert summarize_table(table, {"P1": None}) == want
    values = {(r["setting"], r["metric"]): r["value"] for r in want if r["group"] == "P1"}
    assert (values["raw", "p@1"], values["raw", "p@10"], values["filtered", "p@1"], values["filtered", "p@10"]) == \
        (0.0, 50.0, 25.0, 75.0)
    curve = {(c["setting"], c["k"]): c["value"] for c in curve_table(table)}
    assert (curve["raw", 6], curve["raw", 7], curve["filtered", 6]) == (25.0, 50.0, 75.0)
