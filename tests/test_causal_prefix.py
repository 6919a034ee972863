"""Causal typed querying on a shared prefix: the same log-likelihoods as whole sentences, for less work."""

from __future__ import annotations

import lm_fixtures
import pytest

from eval.types import Entity, Query

tiny_models = lm_fixtures.tiny_models

TEMPLATES = [
    "[X] was born in [Y] .",  # text after the slot
    "[X] was born in [Y].",  # the full stop glued to the candidate: BPE may merge across the slot
    "The capital of [X] is [Y]",  # nothing after the slot
    "[Y] is the capital of [X] .",  # slot first: only BOS is shared
    "[X]'s [Y]-based company",  # the candidate glued on both sides
]
CANDIDATES = ["Florence", "Ulaanbaatar Province", "Rome", "St.", "Saint-Denis, Réunion", "Paris", "Parisian",
              "the United States of America"]
SUBJECTS = ["Dante", "Xi Jinping", "Ἀθῆναι"]


@pytest.fixture(scope="module")
def gpt2(tiny_models):
    from lm.loading import load

    return load(str(tiny_models("gpt2")), "causal")


def scorer(loaded, **kw):
    from lm.causal import CausalLMScorer

    return CausalLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, **kw)


def groups() -> list[list[str]]:
    out = []
    for template in TEMPLATES:
        for subject in SUBJECTS:
            out.append([template.replace("[X]", subject).replace("[Y]", c) for c in CANDIDATES])
    return out


@pytest.fixture(scope="module")
def whole(gpt2):
    full = scorer(gpt2, shared_prefix=False)
    return [full.loglik(g) for g in groups()], full.tokens_run


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_shared_prefix_equals_whole_sentences(gpt2, whole, batch_size):
    want, full_tokens = whole
    shared = scorer(gpt2, batch_size=batch_size)
    assert shared.path == "shared-prefix" and scorer(gpt2, shared_prefix=False).path == "full-sentence"
    got = shared.loglik_groups(groups())
    worst = max(abs(a - b) for gs, gf in zip(got, want) for (a, _), (b, _) in zip(gs, gf))
    assert worst <= 1e-4
    assert [[n for _, n in g] for g in got] == [[n for _, n in g] for g in want]
    assert shared.tokens_run < full_tokens / 2


TREE_NAMES = ["New", "New York", "New York City", "New York Mills", "New Zealand", "Newark", "Saint",
              "Saint-Denis", "Saint-Denis, Réunion", "Florence"]
TREE_TEMPLATES = [
    "[X] was born in [Y] .",  # LAMA: text after the slot
    "[X] was born in [Y], Italy .",  # several tokens after the slot
    "[X] was born in [Y]",  # extended (coherency): the entity at the very end
    "[Y] is the birth place of [X]",  # extended, subject slot
]


@pytest.mark.parametrize("row_tokens", [8, 20, 256])
def test_candidate_tree_equals_whole_sentences(gpt2, monkeypatch, row_tokens):
    """Candidates sharing leading tokens share tree nodes; some are token prefixes of others. Short rows split
    a tree into segments that repeat the prefix and the ancestors they need."""
    import lm.causal
    from lm.causal import _Tree

    monkeypatch.setattr(lm.causal, "ROW_TOKENS", row_tokens)
    cases = [[t.replace("[X]", s).replace("[Y]", c) for c in TREE_NAMES]
             for t in TREE_TEMPLATES for s in ("Dante", "Xi Jinping")]
    ids = scorer(gpt2).encode(cases[4])  # "Dante was born in [Y]": New York is a token prefix of New York City
    york, city = ids[TREE_NAMES.index("New York")], ids[TREE_NAMES.index("New York City")]
    assert city[:len(york)] == york and len(city) > len(york)
    for batch_size in (1, 32):
        shared = scorer(gpt2, batch_size=batch_size)
        got = shared.loglik_groups(cases)
        full = scorer(gpt2, shared_prefix=False)
        want = [full.loglik(g) for g in cases]
        assert max(abs(a - b) for gs, gf in zip(got, want) for (a, _), (b, _) in zip(gs, gf)) <= 1e-4
        assert [[n for _, n in g] for g in got] == [[n for _, n in g] for g in want]
    if row_tokens == 256:  # one segment per tree: the prefix once, then each tree node with children once
        trees = [_Tree(shared.encode(g)) for g in cases]
        assert shared.tokens_run == sum(t.p + sum(1 for n in t.children if n) for t in trees)
        per_sentence = sum(len(row) - t.p - 1 for t, g in zip(trees, cases) for row in shared.encode(g))
        assert sum(1 for t in trees for n in t.children if n) < per_sentence  # shared leading tokens run once


