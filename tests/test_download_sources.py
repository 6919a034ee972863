"""The pinned source table: every pin is the staged copy's size and SHA-256, at the upstream path and commit that
`PROVENANCE.tsv` names, and every corpus lands where its loader looks."""

from __future__ import annotations

import csv
import hashlib

from eval.sources import BY_NAME, RAW, SOURCES

# staged files whose provenance is in their folder's own SOURCES.md rather than PROVENANCE.tsv
OWN_NOTES = {f"tokenizers/{p}" for p in ("bert-base-cased/vocab.txt", "bert-base-uncased/vocab.txt", "gpt2/vocab.json",
                                          "gpt2/merges.txt", "roberta-base/vocab.json", "roberta-base/merges.txt")}
OWN_NOTES.add("wikipedia/enwiki-sample-206-pages.xml.bz2")


def test_every_pin_is_the_staged_copy(shared_data):
    for source in SOURCES:
        for pinned in source.files():
            data = (shared_data / pinned.dest).read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (pinned.size, pinned.sha256), pinned.dest


def test_every_url_is_the_upstream_path_at_its_commit(shared_data):
    with (shared_data / "PROVENANCE.tsv").open() as handle:
        rows = {r["path"]: r for r in csv.DictReader(handle, delimiter="\t")}
    pinned = {f.dest: f.url for s in SOURCES for f in s.files()}
    for dest, url in pinned.items():
        if dest in OWN_NOTES:
            continue
        row = rows[dest]
        assert url == f"{RAW}/{row['source_repo']}/{row['commit']}/{row['source_path']}"
    assert OWN_NOTES <= set(pinned)
    assert pinned["wikipedia/enwiki-sample-206-pages.xml.bz2"] == (
        f"{RAW}/piskvorky/gensim/a3e8a3fafc48554f03d21831d7b5bbf782e7c4ec/gensim/test/test_data/"
        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")


def test_counts_sizes_and_places():
    counts = {s.name: (len(s.files()), s.size, s.where) for s in SOURCES}
    assert counts == {
        "lama": (3, 458_697, "lama"),
        "bear": (64, 1_434_107, "bear"),
        "bear-big": (80, 5_620_092, "bear"),
        "lmkbc2024": (4, 199_704, "lmkbc2024"),
        "negated-lama": (134, 9_721_338, "negated_misprimed_lama"),
        "pararel": (39, 39_016, "pararel/patterns"),
        "autoprompt": (16, 104_544, "prompts"),
        "lpaqa": (142, 230_548, "prompts"),
        "coherency-prompts": (1, 12_934, "prompts/coherency"),
        "autoprompt-trex-splits": (82, 3_692_546, "autoprompt_trex_splits"),
        "xfactr": (3, 3_110_334, "xfactr"),
        "fewrel": (3, 3_615_487, "fewrel"),
        "tokenizers": (6, 3_298_718, "tokenizers"),
        "wikipedia-sample": (1, 1_695_871, "wikipedia"),
    }
    assert BY_NAME["lama"].archive.url == "https://dl.fbaipublicfiles.com/LAMA/data.zip"


def test_a_place_shared_by_two_corpora_holds_one_pin():
    seen: dict[str, tuple[str, str]] = {}
    shared = set()
    for source in SOURCES:
        for f in source.files():
            if f.dest in seen:
                shared.add(f.dest)
                assert seen[f.dest] == (f.url, f.sha256)
            seen[f.dest] = (f.url, f.sha256)
    assert shared == {"bear/relation_info.json"}
