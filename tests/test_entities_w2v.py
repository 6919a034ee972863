"""wikipedia2vec trained on the real 206-page sample dump: loading (.npz converted from the library's
.pkl, word2vec text), training errors and resume, linking of subjects by title, redirect and mention
dictionary, and the CLI."""

from __future__ import annotations

import bz2
import os
import time

import numpy as np
import pytest
from test_entities_support import DUMP, W2V_DIM, first_pages, trained_w2v

from eval.errors import DataError
from eval.types import Entity
from lm.entities.embeddings import load_embeddings, save_text
from lm.entities.linking import Link, Linker, coverage, read_mentions, read_redirects, read_title_map
from lm.entities.train import check_dump


@pytest.fixture(scope="module")
def w2v(shared_data):
    return trained_w2v(shared_data)


@pytest.fixture(scope="module")
def emb(w2v):
    return load_embeddings(w2v)


def test_npz_holds_every_word_and_entity_of_the_pkl(w2v, emb):
    from wikipedia2vec import Wikipedia2Vec

    assert w2v.suffix == ".npz"
    model = Wikipedia2Vec.load(str(w2v.with_suffix(".pkl")))
    dic = model.dictionary
    assert (len(emb.words), len(emb.titles), emb.dim) == (dic.word_size, dic.entity_size, W2V_DIM)
    assert emb.lowercase is False  # E-BERT trains cased
    for title in ("Alaska", emb.titles[-1]):
        assert np.array_equal(emb.entity_vectors[emb.entity_row(title)], model.get_entity_vector(title))
    word = emb.words[5]
    assert np.array_equal(emb.word_vectors[emb.word_row(word)], model.get_word_vector(word))


def test_word2vec_text_round_trip(w2v, emb, tmp_path):
    from wikipedia2vec import Wikipedia2Vec

    ours = tmp_path / "ours.txt"
    save_text(emb, ours)
    back = load_embeddings(ours)
    assert back.titles == emb.titles and back.words == emb.words
    assert np.allclose(back.entity_vectors, emb.entity_vectors, atol=1e-6)
    published = tmp_path / "lib.txt"  # the library's own writer, the format the project publishes
    Wikipedia2Vec.load(str(w2v.with_suffix(".pkl"))).save_text(str(published), out_format="word2vec")
    lib = load_embeddings(published)
    assert sorted(lib.titles) == sorted(emb.titles)
    row = lib.entity_row("Alaska")
    assert np.allclose(lib.entity_vectors[row], emb.entity_vectors[emb.entity_row("Alaska")], atol=1e-3)


def test_bad_text_and_missing_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\nfoo 1 2 3\nENTITY/Bar 1 2\n")
    with pytest.raises(DataError, match=r"bad.txt:3: expected 3 numbers"):
        load_embeddings(bad)
    with pytest.raises(DataError, match="no such wikipedia2vec model"):
        load_embeddings(tmp_path / "none.npz")


@pytest.mark.parametrize(("text", "error"), [
    ("3 2\nENTITY/Foo 1 2\nENTITY/Bar 1 3\nENTITY/Foo 9 9\n", r"t.txt:4: 'ENTITY/Foo' again \(first on line 2\)"),
    ("Paris 1 2\nParis 3 4\n", r"t.txt:2: 'Paris' again \(first on line 1\)"),
    ("ENTITY/Foo 1 2\nENTITY/Baz nan 0.5\n", r"t.txt:2: the vector of 'ENTITY/Baz' holds nan or inf"),
    ("ENTITY/Foo 1 2\nENTITY/Baz inf 0.5\n", r"t.txt:2: the vector of 'ENTITY/Baz' holds nan or inf"),
])
def test_text_with_a_name_twice_or_a_non_finite_vector_is_refused(tmp_path, text, error):
    """Either would rank silently wrong: a duplicate answers beside its twin, a NaN never ranks."""
    path = tmp_path / "t.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=error):
        load_embeddings(path)


def test_check_dump_rejects_unusable_dumps(shared_data, tmp_path):
    assert check_dump(shared_data / DUMP) == "en"
    plain = tmp_path / "plain.xml"
    plain.write_text("<mediawiki>")
    with pytest.raises(DataError, match="not a bz2"):
        check_dump(plain)
    nolang = tmp_path / "nolang.xml.bz2"
    nolang.write_bytes(bz2.compress(b"<mediawiki>\n<page/>\n"))
    with pytest.raises(DataError, match="xml:lang"):
        check_dump(nolang)


def test_train_cli_resumes_without_redoing_steps(shared_data, w2v, capsys):
    from bridge.cli import main

    before = os.path.getmtime(w2v)
    main(["entities", "train", str(shared_data / DUMP), "--out", str(w2v), "--dim", str(W2V_DIM), "--iterations", "1",
          "--word-neg-power", "0", "--min-entity-count", "1"])
    assert os.path.getmtime(w2v) == before
    assert f'"dim": {W2V_DIM}' in capsys.readouterr().out


