"""The extracted KB: naive and oracle linking, graphs with confidences, SPARQL ranking, build cache, CLI."""

from __future__ import annotations

import json
import os

import pytest
from cli_support import run_kbc
from re_kb_support import seed_extraction

from eval.coherency import first_step_correct
from eval.corpora import load_corpus
from eval.metrics import gold_rank
from eval.types import Entity, Fact, Query
from kb.extraction.candidates import Sentence, tokenize
from kb.extraction.extractor import Extracted
from kb.extraction.kb_build import CONFIDENCE, GRAPHS, cache_path, ensure_re_kb, statement_iri, write_graph
from kb.extraction.linking import LabelIndex, ScoredTriple, merge, naive_triples, oracle_triples
from kb.extraction.predictor import ExtractedKBPredictor
from kb.store import GraphStore, entity_iri, graph_iri, relation_iri
from kb.writer_lock import command_line

DANTE, FLORENCE, RAVENNA, RAVENNA2, ITALY = (Entity("Dante", "Q1"), Entity("Florence", "Q2"),
                                             Entity("Ravenna", "Q3"), Entity("Ravenna", "Q5"), Entity("Italy", "Q4"))
FACTS = [Fact("f0", "trex", "P19", DANTE, FLORENCE), Fact("f1", "trex", "P20", DANTE, RAVENNA),
         Fact("f2", "trex", "P17", RAVENNA2, ITALY)]


def sentence(text: str, mention_texts: list[str], facts: list[int]) -> Sentence:
    toks, spans = tokenize(text)
    s = Sentence(text, toks, spans, facts=facts)
    for m in mention_texts:
        start = text.index(m)
        s.mention_at(start, start + len(m), "gaz")
    return s


SENTENCES = [
    sentence("Dante was born in Florence .", ["Dante", "Florence"], [0]),
    sentence("The poet was born in Firenze .", ["The poet", "Firenze"], [0]),
    sentence("Dante died in Ravenna .", ["Dante", "Ravenna"], [1]),
    sentence("Florence hosts Dante .", ["Florence", "Dante"], []),
]
EXTRACTED = [
    Extracted(0, 0, 1, "P19", 0.9),
    Extracted(1, 0, 1, "P19", 0.95),  # right relation, mentions that link to nothing
    Extracted(2, 0, 1, "P19", 0.7),  # wrong relation for the aligned P20 fact
    Extracted(3, 0, 1, "P19", 0.3),
]


def confidences(triples) -> dict[tuple[str, str, str], float]:
    return {k: t.confidence for k, t in triples.items()}


def test_naive_linking_by_exact_label():
    naive = naive_triples(EXTRACTED, SENTENCES, LabelIndex(FACTS))
    assert confidences(naive) == {
        ("Q1", "P19", "Q2"): 0.9,
        ("Q1", "P19", "Q3"): 0.7,  # "Ravenna" names two entities: linked to both
        ("Q1", "P19", "Q5"): 0.7,
        ("Q2", "P19", "Q1"): 0.3,
    }


def test_oracle_links_any_triple_of_the_fact_relation():
    oracle = oracle_triples(EXTRACTED, SENTENCES, FACTS)
    # sentence 0 and 1 express f0 and yielded P19 triples (best 0.95); sentence 2 yielded no P20 triple
    assert confidences(oracle) == {("Q1", "P19", "Q2"): 0.95}
    merged = merge(naive_triples(EXTRACTED, SENTENCES, LabelIndex(FACTS)), oracle)
    assert confidences(merged)[("Q1", "P19", "Q2")] == 0.95
    assert len(merged) == 4


@pytest.fixture()
def store():
    st = GraphStore.open(None)
    naive = naive_triples(EXTRACTED, SENTENCES, LabelIndex(FACTS))
    write_graph(st, "re-naive", naive.values(), progress=False)
    write_graph(st, "re-oracle", merge(naive, oracle_triples(EXTRACTED, SENTENCES, FACTS)).values(), progress=False)
    yield st
    st.close()


def q(uid: str, subject: Entity, relation: str) -> Query:
    return Query(uid, uid, "trex", relation, subject, "object", "[X] was born in [Y] .")


