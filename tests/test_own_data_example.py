"""The worked example of docs/own-data.md: its facts, written in the LAMA layout the page describes, give the
figures the page states, each named by relation, metric and setting."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kbcompare

PAGE = Path(__file__).resolve().parents[1] / "docs" / "own-data.md"


def _example() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return " ".join(text[text.index("A worked example:"):text.index("## Prompts")].split())


def _pairs(example: str, after: str) -> list[tuple[str, str]]:
    """The `Subject-Object` pairs of the first parenthesis after `after`."""
    inside = example[example.index(after):].split("(", 1)[1].split(")", 1)[0]
    return [tuple(p.strip().split("-")) for p in inside.split(",") if "-" in p]


def _stated(example: str, start: str, end: str) -> dict[tuple[str, str], float]:
    """The figures stated between `start` and `end`: (setting, metric) -> value; those after `filtered` are the
    filtered setting's, and `filtered the same` repeats the raw ones."""
    part = example[example.index(start):example.index(end)]
    raw, _, filtered = part.partition("filtered")
    stated = {(setting, metric.lower()): float(value) for setting, chunk in (("raw", raw), ("filtered", filtered))
              for metric, value in re.findall(r"(P@1|MRR) (\d+\.\d+)", chunk)}
    if "filtered the same" in part:
        stated.update({("filtered", metric): value for (_, metric), value in list(stated.items())})
    return stated


@pytest.fixture(scope="module")
def example_run(tmp_path_factory) -> tuple[str, kbcompare.Run, Path]:
    """The page's example paragraph, a Freq run over its facts and their folder."""
    tmp_path = tmp_path_factory.mktemp("own-data")
    example = _example()
    data = tmp_path / "own"
    (data / "TREx").mkdir(parents=True)
    (data / "relations.jsonl").write_text(
        json.dumps({"relation": "P36", "template": "The capital of [X] is [Y] .", "type": "1-1"}) + "\n"
        + json.dumps({"relation": "X1", "template": "[X] likes [Y] .", "type": "N-M"}) + "\n", encoding="utf-8")
    capitals = _pairs(example, "P36 with six capitals")
    likes = _pairs(example, "with seven facts")
    assert (len(capitals), len(likes)) == (6, 7)
    (data / "TREx" / "P36.jsonl").write_text("".join(
        json.dumps({"sub_label": s, "obj_label": o, "sub_uri": f"Q{i}", "obj_uri": f"Q{100 + i}"}) + "\n"
        for i, (s, o) in enumerate(capitals, 1)), encoding="utf-8")
    (data / "TREx" / "X1.jsonl").write_text(
        "".join(json.dumps({"sub_label": s, "obj_label": o}) + "\n" for s, o in likes), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBC_CACHE", str(tmp_path / "cache"))
        run = kbcompare.run("lama", corpus="trex", predictors=["freq"], data_dir=str(data), out=str(tmp_path / "run"))
    return example, run, data


def test_the_worked_example_gives_the_figures_the_page_states(example_run):
    example, run, _ = example_run
    rows = run.summary[run.summary["scope"] == "own"]
    total = example[example.index("The Total"):]
    stated_total = {(setting, metric.lower()): float(value) for metric, raw, filtered in
                    re.findall(r"(P@1|MRR) (\d+\.\d+) \(filtered (\d+\.\d+)\)", total)
                    for setting, value in (("raw", raw), ("filtered", filtered))}
    stated_by = {"P36": _stated(example, "Freq answers P36", "It answers X1"),
                 "X1": _stated(example, "It answers X1", "MRR is a fraction"), "all": stated_total}
    for relation, stated in stated_by.items():
        assert len(stated) == 4, (relation, stated)
        for (setting, metric), value in stated.items():
            got = rows[(rows["group"] == relation) & (rows["setting"] == setting) & (rows["metric"] == metric)]["value"]
            digits = 4 if metric == "mrr" else 2
            assert round(float(got.iloc[0]), digits) == value, (relation, setting, metric)


def test_a_mean_answer_space_is_shown_unrounded(example_run):
    """Freq ranks 6 capitals for P36 and 3 drinks for X1: the table's mean is 4.5, not 4 (rounded half to even)."""
    _, run, _ = example_run
    table = (run.run_dir / "summary.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| trex | freq |"))
    assert "| answer space (mean) |" in table and row.split(" | ")[2] == "4.5"


def test_axioms_over_own_relations_name_them_as_the_page_says(example_run, tmp_path, capsys, monkeypatch):
    """The page's prefix for your own relations, in an axioms file, reaches the example's `X1` facts."""
    from cli_support import run_kbc

    _, _, data = example_run
    text = PAGE.read_text(encoding="utf-8")
    prefix = re.search(r"`(@prefix kbc: <[^>]+> \.)`", text)[1]
    assert "naming your relation `X1` as `kbc:X1`" in " ".join(text.split())
    axioms = tmp_path / "axioms.ttl"
    axioms.write_text(f"""{prefix}
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix kbcv: <urn:kbc:> .
kbc:likedBy a owl:ObjectProperty ; kbcv:template "[X] is liked by [Y] ." .
kbc:X1 owl:inverseOf kbc:likedBy .
""", encoding="utf-8")
    code, out, err = run_kbc(["kb", "infer", "--axioms", str(axioms), "--corpus", "trex", "--data-dir", str(data),
                              "--store", str(tmp_path / "store")], capsys)
    assert code == 0, err
    assert "7 distinct new facts" in out  # X1's seven facts, each inverted
