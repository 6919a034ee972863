"""Prompt sets: several templates per relation, for paraphrase robustness and optimized prompts.

`load_prompts(spec, data_root, relations)` gives each relation its prompts, `Prompt(id, template,
source)`, in file order with exact duplicate templates kept once. Sets (`spec`):
- `lama`: the relation's own template (`relations.jsonl`; Google-RE: LAMA's three templates).
- `pararel`: ParaRel's patterns (`pararel/patterns/<P>.jsonl`, 39 T-REx relations).
- `autoprompt`: AutoPrompt's prompts for BERT-base (OptiPrompt's `AutoPrompt_relations.jsonl`);
  `autoprompt:MODEL` the per-model prompts (`prompts/ncarraz_per_model/autoprompt_prompts/`).
  Their trigger tokens are kept as text (`[X]vik nationwide ... [Y].`), as published: tokens a search chose
  for MODEL's tokenizer, decoded (with leftovers such as the GPT-2 sets' closing " </s"), so a run asks
  them of MODEL alone (`searched_for`; `bridge.run.prompt_models`). Every template of the four GPT-2 sets
  (`gpt2`, `gpt2-medium`, `gpt2-large`, `gpt2-xl`; 41 each) ends in `[Y]. </s`, an end-of-sequence marker
  written as text, and no other staged set has one: a causal LM scores the sentence up to its last word
  (`spoken_template`), as the search read nothing after [Y].
- `lpaqa`: LPAQA's top-1 prompts for BERT-base (`LPAQA_relations.jsonl`); `lpaqa:MODEL` per model;
  `lpaqa-mine`, `lpaqa-paraphrase`, `lpaqa-manual`: LPAQA's full mined / paraphrased / manual sets.
- a JSONL file: `{"relation": ..., "template": ..., "id": ...}` rows (`id` optional, a non-blank string).
A relation the set has no prompt for (Google-RE in every T-REx set; P31 and P527 in ParaRel)
gets its LAMA template, with source `lama-fallback`, so every relation is asked at least once.

`data_root` may be the folder that holds `lama/`, `pararel/` and `prompts/` (the shared data
folder) or the LAMA folder inside it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from eval.errors import ConfigError, DataError
from eval.jsonl import json_type, read_jsonl, read_text, req_str
from eval.labels import nfc
from eval.relations import check_template, load_relations
from eval.types import OBJECT_SLOT, SUBJECT_SLOT, Relation

FALLBACK = "lama-fallback"
METAINFO = Path("prompts") / "optiprompt_relation_metainfo"
PER_MODEL = {
    "autoprompt": (Path("prompts") / "ncarraz_per_model" / "autoprompt_prompts", "{}_autoprompt_seed_0.jsonl"),
    "lpaqa": (Path("prompts") / "ncarraz_per_model" / "lpaqa_prompts", "top_1_lpaqa_{}.jsonl"),
}
ONE_FILE = {"autoprompt": METAINFO / "AutoPrompt_relations.jsonl", "lpaqa": METAINFO / "LPAQA_relations.jsonl"}
PER_RELATION = {  # set -> (folder, file suffix, template field; None: one template per text line)
    "pararel": (Path("pararel") / "patterns", ".jsonl", "pattern"),
    "lpaqa-mine": (Path("prompts") / "lpaqa" / "mine", ".jsonl", "template"),
    "lpaqa-paraphrase": (Path("prompts") / "lpaqa" / "paraphrase", ".jsonl", "template"),
    "lpaqa-manual": (Path("prompts") / "lpaqa" / "manual_paraphrase", ".txt", None),
}
# per-model sets of decoded trigger tokens: another tokenizer cuts their text into other tokens than the ones searched
SEARCHED_PER_MODEL = ("autoprompt",)
SETS = ("lama", "pararel", "autoprompt", "autoprompt:MODEL", "lpaqa", "lpaqa:MODEL", "lpaqa-mine", "lpaqa-paraphrase",
        "lpaqa-manual")


@dataclass(frozen=True, slots=True)
class Prompt:
    """One way to ask a relation: `template` holds [X] and [Y]; `id` is unique within the relation."""

    id: str
    template: str
    source: str


# an end-of-sequence marker written as text closing a template (`</s>`, or `</s` as the GPT-2 AutoPrompt sets have it)
END_MARKER = re.compile(r"\s*</s>?\s*$")


def spoken_template(template: str) -> str:
    """`template` without an end-of-sequence marker written as text after both slots (`[Y]. </s` -> `[Y].`).

    The marker is no words of the sentence: AutoPrompt's search read the slot alone, so nothing after [Y] was chosen,
    and a causal LM scoring the filled sentence whole would score `</s` as text (GPT-2: ` <`, `/`, `s`). Templates
    without one are returned as they are.
    """
    end = max(template.rfind(OBJECT_SLOT), template.rfind(SUBJECT_SLOT))
    if end < 0:
        return template
    end += len(OBJECT_SLOT)
    return template[:end] + END_MARKER.sub("", template[end:])


def searched_for(spec: str) -> str | None:
    """The model a per-model set's trigger tokens were searched for (`autoprompt:MODEL`); None for other sets."""
    name, _, model = spec.partition(":")
    return model if name in SEARCHED_PER_MODEL and model else None


