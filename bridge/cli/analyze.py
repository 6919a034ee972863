"""`kbc analyze stats|correlation|evidence RUN_DIR`: per-fact statistics, correlations, evidence ranks.

Everything is written under `RUN/analysis/`; the prediction files of the run are only read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from bridge.cli.index import backend_option, index_option
from bridge.cli.options import (
    batch_size_option,
    data_dir_option,
    device_option,
    es_timeout,
    es_url_option,
    show_progress,
    store_option,
    store_settings,
)
from bridge.cli.value_types import Int, IntRange, PathType
from eval.cells import count_of
from eval.datadir import ENV_VAR
from eval.errors import ConfigError, DataError, KbcError


def _text_index(location: str | None, backend: str, es_url: str | None):
    """The text index for SM/OM/co-occurrence, or a one-line error saying how to build it."""
    from bridge.cli.index import _location
    from kb.text.index import open_index

    where = _location(location, backend)
    build = f"kbc index build --out {where}" + (" --backend elasticsearch" if backend == "elasticsearch" else "")
    if not os.environ.get(ENV_VAR):  # without it the build reads ./data/lama
        build += " --data-dir LAMA_DATA_FOLDER"
    hint = f"build it with `{build}` (the LAMA evidence paragraphs) or pass --index"
    if backend == "tantivy" and not (Path(where) / "CURRENT").exists():
        raise ConfigError(f"the co-occurrence statistics need a text index and there is none at {where}; {hint}")
    try:
        index = open_index(backend, where, es_url, es_timeout())
        len(index)
    except DataError as exc:  # a damaged index: its message already names the command that rebuilds it
        raise ConfigError(f"the co-occurrence statistics need a text index: {exc}") from None
    except KbcError as exc:
        text = str(exc).lower()
        if "not_found" not in text and "no such index" not in text:
            raise
        raise ConfigError(f"the co-occurrence statistics need a text index and there is none named {where} "
                          f"at {es_url}; {hint}") from None
    return index


def stat_options(command):
    options = [
        index_option, backend_option, es_url_option, data_dir_option,
        click.option("--tokenizer", type=PathType(file_okay=False), default=None,
                     help="Tokenizer folder for SWP (default: the run's first masked LM, else "
                          "bert-base-cased from the shared tokenizers beside the data)."),
        click.option("--embeddings", type=PathType(file_okay=False), default=None,
                     help="A language model folder (masked or causal): SOCS from its input embeddings."),
        click.option("--wikipedia2vec", type=PathType(dir_okay=False), default=None,
                     help="wikipedia2vec vectors (.npz or text): SOCS from entity vectors."),
        click.option("--quiet", is_flag=True, help="No progress bars."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def compute_stats(run_dir: Path, location, backend, es_url, data_dir, tokenizer, embeddings, wikipedia2vec,
                  quiet: bool) -> tuple[float, int, bool]:
    """Write `fact_stats.parquet` and refresh `instances.parquet` (`write_fact_stats`); (seconds, facts, whether
    the table was written)."""
    from bridge.analysis import stats as st
    from bridge.run import fact_columns as fc
    from bridge.run.attempts import rerun_hint
    from bridge.run.directory import open_run

    frame = st.run_instances(run_dir)
    config = open_run(run_dir).config
    if embeddings and wikipedia2vec:
        raise ConfigError("--embeddings and --wikipedia2vec both give SOCS; pass one")
    # the models first, so a wrong --tokenizer or --embeddings fails before the index is opened
    tok_path = Path(tokenizer) if tokenizer else st.default_tokenizer(config, data_dir)
    tok = st.load_tokenizer(tok_path) if tok_path is not None else None
    vectors = st.InputEmbeddings(embeddings) if embeddings else \
        st.Wikipedia2vecVectors(wikipedia2vec) if wikipedia2vec else None
    index = _text_index(location, backend, es_url)
    if tok_path is None:
        click.echo("note: SWP left out: no tokenizer found; pass --tokenizer DIR", err=True)
    if vectors is None:
        click.echo("note: SOCS left out: pass --embeddings MODEL_DIR or --wikipedia2vec VECTORS", err=True)
    start = time.perf_counter()
    facts = st.run_facts(run_dir, frame, data_dir)
    stats = st.fact_stats_frame(facts, index, tok, vectors, progress=show_progress(quiet))
    seconds = time.perf_counter() - start
    index.close()
    kept = st.write_fact_stats(run_dir, stats)
    if kept is not None:
        click.echo(f"note: {run_dir / 'instances.parquet'} is left without the statistic columns: {kept}; "
                   f"{rerun_hint(config, run_dir)} to score it again (with them)", err=True)
    unrecorded = st.unrecorded_predictors(frame, config)
    if unrecorded:
        click.echo(f"note: LPFP is null for {', '.join(unrecorded)}: the run has not finished (its config.json "
                   f"does not record what kind of predictor it is); {rerun_hint(config, run_dir)} to finish it",
                   err=True)
    elif not any(fc.log_prob_predictors(config).values()):
        click.echo("note: LPFP is null for every predictor: none scores answers by log-probability (LMs do)",
                   err=True)
    return seconds, len(stats), kept is None


@click.group()
def analyze() -> None:
    """Per-fact statistics of a run and what they say about accuracy (LAMA §5, KMIR Fig. 2)."""


@analyze.command("stats", short_help="Per-fact SM, OM, co-occurrence, ST, SWP, SOCS; LPFP.")
@click.argument("run_dir", type=PathType())
@stat_options
def stats_cmd(run_dir, location, backend, es_url, data_dir, tokenizer, embeddings, wikipedia2vec, quiet) -> None:
    """SM, OM, co-occurrence (paragraphs, sentences), ST, SWP, SOCS per fact; LPFP per LM prediction.

    \b
    Example:
      kbc index build
      kbc analyze stats runs/lama --tokenizer ../shared/data/tokenizers/bert-base-cased
    """
    from bridge.run.fact_columns import FACT_STATS, analysis_dir

    run_dir = Path(run_dir)
    seconds, n, table = compute_stats(run_dir, location, backend, es_url, data_dir, tokenizer, embeddings,
                                      wikipedia2vec, quiet)
    click.echo(f"{count_of(n, 'facts')} in {seconds:.1f} s ({n / max(seconds, 1e-9):.0f} facts/s)")
    click.echo(f"written: {analysis_dir(run_dir) / FACT_STATS}"
               + (f", {run_dir / 'instances.parquet'} (stat columns)" if table else ""))


def _check_compared(run_dir: Path, compare: tuple[str, ...]) -> None:
    from bridge.analysis.stats import check_lama_run
    from bridge.run.directory import open_run

    run = open_run(run_dir)
    check_lama_run(run_dir, run.config)
    for other_dir in compare:
        other = open_run(other_dir)
        check_lama_run(Path(other_dir), other.config, "--compare")
        if sorted(other.corpora) != sorted(run.corpora):
            raise ConfigError(f"--compare {other_dir}: its corpora ({', '.join(other.corpora)}) differ from "
                              f"{run_dir}'s ({', '.join(run.corpora)}); compare runs over the same corpora")


def _with_compared(run_dir: Path, frame, compare: tuple[str, ...]):
    """The run's table plus the predictors of other runs over the same corpora, with this run's statistics."""
    import pandas as pd

    from bridge.analysis.stats import run_instances
    from bridge.run.directory import open_run
    from bridge.run.fact_columns import with_fact_stats

    if not compare:
        return frame
    _check_compared(run_dir, compare)
    frames = [frame]
    names = set(frame["predictor"].unique())
    for other_dir in compare:
        other = open_run(other_dir)
        theirs = with_fact_stats(run_instances(Path(other_dir)), run_dir, other.config)
        rename = {p: f"{p} ({Path(other_dir).name})" for p in theirs["predictor"].unique() if p in names}
        theirs = theirs.assign(predictor=theirs["predictor"].replace(rename))
        names |= set(theirs["predictor"].unique())
        frames.append(theirs)
    return pd.concat(frames, ignore_index=True)


def _fmt(value, p) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f} (p {p:.2g})" if p else f"{value:+.3f} (p <1e-300)"


@analyze.command("correlation", short_help="P@1 and rank against each statistic; binned P@1.")
@click.argument("run_dir", type=PathType())
@click.option("--statistic", "statistics", multiple=True,
              help="Only these statistics (sm om cooc_paragraphs cooc_sentences st swp socs lpfp).")
@click.option("--setting", type=click.Choice(["raw", "filtered"]), default="raw", show_default=True,
              help="Setting printed (both are written).")
@click.option("--target", type=click.Choice(["p@1", "rr"]), default="p@1", show_default=True,
              help="Target printed (both are written).")
@click.option("--compare", multiple=True, type=PathType(),
              help="Other run directories over the same corpora whose predictors join the table.")
@click.option("--recompute", is_flag=True, help="Compute the statistics again even if they exist.")
@stat_options
def correlation_cmd(run_dir, statistics, setting, target, compare, recompute, location, backend, es_url, data_dir,
                    tokenizer, embeddings, wikipedia2vec, quiet) -> None:
    """Pearson and Spearman of per-fact P@1 and reciprocal rank with each statistic (LAMA Fig. 3), and
    P@1 in log-spaced co-occurrence and popularity bins (KMIR Fig. 2), every predictor side by side.

    \b
    Writes RUN/analysis/correlation.json and bins.json.
    """
    from bridge.analysis import correlation as corr
    from bridge.analysis import stats as st
    from bridge.run import fact_columns as fc
    from bridge.run.directory import open_run
    from bridge.run.freshness import check_readable

    run_dir = Path(run_dir)
    for path in (run_dir, *map(Path, compare)):  # the correctness correlated is of the records each run scored
        check_readable(path, open_run(path).config, records_only=True)
    wanted = list(dict.fromkeys(v for value in statistics for v in value.replace(",", " ").split()))
    unknown = [s for s in wanted if s not in st.STATISTICS]
    if unknown:
        raise ConfigError(f"unknown statistic {unknown[0]!r}; choose from {', '.join(st.STATISTICS)}")
    frame = st.run_instances(run_dir)
    _check_compared(run_dir, tuple(compare))
    if recompute or not st.covers(fc.read_fact_stats(run_dir), frame):
        seconds, n, _ = compute_stats(run_dir, location, backend, es_url, data_dir, tokenizer, embeddings,
                                      wikipedia2vec, quiet)
        click.echo(f"statistics: {count_of(n, 'facts')} in {seconds:.1f} s", err=True)
    frame = fc.with_fact_stats(st.run_instances(run_dir), run_dir)
    frame = _with_compared(run_dir, frame, tuple(compare))
    have = st.available(frame)
    chosen = [s for s in (wanted or have) if s in have]
    for s in wanted:
        if s not in have:
            click.echo(f"note: {s} has no values in this run (left out)", err=True)
    rows = corr.correlations(frame, chosen)
    binned = corr.bins(frame, [s for s in chosen if s in corr.BINNED])
    out = fc.analysis_dir(run_dir)
    st.atomic_json(rows, out / "correlation.json")
    st.atomic_json(binned, out / "bins.json")
    for (corpus, predictor) in dict.fromkeys((r["corpus"], r["predictor"]) for r in rows):
        click.echo(f"\n{corpus} / {predictor}: {target} ({setting}) against each statistic")
        click.echo(f"  {'statistic':<16}{'n':>7}  {'pearson':<22}{'spearman':<22}")
        mine = [r for r in rows if r["corpus"] == corpus and r["predictor"] == predictor
                and r["setting"] == setting and r["target"] == target]
        for stat in dict.fromkeys(r["statistic"] for r in mine):
            by = {r["method"]: r for r in mine if r["statistic"] == stat}
            n = by["pearson"]["n"]
            click.echo(f"  {stat:<16}{n:>7}  {_fmt(by['pearson']['coefficient'], by['pearson']['p_value']):<22}"
                       f"{_fmt(by['spearman']['coefficient'], by['spearman']['p_value']):<22}")
    click.echo(f"\nwritten: {out / 'correlation.json'}, {out / 'bins.json'}")


@analyze.command("evidence", short_help="Each fact asked once per evidence sentence.")
@click.argument("run_dir", type=PathType())
@click.option("--predictors", multiple=True,
              help="Only these predictors of the run (default: all; KB predictors ignore the wording).")
@click.option("--relations", multiple=True, help="Only these relations.")
@click.option("--limit", type=IntRange(min=1), default=100, show_default=True,
              help="A seeded sample of at most N facts per relation (LAMA Fig. 4: 100); facts with fewer "
                   "than --min-evidences sentences are then left out.")
@click.option("--seed", type=Int(), default=0, show_default=True, help="Seed of the --limit sample.")
@click.option("--min-evidences", type=IntRange(min=2), default=2, show_default=True)
@click.option("--max-evidences", type=IntRange(min=2), default=10, show_default=True)
@data_dir_option
@device_option
@batch_size_option
@store_option
@click.option("--quiet", is_flag=True, help="No progress bars.")
def evidence_cmd(run_dir, predictors, relations, limit, seed, min_evidences, max_evidences, data_dir, device,
                 batch_size, store, quiet) -> None:
    """Ask each fact once per aligned evidence sentence (object masked) and record the gold's rank
    (LAMA Fig. 4). Resumable: the prompts run in RUN/analysis/evidence-run.

    \b
    Writes RUN/analysis/evidence.parquet and evidence_summary.json.
    """
    from bridge.analysis import evidence as ev
    from bridge.analysis.stats import atomic_json, atomic_parquet
    from bridge.experiments.evidence import EvidenceExperiment
    from bridge.run.directory import open_run
    from bridge.run.fact_columns import analysis_dir
    from bridge.run.runner import RunConfig, run_experiment

    run_dir = Path(run_dir)
    store_update, store_timeout = store_settings()
    run = open_run(run_dir)
    if min_evidences > max_evidences:
        raise ConfigError(f"--min-evidences {min_evidences} is above --max-evidences {max_evidences}")
    if not any(run.relation_files(c, p) for c in run.corpora for p in run.predictors):
        raise DataError(f"{run_dir} holds no predictions yet; run `kbc run lama ... --out {run_dir}` first")
    names = [run.predictor(p) for value in predictors for p in value.split()] or run.predictors
    in_run = {c: run.relations(c) for c in run.corpora}
    asked = [r for value in relations for r in value.split()] or sorted(set().union(*in_run.values()))
    corpora = [c for c in run.corpora if any(r in in_run[c] for r in asked)]
    if not corpora:
        raise ConfigError(f"--relations {' '.join(asked)}: none of them was run in {run_dir}")
    specs = run.config.get("predictor_specs", {})
    options = {f"{name}.{k}": str(v) for name in names for k, v in (specs.get(name, {}).get("options") or {}).items()}
    cfg = RunConfig(corpora=corpora, predictors=[f"{n}={specs.get(n, {}).get('spec', n)}" for n in names],
                    out=analysis_dir(run_dir) / ev.RUN_FOLDER, data_dir=data_dir or run.config.get("data_dir"),
                    relations=asked, device=device,
                    batch_size=batch_size, options=options, store=store, store_update=store_update,
                    store_timeout=store_timeout, limit=limit, seed=seed)
    run_experiment(cfg, EvidenceExperiment(min_evidences, max_evidences), progress=show_progress(quiet))
    frame = ev.evidence_frame(cfg.out)
    rows = ev.summary_rows(frame)
    out = analysis_dir(run_dir)
    atomic_parquet(frame, out / ev.EVIDENCE)
    atomic_json(rows, out / ev.SUMMARY)
    click.echo(f"{'corpus':<10}{'predictor':<16}{'relation':<18}{'facts':>6}{'median rank':>13}{'mean std':>10}")
    for r in rows:
        median = "-" if r["median_rank"] is None else f"{r['median_rank']:.1f}"
        spread = "-" if r["mean_rank_std"] is None else f"{r['mean_rank_std']:.1f}"
        click.echo(f"{r['corpus']:<10}{r['predictor']:<16}{r['relation']:<18}{r['n_facts']:>6}{median:>13}"
                   f"{spread:>10}")
    for corpus in corpora:
        if not any(r["corpus"] == corpus for r in rows):
            click.echo(f"note: {corpus}: no fact asked has {min_evidences} or more T-REx evidence sentences with its "
                       "object masked once, so it has no rank variation to show (LAMA Fig. 4 is over T-REx)", err=True)
    click.echo(f"\nwritten: {out / ev.EVIDENCE}, {out / ev.SUMMARY}")
