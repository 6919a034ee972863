"""LAMA parity: `--compat lama` data and tokenization rules, exact ranks for MRR, cache and ties.

The model is a seeded tiny BERT on the real bert-base-cased tokenizer (tests/lm_fixtures.py);
counts and tokenizations come from the real LAMA data.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict

import lm_fixtures
import numpy as np
import pytest

from eval.compat import lama_dedup, lama_prompt
from eval.metrics import Ranked, exact_rank, gold_rank, summarize
from eval.queries import make_queries
from eval.types import Entity, Fact, Query

tiny_models = lm_fixtures.tiny_models

LAMA_REMOVED_TREX = {"P449": 1, "P47": 2, "P138": 3, "P176": 9, "P178": 1, "P1376": 1, "P276": 1, "P190": 3,
                     "P36": 2}


def _predictor(path, lama_dir, compat=None, cache=None, candidates=None, batch_size=16):
    from lm.loading import load
    from lm.masked import MaskedLMPredictor, MaskedLMScorer
    from lm.vocab import AnswerSpace, common_vocab_path, from_words, read_vocab_file, token_labels

    loaded = load(str(path), "masked", "cpu", "float32")
    scorer = MaskedLMScorer(loaded.model, loaded.tokenizer, fingerprint=loaded.fingerprint, batch_size=batch_size,
                            cache=cache, compat=compat)
    labels = token_labels(loaded.tokenizer, scorer.vocab_size)
    if candidates is None:
        candidates = from_words(labels, read_vocab_file(common_vocab_path(lama_dir, False)), "common")
    return MaskedLMPredictor(str(path), scorer, AnswerSpace(labels, fixed=candidates)), loaded


def _with_targets(pairs, valid):
    """Queries with the runner's targets: gold first, then the subject's other valid objects."""
    out = []
    for q, f in pairs:
        others = sorted(valid[(f.relation, f.subject.key)] - {f.object.label})
        out.append(dataclasses.replace(q, targets=(f.object.label, *others)))
    return out


def _valid(facts):
    valid = defaultdict(set)
    for f in facts:
        valid[(f.relation, f.subject.key)].add(f.object.label)
    return valid


# --- --compat lama: data rules --------------------------------------------------------------------

def test_trex_scored_facts_after_lama_dedup_and_single_token_filter(tiny_models, trex, lama_dir):
    pred, _ = _predictor(tiny_models("bert-cased"), lama_dir, compat="lama")
    kept_ours, _ = pred.filter_facts(trex.facts)
    assert len(kept_ours) == 34_013
    facts, removed = lama_dedup(trex.facts)
    assert removed == LAMA_REMOVED_TREX
    assert sum(removed.values()) == 23
    kept, dropped = pred.filter_facts(facts)
    assert len(kept) == 33_990
    assert sum(dropped.values()) == 26
    per_rel = defaultdict(int)
    for f in kept:
        per_rel[f.relation] += 1
    ours = defaultdict(int)
    for f in kept_ours:
        ours[f.relation] += 1
    assert {r: ours[r] - per_rel[r] for r in ours if ours[r] != per_rel[r]} == LAMA_REMOVED_TREX
    assert per_rel["P176"] == 973 and per_rel["P19"] == 944
    # the kept duplicate is the first row of the file
    first = {}
    for f in trex.facts:
        first.setdefault((f.relation, f.subject.label, f.object.label), f.uid)
    assert all(first[(f.relation, f.subject.label, f.object.label)] == f.uid for f in facts)
    assert pred.scorer.forward_calls == 0  # counted without running the model


def test_google_re_compat_judgments_and_dedup(google_re, lama_dir, tmp_path):
    from eval.corpora import load_corpus
    from eval.lama import load_google_re

    compat = load_google_re(lama_dir, compat="lama")
    assert len(compat.facts) == len(google_re.facts) == 5527  # LAMA's rule drops no staged row
    assert lama_dedup(compat.facts)[1] == {}
    # a "skip" vote is a "no" under LAMA's rule
    (tmp_path / "Google_RE").mkdir()
    rows = [{"sub_label": "A", "obj_label": "Paris", "judgments": [{"judgment": j} for j in votes]}
            for votes in (["yes", "skip", "skip"], ["yes", "no"], ["no", "no", "yes"])]
    (tmp_path / "Google_RE" / "place_of_birth_test.jsonl").write_text(
        "".join(json.dumps({**r, "sub_label": f"S{i}"}) + "\n" for i, r in enumerate(rows)))
    (tmp_path / "relations.jsonl").write_text("")
    ours = load_corpus("google_re", tmp_path, ["place_of_birth"])
    lama = load_corpus("google_re", tmp_path, ["place_of_birth"], compat="lama")
    assert [f.subject.label for f in ours.facts] == ["S0", "S1"]
    assert [f.subject.label for f in lama.facts] == ["S1"]


def test_lama_prompt_strips_template_and_label():
    assert lama_prompt(" [X] (born [Y]). ", " Ann Smith ", "[MASK]") == "Ann Smith (born [MASK])."
    assert lama_prompt("[X] plays [Y] .", "B", "[MASK]", "subject") == "[MASK] plays B ."


# --- --compat lama: tokenization around the mask --------------------------------------------------

def test_google_re_date_of_birth_tokenizes_as_lamas_bert_connector(tiny_models, google_re, lama_dir):
    lama, loaded = _predictor(tiny_models("bert-cased"), lama_dir, compat="lama")
    ours, _ = _predictor(tiny_models("bert-cased"), lama_dir)
    tok = loaded.tokenizer
    pairs = make_queries(google_re)["date_of_birth"]
    q = next(q for q, f in pairs if f.subject.label == "Peter F. Martin")
    text = lama.prompt(q)
    assert text == "Peter F. Martin (born [MASK])."
    lama_ids = lama.scorer.encode([text])[0]
    our_ids = ours.scorer.encode([ours.prompt(q)])[0]
    assert tok.convert_ids_to_tokens(lama_ids) == ["[CLS]", "Peter", "F", ".", "Martin", "(", "born", "[MASK]",
                                                   ")", "##.", "[SEP]"]
    assert tok.convert_ids_to_tokens(our_ids)[-3:] == [")", ".", "[SEP]"]
    # every date-of-birth prompt ends in ") ##." after the mask; place-of-birth prompts are unchanged
    texts = [lama.prompt(q) for q, _ in pairs]
    for ids in lama.scorer.encode(texts):
        assert tok.convert_ids_to_tokens(ids[-4:]) == ["[MASK]", ")", "##.", "[SEP]"]
    born = [lama.prompt(q) for q, _ in make_queries(google_re)["place_of_birth"][:300]]
    assert lama.scorer.encode(born) == ours.scorer.encode(born)
    assert lama.describe()["compat"] == "lama" and ours.describe()["compat"] is None


def test_compat_lama_refuses_a_tokenizer_it_cannot_reproduce(tiny_models, lama_dir):
    from eval.errors import KbcError

    with pytest.raises(KbcError, match="WordPiece"):
        _predictor(tiny_models("roberta"), lama_dir, compat="lama",
                   candidates=_candidates_of(tiny_models("roberta"), ["Paris", "London"]))


def _candidates_of(path, words):
    from transformers import AutoTokenizer

    from lm.vocab import from_words, token_labels

    return from_words(token_labels(AutoTokenizer.from_pretrained(path)), words, "few")


# --- exact ranks and MRR --------------------------------------------------------------------------

def _full_ranks(loaded, ids_list, cand_ids, golds):
    """Exact ranks recomputed here: full forward, log-softmax over the vocabulary, candidate rows."""
    import torch

    out = []
    with torch.inference_mode():
        for ids, g in zip(ids_list, golds):
            x = torch.tensor([ids])
            logits = loaded.model(input_ids=x).logits[0, ids.index(loaded.tokenizer.mask_token_id)]
            row = torch.log_softmax(logits.float(), -1)[list(cand_ids)].numpy()
            out.append((exact_rank(row, g), row))
    return out


def _near_ties(row: np.ndarray, gold: int) -> int:
    """Candidates whose log-probs float32 may order either way against the gold's: the predictor's last layer
    runs at the mask only, in batches, and the full forward pass here at every token, so their sums are grouped
    otherwise (as the CPU decides) and each score may move by `record_compare.close`'s bound."""
    from record_compare import ABS, REL

    v = float(row[gold])
    return int(np.sum(np.abs(row - v) <= 2 * (ABS + REL * abs(v)))) - 1  # the gold itself left out


