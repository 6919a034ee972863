"""LAMA-UHN: the string-match filter against E-BERT Table 3, the person-name filter with a tiny
BERT, `kbc data uhn`, and the cached `trex-uhn` / `google_re-uhn` corpora."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from lm_fixtures import build_model, tokenizer_for

from eval.corpora import load_corpus
from eval.errors import ConfigError
from eval.types import Entity, Fact
from eval.uhn import (
    PLACE_NOUNS,
    ScorerNameRanker,
    deletion_rates,
    filter_facts,
    name_prompt,
    person_name_ranks,
    uhn_data_dir,
)

# E-BERT Table 3 (string match filter, "% del"), and the facts behind each figure in the staged data
TABLE3 = {"P176": 81, "P138": 75, "P1001": 73, "P279": 51, "P31": 39, "P178": 38, "P276": 35, "P127": 34,
          "P361": 32, "P36": 24, "P131": 20, "P527": 18, "P159": 13}
COUNTS = {"P176": (791, 982), "P138": (485, 645), "P1001": (512, 701), "P279": (487, 964), "P31": (358, 922),
          "P178": (226, 592), "P276": (334, 959), "P127": (236, 687), "P361": (299, 932), "P36": (169, 703),
          "P131": (174, 881), "P527": (172, 976), "P159": (124, 967)}
RIGGED = ("Paris", "France", "English")  # the tiny model's top 3 for every prompt


def _fact(uid: str, rel: str, sub: str, obj: str, corpus: str = "trex") -> Fact:
    return Fact(uid, corpus, rel, Entity(sub), Entity(obj))


def test_string_filter_reproduces_ebert_table3(trex):
    facts = trex.facts
    deletions = {rel: d.to_dict() for rel, d in filter_facts(facts, ("string",)).deletions.items()}
    rates = deletion_rates(deletions)
    assert {rel: round(rates[rel]) for rel in TABLE3} == TABLE3
    assert {rel: (deletions[rel]["deleted_string"], deletions[rel]["n"]) for rel in COUNTS} == COUNTS
    assert sum(d["deleted_string"] for d in deletions.values()) == 4743


class FakeRanker:
    """A NameRanker with fixed top lists per name token."""

    mask, uncased, fingerprint = "[MASK]", False, "fake"

    def __init__(self, tops: dict[str, list[str]]) -> None:
        self.tops = tops
        self.asked: list[str] = []

    def top(self, texts, k, on_batch=None):
        self.asked += list(texts)
        return [self.tops.get(t.split(" is a common name")[0], ["x", "y", "z"])[:k] for t in texts]


def test_name_filter_rules_on_hand_made_facts():
    facts = [
        _fact("a", "P103", "Tommy Nilsson", "Swedish"),  # (-,1): the last name gives it away
        _fact("b", "P27", "Harumi Inoue", "Japan"),  # (1,-)
        _fact("c", "P27", "Jean Dupont", "Belgium"),  # France is guessed, Belgium is the gold: kept
        _fact("d", "P101", "Tommy Nilsson", "Swedish"),  # not a person relation: never asked
        _fact("e", "P19", "Paris Hilton", "Paris"),  # string match first: the name filter never sees it
        _fact("f", "place_of_birth", "Jan Jacob Kieft", "Amsterdam", "google_re"),  # (2,-,-)
    ]
    ranker = FakeRanker({"Nilsson": ["Swedish", "Danish", "German"], "Harumi": ["Japan", "China", "Korea"],
                         "Jean": ["France", "Canada", "Belgian"], "Jan": ["Rotterdam", "Amsterdam", "Prague"],
                         "Tommy": ["English", "x", "y"]})
    assert person_name_ranks(facts[:4], ranker) == {"a": (None, 1), "b": (1, None), "c": (None, None)}
    out = filter_facts(facts, ("string", "name"), ranker)
    assert [f.uid for f in out.kept] == ["c", "d"]
    assert out.name_ranks == {"a": (None, 1), "b": (1, None), "f": (2, None, None)}
    counts = {rel: (d.n, d.deleted_string, d.deleted_name) for rel, d in out.deletions.items()}
    assert counts == {"P103": (1, 0, 1), "P27": (2, 0, 1), "P101": (1, 0, 0), "P19": (1, 1, 0),
                      "place_of_birth": (1, 0, 1)}
    assert "Paris is a common name in the following city : [MASK] ." not in ranker.asked
    assert name_prompt("Jean", "P103", "[MASK]") == "Jean is a common name in the following language : [MASK] ."
    assert name_prompt("Jean", "P27", "<mask>") == "Jean is a common name in the following country : <mask> ."
    assert name_prompt("Jean", "place_of_death", "[MASK]").endswith("following city : [MASK] .")
    with pytest.raises(ConfigError, match="needs a masked LM"):
        filter_facts(facts, ("name",))
    with pytest.raises(ConfigError, match="unknown UHN filter"):
        filter_facts(facts, ("names",))


def _rigged_model():
    """A tiny random BERT whose output bias puts RIGGED in the top 3 at every mask."""
    tokenizer = tokenizer_for("bert-cased")
    model = build_model("bert-cased", tokenizer).eval()
    model.cls.predictions.bias.data[tokenizer.convert_tokens_to_ids(list(RIGGED))] += 50.0
    return model, tokenizer


def _ranker(model, tokenizer):
    from lm.masked import MaskedLMScorer
    from lm.vocab import full_vocab, token_labels

    scorer = MaskedLMScorer(model, tokenizer, fingerprint="rigged-tiny-bert", batch_size=64)
    return ScorerNameRanker(scorer, full_vocab(token_labels(tokenizer, scorer.vocab_size)), False)


def _small_data(data: Path, tmp_path: Path, n: int = 40) -> Path:
    """A LAMA folder with the first n rows of a few relations (T-REx originals and reconstructions, Google-RE)."""
    root = tmp_path / "lama"
    (root / "TREx").mkdir(parents=True)
    (root / "TREx_reconstructed").mkdir()
    (root / "Google_RE").mkdir()
    shutil.copyfile(data / "relations.jsonl", root / "relations.jsonl")
    shutil.copyfile(data / "common_vocab_cased.txt", root / "common_vocab_cased.txt")
    files = [f"TREx/{p}.jsonl" for p in ("P19", "P27", "P103", "P176")] + ["TREx_reconstructed/P1001.jsonl"]
    files += [f"Google_RE/{r}_test.jsonl" for r in ("place_of_birth", "place_of_death", "date_of_birth")]
    for name in files:
        with (data / name).open("rb") as src:
            (root / name).write_bytes(b"".join(line for _, line in zip(range(n), src)))
    return root


def _expected_name_deletions(root: Path) -> dict[str, int]:
    out = {}
    for corpus in ("trex", "google_re"):
        for f in load_corpus(corpus, root).facts:
            if f.relation in PLACE_NOUNS and f.object.label.lower() not in f.subject.label.lower():
                out[f.relation] = out.get(f.relation, 0) + (f.object.label in RIGGED)
    return out


def test_name_filter_with_a_tiny_bert_counts_deletions_per_relation(lama_dir, tmp_path):
    import torch

    root = _small_data(lama_dir, tmp_path)
    model, tokenizer = _rigged_model()
    ranker = _ranker(model, tokenizer)
    facts = load_corpus("trex", root).facts + load_corpus("google_re", root).facts
    out = filter_facts(facts, ("string", "name"), ranker)
    got = {rel: d.deleted_name for rel, d in out.deletions.items() if rel in PLACE_NOUNS}
    expected = _expected_name_deletions(root)
    assert got == expected and sum(expected.values()) > 5
    assert all(out.deletions[rel].deleted_name == 0 for rel in ("P176", "P1001", "date_of_birth"))
    # the scorer's top 3 are the model's own top 3 logits (as LAMA's create_lama_uhn.py takes them)
    text = name_prompt("Marais", "P103", tokenizer.mask_token)
    enc = tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits[0, enc["input_ids"][0].tolist().index(tokenizer.mask_token_id)]
    assert ranker.top([text], 3)[0] == tokenizer.convert_ids_to_tokens(torch.topk(logits, 3).indices.tolist())


def test_kbc_data_uhn_writes_the_lama_layout_atomically(lama_dir, tmp_path, capsys):
    root = _small_data(lama_dir, tmp_path)
    model, tokenizer = _rigged_model()
    model_dir = tmp_path / "rigged"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    out = tmp_path / "uhn"
    code, stdout, _ = run_kbc(["data", "uhn", "--model", str(model_dir), "--filters", "string", "name",
                               "--data-dir", str(root), "--out", str(out)], capsys)
    assert code == 0, stdout
    deletions = json.loads((out / "deletions.json").read_text())
    expected = _expected_name_deletions(root)
    assert {rel: d["deleted_name"] for rel, d in deletions.items() if d["deleted_name"]} == \
        {rel: n for rel, n in expected.items() if n}
    assert set(deletions["P176"]) >= {"n", "deleted_string", "deleted_name"}
    assert sorted(p.name for p in (out / "TREx").iterdir()) == ["P1001.jsonl", "P103.jsonl", "P176.jsonl",
                                                                "P19.jsonl", "P27.jsonl"]
    assert (out / "Google_RE" / "place_of_birth_test.jsonl").is_file() and (out / "relations.jsonl").is_file()
    # kept rows are the original lines, byte for byte
    src_lines = (root / "TREx" / "P176.jsonl").read_bytes().splitlines(keepends=True)
    out_lines = (out / "TREx" / "P176.jsonl").read_bytes().splitlines(keepends=True)
    assert set(out_lines) <= set(src_lines)
    assert len(out_lines) == deletions["P176"]["n"] - deletions["P176"]["deleted_string"]
    # the folder is a LAMA data folder: loading it gives exactly the kept facts
    kept = {c: len(load_corpus(c, out).facts) for c in ("trex", "google_re")}
    assert kept == {c: sum(d["kept"] for d in deletions.values() if d["corpus"] == c) for c in kept}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".uhn")]  # no temporary folder left
    # a rerun replaces the earlier build; string only now
    code, stdout, _ = run_kbc(["data", "uhn", "--filters", "string", "--data-dir", str(root), "--out", str(out)],
                              capsys)
    assert code == 0
    p176 = next(line.split() for line in stdout.splitlines() if line.startswith("P176 "))
    assert p176[3] == "-" and p176[-1] == "-)"  # the name filter did not run: no count, no rate
    assert all(d["deleted_name"] == 0 for d in json.loads((out / "deletions.json").read_text()).values())
    # errors are one line: no model for the name filter, an --out that is something else
    os.environ.pop("KBC_UHN_MODEL", None)
    code, _, err = run_kbc(["data", "uhn", "--filters", "name", "--data-dir", str(root), "--out", str(out)], capsys)
    assert code == 2 and "needs a masked LM" in err and err.count("\n") == 1
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine\n")
    code, _, err = run_kbc(["data", "uhn", "--data-dir", str(root), "--out", str(notes)], capsys)
    assert code == 2 and "is not a LAMA-UHN folder" in err


def test_uhn_corpora_are_cached_by_data_version(lama_dir, tmp_path, monkeypatch):
    root = _small_data(lama_dir, tmp_path)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    corpus = load_corpus("trex-uhn", root, relations=["P176"])
    full = load_corpus("trex", root, relations=["P176"])
    assert corpus.name == "trex-uhn" and {f.corpus for f in corpus.facts} == {"trex-uhn"}
    assert [f.uid for f in corpus.facts] == [f.uid for f in full.facts
                                             if f.object.label.lower() not in f.subject.label.lower()]
    assert len(corpus.facts) == 4 and "deleted 36 (string match) + 0 (person name) of 40 facts" in corpus.summary()
    folder = uhn_data_dir(root)
    assert folder.parent == tmp_path / "cache" / "uhn"
    stamp = (folder / "uhn.json").stat().st_mtime_ns
    google = load_corpus("google_re-uhn", root)
    assert google.name == "google_re-uhn" and len(google.facts) == len(load_corpus("google_re", root).facts)
    assert (folder / "uhn.json").stat().st_mtime_ns == stamp  # built once
    # edited source data builds a new version
    path = root / "TREx" / "P176.jsonl"
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:10]))
    assert uhn_data_dir(root) != folder
    assert len(load_corpus("trex", uhn_data_dir(root), relations=["P176"]).facts) < len(corpus.facts)


def test_a_uhn_corpus_names_its_filter_and_a_changed_filter_is_named_as_such(lama_dir, tmp_path, monkeypatch):
    from bridge.run.config import version_change
    from eval.lama import version_choices

    root = _small_data(lama_dir, tmp_path)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    corpus = load_corpus("trex-uhn", root, relations=["P176"])
    assert (corpus.fact_filter, version_choices(corpus)) == ("string", {"P176": {"filter": "string"}})
    assert version_choices(load_corpus("trex", root, relations=["P176"])) == {"P176": {}}
    named = {"P176": {"filter": "string + name (sha256:ab12)"}}
    assert version_change(version_choices(corpus), named, ["P176"]) == (
        "of other questions for P176 (the LAMA-UHN filter changed: string then, string + name (sha256:ab12) now)")


tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests


def test_kbc_data_uhn_shows_the_name_filter_s_progress(lama_dir, tmp_path, capsys, tiny_models):
    """The name filter reads one prompt per distinct name token for minutes on the full data: a bar counts them,
    none under --quiet."""
    root = _small_data(lama_dir, tmp_path, n=10)
    argv = ["data", "uhn", "--model", str(tiny_models("bert-cased")), "--filters", "name", "--data-dir", str(root)]
    facts = [f for c in ("trex", "google_re") for f in load_corpus(c, root).facts if f.relation in PLACE_NOUNS]
    prompts = len({name_prompt(token, f.relation, "[MASK]") for f in facts for token in f.subject.label.split()})
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "uhn")], capsys)
    assert code == 0, err
    last = err.replace("\r", "\n").strip().splitlines()[-1]
    assert prompts == 108 and last.startswith("UHN name filter: 100%|") and f"| {prompts}/{prompts} [" in last
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "quiet"), "--quiet"], capsys)
    assert code == 0 and "UHN name filter" not in err, err


def test_a_uhn_run_says_its_filters_and_the_name_filter_s_model(lama_dir, tmp_path, capsys, monkeypatch, tiny_models):
    from bridge.run.summaries import fact_filter_notes

    root = _small_data(lama_dir, tmp_path, n=10)
    model = str(tiny_models("bert-cased"))
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KBC_UHN_MODEL", model)
    out = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex-uhn", "--relations", "P19", "--predictors", "freq",
                            "--data-dir", str(root), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    fingerprint = config["version_choices"]["trex-uhn"]["P19"]["filter"].removeprefix("string + name (")[:-1]
    assert fingerprint.startswith("sha256:")
    assert config["fact_filters"] == {"trex-uhn": {"filters": ["string", "name"], "name_model": model,
                                                   "name_model_fingerprint": fingerprint, "top_k": 3,
                                                   "over": "the model's full vocabulary"}}
    note = (f"trex-uhn: LAMA-UHN facts, filtered by string + name; the person-name filter asked `{model}` "
            f"(`{fingerprint}`) for its top 3 over the model's full vocabulary.")
    assert f"- {note}\n" in (out / "summary.md").read_text()
    del config["fact_filters"]  # a run of an earlier version: the fingerprint it recorded, said to be no path
    assert fact_filter_notes(config) == [f"trex-uhn: LAMA-UHN facts, filtered by string + name ({fingerprint}) (the "
                                         "run recorded the person-name filter's model by its fingerprint only)."]
    monkeypatch.delenv("KBC_UHN_MODEL")
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex-uhn", "--relations", "P19", "--predictors", "freq",
                            "--data-dir", str(root), "--out", str(tmp_path / "string"), "--quiet"], capsys)
    assert code == 0, err
    assert ("- trex-uhn: LAMA-UHN facts, filtered by string (no person-name filter: no model was given, "
            "$KBC_UHN_MODEL unset).\n") in (tmp_path / "string" / "summary.md").read_text()


def test_the_docs_say_the_name_filter_s_top_3_is_over_the_full_vocabulary(shared_data, tiny_models):
    """As the ranker is built: every token of the model's tokenizer; the paper's words quoted as they stand."""
    from lm.name_ranker import uhn_name_ranker

    ranker = uhn_name_ranker(str(tiny_models("bert-cased")))
    assert len(ranker.candidates.labels) == ranker.scorer.vocab_size
    quote = "If the correct answer is among the top-3 for either query, we delete the triple"
    paper = " ".join((shared_data.parent / "papers" / "004_44729d7cd3cdec55.txt").read_text().split())
    assert quote in paper
    page = " ".join((Path(__file__).parents[1] / "docs" / "data.md").read_text().split())
    assert "top 3 over its full vocabulary: every token of its tokenizer" in page and f'"{quote}"' in page
    assert "P1412 70 vs 146, P27 11 vs 28, P103 190 vs 367" in page
