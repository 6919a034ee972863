"""`kb` and `kb-inferred` answer from the gold graphs, every answer equally true: a gold among them ranks first."""

from __future__ import annotations

import json

from cli_support import run_kbc

from bridge.predictors.registry import ENTRIES
from eval.types import Entity
from kb.kmir_answer import KmirKB
from kb.store import GraphStore


def _p_at_1(out, predictor: str, relation: str) -> float:
    rows = json.loads((out / "summary.json").read_text())
    return next(r["value"] for r in rows if (r["predictor"], r["scope"], r["group"], r["metric"])
                == (predictor, "own", relation, "p@1"))


def test_kb_answers_share_their_ties_like_gold(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, store = tmp_path / "run", tmp_path / "store"
    argv = ["run", "lama", "--corpus", "trex", "--relations", "P1376", "P527", "--limit", "20", "--predictors",
            "gold", "kb", "kb-inferred", "--store", str(store), "--data-dir", str(lama_dir), "--out", str(out),
            "--quiet"]
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    graphs = config["predictor_configs"]["trex"]["kb"]["graphs"]
    assert config["predictor_specs"]["kb"]["ties"] == "shared"
    label_order = {}
    with GraphStore.open(store) as st:
        kb = KmirKB(st, graphs)
        for relation in ("P1376", "P527"):
            records = [json.loads(line) for line in (out / "predictions/trex/kb" / f"{relation}.jsonl").open()]
            hits = first = 0
            for r in records:  # the store's own answers: all held, so any gold among them is a hit at 1
                labels = sorted(label for _, label in kb.objects(Entity(r["subject"], r["subject_id"]), relation))
                hits += r["gold"] in labels
                first += bool(labels) and labels[0] == r["gold"]
            label_order[relation] = 100 * first / len(records)
            assert len(records) == 20 and 100 * hits / len(records) == 100.0
            for name in ("gold", "kb", "kb-inferred"):
                assert _p_at_1(out, name, relation) == 100.0
    assert label_order == {"P1376": 90.0, "P527": 65.0}  # the gold behind an equal by label order: no longer
    # records of kb before its ties were shared: a rerun into their directory is refused, never mixed
    config["predictor_specs"]["kb"].pop("ties")
    config["predictor_specs"]["kb"].pop("labels")  # recorded since (tests/test_kb_labels.py)
    config["predictor_specs"]["kb"].pop("answers")  # recorded since (tests/test_kb_tie_depth.py)
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(argv, capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {out}: predictor 'kb' was run with answers not recorded, now every held object; labels not "
        "recorded, now relation; ties not recorded, now shared; give it another name (NAME=SPEC) or use another --out")


def test_kb_is_described_for_every_experiment_that_takes_it():
    assert ENTRIES["kb"][1] == (
        "The gold graphs by lookup: a subject's objects (score 1, ties shared), a question's choice")