def test_mrr_without_cutoff_is_mean_reciprocal_exact_rank_whatever_the_depth(tiny_models, trex, lama_dir):
    pred, loaded = _predictor(tiny_models("bert-cased"), lama_dir, compat="lama")
    cands = pred.space.fixed
    by_rel = make_queries(trex)
    valid = _valid(trex.facts)
    rows_by_depth = {}
    mine = {}
    for rel in ("P19", "P36"):
        pairs = [(q, f) for q, f in by_rel[rel] if f.object.label in cands][:20]
        queries = _with_targets(pairs, valid)
        ids = pred.scorer.encode([pred.prompt(q) for q in queries])
        golds = [cands.index[f.object.label] for _, f in pairs]
        full = _full_ranks(loaded, ids, cands.ids, golds)
        for depth in (1, 100):
            preds = pred.predict(queries, depth)
            assert all(len(p.answers) == depth for p in preds)
            ranks = [p.target_ranks[f.object.label] for p, (_, f) in zip(preds, pairs)]
            assert mine.setdefault(rel, ranks) == ranks  # the same passes whatever the depth: the same bits
            for p, (r, row), (_, f), g, rank in zip(preds, full, pairs, golds, ranks):
                assert p.answers[0].score == pytest.approx(float(row.max()), abs=1e-4)  # the same scores
                assert abs(rank - r) <= _near_ties(row, g), (f.object.label, rank, r)
                assert set(p.target_ranks) == set(p_t for p_t in dataclasses.asdict(
                    next(q for q in queries if q.uid == p.query_uid))["targets"] if p_t in cands)
                listed = gold_rank(p.answers, f.object.label)
                assert listed == (rank if rank <= depth else None)  # list and exact ranks agree within the depth
            rows_by_depth.setdefault(depth, []).extend(
                Ranked(rel, gold_rank(p.answers, f.object.label), None, p.target_ranks[f.object.label])
                for p, (_, f) in zip(preds, pairs))
    assert max(max(r) for r in mine.values()) > 100  # some gold lies below the deepest answer list
    for depth, rows in rows_by_depth.items():
        out = summarize(rows, {"P19": "N-1", "P36": "1-1"}, metrics=("mrr",), settings=("raw",))
        got = {r["group"]: r["value"] for r in out}
        for rel in ("P19", "P36"):
            assert got[rel] == pytest.approx(np.mean([1 / r for r in mine[rel]]), rel=1e-12)
        assert got["all"] == pytest.approx(np.mean([np.mean([1 / r for r in mine[rel]]) for rel in mine]), rel=1e-12)
        list_only = summarize([Ranked(r.relation, r.rank_raw, None) for r in rows], {}, metrics=("mrr",),
                              settings=("raw",))
        if depth == 1:
            assert {r["group"]: r["value"] for r in list_only}["all"] < got["all"]