def test_graph_holds_reified_confidences(store):
    s, p, o = entity_iri(DANTE), relation_iri("P19"), entity_iri(FLORENCE)
    for graph, expected in (("re-naive", 0.9), ("re-oracle", 0.95)):
        rows = store.select(f"SELECT ?c WHERE {{ GRAPH <{graph_iri(graph)}> {{ "
                            f"<{statement_iri(graph, s, p, o)}> <{CONFIDENCE}> ?c }} }}")
        assert [float(r[0]) for r in rows] == [expected]
        assert store.dataset.query(f"ASK {{ GRAPH <{graph_iri(graph)}> {{ <{s}> <{p}> <{o}> }} }}").askAnswer
    assert store.relations("re-naive")["P19"] == 4


def test_predictor_ranks_by_confidence_and_knows_nothing_else(store):
    naive = ExtractedKBPredictor("re-naive", store, "re-naive")
    oracle = ExtractedKBPredictor("re-oracle", store, "re-oracle")
    queries = [q("a", DANTE, "P19"), q("b", RAVENNA2, "P17"), q("c", FLORENCE, "P19")]
    got = [[(a.label, a.score, a.id) for a in p.answers] for p in naive.predict(queries, depth=10)]
    assert got == [[("Florence", 0.9, "Q2"), ("Ravenna", 0.7, "Q3"), ("Ravenna", 0.7, "Q5")], [],
                   [("Dante", 0.3, "Q1")]]
    assert [(a.label, a.score) for a in oracle.predict(queries[:1], 10)[0].answers] == [
        ("Florence", 0.95), ("Ravenna", 0.7), ("Ravenna", 0.7)]
    assert [a.label for a in naive.predict(queries[:1], 1)[0].answers] == ["Florence"]



def test_each_answer_carries_the_entity_of_its_own_triple():
    """Naive linking gives every entity of a mention's label the mention's confidence, so namesakes tie: each is
    its own answer with its own id (numbers in numeric order), never one label carrying a namesake's id."""
    sofia, stone = Entity("Sofia Ester", None), Entity("Arthur Harold Stone", "Q3709232")
    lisbon, lisbon_nh, porto = Entity("Lisbon", "Q597"), Entity("Lisbon", "Q2310637"), Entity("Porto", "Q36433")
    london, london_on, london_ky = Entity("London", "Q84"), Entity("London", "Q3258936"), Entity("London", "Q92561")
    triples = [ScoredTriple(sofia, "P19", lisbon_nh, 1.0), ScoredTriple(sofia, "P19", lisbon, 1.0),
               ScoredTriple(sofia, "P19", porto, 0.4), ScoredTriple(stone, "P19", london_on, 1.0),
               ScoredTriple(stone, "P19", london_ky, 1.0), ScoredTriple(stone, "P19", london, 1.0)]
    with GraphStore.open(None) as st:
        write_graph(st, "re-oracle", triples, progress=False)
        oracle = ExtractedKBPredictor("re-oracle", st, "re-oracle")
        preds = oracle.predict([q("a", sofia, "P19"), q("b", stone, "P19")], depth=10)
        assert [[(a.label, a.score, a.id) for a in p.answers] for p in preds] == [
            [("Lisbon", 1.0, "Q597"), ("Lisbon", 1.0, "Q2310637"), ("Porto", 0.4, "Q36433")],
            [("London", 1.0, "Q84"), ("London", 1.0, "Q92561"), ("London", 1.0, "Q3258936")]]
        assert first_step_correct(preds[0], lisbon) and first_step_correct(preds[1], london)
        assert gold_rank(preds[0].answers, "Porto", shared_ties=True) == 2  # one label above it, not two answers
        back = Query("c", "c", "trex", "P19", london_on, "subject", "[X] was born in [Y] .")
        assert [(a.label, a.id) for a in oracle.predict([back], 10)[0].answers] == [("Arthur Harold Stone", "Q3709232")]
        assert oracle.held("P19")[str(entity_iri(sofia))] == preds[0].answers


# --- end to end on a tiny data directory ------------------------------------------------------
PATTERNS = {"P19": "{s} was born in [MASK] .", "P20": "{s} died in [MASK] .", "P27": "{s} is a citizen of [MASK] ."}
PLACES = ["Rome", "Paris", "Oslo", "Lima", "Cairo", "Quito"]


