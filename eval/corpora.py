"""Every corpus by name: LAMA's (`eval.lama`), those derived from them (LAMA-UHN, `eval.uhn`), BEAR (`eval.bear`) and
LM-KBC 2024 (`eval.lmkbc`: set-valued answers, asked by `kbc run lmkbc` only) and negated/misprimed LAMA
(`eval.negated`, asked by `kbc run negated` only).

The one place a corpus name is resolved, so each loader module stays below it and none imports another's dispatcher.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from eval.bear import BEAR_CORPORA, load_bear, resolve_bear_dir
from eval.datadir import lama_in, resolve_data_dir
from eval.errors import DataError
from eval.fewrel import CORPUS as FEWREL
from eval.fewrel import load_fewrel, resolve_fewrel_dir
from eval.lama import LAMA_CORPORA, LOADERS, Corpus, source_files
from eval.lmkbc import CORPUS as LMKBC
from eval.lmkbc import load_lmkbc, resolve_lmkbc_dir
from eval.negated import PROBE_CORPORA, probe_corpus, resolve_negated_dir
from eval.relations import select_relations
from eval.snapshot import cached_corpus, cached_outline
from eval.uhn import UHN_CORPORA, load_uhn_corpus

CORPORA = (*LAMA_CORPORA, *UHN_CORPORA, *BEAR_CORPORA, LMKBC, *PROBE_CORPORA, FEWREL)
SET_CORPORA = (LMKBC,)  # a gold *set* per subject and relation (`SetFact`), scored by set P/R/F1


def resolve_run_data_dir(corpora: Iterable[str], data_dir: str | Path | None = None) -> Path:
    """The data directory of a run, from which each loader finds what it finds from `data_dir`: the LAMA copy; for
    BEAR corpora alone the folder holding them; for FewRel its folder; for LM-KBC and negated LAMA the folder
    holding them (whatever its name, as `kbc data stats` reads it), or the LAMA copy (in `data_dir` or beside that
    folder) where their loader finds the same folder from it, as LMs read the common vocabulary there."""
    names = list(corpora)
    if names and all(n in BEAR_CORPORA for n in names):
        return resolve_bear_dir(names[0], data_dir).parent
    if names and all(n == FEWREL for n in names):
        return resolve_fewrel_dir(data_dir)
    if names and all(n in SET_CORPORA or n in PROBE_CORPORA for n in names):
        resolve = resolve_negated_dir if names[0] in PROBE_CORPORA else resolve_lmkbc_dir
        lama = _finds(resolve_data_dir, data_dir)
        root = _finds(resolve, data_dir) or resolve(data_dir if lama is None else lama)  # else: where it looked
        for cand in (lama, lama_in(root.parent)):
            if cand is not None and _finds(resolve, cand) == root:
                return cand
        return root
    return resolve_data_dir(data_dir)


def _finds(resolve, data_dir: Path) -> Path | None:
    """The folder `resolve` finds from `data_dir`, or None where it finds none."""
    try:
        return resolve(data_dir)
    except DataError:
        return None


def load_corpus(name: str, data_dir: str | Path | None = None, relations: Iterable[str] | None = None,
                compat: str | None = None, name_ranker=None, template: int = 0,
                cache_dir: str | Path | None = None, split: str = "val") -> Corpus:
    """Load a corpus; `compat="lama"` applies LAMA's Google-RE judgment rule (see `load_google_re`).

    `trex-uhn` / `google_re-uhn` are LAMA-UHN (`eval.uhn`), built on first use into the cache: the
    string-match filter, plus the person-name filter when `name_ranker` (an `eval.uhn.NameRanker`) is given.
    `bear` / `bear-big` (`eval.bear`) ask each relation's `template`-th template. Snapshots and LAMA-UHN data go
    under `cache_dir` (a run's), else the default cache root. `split`: LM-KBC's (train, val or a file).
    """
    if name in UHN_CORPORA:
        return load_uhn_corpus(name, data_dir, relations, compat, name_ranker, cache_dir)
    if name in BEAR_CORPORA:
        return load_bear(name, data_dir, relations, template)
    if name == LMKBC:
        return load_lmkbc(data_dir, split, relations)
    if name in PROBE_CORPORA:
        return probe_corpus(name, data_dir, relations)
    if name == FEWREL:
        corpus = load_fewrel(data_dir)
        if relations:
            corpus.keep_relations(select_relations(corpus.relations, list(relations), "FewRel"))
        return corpus
    try:
        loader = LOADERS[name]
    except KeyError:
        raise DataError(f"unknown corpus {name!r}{close_hint(name, CORPORA)}; choose from {', '.join(CORPORA)}"
                        ) from None
    options = {"compat": compat} if name == "google_re" and compat else {}
    if relations:
        return loader(data_dir, relations, **options)
    root = resolve_data_dir(data_dir)  # a whole LAMA corpus: from its snapshot when the data files are unchanged
    return cached_corpus(name, root, options, lambda: source_files(name, root), lambda: loader(root, None, **options),
                         cache_dir)


def corpus_outline(name: str, data_dir: str | Path | None = None) -> tuple[Corpus, int]:
    """A whole corpus less its facts (relations, load reports, files, version) and its number of facts: read from
    its snapshot without decoding the facts where there is a current one, else loaded in full."""
    if name in LOADERS:
        root = resolve_data_dir(data_dir)
        found = cached_outline(name, root, {}, lambda: source_files(name, root))
        if found is not None:
            return found
    corpus = load_corpus(name, data_dir)
    return corpus, len(corpus.facts)


def close_hint(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the known name closest to a mistyped one, else nothing."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