def test_linker_order_of_evidence():
    rows = {"Douglas Adams": 0, "Paris": 1, "Barack Obama": 2}
    linker = Linker(rows.get, {"Q42": "Douglas_Adams"}, {"Obama": "Barack Obama"},
                    lambda text: [("Paris", 0.2), ("Barack Obama", 0.7)] if text == "the president" else [])
    assert linker.link(Entity("D. Adams", "Q42")).method == "wikidata"
    assert linker.link(Entity("paris")).title == "Paris"  # first letter upper-cased, as Wikipedia titles
    assert linker.link(Entity("Obama")).method == "redirect"
    found = linker.link(Entity("the president"))
    assert (found.title, found.method) == ("Barack Obama", "mention")  # highest commonness wins
    assert linker.link(Entity("Nobody")) is None
    cov = coverage(linker, [Entity("Paris"), Entity("Paris"), Entity("Obama"), Entity("Nobody")])
    assert cov.to_dict() == {"subjects": 3, "linked": 2, "coverage_percent": 66.67, "wikidata": 0, "title": 1,
                             "redirect": 1, "mention": 0}


def test_linker_never_takes_an_alias_or_a_rarer_sense():
    """Google-RE's Gilbert John Arrow has the alias "Arrow", the title of another page: no vector beats a wrong one."""
    rows = {"Arrow": 0, "Madrid Open (tennis)": 1, "John Raven": 2}
    mentions = {"madrid": [("Madrid", 0.9), ("Madrid Open (tennis)", 0.1)]}
    linker = Linker(rows.get, {}, {"J. E. Raven": "John Raven"}, lambda text: mentions.get(text.lower(), []))
    assert linker.link(Entity("Gilbert John Arrow", "Q3105755", aliases=("Arrow",))) is None
    assert linker.link(Entity("John Earle Raven", aliases=("J. E. Raven", "Raven"))) is None
    assert linker.link(Entity("Madrid")) is None  # the city has no vector; the tournament is not it
    cov = coverage(linker, [Entity("Gilbert John Arrow", "Q3105755", aliases=("Arrow",)), Entity("Madrid")])
    assert (cov.total, cov.linked) == (2, 0)


def test_title_map_file(tmp_path):
    path = tmp_path / "titles.tsv"
    path.write_text("item\ttitle\nQ42\tDouglas_Adams\nQ90\tParis\n")
    assert read_title_map(path) == {"Q42": "Douglas Adams", "Q90": "Paris"}
    path.write_text("Q42\tDouglas Adams\nnonsense\n")
    with pytest.raises(DataError, match="titles.tsv:2"):
        read_title_map(path)


def test_real_redirects_and_mentions(w2v, emb):
    stem = w2v.parent / w2v.stem
    redirects = read_redirects(f"{stem}.db")
    assert redirects["ANOVA"] == "Analysis of variance"
    assert emb.links.redirects == redirects  # stored in the .npz when training converted the .pkl
    mentions = emb.links.mention_lookup
    linker = Linker(emb.entity_row, {}, redirects, mentions)
    source, target = next((s, t) for s, t in sorted(redirects.items()) if emb.entity_row(t) is not None
                          and emb.entity_row(s) is None and emb.entity_row(s[:1].upper() + s[1:]) is None)
    assert linker.link(Entity(source)) == Link(emb.entity_row(target), target, "redirect")
    assert mentions("alaska")[0][0] == "Alaska"
    assert mentions("no such mention text") == []


def test_mention_tsv(tmp_path):
    path = tmp_path / "mentions.tsv"
    path.write_text("the president\tBarack_Obama\t0.7\nthe president\tParis\t0.2\n")
    assert read_mentions(path)("The President") == [("Barack Obama", 0.7), ("Paris", 0.2)]
    path.write_text("the president\tBarack Obama\n")
    with pytest.raises(DataError, match=r"mentions.tsv:1: expected"):
        read_mentions(path)


def test_corpus_coverage_on_trex_and_link_stats_cli(w2v, trex, lama_dir, capsys):
    from bridge.cli import main

    main(["entities", "link-stats", "--wikipedia2vec", str(w2v), "--corpus", "trex", "--data-dir", str(lama_dir)])
    line = capsys.readouterr().out.strip()
    subjects = len({f.subject.key for f in trex.facts})
    assert line.startswith("trex: ") and f"/{subjects} subjects linked" in line
    linked = int(line.split()[1].split("/")[0])
    assert 0 < linked < subjects  # a 206-page sample covers only a few subjects
    counts = dict(part.split("=") for part in line.split(") ")[1].split())
    assert sum(int(v) for v in counts.values()) == linked and int(counts["title"]) > 0