def per_model_file(name: str, model: str, data_root: Path) -> Path:
    """The file of per-model set `name` for `model` (where the set's folder is not found: its path in one)."""
    folder_rel, pattern = PER_MODEL[name]
    return (_find(data_root, folder_rel) or folder_rel) / pattern.format(model)


def per_model_models(name: str, data_root: Path) -> list[str]:
    """The models per-model set `name` (`autoprompt`, `lpaqa`) has prompts for; none where it is not found."""
    folder_rel, pattern = PER_MODEL[name]
    folder = _find(data_root, folder_rel)
    if folder is None:
        return []
    before, after = pattern.split("{}")
    return sorted(p.name.removeprefix(before).removesuffix(after) for p in folder.glob(pattern.format("*")))


def check_prompt_template(template: str, where: str) -> None:
    """Exactly one [X] and one [Y] (`eval.relations.check_template`): a second [Y] would be a second mask."""
    check_template(template, where)


def _bases(data_root: Path) -> list[Path]:
    root = Path(data_root).expanduser()
    return [root, root.parent, root / "data"]


def _find(data_root: Path, rel: Path) -> Path | None:
    for base in _bases(data_root):
        if (base / rel).exists():
            return base / rel
    return None


def _lama_relations(data_root: Path) -> dict[str, Relation]:
    """T-REx relations from `relations.jsonl` (where found) and the Google-RE relations."""
    from eval.lama import GOOGLE_RE_RELATIONS

    out: dict[str, Relation] = {}
    for base in _bases(data_root):
        for cand in (base, base / "lama"):
            if (cand / "relations.jsonl").is_file():
                out.update(load_relations(cand / "relations.jsonl"))
                return {**out, **GOOGLE_RE_RELATIONS}
    return dict(GOOGLE_RE_RELATIONS)


def _wanted(relations: Mapping[str, Relation] | Iterable[str], known: dict[str, Relation]) -> dict[str, Relation]:
    if isinstance(relations, Mapping):
        return dict(relations)
    out: dict[str, Relation] = {}
    for rel in relations:
        if rel not in known:
            raise ConfigError(_unknown(rel, known, "relation"))
        out[rel] = known[rel]
    return out


def _unknown(value: str, choices: Iterable[str], what: str) -> str:
    choices = list(choices)
    close = difflib.get_close_matches(value, choices, n=1)
    return f"unknown {what} {value!r}" + (f" (did you mean {close[0]}?)" if close else "")


def _add(out: dict[str, list[Prompt]], rel: str, prompt: Prompt, where: str) -> None:
    check_prompt_template(prompt.template, where)
    have = out.setdefault(rel, [])
    if any(p.template == prompt.template for p in have):
        return
    if any(p.id == prompt.id for p in have):
        raise DataError(f"{where}: prompt id {prompt.id!r} appears twice for relation {rel}")
    have.append(prompt)


def _read_rows(path: Path, source: str, wanted: Mapping[str, Relation], known: Mapping[str, Relation],
               id_prefix: str) -> dict[str, list[Prompt]]:
    """A JSONL file of {relation, template, id?} rows; rows of relations not wanted are skipped."""
    out: dict[str, list[Prompt]] = {}
    counts: dict[str, int] = {}
    for lineno, row in read_jsonl(path, required=("relation", "template")):
        where = f"{path}:{lineno}"
        rel = req_str(row, "relation", where)
        template = nfc(req_str(row, "template", where))  # in NFC, as relations.jsonl's templates
        if rel not in known and rel not in wanted:
            raise DataError(f"{where}: " + _unknown(rel, set(known) | set(wanted), "relation"))
        if rel not in wanted:
            continue
        raw_id = _prompt_id(row, where)
        n = counts.get(rel, 0)
        counts[rel] = n + 1
        pid = raw_id or f"{id_prefix}:{n}"
        _add(out, rel, Prompt(pid, template, source), where)
    return out


