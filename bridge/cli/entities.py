"""`kbc entities train|convert|map|link-stats|search`: wikipedia2vec vectors and the E-BERT map from the shell.

Vectors are read from `.npz` or word2vec text only: a `.pkl` is a pickle, which runs any code it
holds when loaded, so it is refused with a pointer to `kbc entities convert --trust-pickle`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from bridge.cli.index import MAX_K
from bridge.cli.options import data_dir_option
from bridge.cli.value_types import Float, IntRange, PathType
from eval.errors import ConfigError


def _outside_data(out: str | Path) -> None:
    """Refuse an output file inside a data folder (an input, often shared), before any work."""
    from eval.out_folders import refuse_in_data

    refuse_in_data(out, "; write it outside the data")


def _map_or_new(out: str) -> None:
    """`kbc entities map --out` may be a new file or a map written before, nothing else: the command overwrites only
    its own outputs (as `kbc leaderboard --out` does)."""
    from eval.errors import DataError
    from lm.entities.mapping import LinearMap

    if not Path(out).exists():
        return
    try:
        LinearMap.load(out)
    except DataError:
        raise ConfigError(f"--out {out} exists and is not an entity map; `kbc entities map` overwrites only its own "
                          "outputs: name a new file") from None


@click.group()
def entities() -> None:
    """Entity embeddings: train wikipedia2vec, fit the E-BERT map, link subjects, search entities."""


@entities.command("train", short_help="Train wikipedia2vec on a bz2 Wikipedia dump.")
@click.argument("dump", type=PathType(dir_okay=False))
@click.option("--out", required=True, type=PathType(dir_okay=False),
              help="Model file (.pkl, the library's pickle; the .npz to use is written beside it).")
@click.option("--dim", type=IntRange(min=1), default=768, show_default=True,
              help="E-BERT: equal to the LM's hidden size.")
@click.option("--iterations", type=IntRange(min=1), default=5, show_default=True)
@click.option("--window", type=IntRange(min=1), default=5, show_default=True)
@click.option("--negative", type=IntRange(min=1), default=5, show_default=True)
@click.option("--word-neg-power", type=Float(), default=0.75, show_default=True,
              help="0 = uniform negative table (seconds instead of minutes on small dumps).")
@click.option("--entity-neg-power", type=Float(), default=0.0, show_default=True)
@click.option("--min-word-count", type=IntRange(min=0), default=5, show_default=True)
@click.option("--min-entity-count", type=IntRange(min=0), default=5, show_default=True,
              help="Entities with fewer links are left out (1 keeps every entity of a small dump).")
@click.option("--lowercase/--no-lowercase", default=False, show_default=True, help="E-BERT uses cased words.")
@click.option("--link-graph/--no-link-graph", default=True, show_default=True)
@click.option("--pool-size", type=IntRange(min=1), default=None, help="Worker processes (default: all cores).")
def train(dump, out, dim, iterations, window, negative, word_neg_power, entity_neg_power, min_word_count,
          min_entity_count, lowercase, link_graph, pool_size) -> None:
    """Train wikipedia2vec on a bz2 Wikipedia DUMP (resumes: finished steps are skipped)."""
    from lm.entities.embeddings import load_embeddings
    from lm.entities.train import TrainSettings
    from lm.entities.train import train as train_

    settings = TrainSettings(dim=dim, iterations=iterations, window=window, negative=negative,
                             word_neg_power=word_neg_power, entity_neg_power=entity_neg_power,
                             min_word_count=min_word_count, min_entity_count=min_entity_count,
                             lowercase=lowercase, link_graph=link_graph)
    if pool_size:
        settings.pool_size = pool_size
    if not out.endswith((".pkl", ".npz")):
        raise ConfigError(f"--out {out}: name the model file .pkl (the .npz is written beside it)")
    _outside_data(out)
    path = train_(dump, out, settings)
    click.echo(f"wrote {path}: {json.dumps(load_embeddings(path).describe())}")


@entities.command("convert", short_help="A wikipedia2vec .pkl into the .npz the tools read.")
@click.argument("model", type=PathType(dir_okay=False))
@click.option("--out", type=PathType(dir_okay=False), default=None,
              help="The .npz to write (default: MODEL with .npz instead of .pkl).")
@click.option("--trust-pickle", is_flag=True,
              help="Load MODEL although it is a pickle (it can run any code it holds): only for files you trust.")
def convert(model, out, trust_pickle) -> None:
    """Convert a wikipedia2vec .pkl (and the .db and _mention.pkl beside it) into the .npz the tools read."""
    from lm.entities.convert import convert as convert_
    from lm.entities.embeddings import load_embeddings

    _outside_data(out or Path(model).with_suffix(".npz"))
    path = convert_(model, out, trust_pickle=trust_pickle)
    emb = load_embeddings(path)
    links = emb.links
    extra = f", {len(links.redirects)} redirects, {len(links.mentions)} mention texts" if links else ""
    click.echo(f"wrote {path}: {len(emb.words)} words, {len(emb.titles)} entities, dim {emb.dim}{extra}")


@entities.command("map", short_help="Fit the E-BERT map W; report R².")
@click.option("--model", required=True, help="Masked LM (local directory or hub id).")
@click.option("--wikipedia2vec", "w2v", required=True, type=PathType(dir_okay=False))
@click.option("--kind", type=click.Choice(["lstsq", "procrustes"]), default="lstsq", show_default=True)
@click.option("--out", required=True, type=PathType(dir_okay=False), help="Where to save the map (.npz).")
def map_(model, w2v, kind, out) -> None:
    """Fit the E-BERT map W on words that are whole tokens in both vocabularies; report R²."""
    from lm.entities.embeddings import load_embeddings
    from lm.entities.mapping import fit_to_embeddings
    from lm.entities.model import load_masked_lm

    _outside_data(out)
    _map_or_new(out)
    emb = load_embeddings(w2v)
    lm = load_masked_lm(model)
    lmap = fit_to_embeddings(emb.word_vectors, emb.words, emb.lowercase, lm.tokenizer.get_vocab(),
                             lm.input_embeddings(), kind, {"model": model, "wikipedia2vec": w2v})
    lmap.save(out)
    click.echo(f"{kind} map {lmap.W.shape[0]}->{lmap.W.shape[1]} on {lmap.n_words} shared words: "
               f"R2={lmap.r2:.4f} (no intercept: below 0 fits worse than the mean vector); saved {out}")


@entities.command("link-stats", short_help="Subjects with an entity vector, by linking method.")
@click.option("--wikipedia2vec", "w2v", required=True, type=PathType(dir_okay=False))
@click.option("--corpus", "corpora", multiple=True, default=("trex", "google_re"), show_default=True)
@data_dir_option
@click.option("--titles", type=PathType(dir_okay=False), help="Q-id<TAB>title TSV.")
@click.option("--redirects", type=PathType(dir_okay=False), help="Dump DB or source<TAB>target TSV.")
@click.option("--mentions", type=PathType(dir_okay=False),
              help="text<TAB>title<TAB>commonness TSV (default: the table in the .npz).")
def link_stats(w2v, corpora, data_dir, titles, redirects, mentions) -> None:
    """Subjects of each corpus with an entity vector, by linking method (E-BERT: Google-RE 54%, T-REx >98%)."""
    from eval.corpora import load_corpus
    from eval.datadir import resolve_data_dir
    from lm.entities.embeddings import load_embeddings
    from lm.entities.linking import build_linker, coverage

    emb = load_embeddings(w2v)
    linker = build_linker(emb, titles, redirects, mentions)
    root = resolve_data_dir(data_dir)
    for name in _split(corpora):
        corpus = load_corpus(name, root)
        cov = coverage(linker, (f.subject for f in corpus.facts)).to_dict()
        click.echo(f"{name}: {cov['linked']}/{cov['subjects']} subjects linked ({cov['coverage_percent']}%) "
                   + " ".join(f"{k}={cov[k]}" for k in ("wikidata", "title", "redirect", "mention")))


@entities.command("search", short_help="Nearest entities to TITLE by inner product.")
@click.argument("title")
@click.option("--wikipedia2vec", "w2v", required=True, type=PathType(dir_okay=False))
@click.option("--map", "map_path", type=PathType(dir_okay=False), help="Search mapped vectors (LM space).")
@click.option("--index", "kind", type=click.Choice(["flat", "ivf", "hnsw"]), default="flat", show_default=True)
@click.option("-k", type=IntRange(1, MAX_K), default=10, show_default=True, help="Number of results.")
def search(title, w2v, map_path, kind, k) -> None:
    """Nearest entities to TITLE by inner product (wikipedia2vec space, or LM space with --map)."""
    from lm.entities.embeddings import load_embeddings
    from lm.entities.entity_answers import mapped_entities
    from lm.entities.faiss_index import EntityIndex, IndexSpec
    from lm.entities.mapping import LinearMap

    emb = load_embeddings(w2v)
    row = emb.entity_row(title)
    if row is None:
        raise ConfigError(f"{title!r} is not an entity of {w2v} (titles are Wikipedia page titles)")
    vectors = emb.entity_vectors
    if map_path:
        W = LinearMap.load(map_path).W
        if W.shape[0] != emb.dim:
            raise ConfigError(f"--map {map_path} maps {W.shape[0]}-d vectors, but {w2v} holds {emb.dim}-d ones; fit "
                              f"a map on these vectors: `kbc entities map --wikipedia2vec {w2v} ...`")
        vectors = mapped_entities(vectors, W)
    index = EntityIndex.build(vectors, IndexSpec(kind))
    scores, rows = index.search(vectors[row], k + 1)  # one more: TITLE itself is left out
    found = [(score, r) for score, r in zip(scores[0], rows[0]) if r >= 0 and r != row][:k]
    for score, r in found:  # significant digits: a small dump's inner products can all be below 1e-3
        click.echo(f"{score:12.6g}  {emb.titles[r]}")


def _split(values) -> list[str]:
    return list(dict.fromkeys(v for value in values for v in value.split()))