# --- the cache keeps exact ranks exact ------------------------------------------------------------

def test_cached_results_give_the_ranks_of_a_fresh_run(tiny_models, trex, lama_dir, tmp_path):
    from lm.cache import ResultCache

    path = tiny_models("bert-cased")
    valid = _valid(trex.facts)
    pairs = [(q, f) for q, f in make_queries(trex)["P47"][:12]]  # N-M: several objects per subject
    queries = _with_targets(pairs, valid)
    assert any(len(q.targets) > 1 for q in queries)
    fresh, _ = _predictor(path, lama_dir)
    want = fresh.predict(queries, 5)
    cache = ResultCache(tmp_path / "lm.sqlite")
    first, _ = _predictor(path, lama_dir, cache=cache)
    got1 = first.predict(queries, 5)
    second, _ = _predictor(path, lama_dir, cache=cache)
    got2 = second.predict(queries, 5)
    assert second.scorer.forward_calls == 0
    for a, b, c in zip(want, got1, got2):
        assert a.target_ranks == b.target_ranks == c.target_ranks
        assert [x.label for x in a.answers] == [x.label for x in c.answers]
        assert np.allclose([x.score for x in a.answers], [x.score for x in c.answers], atol=0, rtol=0)
    # the same prompt with other targets is not served the ranks of the first target set
    gold_only = [dataclasses.replace(q, targets=q.targets[:1]) for q in queries]
    third, _ = _predictor(path, lama_dir, cache=cache)
    got3 = third.predict(gold_only, 5)
    assert third.scorer.forward_calls > 0
    for a, c, q in zip(want, got3, gold_only):
        assert c.target_ranks == {q.targets[0]: a.target_ranks[q.targets[0]]}
    # no targets: exact-rank predictors say so with an empty map, never with stale ranks
    none = second.predict([dataclasses.replace(q, targets=()) for q in queries], 5)
    assert all(p.target_ranks == {} for p in none)
    # compat mode is part of the key: a LAMA-tokenized prompt is never served a plain result
    compat, _ = _predictor(path, lama_dir, compat="lama", cache=cache)
    compat.predict(queries[:2], 5)
    assert compat.scorer.forward_calls > 0


