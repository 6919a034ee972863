"""The explorer answers from a closure of more relations than it serves only where the facts of those other relations
are the data's: P1376's facts give P36 derived capitals, so a closure of an edited P1376 must not answer P36."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_support import run_kbc


def _data(lama_dir: Path, dest: Path, edit: bool = False) -> Path:
    """relations.jsonl, T-REx P36 and P1376; with `edit`, P1376's first fact (Edmonton, capital of Alberta) names
    Germany instead."""
    (dest / "TREx").mkdir(parents=True)
    shutil.copy(lama_dir / "relations.jsonl", dest / "relations.jsonl")
    for rel in ("P36", "P1376"):
        lines = (lama_dir / "TREx_reconstructed" / f"{rel}.jsonl").read_text(encoding="utf-8").splitlines(True)
        if edit and rel == "P1376":
            row = json.loads(lines[0])
            assert (row["sub_label"], row["obj_label"]) == ("Edmonton", "Alberta")
            lines[0] = json.dumps({**row, "obj_uri": "Q183", "obj_label": "Germany"}) + "\n"
        (dest / "TREx" / f"{rel}.jsonl").write_text("".join(lines), encoding="utf-8")
    return dest


def test_a_wider_closure_of_other_facts_does_not_answer(lama_dir, tmp_path, capsys, monkeypatch):
    from bridge.serve.explorer import Explorer, ExplorerConfig
    from bridge.serve.sides import Ask, answer

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data, edited = _data(lama_dir, tmp_path / "data"), _data(lama_dir, tmp_path / "edited", edit=True)
    store = tmp_path / "store"

    def germany() -> dict:
        explorer = Explorer.start(ExplorerConfig(data_dir=str(data), relations=["P36"], store=str(store),
                                                 cache_dir=tmp_path / "cache"))
        try:
            body = explorer.call(answer, explorer, Ask(subject="Germany", relation="P36", k=10))
        finally:
            explorer.close()
        return next(c for c in body["columns"] if c["name"] == "inferred graph")

    for where in (data, edited):  # the closure of the whole corpus, last of the edited data
        code, _, err = run_kbc(["kb", "infer", "--data-dir", str(where), "--store", str(store)], capsys)
        assert code == 0, err
        column = germany()
        if where == data:
            assert column["status"] == "ok" and {a["label"] for a in column["answers"]} == {"Bonn"}
    # Edmonton is Alberta's capital in the data served: no "capital of Germany: Edmonton"
    assert column["status"] == "partial" and column["answers"] == []
    assert column["message"] == ("the inferred graph was computed from other facts of P1376 than the data holds (the "
                                 "data changed since it was computed); build it for this corpus: kbc kb infer "
                                 f"--corpus trex --data-dir {data} --store {store}")
