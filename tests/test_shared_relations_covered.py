"""Two samples that share facts of one relation and none of another: a shared leaderboard row names only the
relation its value is a mean over, and the few-shared warning counts the empty relation as 0 per relation (in the
leaderboard, `kbc compare --b-run` and the Python API alike)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from cli_support import run_kbc_captured

import kbcompare
from bridge.run.leaderboard import board

RELATIONS = ["P19", "P1412"]


@pytest.fixture(scope="module")
def samples(lama_dir, tmp_path_factory) -> dict[str, Path]:
    """Freq and random over 30 facts of each relation, seeds 1 and 2."""
    root = tmp_path_factory.mktemp("covered")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KBC_CACHE", str(root / "cache"))
        for seed in ("1", "2"):
            code, _, err = run_kbc_captured(
                [
                    "run",
                    "lama",
                    "--corpus",
                    "trex",
                    "--predictors",
                    "freq",
                    "random",
                    "--relations",
                    *RELATIONS,
                    "--limit",
                    "30",
                    "--seed",
                    seed,
                    "--bootstrap",
                    "50",
                    "--data-dir",
                    str(lama_dir),
                    "--quiet",
                    "--out",
                    str(root / seed),
                ]
            )
            assert code == 0, err
    return {seed: root / seed for seed in ("1", "2")}


def _shared(samples: dict[str, Path]) -> dict[str, int]:
    """Per relation, how many facts both samples asked."""

    def uids(run: Path, relation: str) -> set[str]:
        path = run / "predictions" / "trex" / "freq" / f"{relation}.jsonl"
        return {json.loads(line)["uid"] for line in path.read_text(encoding="utf-8").splitlines()}

    return {rel: len(uids(samples["1"], rel) & uids(samples["2"], rel)) for rel in RELATIONS}


def test_a_shared_row_names_only_the_relations_it_is_scored_over(samples):
    shared = _shared(samples)
    held = [rel for rel in RELATIONS if shared[rel]]
    assert held and len(held) < len(RELATIONS)  # the samples chosen share facts of one relation alone
    found = board([samples["1"], samples["2"]])
    assert {r["relations"] for r in found.rows} == {" ".join(held)}
    assert {r["n_facts"] for r in found.rows} == {sum(shared.values())}
    # scope own: each predictor's own facts span both relations
    assert {r["relations"] for r in board([samples["1"], samples["2"]], scope="own").rows} == {" ".join(RELATIONS)}


def test_the_few_shared_warning_counts_a_relation_sharing_nothing(samples):
    shared = _shared(samples)
    spread = f"({sum(shared.values()) / 60:.0%}; 0-{max(shared.values())} per relation)"
    found = board([samples["1"], samples["2"]])
    assert len(found.warnings) == 1 and spread in found.warnings[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = kbcompare.compare(samples["1"], "freq", "freq", b_run=samples["2"])
    assert [spread in str(w.message) for w in caught if w.category is kbcompare.FewSharedWarning] == [True]
    assert spread in frame.attrs["notes"][0]