def test_search_cli(w2v, emb, capsys):
    from bridge.cli import main

    main(["entities", "search", "Alaska", "--wikipedia2vec", str(w2v), "-k", "3"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    v = emb.entity_vectors
    scores = v @ v[emb.entity_row("Alaska")]
    scores[emb.entity_row("Alaska")] = -np.inf
    best = emb.titles[int(np.argmax(scores))]
    assert lines[0].split(None, 1)[1] == best


def test_search_prints_k_answers_with_their_inner_products(tmp_path, capsys):
    """TITLE need not be its own nearest by inner product (mapped vectors): still exactly k lines, scores as numpy's."""
    from bridge.cli import main
    from lm.entities.embeddings import EntityEmbeddings, save_npz

    vectors = np.array([[1, 0], [3, 0], [2, 0], [1.5, 0], [0, 1]], np.float32) * 1e-4  # a small dump's scale
    titles = ["Foo", "Bar", "Qux", "Zed", "Baz"]
    path = save_npz(EntityEmbeddings([], np.zeros((0, 2), np.float32), titles, vectors, False), tmp_path / "e.npz")
    main(["entities", "search", "Foo", "--wikipedia2vec", str(path), "-k", "2"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(None, 1)[1] for line in lines] == ["Bar", "Qux"]
    want = vectors.astype(np.float64) @ vectors[0].astype(np.float64)
    assert [float(line.split()[0]) for line in lines] == pytest.approx([want[1], want[2]], rel=1e-5)


def test_search_with_a_map_of_other_vectors_is_one_error_line(tmp_path, capfd):
    from bridge.cli import main
    from lm.entities.embeddings import EntityEmbeddings, save_npz
    from lm.entities.mapping import LinearMap

    vectors = np.eye(3, dtype=np.float32)
    path = save_npz(EntityEmbeddings([], np.zeros((0, 3), np.float32), ["A", "B", "C"], vectors, False),
                    tmp_path / "e.npz")
    LinearMap(np.ones((16, 4), np.float32), "lstsq", 0.5, 100, {}).save(tmp_path / "m.npz")
    with pytest.raises(SystemExit) as stop:
        main(["entities", "search", "A", "--wikipedia2vec", str(path), "--map", str(tmp_path / "m.npz")])
    err = capfd.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1
    assert err[0].startswith(f"error: --map {tmp_path / 'm.npz'} maps 16-d vectors, but {path} holds 3-d ones")


@pytest.mark.parametrize("kind", ["lstsq", "procrustes"])
def test_map_cli_fits_saves_and_reloads(w2v, emb, shared_data, tmp_path, capsys, kind):
    from test_entities_support import tiny_bert

    from bridge.cli import main
    from lm.entities.mapping import LinearMap

    out = tmp_path / f"{kind}.npz"
    main(["entities", "map", "--model", str(tiny_bert(shared_data)), "--wikipedia2vec", str(w2v), "--kind", kind,
          "--out", str(out)])
    line = capsys.readouterr().out.strip()
    lmap = LinearMap.load(out)
    assert line.startswith(f"{kind} map {W2V_DIM}->{W2V_DIM} on {lmap.n_words} shared words: R2=")
    assert 1000 < lmap.n_words <= len(emb.words)
    if kind == "procrustes":
        assert np.allclose(lmap.W.T @ lmap.W, np.eye(W2V_DIM), atol=1e-4)


def test_link_graph_has_a_row_for_every_entity(w2v, tmp_path):
    """The library drops the rows of trailing unlinked entities; training then fails at random."""
    import shutil

    from wikipedia2vec.dictionary import Dictionary
    from wikipedia2vec.link_graph import LinkGraph

    from lm.entities.train import _complete_link_graph

    stem = w2v.parent / w2v.stem
    dictionary = Dictionary.load(f"{stem}_dic.pkl")
    graph = LinkGraph.load(f"{stem}_lg.pkl", dictionary, mmap=False)
    n = dictionary.entity_size
    assert len(graph._indptr) == n + 1  # completed during training
    short = tmp_path / "lg.pkl"
    LinkGraph(dictionary, graph._indices, graph._indptr[: n - 2], graph.build_params, graph.uuid).save(str(short))
    shutil.copy(f"{stem}_dic.pkl", tmp_path / "dic.pkl")
    _complete_link_graph(short, tmp_path / "dic.pkl")
    fixed = LinkGraph.load(str(short), dictionary, mmap=False)
    assert len(fixed._indptr) == n + 1
    last = dictionary.entity_offset + n - 1
    assert len(fixed.neighbor_indices(last)) == 0
    first = dictionary.entity_offset
    assert list(fixed.neighbor_indices(first)) == list(graph.neighbor_indices(first))


def test_a_rerun_with_other_settings_rebuilds_what_they_change(shared_data, tmp_path, caplog):
    """A finished step is reused only for the settings it was built with: --dim 4 after --dim 8 gives 4."""
    from lm.entities.train import TrainSettings, train

    dump = first_pages(shared_data / DUMP, 30, tmp_path / "first30.xml.bz2")
    out = tmp_path / "w2v" / "m.pkl"

    def run(**changed) -> tuple:
        base = {"dim": 8, "iterations": 1, "word_neg_power": 0.0, "min_entity_count": 1, "link_graph": False}
        emb = load_embeddings(train(dump, out, TrainSettings(**{**base, **changed}, pool_size=1)))
        return emb.dim, len(emb.titles)

    first = run()
    dic = os.path.getmtime(tmp_path / "w2v" / "m_dic.pkl")
    assert run() == first
    assert run(dim=4) == (4, first[1])
    assert os.path.getmtime(tmp_path / "w2v" / "m_dic.pkl") == dic  # the dictionary did not depend on --dim
    assert "dim 8 -> 4" in caplog.text
    assert run(dim=4, min_entity_count=3)[1] < first[1]


@pytest.mark.parametrize(("flag", "value"), [("--dim", "0"), ("--dim", "-5"), ("--iterations", "0"),
                                             ("--negative", "-1"), ("--pool-size", "0")])
def test_train_refuses_sizes_below_one_before_building_anything(shared_data, tmp_path, capfd, flag, value):
    """--dim 0 once wrote a model of empty vectors, --dim -5 and --iterations 0 ended in the library's traceback."""
    from bridge.cli import main

    dump = first_pages(shared_data / DUMP, 30, tmp_path / "first30.xml.bz2")
    with pytest.raises(SystemExit) as stop:
        main(["entities", "train", str(dump), "--out", str(tmp_path / "w2v" / "m.pkl"), "--word-neg-power", "0",
              "--min-entity-count", "1", "--no-link-graph", *(["--pool-size", "1"] if flag != "--pool-size" else []),
              flag, value])
    err = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert (stop.value.code, err) == (2, [f"error: Invalid value for '{flag}': {value} is not in the range x>=1. "
                                          "(see `kbc entities train --help`)"])
    assert not (tmp_path / "w2v").exists()


def test_a_dump_without_links_between_its_entities_is_one_error_line(shared_data, tmp_path, capfd):
    """The first 30 pages of the sample link to no entity of their dictionary: the link graph cannot be built, and
    training says so in one line (with the fix) instead of scipy's traceback."""
    from bridge.cli import main

    dump = first_pages(shared_data / DUMP, 30, tmp_path / "first30.xml.bz2")
    with pytest.raises(SystemExit) as stop:
        main(["entities", "train", str(dump), "--out", str(tmp_path / "w2v" / "m.pkl"), "--dim", str(W2V_DIM),
              "--iterations", "1", "--word-neg-power", "0", "--min-entity-count", "1", "--pool-size", "2"])
    err = [line for line in capfd.readouterr().err.splitlines()
           if line.strip() and not line.startswith("[") and "it/s" not in line]  # less its log and progress
    assert (stop.value.code, err) == (2, [
        f"error: {dump}: no page links to another entity of its dictionary, so there is no link graph to train "
        "with; use a larger dump, or --no-link-graph"])


def _wait(ready) -> None:
    ready.set()
    time.sleep(60)


@pytest.mark.parametrize("handler", ["kbc's", "holding"])
def test_a_process_a_command_forks_ends_on_sigterm_without_a_traceback(capfd, handler):
    """wikipedia2vec terminates its pool of workers (SIGTERM) at the end of every step: a worker forked while kbc
    takes SIGTERM as Ctrl-C would print a KeyboardInterrupt traceback, and one forked under a handler that holds the
    signal (a served model's response being kept) would not end, its pool waiting for it forever."""
    import multiprocessing
    import signal

    from bridge.cli import sigterm_as_interrupt
    from lm.served import interrupts_held

    forked = multiprocessing.get_context("fork")
    with sigterm_as_interrupt() if handler == "kbc's" else interrupts_held():
        ready = forked.Event()
        child = forked.Process(target=_wait, args=(ready,))
        child.start()
        assert ready.wait(20)
        os.kill(child.pid, signal.SIGTERM)
        child.join(timeout=10)
        alive = child.is_alive()
        if alive:
            child.kill()
            child.join()
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL  # the command's own handling stays
    assert (alive, child.exitcode) == (False, -signal.SIGTERM) and "Traceback" not in capfd.readouterr().err