def write_data(root, n: int = 40) -> None:
    """T-REx layout; every 4th person is named "Dr. <i>" in the sentences, which no label matches."""
    (root / "TREx").mkdir(parents=True, exist_ok=True)
    rels = [{"relation": r, "template": t.replace("{s}", "[X]").replace("[MASK]", "[Y]"), "type": "N-1"}
            for r, t in PATTERNS.items()]
    (root / "relations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rels))
    for k, (rel, pattern) in enumerate(PATTERNS.items()):
        rows = []
        for i in range(n):
            surface = f"Dr. {i}" if i % 4 == 0 else f"Person{i}"
            obj = PLACES[(i + k) % len(PLACES)]
            rows.append({"uuid": f"{rel}-{i}", "sub_uri": f"Q{i + 1}", "sub_label": f"Person{i}",
                         "obj_uri": f"Q{900 + (i + k) % len(PLACES)}", "obj_label": obj, "predicate_id": rel,
                         "evidences": [{"sub_surface": surface, "obj_surface": obj,
                                        "masked_sentence": pattern.format(s=surface)}]})
        (root / "TREx" / f"{rel}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_build_is_cached_per_data_version(tmp_path):
    write_data(tmp_path / "data")
    corpus = load_corpus("trex", tmp_path / "data")
    with GraphStore.open(None) as st:
        first = ensure_re_kb(st, corpus, tmp_path / "cache", progress=False)
        assert first["built"] and first["triples"]["re-naive"] == {"P19": 30, "P20": 30, "P27": 30}
        assert first["triples"]["re-oracle"] == {"P19": 40, "P20": 40, "P27": 40}
        assert first["coverage"]["P19"] == {"facts": 40, "with_evidence": 40, "in_oracle_kb": 40}
        count = st.count("re-oracle")
        again = ensure_re_kb(st, corpus, tmp_path / "cache", progress=False)
        assert not again["built"] and again["tag"] == first["tag"] and st.count("re-oracle") == count
        # new data: the graph with the old version is dropped and rebuilt
        path = tmp_path / "data" / "TREx" / "P19.jsonl"
        path.write_text(path.read_text().replace("Rome", "Roma"))
        new = load_corpus("trex", tmp_path / "data")
        rebuilt = ensure_re_kb(st, new, tmp_path / "cache", progress=False)
        assert rebuilt["built"] and rebuilt["tag"] != first["tag"]
        assert st.loaded_versions("re-naive") == {rebuilt["tag"]}
        assert rebuilt["triples"] == first["triples"]
        n_conf = st.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph_iri('re-oracle')}> {{ "
                           f"?st <{CONFIDENCE}> ?c }} }}")
        assert int(n_conf[0][0]) == 120  # nothing left from the old build


def test_cli_build_stats_and_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    write_data(tmp_path / "data")
    common = ["--data-dir", str(tmp_path / "data"), "--store", str(tmp_path / "store")]
    code, out, err = run_kbc(["kb", "build-re", "--corpus", "trex", "--quiet", *common], capsys)
    assert code == 0, err
    p19 = next(line.split() for line in out.splitlines() if line.startswith("  P19 "))
    assert p19 == ["P19", "100.0", "100.0", "40", "40", "40", "40"]  # P, R, pairs, facts, with evidence, in RE_o
    code, out, err = run_kbc(["kb", "stats", "--store", str(tmp_path / "store")], capsys)
    assert code == 0, err
    assert "re-naive: 90 fact triples, 3 relations" in out and "re-oracle: 120 fact triples, 3 relations" in out
    code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "re-naive", "re-oracle", "--quiet",
                              "--out", str(tmp_path / "run"), *common], capsys)
    assert code == 0, err
    rows = json.loads((tmp_path / "run" / "summary.json").read_text())
    p1 = {(r["predictor"], r["setting"]): r["value"] for r in rows
          if r["group"] == "all" and r["metric"] == "p@1"}
    assert p1 == {("re-naive", "raw"): 75.0, ("re-naive", "filtered"): 75.0,
                  ("re-oracle", "raw"): 100.0, ("re-oracle", "filtered"): 100.0}
    # records of an earlier version, one answer per label: a rerun into their directory is refused, never mixed
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["predictor_specs"]["re-naive"]["answers"] == "one per entity"
    config["predictor_specs"]["re-naive"].pop("answers")
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "re-naive", "--quiet",
                            "--out", str(tmp_path / "run"), *common], capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {tmp_path / 'run'}: predictor 're-naive' has answers there from an earlier kbc version, which kept "
        "one answer per label with the id of a namesake where several entities of the label tied (Lisbon, New "
        "Hampshire for Lisbon, Portugal), so coherency and the records judged the wrong entity; use another --out to "
        "score it with one answer per entity")
    code, out, err = run_kbc(["kb", "stats", "--store", str(tmp_path / "store")], capsys)
    # the extracted KBs read their own graphs: the run loaded no gold graph
    assert code == 0 and "re-oracle: 120 fact triples, 3 relations" in out and "gold-" not in out, out + err
    code, out, err = run_kbc(["run", "lama", "--corpus", "trex", "--predictors", "gold", "--quiet",
                              "--out", str(tmp_path / "gold"), *common], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["kb", "stats", "--store", str(tmp_path / "store")], capsys)
    assert code == 0 and "gold-trex-P19: 40 fact triples, 1 relation " in out, out + err