# --- ties -----------------------------------------------------------------------------------------

def test_masked_ties_go_to_the_earlier_candidate_in_list_and_exact_rank(tiny_models, lama_dir):
    from lm.vocab import CandidateSet

    path = tiny_models("bert-cased")
    base, _ = _predictor(path, lama_dir)
    ids = base.space.fixed.ids[:150]
    # every id twice (second copy in reverse order): each score is tied with exactly one other candidate
    dup = CandidateSet("dup", ids + ids[::-1], tuple(f"c{i}" for i in range(300)))
    pred, _ = _predictor(path, lama_dir, candidates=dup)
    q = Query("q", "f", "trex", "P19", Entity("Ann Smith"), "object", "[X] was born in [Y] .",
              targets=tuple(f"c{i}" for i in range(300)))
    for depth in (1, 7, 300):
        (p,) = pred.predict([q], depth)
        order = [a.label for a in p.answers]
        scores = np.array([a.score for a in p.answers])
        assert len(order) == depth and np.all(np.diff(scores) <= 0)
        for place, label in enumerate(order, start=1):
            assert p.target_ranks[label] == place
        if depth == 300:
            ranks = p.target_ranks
            for i in range(150):
                j = 299 - i  # the other copy of ids[i]
                assert abs(ranks[f"c{i}"] - ranks[f"c{j}"]) == 1
                assert ranks[f"c{i}"] < ranks[f"c{j}"]  # the earlier position goes first


def test_causal_and_ebert_ties_follow_candidate_order():
    from lm.causal import CausalTypedPredictor
    from lm.entities.ebert import candidate_ranks, top_positions

    class FlatScorer:
        fingerprint, dtype, device, path = "flat", "float32", "cpu", "full sentences"

        def loglik(self, texts):
            return [(-1.0 if "Rome" in t or "Oslo" in t else -2.0, 3) for t in texts]

        def loglik_groups(self, groups):
            return [self.loglik(g) for g in groups]

    pred = CausalTypedPredictor("flat", FlatScorer(), {"P1": ["Lima", "Rome", "Kyiv", "Oslo"]}, "test")
    q = Query("q", "f", "trex", "P1", Entity("A"), "object", "[X] is in [Y] .", targets=("Oslo", "Kyiv", "Bern"))
    (p,) = pred.predict([q], 3)
    assert [a.label for a in p.answers] == ["Rome", "Oslo", "Lima"]
    assert p.target_ranks == {"Oslo": 2, "Kyiv": 4}
    assert pred.ranks == "exact" and pred.describe()["ranks"] == "exact"

    probs = np.array([[0.1, 0.3, 0.3, 0.0, 0.3]], dtype=np.float32)
    cand_ids = [4, 2, 1, 0]  # candidate positions 0, 1, 2 all score 0.3
    (pos, val), = top_positions(probs, cand_ids, 2)
    assert pos.tolist() == [0, 1] and val.tolist() == pytest.approx([0.3, 0.3])
    assert candidate_ranks(probs, cand_ids, [(2, 3, 0)]) == [([3, 4, 1], pytest.approx([0.3, 0.1, 0.3]))]