def _prompt_id(row: dict, where: str) -> str | None:
    """The row's own prompt id (None: absent, null or empty); ids end query uids, so a number or a blank id is
    refused rather than read as another id than the one written."""
    value = row.get("id")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        hint = f' (write "id": "{value}")' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        raise DataError(f"{where}: field 'id' must be a string{hint}, got {json_type(value)}")
    if not value.strip():
        raise DataError(f"{where}: field 'id' is blank: give the prompt a name or leave 'id' out")
    return value


def _read_per_relation(folder: Path, suffix: str, field: str | None, source: str,
                       wanted: Mapping[str, Relation]) -> dict[str, list[Prompt]]:
    out: dict[str, list[Prompt]] = {}
    for rel in wanted:
        path = folder / f"{rel}{suffix}"
        if not path.is_file():
            continue
        if field is None:
            lines = _text_lines(path)
        else:
            lines = [(lineno, req_str(row, field, f"{path}:{lineno}"))
                     for lineno, row in read_jsonl(path, required=(field,))]
        for n, (lineno, template) in enumerate(lines):
            _add(out, rel, Prompt(f"{source}:{n}", template, source), f"{path}:{lineno}")
    return out


def _text_lines(path: Path) -> list[tuple[int, str]]:
    text = read_text(path, str(path))
    lines = [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise DataError(f"{path}: file is empty")
    return lines


def _need(data_root: Path, rel: Path, what: str) -> Path:
    found = _find(data_root, rel)
    if found is None:
        raise DataError(f"{what} not found: looked for {rel} in {Path(data_root).expanduser()} and its parent "
                        "(point the data folder at the one holding lama/, pararel/ and prompts/)")
    return found


def load_prompts(spec: str, data_root: Path, relations: Mapping[str, Relation] | Iterable[str],
                 file_name: str | None = None) -> dict[str, list[Prompt]]:
    """Each wanted relation's prompts from set `spec` (see the module docstring), LAMA's where the set has none.

    `relations`: a corpus's `relations` mapping, or relation ids (looked up in `relations.jsonl`
    and the Google-RE relations). Bad templates, unknown relations and missing sets are one-line
    `DataError`s / `ConfigError`s naming the file and line. `file_name`: the name a prompt file's rows
    without an id take their ids from (`<stem>:<n>`), its own unless given (what another name would give).
    """
    data_root = Path(data_root)
    known = _lama_relations(data_root)
    wanted = _wanted(relations, known)
    name, _, model = spec.partition(":")
    if spec == "lama":
        found: dict[str, list[Prompt]] = {}
    elif name in PER_MODEL and model:
        folder_rel, pattern = PER_MODEL[name]
        folder = _need(data_root, folder_rel, f"{name} per-model prompts")
        path = folder / pattern.format(model)
        if not path.is_file():
            models = per_model_models(name, data_root)
            raise DataError(f"no {name} prompts for model {model!r} in {folder}; available: {', '.join(models)}")
        found = _read_rows(path, spec, wanted, known, spec)
    elif spec in ONE_FILE:
        path = _need(data_root, ONE_FILE[spec], f"{spec} prompts")
        found = _read_rows(path, spec, wanted, known, spec)
    elif spec in PER_RELATION:
        folder_rel, suffix, field = PER_RELATION[spec]
        folder = _need(data_root, folder_rel, f"{spec} prompts")
        found = _read_per_relation(folder, suffix, field, spec, wanted)
    else:
        path = Path(spec).expanduser()
        if spec.strip() and not path.exists() and (path.suffix or len(path.parts) > 1):
            raise ConfigError(f"prompt file {path} not found (--prompts takes a set's name or a JSONL file)")
        if not spec.strip() or not path.exists():
            raise ConfigError(_unknown(spec, [s for s in SETS if ":" not in s], "prompt set")
                              + f"; choose from {', '.join(SETS)}, or give a JSONL file")
        found = _read_rows(path, f"file:{path.name}", wanted, known, Path(file_name or path.name).stem)
    out: dict[str, list[Prompt]] = {}
    for rel, relation in wanted.items():
        prompts = found.get(rel)
        if prompts:
            out[rel] = prompts
        else:
            source = "lama" if spec == "lama" else FALLBACK
            out[rel] = [Prompt("lama", relation.template, source)]
    return out


def fallback_relations(prompts: Mapping[str, list[Prompt]]) -> list[str]:
    """Relations that got their LAMA template because the set has none for them."""
    return [rel for rel, ps in prompts.items() if any(p.source == FALLBACK for p in ps)]