def test_bpe_merges_across_the_slot_are_kept(gpt2):
    """The shared prefix is found on the whole sentence's ids, never by tokenizing pieces apart."""
    tok = gpt2.tokenizer
    texts = ["Dante was born in Rome.", "Dante was born in Stuttgart", "Dante was born in St."]
    whole = [tok(t)["input_ids"] for t in texts]
    # tokenizing the text before the slot on its own leaves a stray space token that the sentence lacks
    assert tok("Dante was born in ")["input_ids"] + tok("Rome.")["input_ids"] != whole[0]
    shared = scorer(gpt2).loglik_groups([texts])[0]
    full = scorer(gpt2, shared_prefix=False).loglik(texts)
    assert [n for _, n in shared] == [len(ids) for ids in whole]  # BOS + the sentence's own ids
    assert max(abs(a - b) for (a, _), (b, _) in zip(shared, full)) <= 1e-4


def test_cache_serves_the_path_that_wrote_it(gpt2, tmp_path):
    from lm.cache import ResultCache

    cache = ResultCache(tmp_path / "c.sqlite")
    first = scorer(gpt2, cache=cache)
    got = first.loglik_groups(groups()[:3])
    again = scorer(gpt2, cache=cache)
    assert again.loglik_groups(groups()[:3]) == got and again.forward_calls == 0
    # the whole-sentence path has its own entries: its numbers are computed, not read from the other path
    full = scorer(gpt2, cache=cache, shared_prefix=False)
    full.loglik(groups()[0])
    assert full.forward_calls > 0
    # a group that repeats a cached sentence with new ones: the new ones are scored on their own prefix
    mixed = groups()[0][:2] + ["Dante was born in Oslo ."]
    later = scorer(gpt2, cache=cache).loglik_groups([mixed])[0]
    assert later[:2] == got[0][:2]
    assert abs(later[2][0] - scorer(gpt2, shared_prefix=False).loglik(mixed[2:])[0][0]) <= 1e-4


def test_extended_templates_put_the_entity_last(gpt2, shared_data):
    from lm.causal import CausalTypedPredictor, read_extended_templates

    templates = read_extended_templates(shared_data / "prompts" / "coherency" / "relations_autregressive.jsonl")
    assert templates[("P19", "object")] == "[X] was born in [Y]"
    assert templates[("P19", "subject")] == "[Y] is the birth place of [X]"
    assert len({rel for rel, _ in templates}) == 46
    cands = {"P19": ["Florence", "Rome", "Paris"]}
    subjects = {"P19": ["Dante", "Homer"]}
    sc = scorer(gpt2)
    pred = CausalTypedPredictor("tiny", sc, cands, "test", subject_candidates=subjects, templates=templates)
    obj_q = Query("o", "f", "trex", "P19", Entity("Dante"), "object", "[X] was born in [Y] .")
    sub_q = Query("s", "f", "trex", "P19", Entity("Florence"), "subject", "[X] was born in [Y] .")
    assert pred.sentence(obj_q, "Rome") == "Dante was born in Rome"
    assert pred.sentence(sub_q, "Homer") == "Florence is the birth place of Homer"
    sc.forward_calls = 0
    p_obj, p_sub = pred.predict([obj_q, sub_q], 10)
    assert sc.forward_calls == 1  # one-token candidates at the very end: the prefix pass alone scores them
    full = scorer(gpt2, shared_prefix=False)
    for p, q, names in ((p_obj, obj_q, cands["P19"]), (p_sub, sub_q, subjects["P19"])):
        want = dict(zip(names, [s for s, _ in full.loglik([pred.sentence(q, c) for c in names])]))
        assert {a.label for a in p.answers} == set(names)
        assert all(abs(a.score - want[a.label]) <= 1e-4 for a in p.answers)
    assert pred.answer_space_size("P19", "subject") == 2
    assert "P19:subject" in pred.describe()["templates"]


def test_bad_extended_templates_file(tmp_path):
    from eval.errors import DataError
    from lm.causal import read_extended_templates

    bad = tmp_path / "t.jsonl"
    bad.write_text('{"relation": "P19", "template_obj": "[Y] was born in [X]", "template_sub": "[Y] has [X]"}\n')
    with pytest.raises(DataError, match="must hold \\[X\\] and end with \\[Y\\]"):
        read_extended_templates(bad)
    with pytest.raises(DataError, match="does not exist"):
        read_extended_templates(tmp_path / "missing.jsonl")
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"relation": "P19", "template_obj": "[X] was born in [Y]", "template_sub": "[Y] is where [X] was '
                     'born, [X]"}\n')
    with pytest.raises(DataError) as exc:
        read_extended_templates(twice)
    assert str(exc.value) == (f"{twice}:1: template '[Y] is where [X] was born, [X]' holds [X] 2 times; a template "
                              "holds [X] and [Y] once each")