def test_entity_answers_order_ties_by_entity_row():
    from lm.entities.entity_answers import EntityAnswerer

    class Index:
        size = 5

        def search(self, outputs, k):
            return np.array([[0.9, 0.5, 0.9, 0.5, 0.1][:k]]), np.array([[4, 3, 2, 1, 0][:k]])

    ans = EntityAnswerer(Index(), lambda row: (f"e{row}", None)).answer(np.zeros((1, 2)), 4)
    assert [a.label for a in ans[0]] == ["e2", "e4", "e1", "e3"]


def test_every_predictor_says_whether_its_ranks_are_exact():
    from bridge.predictors.entities import EBertPredictor, EntityLevelPredictor
    from kb.extraction.predictor import ExtractedKBPredictor
    from kb.freq import FreqPredictor
    from kb.text.retrieval import RetrievalPredictor
    from lm.causal import CausalTypedPredictor
    from lm.masked import MaskedLMPredictor

    exact = (MaskedLMPredictor, CausalTypedPredictor, EBertPredictor)
    listed = (FreqPredictor, ExtractedKBPredictor, RetrievalPredictor, EntityLevelPredictor)
    assert [c.ranks for c in exact] == ["exact"] * 3
    assert [c.ranks for c in listed] == ["list"] * 4
    fact = Fact("u", "trex", "P1", Entity("A"), Entity("B"))
    assert FreqPredictor([fact]).describe()["ranks"] == "list"
    (p,) = FreqPredictor([fact]).predict([Query("q", "u", "trex", "P1", Entity("A"), "object", "[X] [Y]",
                                                targets=("B",))], 10)
    assert p.target_ranks is None


def test_ebert_token_level_exact_ranks_cache_and_ties(tiny_models, lama_dir, tmp_path):
    """E-BERT's token-level predictor (subjects without entity vectors: its plain-BERT fallback)."""
    from types import SimpleNamespace

    from bridge.predictors.entities import EBertPredictor, LinkCache, Resources
    from lm.cache import ResultCache
    from lm.entities.model import candidates, load_masked_lm
    from lm.vocab import common_vocab_path

    lm = load_masked_lm(str(tiny_models("bert-cased")))
    hidden = lm.model.get_input_embeddings().weight.shape[1]
    res = Resources(lm, SimpleNamespace(describe=lambda: {}), SimpleNamespace(W=np.zeros((4, hidden)),
                    describe=lambda: {}), np.zeros((1, hidden), np.float32), None)
    cand_ids, labels, missing = candidates(lm.tokenizer, common_vocab_path(lama_dir, False))
    links = LinkCache(SimpleNamespace(link=lambda entity: None))

    def make(cache=None):
        return EBertPredictor("ebert", "replace", res, cand_ids, labels, missing, {}, links, 8, "cpu", cache)

    golds = ["French", "English", "Paris", "Italy"]
    queries = [Query(f"q{i}", f"f{i}", "trex", "P103", Entity(s), "object", "The native language of [X] is [Y] .",
                     targets=(g, "German", "Nowhereland"))
               for i, (s, g) in enumerate(zip(["Jean Marais", "Ann Smith", "Rome", "Oslo"], golds))]
    fresh = make().predict(queries, 3)
    probs = make().scorer.run([make().builder.plain(q) for q in queries])[0][:, np.asarray(cand_ids)]
    for p, q, row in zip(fresh, queries, probs):
        assert set(p.target_ranks) == {q.targets[0], "German"}  # "Nowhereland" is no candidate
        for label, rank in p.target_ranks.items():
            assert rank == exact_rank(row, labels.index(label))
        for place, a in enumerate(p.answers, start=1):
            assert exact_rank(row, labels.index(a.label)) == place
    cache = ResultCache(tmp_path / "ebert.sqlite")
    first = make(cache).predict(queries, 3)
    again = make(cache)
    hits = cache.hits
    second = again.predict(queries, 3)
    assert cache.hits == hits + len(queries)
    for a, b, c in zip(fresh, first, second):
        assert a.target_ranks == b.target_ranks == c.target_ranks and a.answers == c.answers
    other = make(cache).predict([dataclasses.replace(q, targets=q.targets[:1]) for q in queries], 3)
    assert [p.target_ranks for p in other] == [{q.targets[0]: a.target_ranks[q.targets[0]]}
                                                for q, a in zip(queries, fresh)]
