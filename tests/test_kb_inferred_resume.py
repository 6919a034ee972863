"""A `kb-inferred` run directory holds answers of one closure per corpus: a rerun whose relations change it is refused.

`kb-inferred` answers from the closure of the run's gold graphs, so a relation's answers depend on the other relations
the axioms name among those asked (P1376's facts give P36 more capitals through the inverse axiom). A rerun adding
such a relation would keep the earlier relations' answers of the smaller closure beside new ones of the larger: the
same command into a fresh --out scores them otherwise.
"""

from __future__ import annotations

import json

from cli_support import run_kbc


def _run(lama_dir, out, capsys, relations: list[str]) -> tuple[int, str]:
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", *relations, "--predictors",
                            "kb-inferred", "--data-dir", str(lama_dir), "--out", str(out), "--quiet"], capsys)
    return code, err


def _answers(out, relation: str) -> dict[str, list[str]]:
    path = out / "predictions" / "trex" / "kb-inferred" / f"{relation}.jsonl"
    return {r["uid"]: [a[0] for a in r["answers"]] for r in map(json.loads, path.open())}


def test_a_rerun_that_widens_the_closure_is_refused_not_mixed(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, fresh = tmp_path / "run", tmp_path / "fresh"
    code, err = _run(lama_dir, out, capsys, ["P36"])
    assert code == 0, err
    before = (out / "predictions" / "trex" / "kb-inferred" / "P36.jsonl").read_bytes()
    code, err = _run(lama_dir, fresh, capsys, ["P36", "P1376"])
    assert code == 0, err
    # the closure of both relations gives P36 answers the closure of P36 alone lacks (Germany: Bonn too)
    assert _answers(fresh, "P36") != _answers(out, "P36")
    code, err = _run(lama_dir, out, capsys, ["P36", "P1376"])
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {out}: predictor 'kb-inferred' answered trex there from the closure of the facts of P36 that the "
        "axioms name; this run's relations make it the closure of those of P1376, P36, which derives other objects: "
        "ask the relations the axioms name as before (P36), or use another --out")
    assert (out / "predictions" / "trex" / "kb-inferred" / "P36.jsonl").read_bytes() == before
    assert not (out / "predictions" / "trex" / "kb-inferred" / "P1376.jsonl").exists()


def test_a_rerun_adding_a_relation_no_axiom_names_resumes(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, err = _run(lama_dir, out, capsys, ["P36", "P1376"])
    assert code == 0, err
    before = _answers(out, "P36")
    code, err = _run(lama_dir, out, capsys, ["P36", "P1376", "P101"])
    assert code == 0, err
    assert _answers(out, "P36") == before and _answers(out, "P101")
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["trex"]["kb-inferred"]
    assert described["closure_of"] == ["P1376", "P36"]


def test_closure_change_names_other_axioms_and_an_older_record():
    from bridge.predictors.kmir import closure_change

    now = {"graphs": ["gold-trex-P36", "inferred-bbb"], "axioms": "kb/axioms.ttl sha256:new", "closure_of": ["P36"]}
    assert closure_change(None, now) is None
    assert closure_change({**now, "axioms": "/elsewhere/axioms.ttl sha256:new"}, now) is None  # the same file moved
    assert closure_change({**now, "axioms": "kb/axioms.ttl sha256:old"}, now) == (
        "with other axioms (kb/axioms.ttl sha256:old, now kb/axioms.ttl sha256:new); use another --out")
    older = {"graphs": ["gold-trex-P36", "inferred-aaa"], "axioms": "kb/axioms.ttl sha256:new"}
    assert closure_change(older, now) == "from a closure of other relations (inferred-aaa, now inferred-bbb); use " \
        "another --out"
    assert closure_change({**older, "graphs": now["graphs"]}, now) is None
    assert closure_change(now, {"graphs": ["gold-trex-P36"]}) is None  # `kb`: no closure
