"""`kb` and `kb-inferred` name an entity as the asked relation's own facts do, whatever else the run asks.

T-REx names Q1116 "Province of Antwerp" as an object of P1376 and "Antwerp" as a subject of P36: with P36
asked beside P1376, the KB's right answer to "Antwerp is the capital of [MASK]" must still be the gold.
"""

from __future__ import annotations

import json

from cli_support import run_kbc

ANTWERP = "Q12892"  # the city: "Antwerp is the capital of" Q1116


def _p_at_1(out, predictor: str, relation: str) -> float:
    rows = json.loads((out / "summary.json").read_text())
    return next(r["value"] for r in rows if (r["predictor"], r["scope"], r["setting"], r["group"], r["metric"])
                == (predictor, "own", "raw", relation, "p@1"))


def _antwerp(out, predictor: str) -> dict:
    records = [json.loads(line) for line in (out / "predictions/trex" / predictor / "P1376.jsonl").open()]
    return next(r for r in records if r["subject_id"] == ANTWERP)


def test_kb_answers_carry_the_relation_s_label_and_id(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    store = tmp_path / "store"
    outs = {}
    for relations in (["P1376"], ["P1376", "P36"]):
        out = outs[len(relations)] = tmp_path / "-".join(relations)
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors", "kb",
                                "kb-inferred", "gold", "--store", str(store), "--data-dir", str(lama_dir), "--out",
                                str(out), "--quiet"], capsys)
        assert code == 0, err
        for predictor in ("kb", "kb-inferred", "gold"):
            assert _p_at_1(out, predictor, "P1376") == 100.0
        for predictor in ("kb", "kb-inferred"):
            record = _antwerp(out, predictor)
            assert (record["gold"], record["gold_id"], record["rank_raw"]) == ("Province of Antwerp", "Q1116", 1)
            assert record["answers"] == [["Province of Antwerp", 1.0, "Q1116"]]
    assert _p_at_1(outs[2], "kb", "P36") == 100.0
    assert _antwerp(outs[2], "kb")["answers"] == _antwerp(outs[2], "gold")["answers"]
    # the explorer asks as the run does: "Antwerp" names the city in P1376 and the province in P36
    import kbcompare

    with kbcompare.Sides(["kb"], relations=["P1376", "P36"], data_dir=str(lama_dir), store=str(store)) as sides:
        for relation, gold in (("P1376", ["Province of Antwerp", "Q1116"]), ("P36", ["Antwerp", "Q12892"])):
            column = sides.ask("Antwerp", relation).side("kb")
            assert [[a["label"], a["id"]] for a in column["answers"]] == [gold]
            assert column["gold_rank"] == {"rank": 1, "exact": False, "of": 1}
    # records of kb before its answers took the relation's labels: a rerun into their directory is refused
    out = outs[1]
    config = json.loads((out / "config.json").read_text())
    assert config["predictor_specs"]["kb"]["labels"] == "relation"
    config["predictor_specs"]["kb"].pop("labels")
    (out / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P1376", "--predictors", "kb",
                            "--store", str(store), "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {out}: predictor 'kb' has answers there from an earlier kbc version, which named an entity by the "
        "smaller of its labels in every relation's graph, so an entity another relation names otherwise could miss "
        "its gold; use another --out to score it by the labels of each relation's own facts")
