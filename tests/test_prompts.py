"""Prompt sets: the staged ParaRel, AutoPrompt and LPAQA prompts, JSONL files, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.errors import ConfigError, DataError
from eval.lama import GOOGLE_RE_RELATIONS
from eval.prompts import FALLBACK, Prompt, fallback_relations, load_prompts
from eval.relations import load_relations


@pytest.fixture(scope="module")
def relations(lama_dir):
    with_data = {p.stem for folder in ("TREx", "TREx_reconstructed") for p in (lama_dir / folder).glob("*.jsonl")}
    rels = {r: rel for r, rel in load_relations(lama_dir / "relations.jsonl").items() if r in with_data}
    return {**rels, **GOOGLE_RE_RELATIONS}


def test_staged_sets(relations, lama_dir, shared_data):
    lama = load_prompts("lama", shared_data, relations)
    assert lama["P19"] == [Prompt("lama", "[X] was born in [Y] .", "lama")]
    assert lama["date_of_birth"] == [Prompt("lama", "[X] (born [Y]).", "lama")]

    pararel = load_prompts("pararel", shared_data, relations)
    assert sum(len(p) for r, p in pararel.items() if r not in fallback_relations(pararel)) == 329
    assert sorted(fallback_relations(pararel)) == ["P31", "P527", "date_of_birth", "place_of_birth",
                                                   "place_of_death"]
    assert pararel["P19"][0] == Prompt("pararel:0", "[X] was born in [Y].", "pararel")
    assert len(pararel["P19"]) == 13 and len({p.id for p in pararel["P19"]}) == 13
    assert pararel["P31"] == [Prompt("lama", relations["P31"].template, FALLBACK)]

    auto = load_prompts("autoprompt", lama_dir, relations)  # the LAMA folder works as data root too
    assert auto["P1001"] == [Prompt("autoprompt:0", "[X]vik nationwide disabilities policing within [Y].",
                                    "autoprompt")]  # trigger tokens kept as text
    assert sorted(fallback_relations(auto)) == ["date_of_birth", "place_of_birth", "place_of_death"]
    per_model = load_prompts("autoprompt:bert-base-cased", shared_data, relations)
    assert per_model["P101"][0].template == "[X]eus whateveraft popularized studying  [Y]."
    assert load_prompts("lpaqa", shared_data, ["P103"]) == {
        "P103": [Prompt("lpaqa:0", "The native language of [X] is [Y] .", "lpaqa")]}
    assert load_prompts("lpaqa:bert-base-cased", shared_data, ["P101"])["P101"][0].template == \
        "[X] works in the field of [Y] ."
    mined = load_prompts("lpaqa-mine", shared_data, ["P19", "place_of_death"])
    assert len(mined["P19"]) == 29 and mined["P19"][5] == Prompt("lpaqa-mine:5", "[X] was born at [Y] .", "lpaqa-mine")
    assert mined["place_of_death"][0].source == FALLBACK
    manual = load_prompts("lpaqa-manual", shared_data, ["P19"])["P19"]
    assert manual[0] == Prompt("lpaqa-manual:0", "[X] was born in [Y] .", "lpaqa-manual") and len(manual) == 30


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_prompt_file(tmp_path, relations, shared_data):
    path = _write(tmp_path / "mine.jsonl", [
        {"relation": "P19", "template": "[X] is a native of [Y] .", "id": "native"},
        {"relation": "P19", "template": "[Y] is where [X] was born ."},
        {"relation": "P19", "template": "[X] is a native of [Y] ."},  # duplicate template: kept once
        {"relation": "P20", "template": "[X] passed away in [Y] ."},  # not asked for: skipped
    ])
    got = load_prompts(str(path), shared_data, {r: relations[r] for r in ("P19", "P36")})
    assert got == {"P19": [Prompt("native", "[X] is a native of [Y] .", "file:mine.jsonl"),
                           Prompt("mine:1", "[Y] is where [X] was born .", "file:mine.jsonl")],
                   "P36": [Prompt("lama", relations["P36"].template, FALLBACK)]}


@pytest.mark.parametrize("rows, message", [
    ([{"relation": "P19", "template": "[X] was born ."}], r"mine.jsonl:1: template '\[X\] was born \.' lacks \[Y\]"),
    ([{"relation": "P19", "template": "ok [X] [Y] ."}, {"relation": "P19", "template": "[X] in [Y] or [Y]"}],
     r"mine.jsonl:2: .* holds \[Y\] 2 times"),
    ([{"relation": "P1999", "template": "[X] [Y]"}], r"mine.jsonl:1: unknown relation 'P1999' \(did you mean P19\?\)"),
    ([{"relation": "P19"}], r"mine.jsonl:1: missing field\(s\) template"),
    (["{not json"], r"mine.jsonl:1: malformed JSON"),
    ([{"relation": "P19", "template": "[X] a [Y]", "id": "a"}, {"relation": "P19", "template": "[X] b [Y]", "id": "a"}],
     r"mine.jsonl:2: prompt id 'a' appears twice for relation P19"),
    ([{"relation": "P19", "template": "[X] a [Y]", "id": 7}],
     r"""mine.jsonl:1: field 'id' must be a string \(write "id": "7"\), got a number"""),
    ([{"relation": "P19", "template": "[X] a [Y]"}, {"relation": "P19", "template": "[X] b [Y]", "id": " \t"}],
     r"mine.jsonl:2: field 'id' is blank: give the prompt a name or leave 'id' out"),
])
def test_prompt_file_errors_name_file_and_line(tmp_path, relations, shared_data, rows, message):
    path = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(DataError, match=message) as err:
        load_prompts(str(path), shared_data, {"P19": relations["P19"]})
    assert "\n" not in str(err.value)


def test_missing_sets_and_relations(tmp_path, relations, shared_data):
    with pytest.raises(ConfigError, match=r"unknown prompt set 'parrel' \(did you mean pararel\?\); choose from"):
        load_prompts("parrel", shared_data, ["P19"])
    with pytest.raises(DataError, match="model 'bert-huge' in .*; available: .*bert-base-cased"):
        load_prompts("autoprompt:bert-huge", shared_data, ["P19"])
    with pytest.raises(DataError, match=r"pararel prompts not found: looked for pararel/patterns"):
        load_prompts("pararel", tmp_path, relations)
    with pytest.raises(ConfigError, match=r"unknown relation 'P1999'"):
        load_prompts("pararel", shared_data, ["P1999"])


def test_only_the_gpt2_autoprompt_sets_close_with_an_end_marker(relations, shared_data):
    """Causal scoring drops a closing `</s`: exactly the GPT-2 AutoPrompt sets have one, on every template."""
    from eval.prompts import PER_MODEL, per_model_models, spoken_template

    changed: dict[str, int] = {}
    specs = ["lama", "pararel", "autoprompt", "lpaqa", "lpaqa-mine", "lpaqa-paraphrase", "lpaqa-manual"]
    specs += [f"{name}:{model}" for name in PER_MODEL for model in per_model_models(name, shared_data)]
    for spec in specs:
        for prompts in load_prompts(spec, shared_data, relations).values():
            for p in prompts:
                if p.source == FALLBACK:
                    continue
                if spoken_template(p.template) != p.template:
                    assert p.template.endswith("[Y]. </s") and spoken_template(p.template) == p.template[:-4]
                    changed[spec] = changed.get(spec, 0) + 1
    assert changed == {f"autoprompt:{m}": 41 for m in ("gpt2", "gpt2-large", "gpt2-medium", "gpt2-xl")}