def test_a_run_says_the_extracted_kb_is_built_from_the_whole_corpus_before_building_it(tmp_path, capsys,
                                                                                       monkeypatch):
    """A run of a few facts waits minutes for T-REx's whole extraction: the log says what is built, and that
    --relations and --limit do not shrink it, before the work; a run that finds it built says nothing of it."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    write_data(tmp_path / "data")
    notice = ("trex: building the extracted KB (re-naive, re-oracle) from the evidence sentences of all 120 facts "
              "of its 3 relations, 5-fold training (minutes on a CPU; once per data version, then kept in the store "
              "and the cache); --relations and --limit do not shrink it: every run over this data reads the same "
              "graphs")
    for name, said in (("first", [notice]), ("again", [])):
        code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "5",
                                "--predictors", "re-oracle", "--quiet", "--data-dir", str(tmp_path / "data"),
                                "--out", str(tmp_path / name)], capsys)
        assert code == 0, err
        lines = err.splitlines()
        assert [line for line in lines if "building the extracted KB" in line] == said
        if said:  # before the extraction's work and its report
            assert lines.index(notice) < next(i for i, line in enumerate(lines) if "extracted KB built in" in line)


def test_cli_rejects_corpus_without_evidence(tmp_path, capsys, monkeypatch, lama_dir):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    code, out, err = run_kbc(["kb", "build-re", "--corpus", "squad", "--data-dir", str(lama_dir),
                              "--store", str(tmp_path / "store")], capsys)
    assert code == 2
    assert err.strip() == ("error: relation extraction needs aligned evidence sentences: corpus 'squad' has none "
                           "(use trex or google_re)")


@pytest.mark.heavy
def test_google_re_build_on_real_data(tmp_path, lama_dir):
    """Every RE_o triple is a gold fact or a naive triple; RE_o holds most Google-RE facts. The extraction is the
    run's one (`re_kb_support`): this build reads it from its cache and fills a store of its own."""
    corpus = load_corpus("google_re", lama_dir)
    seed_extraction(lama_dir, tmp_path)
    with GraphStore.open(None) as st:
        report = ensure_re_kb(st, corpus, tmp_path, progress=False)
        gold = {(f.subject.key, f.relation, f.object.key) for f in corpus.facts}
        naive = {(s, r, o) for r in corpus.relations for s, o, _ in st.pairs(r, "re-naive")}
        oracle = {(s, r, o) for r in corpus.relations for s, o, _ in st.pairs(r, "re-oracle")}
    assert oracle - naive <= gold
    assert naive <= oracle
    held = sum(c["in_oracle_kb"] for c in report["coverage"].values())
    assert held == len(oracle & gold) and held > len(corpus.facts) // 2
    assert set(GRAPHS) == set(report["triples"])
    assert cache_path(tmp_path, corpus, "report").is_file()  # the build wrote its report beside the extraction


def test_build_re_on_a_built_store_reports_no_work(tmp_path, capsys, monkeypatch):
    """A build found done (by another process, or an earlier command) prints who built it, never a table of
    scores and seconds this command did not spend."""
    from bridge.run.runner import default_cache_dir
    from eval.checked_json import read_checked
    from kb.extraction.kb_build import build_tag, cache_path

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    write_data(tmp_path / "data")
    argv = ["kb", "build-re", "--corpus", "trex", "--quiet", "--data-dir", str(tmp_path / "data"), "--store",
            str(tmp_path / "store")]
    code, out, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "  time: extraction" in out
    corpus = load_corpus("trex", tmp_path / "data")
    report = read_checked(cache_path(default_cache_dir(), corpus, "report"), "build report")
    by = report["built_by"]
    assert by["pid"] == os.getpid() and by["command"] == command_line()
    code, out, err = run_kbc(argv, capsys)
    assert code == 0, err
    tag = build_tag(corpus)
    assert out == (f"trex: already built ({tag}) by process {by['pid']} (`{by['command']}`, since {by['since']}); "
                   "nothing done now (`kbc kb stats` lists its graphs); --force rebuilds\n")
