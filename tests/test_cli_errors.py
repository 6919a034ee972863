"""Every failure a user can cause ends as one `error:` line and exit status 2, never a traceback.

Each case damages one input (a copy of a few real LAMA rows, a model directory, a text index, an
embedding file, the command line itself) and runs `kbc` on it. Commands that load data first
print their loader report on stderr; for them the error must be the one `error:` line and the last.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc

tiny_models = lm_fixtures.tiny_models  # the session fixture, shared with other LM tests

W2V_TEXT = "2 3\nParis 1 2 3\nENTITY/Paris 1 2 3\n"
PARAGRAPHS = [{"title": "Dante", "text": "Dante was born in Florence"},
              {"title": "Dante", "text": "Dante died in Ravenna"}]


@dataclass
class Ctx:
    """Where a case builds its inputs: `data` is a small LAMA-layout copy it may damage."""

    tmp: Path
    data: Path
    models: Callable[[str], Path]

    def rows(self, rel: str) -> Path:
        return {"trex": self.data / "TREx" / "P19.jsonl", "google_re": self.data / "Google_RE" /
                "place_of_death_test.jsonl", "squad": self.data / "Squad" / "test.jsonl",
                "relations": self.data / "relations.jsonl"}[rel]

    def edit_first_row(self, rel: str, edit: Callable[[dict], None]) -> None:
        path = self.rows(rel)
        lines = path.read_text().splitlines()
        row = json.loads(lines[0])
        edit(row)
        lines[0] = json.dumps(row)
        path.write_text("\n".join(lines) + "\n")

    def set_field(self, rel: str, key: str, value: object) -> None:
        self.edit_first_row(rel, lambda row: row.__setitem__(key, value))

    def stats(self, corpus: str) -> list[str]:
        return ["data", "stats", "--corpus", corpus, "--data-dir", str(self.data)]

    def run_freq(self, corpus: str = "trex", relation: str = "P19", out: Path | None = None,
                 data: Path | None = None) -> list[str]:
        return ["run", "lama", "--corpus", corpus, "--relations", relation, "--predictors", "freq",
                "--data-dir", str(data or self.data), "--out", str(out or self.tmp / "run"), "--quiet"]

    def w2v(self, text: str = W2V_TEXT) -> Path:
        path = self.tmp / "w2v.txt"
        path.write_text(text)
        return path

    def index(self) -> Path:
        from kb.text.index import build_index
        from kb.text.paragraphs import read_paragraph_jsonl

        src = self.tmp / "paragraphs.jsonl"
        src.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
        root = self.tmp / "idx"
        build_index(read_paragraph_jsonl(src), "tantivy", root).close()
        return root

    def generation(self, root: Path) -> Path:
        return root / (root / "CURRENT").read_text().strip()

    def model(self) -> Path:
        """A private copy of a tiny BERT directory, to damage."""
        path = self.tmp / "model"
        if not path.exists():
            shutil.copytree(self.models("bert-cased"), path)
        return path


def _lama_copy(src: Path, dest: Path) -> Path:
    """relations.jsonl with P19 only, the first rows of T-REx P19, Google-RE and SQuAD, and the common cased
    vocabulary (a masked LM's, checked before any predictor runs)."""
    first_rows = {"TREx/P19.jsonl": 10, "Squad/test.jsonl": 10, "common_vocab_cased.txt": 30_000}
    first_rows.update({f"Google_RE/{n}_test.jsonl": 10 for n in ("place_of_birth", "date_of_birth", "place_of_death")})
    for name, n in first_rows.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        with (src / name).open(encoding="utf-8") as handle:
            (dest / name).write_text("".join(line for _, line in zip(range(n), handle)))
    relations = (src / "relations.jsonl").read_text(encoding="utf-8").splitlines()
    (dest / "relations.jsonl").write_text(next(r for r in relations if '"P19"' in r) + "\n")
    return dest


@dataclass(frozen=True)
class Case:
    make: Callable[[Ctx], list[str]]  # builds the damaged input, returns the kbc argv
    expected: str  # text the error line must contain
    after_report: bool = False  # the command prints a loader report before failing


CASES: dict[str, Case] = {}


def case(name: str, expected: str, after_report: bool = False) -> Callable[[Callable[[Ctx], list[str]]], Callable]:
    def register(make: Callable[[Ctx], list[str]]) -> Callable[[Ctx], list[str]]:
        CASES[name] = Case(make, expected, after_report)
        return make
    return register


# -- relations.jsonl and data rows: encodings, JSON shapes, wrong field types --------------------
@case("relations not UTF-8", "relations.jsonl:1: not UTF-8 text")
def _(c: Ctx) -> list[str]:
    c.rows("relations").write_bytes(b'{"relation": "P19", "template": "[X] \xff [Y] ."}\n')
    return c.stats("trex")


@case("relations template is a number", "field 'template' must be a non-empty string, got a number")
def _(c: Ctx) -> list[str]:
    c.set_field("relations", "template", 5)
    return c.stats("trex")


@case("relations id is a list", "field 'relation' must be a non-empty string, got an array")
def _(c: Ctx) -> list[str]:
    c.set_field("relations", "relation", ["P19"])
    return c.stats("trex")


@case("relations label is a list", "field 'label' must be a string, got an array")
def _(c: Ctx) -> list[str]:
    c.set_field("relations", "label", ["place of birth"])
    return c.stats("trex")


@case("relations line is an array", "relations.jsonl:1: expected a JSON object, got an array")
def _(c: Ctx) -> list[str]:
    c.rows("relations").write_text('["P19"]\n')
    return c.stats("trex")


@case("relations file empty", "relations.jsonl: file is empty")
def _(c: Ctx) -> list[str]:
    c.rows("relations").write_text("")
    return c.stats("trex")


@case("relations template with two [Y]", "relations.jsonl:1: template '[X] or [Y] or [Y] .' holds [Y] 2 times")
def _(c: Ctx) -> list[str]:
    c.set_field("relations", "template", "[X] or [Y] or [Y] .")
    return c.run_freq()


@case("relations template with two [X]", "relations.jsonl:1: template '[X] and [X] live in [Y] .' holds [X] 2 times")
def _(c: Ctx) -> list[str]:
    c.set_field("relations", "template", "[X] and [X] live in [Y] .")
    return c.stats("trex")


@case("T-REx not UTF-8", "P19.jsonl:1: not UTF-8 text")
def _(c: Ctx) -> list[str]:
    c.rows("trex").write_bytes(b"\xff" + c.rows("trex").read_bytes())
    return c.stats("trex")


@case("T-REx blank lines only", "P19.jsonl: file is empty")
def _(c: Ctx) -> list[str]:
    c.rows("trex").write_text("\n \n")
    return c.stats("trex")


@case("T-REx id is a list", "P19.jsonl:1: field 'sub_uri' must be a string, got an array")
def _(c: Ctx) -> list[str]:
    c.set_field("trex", "sub_uri", ["Q1"])
    return c.stats("trex")


@case("T-REx id is a number", "field 'obj_uri' must be a string, got a number")
def _(c: Ctx) -> list[str]:
    c.set_field("trex", "obj_uri", 90)
    return c.stats("trex")


@case("T-REx evidences is a string", "field 'evidences' must be an array of objects, got a string")
def _(c: Ctx) -> list[str]:
    c.set_field("trex", "evidences", "a sentence")
    return c.stats("trex")


@case("T-REx sentence is a number", "evidence 1: field 'masked_sentence' must be a string, got a number")
def _(c: Ctx) -> list[str]:
    c.edit_first_row("trex", lambda row: row["evidences"][0].update(masked_sentence=7))
    return c.stats("trex")


@case("T-REx uuid is a number, in a run", "P19.jsonl:1: field 'uuid' must be a string, got a number",
      after_report=True)
def _(c: Ctx) -> list[str]:
    c.set_field("trex", "uuid", 12)
    return c.run_freq()


@case("Google-RE judgments is a number", "field 'judgments' must be an array of objects, got a number")
def _(c: Ctx) -> list[str]:
    c.set_field("google_re", "judgments", 3)
    return c.stats("google_re")


@case("Google-RE aliases hold numbers", "field 'sub_aliases' must be an array of strings")
def _(c: Ctx) -> list[str]:
    c.set_field("google_re", "sub_aliases", [1])
    return c.stats("google_re")


@case("Google-RE file is a directory", "place_of_death_test.jsonl: is a directory")
def _(c: Ctx) -> list[str]:
    c.rows("google_re").unlink()
    c.rows("google_re").mkdir()
    return c.stats("google_re")


@case("SQuAD subject is a number", "test.jsonl:1: field 'sub_label' must be a string, got a number")
def _(c: Ctx) -> list[str]:
    c.set_field("squad", "sub_label", 5)
    return c.stats("squad")


# -- models --------------------------------------------------------------------------------------
@case("truncated model.safetensors", "cannot load masked LM from")
def _(c: Ctx) -> list[str]:
    weights = c.model() / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return ["entities", "map", "--model", str(c.model()), "--wikipedia2vec", str(c.w2v()), "--out", str(c.tmp / "m")]


@case("config.json is an array", "config.json: expected a JSON object")
def _(c: Ctx) -> list[str]:
    (c.model() / "config.json").write_text("[]")
    return ["entities", "map", "--model", str(c.model()), "--wikipedia2vec", str(c.w2v()), "--out", str(c.tmp / "m")]


@case("google_re relation id misspelled", "unknown relation id(s) place_of_brith in Google-RE (place_of_brith: did you "
      "mean place_of_birth?); known: date_of_birth, place_of_birth, place_of_death", after_report=False)
def _(c: Ctx) -> list[str]:
    return ["serve", "--corpus", "google_re", "--relations", "place_of_brith", "--data-dir", str(c.data),
            "--store", str(c.tmp / "store")]


@case("run --relations given empty", "error: --relations names no relation; give relation ids")
def _(c: Ctx) -> list[str]:
    return ["run", "lama", "--corpus", "trex", "--relations", "", "--predictors", "freq", "--data-dir", str(c.data),
            "--out", str(c.tmp / "run"), "--quiet"]


@case("store inside the data directory", "is inside the LAMA data directory")
def _(c: Ctx) -> list[str]:
    return ["kb", "load", "--corpus", "google_re", "--data-dir", str(c.data), "--store", str(c.data / "store")]


# -- text indexes --------------------------------------------------------------------------------
@case("index meta.json missing", "the text index is damaged (tantivy's meta.json is missing")
def _(c: Ctx) -> list[str]:
    root = c.index()
    (c.generation(root) / "meta.json").unlink()
    return ["index", "stats", "--index", str(root)]


@case("kbc-meta.json is an array", "kbc-meta.json holds a JSON list, not an object")
def _(c: Ctx) -> list[str]:
    root = c.index()
    (c.generation(root) / "kbc-meta.json").write_text("[]")
    return ["index", "search", "Dante", "--index", str(root)]


@case("index --out is a file", "is a file; pass a directory")
def _(c: Ctx) -> list[str]:
    (c.tmp / "f").write_text("x")
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "f"), "--out", str(c.tmp / "f")]


@case("paragraph facts is a number", "p.jsonl:1: 'facts' must be a list of ids, got a number")
def _(c: Ctx) -> list[str]:
    (c.tmp / "p.jsonl").write_text('{"title": "A", "text": "a b c", "facts": 5}\n')
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "p.jsonl"), "--out", str(c.tmp / "i"),
            "--quiet"]


@case("dump cut off", "d.xml: not a MediaWiki XML dump")
def _(c: Ctx) -> list[str]:
    (c.tmp / "d.xml").write_text("<mediawiki><page><title>A</title>")
    return ["index", "build", "--source", "dump", "--input", str(c.tmp / "d.xml"), "--out", str(c.tmp / "i"),
            "--quiet"]


@case("malformed Elasticsearch URL", "is not an http(s) URL")
def _(c: Ctx) -> list[str]:
    return ["index", "stats", "--backend", "elasticsearch", "--es-url", "localhost:9200"]


# -- coherency -----------------------------------------------------------------------------------
@case("coherency on SQuAD", "coherency cannot run on squad: its facts are cloze sentences", after_report=True)
def _(c: Ctx) -> list[str]:
    return ["run", "coherency", "--corpus", "squad", "--predictors", "freq", "--data-dir", str(c.data),
            "--out", str(c.tmp / "run"), "--quiet"]


# -- relation extraction, downloads --------------------------------------------------------------
@case("build-re without evidences", "has an evidence sentence to extract from")
def _(c: Ctx) -> list[str]:
    rows = [json.loads(line) for line in c.rows("trex").read_text().splitlines()]
    c.rows("trex").write_text("".join(json.dumps({**row, "evidences": []}) + "\n" for row in rows))
    return ["kb", "build-re", "--corpus", "trex", "--data-dir", str(c.data), "--store", str(c.tmp / "store"),
            "--quiet"]


@case("download --url not a URL", "--url 'data.zip' is not a URL to download from")
def _(c: Ctx) -> list[str]:
    return ["data", "download", "--dest", str(c.tmp / "dl"), "--url", "data.zip"]


# -- entity files --------------------------------------------------------------------------------
@case("wikipedia2vec .pkl", "kbc entities convert")
def _(c: Ctx) -> list[str]:
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.tmp / "m.pkl")]


@case("wikipedia2vec= .pkl in a run", "kbc entities convert", after_report=True)
def _(c: Ctx) -> list[str]:
    (c.tmp / "m.pkl").write_bytes(b"x")
    return ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "ebert", "--set",
            f"model={c.models('bert-cased')}", "--set", f"wikipedia2vec={c.tmp / 'm.pkl'}", "--data-dir",
            str(c.data), "--out", str(c.tmp / "run"), "--quiet"]


@case("convert without --trust-pickle", "refusing to unpickle")
def _(c: Ctx) -> list[str]:
    (c.tmp / "m.pkl").write_bytes(b"x")
    return ["entities", "convert", str(c.tmp / "m.pkl")]


@case("convert of a missing file", "missing.pkl: no such wikipedia2vec model file")
def _(c: Ctx) -> list[str]:
    return ["entities", "convert", str(c.tmp / "missing.pkl")]


@case("mentions .pkl", "m_mention.pkl is a pickle; loading one runs any code it holds, so a mention dictionary is "
      "only read as a TSV (lines `text<TAB>title<TAB>commonness`), or leave the option out to use the table stored "
      "in the .npz (`kbc entities convert")
def _(c: Ctx) -> list[str]:
    return ["entities", "link-stats", "--wikipedia2vec", str(c.w2v()), "--mentions", str(c.tmp / "m_mention.pkl"),
            "--corpus", "squad", "--data-dir", str(c.data)]


@case("word2vec text with a word", "w2v.txt:2: the vector of 'Paris' holds a non-number")
def _(c: Ctx) -> list[str]:
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.w2v("2 3\nParis 1 two 3\n"))]


@case("entities map --out inside the data folder", "/map.npz is inside the LAMA data directory ")
def _(c: Ctx) -> list[str]:
    return ["entities", "map", "--model", str(c.models("bert-cased")), "--wikipedia2vec", str(c.w2v()), "--out",
            str(c.data / "map.npz")]


@case("word2vec text without numbers", "w2v.txt:1: 'hello' has no vector; a wikipedia2vec text file holds NAME and "
      "its numbers on each line")
def _(c: Ctx) -> list[str]:
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.w2v("hello\nworld\n"))]


@case("word2vec header promises more vectors", "w2v.txt: the header (line 1) promises 3 vectors but the file holds 2 "
      "(lines 2-3); is it cut off? Copy or convert it again")
def _(c: Ctx) -> list[str]:
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.w2v("3 3\nParis 1 2 3\nENTITY/Paris 1 2 3\n"))]


@case("word2vec file not UTF-8", "not UTF-8")
def _(c: Ctx) -> list[str]:
    (c.tmp / "b.txt").write_bytes(b"\xff\xfe\x00")
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.tmp / "b.txt")]


@case("title map not UTF-8", "t.tsv: not UTF-8 text")
def _(c: Ctx) -> list[str]:
    (c.tmp / "t.tsv").write_bytes(b"Q1\t\xff\n")
    return ["entities", "link-stats", "--wikipedia2vec", str(c.w2v()), "--titles", str(c.tmp / "t.tsv"),
            "--corpus", "squad", "--data-dir", str(c.data)]


@case("E-BERT map file is not a map", "map.npz: not a saved entity map")
def _(c: Ctx) -> list[str]:
    (c.tmp / "map.npz").write_bytes(b"PK\x03\x04junk")
    return ["entities", "search", "Paris", "--wikipedia2vec", str(c.w2v()), "--map", str(c.tmp / "map.npz")]


# -- run files, run directories -----------------------------------------------------------------
@case("YAML alias bomb in --config", "run.yaml:3: YAML aliases (*name) are not accepted in run files; write the "
      "value out")
def _(c: Ctx) -> list[str]:
    # each level repeats the one before 8 times: 10 * 8**6 labels once expanded, from one short line
    levels = ["&a [" + ", ".join(["P19"] * 10) + "]"] + [f"&{n} [" + ", ".join([f"*{p}"] * 8) + "]"
                                                           for p, n in zip("abcdef", "bcdefg")]
    (c.tmp / "run.yaml").write_text(f"corpus: [trex]\npredictors: [freq]\nrelations: [{', '.join(levels)}]\n")
    return ["run", "lama", "--config", str(c.tmp / "run.yaml"), "--data-dir", str(c.data), "--out",
            str(c.tmp / "r")]


@case("empty store path in --config", "run.yaml: store: expected a path (leave the key out for the default), got")
def _(c: Ctx) -> list[str]:
    (c.tmp / "run.yaml").write_text("corpus: [trex]\npredictors: [freq]\nrelations: [P19]\nstore: ''\n")
    return ["run", "lama", "--config", str(c.tmp / "run.yaml"), "--data-dir", str(c.data), "--out",
            str(c.tmp / "r")]


@case("summary.json value is a string", "summary.json: row 0: 'value' must be a number, got str \"22.0\"")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    rows = json.loads((run / "summary.json").read_text())
    rows[0]["value"] = "22.0"
    (run / "summary.json").write_text(json.dumps(rows))
    return ["report", str(run)]


@case("serve --run of an unfinished run", "is not a finished run: it lacks summary.json; rerun the same `kbc run`")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    (run / "summary.json").unlink()
    # an unknown relation stops the server from starting should the run be let through
    return ["serve", "--run", str(run), "--port", "0", "--data-dir", str(c.data), "--relations", "P999"]


@case("prediction record of a run without record digests holds NaN", "P19.jsonl:2: holds NaN or infinity, which is "
      "no score (and not JSON); delete that file so that the run recomputes it, or use a new --out", after_report=True)
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    shutil.rmtree(run / ".kbc-records")  # as an older kbc left it: read unchecked, after a warning
    path = run / "predictions" / "trex" / "freq" / "P19.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["answers"][0][1] = float("nan")
    lines[1] = json.dumps(record)  # Python's json writes a bare NaN unless told not to
    path.write_text("\n".join(lines) + "\n")
    return ["show", str(path.parents[3]), "--uid", record["uid"], "--json"]


def _finished_run(c: Ctx, predictors: tuple[str, ...] = ("freq",), name: str = "done", **settings) -> Path:
    """A finished Freq run (or of `predictors`, with `settings` of `RunConfig`) over the copy's P19, made quietly
    (the case's stderr holds only the command's)."""
    import logging

    from bridge.run.runner import RunConfig, run_lama

    cfg = RunConfig(["trex"], list(predictors), c.tmp / name, str(c.data), relations=["P19"], cache_dir=c.tmp / "cache",
                    **settings)
    log = logging.getLogger("kbc")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        run_lama(cfg, progress=False)
    finally:
        log.setLevel(level)
    return cfg.out


# -- the command line itself ---------------------------------------------------------------------
@case("missing option", "Missing option '--wikipedia2vec'. (see `kbc entities search --help`)")
def _(c: Ctx) -> list[str]:
    return ["entities", "search", "Paris"]


@case("bad choice", "'solr' is not one of 'tantivy', 'elasticsearch'")
def _(c: Ctx) -> list[str]:
    return ["index", "search", "x", "--backend", "solr"]


@case("unknown command", "No such command 'indx'. Did you mean 'index'?")
def _(c: Ctx) -> list[str]:
    return ["indx"]


@case("unknown subcommand", "No such command 'lamma'. Did you mean 'lama'?")
def _(c: Ctx) -> list[str]:
    return ["run", "lamma"]


@case("k out of range", "1<=x<=10000")
def _(c: Ctx) -> list[str]:
    return ["index", "search", "x", "-k", "100000000000"]


@case("not an integer", "'many' is not a valid integer")
def _(c: Ctx) -> list[str]:
    return ["index", "build", "--min-words", "many"]


# -- corpus downloads ----------------------------------------------------------------------------
@case("download --mirror not a URL", "--mirror 'mailto:mirror@example.org' is not a URL to download from")
def _(c: Ctx) -> list[str]:
    return ["data", "download", "bear", "--dest", str(c.tmp / "dl"), "--mirror", "mailto:mirror@example.org"]


@case("download --url without lama", "--url and --sha256 are for LAMA's release archive; add lama to the names")
def _(c: Ctx) -> list[str]:
    return ["data", "download", "bear", "--dest", str(c.tmp / "dl"), "--url", "https://example.org/data.zip"]


@case("download unknown corpus", "(did you mean 'bear'?)")
def _(c: Ctx) -> list[str]:
    return ["data", "download", "bera", "--dest", str(c.tmp / "dl")]


@case("download from a host that does not answer", "check the connection, or name a copy of the upstream files with "
      "--mirror URL (or KBC_DATA_MIRROR)")
def _(c: Ctx) -> list[str]:
    return ["data", "download", "bear", "--dest", str(c.tmp / "dl"), "--mirror", "http://127.0.0.1:9", "--quiet"]


# -- run directories read back: config identity, summary digests, leaderboard outputs ----------------
@case("run into a directory whose config.json is {}", "config.json: not a kbc run config (no 'corpora' list); move "
      "the directory aside or use another --out", after_report=True)
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    (run / "config.json").write_text("{}")
    return ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "freq=random", "--data-dir",
            str(c.data), "--out", str(run), "--quiet"]


@case("leaderboard of a hand-edited summary.json", "its summary.json is not the one its scoring wrote (edited or "
      "replaced); rerun the same `kbc run` command to rescore it")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    rows = json.loads((run / "summary.json").read_text())
    rows[0]["stderr"] = "0.5"
    (run / "summary.json").write_text(json.dumps(rows))
    return ["leaderboard", str(run), "--scope", "own"]


@case("report of a run cut after it finished", "its prediction files changed since its summaries were written")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    path = run / "predictions" / "trex" / "freq" / "P19.jsonl"
    path.write_text(path.read_text().splitlines(keepends=True)[0])
    return ["report", str(run)]


@case("serve --run of a run whose summary.json was edited", "its summary.json is not the one its scoring wrote")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    rows = json.loads((run / "summary.json").read_text())
    rows[0]["value"] = 99.9
    (run / "summary.json").write_text(json.dumps(rows))
    # an unknown relation stops the server from starting should the run be let through
    return ["serve", "--run", str(run), "--port", "0", "--data-dir", str(c.data), "--relations", "P999"]


@case("leaderboard --out a new file in the data folder", "/board.md is inside the LAMA data directory ")
def _(c: Ctx) -> list[str]:
    return ["leaderboard", str(_finished_run(c)), "--out", str(c.data / "board.md")]


@case("leaderboard --out a run's summary.json", "is inside the run directory")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    return ["leaderboard", str(run), "--out", str(run / "summary.json")]


# -- LM result cache: a file in its place that is not kbc's -----------------------------------------
def _run_bert_on_cache(c: Ctx, make: Callable[[Path], None]) -> list[str]:
    """A tiny-BERT run whose result cache (`$KBC_CACHE/lm/results.sqlite`) `make` puts in place first."""
    path = c.tmp / "cache" / "lm" / "results.sqlite"
    path.parent.mkdir(parents=True)
    make(path)
    return ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", f"bert={c.models('bert-cased')}",
            "--data-dir", str(c.data), "--out", str(c.tmp / "run"), "--quiet"]


CACHE_FIX = "delete it to start an empty cache, set KBC_CACHE to another folder, or run with --set cache=off"


@case("result cache not a database", f"results.sqlite: not a kbc result cache (not an SQLite database); {CACHE_FIX}",
      after_report=True)
def _(c: Ctx) -> list[str]:
    return _run_bert_on_cache(c, lambda path: path.write_bytes(b"these are notes, not a cache\n" * 8))


@case("result cache shorter than a header", "results.sqlite: not a kbc result cache (not an SQLite database)",
      after_report=True)
def _(c: Ctx) -> list[str]:
    return _run_bert_on_cache(c, lambda path: path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 20))


@case("result cache another SQLite database", "results.sqlite: an SQLite database that is not a kbc result cache "
      f"(tables: notes); {CACHE_FIX}", after_report=True)
def _(c: Ctx) -> list[str]:
    def make(path: Path) -> None:
        import sqlite3

        db = sqlite3.connect(path)
        with db:
            db.execute("CREATE TABLE notes (text TEXT)")
        db.close()
    return _run_bert_on_cache(c, make)


@case("result cache is a folder", f"results.sqlite: is a folder, not a result cache; {CACHE_FIX}", after_report=True)
def _(c: Ctx) -> list[str]:
    return _run_bert_on_cache(c, lambda path: path.mkdir())


# -- numbers and paths typed by users: ASCII digits only, no empty path, no folder for a file ------
@case("--context retrieved:K with a space", "--context retrieved: 3: K must be a whole number in ASCII digits")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--context", "retrieved: 3"]


@case("--context retrieved:K with an underscore", "--context retrieved:1_0: K must be a whole number in ASCII digits")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--context", "retrieved:1_0"]


@case("--context retrieved:K in Arabic-Indic digits",
      "--context retrieved:\u0663: K must be a whole number in ASCII digits")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--context", "retrieved:\u0663"]


@case("--context retrieved: without K", "--context retrieved:: K must be a whole number in ASCII digits")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--context", "retrieved:"]


@case("integer flag with a space", "Invalid value for '--depth': ' 3' is not a valid integer; write it in ASCII "
      "digits, e.g. 3")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--depth", " 3"]


@case("integer flag in Unicode digits", "Invalid value for '--seed': '\u0663' is not a valid integer")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--seed", "\u0663"]


@case("number flag nan", "Invalid value for '--store-timeout': 'nan' is not a valid number; write it in ASCII "
      "digits, e.g. 0.5")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--store-timeout", "nan"]


@case("--es-timeout inf", "Invalid value for '--es-timeout': 'inf' is not a valid number")
def _(c: Ctx) -> list[str]:
    return ["index", "stats", "--backend", "elasticsearch", "--es-url", "http://127.0.0.1:9", "--es-timeout", "inf"]


@case("--set integer with an underscore", "--set k=1_0: expected an integer in ASCII digits")
def _(c: Ctx) -> list[str]:
    return _run(c, "retrieval", "--set", "k=1_0")


@case("--set number in Unicode digits", "--set context_bonus=\u0661.5: expected a number in ASCII digits")
def _(c: Ctx) -> list[str]:
    return _run(c, "retrieval", "--set", "context_bonus=\u0661.5")


@case("--set threshold in Unicode digits", "--set set=threshold:\u0660.\u0665: expected one of")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--set", "set=threshold:\u0660.\u0665"]


@case("--bootstrap with an underscore inside a number", "'1_0' is not a whole number of resamples")
def _(c: Ctx) -> list[str]:
    return ["compare", str(_finished_run(c)), "freq", "freq", "--bootstrap", "1_0"]


@case("empty --out", "Invalid value for '--out': '' is no path; give a file or folder name")
def _(c: Ctx) -> list[str]:
    argv = c.run_freq()
    argv[argv.index("--out") + 1] = ""
    return argv


@case("empty --index", "Invalid value for '--index': '' is no path")
def _(c: Ctx) -> list[str]:
    return ["index", "stats", "--index", ""]


@case("empty --store", "Invalid value for '--store': '' is no path")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--store", ""]


@case("empty --prompts", "unknown prompt set ''; choose from")
def _(c: Ctx) -> list[str]:
    return c.run_freq() + ["--prompts", ""]


@case("prompt file with a number as id",
      """prompts.jsonl:1: field 'id' must be a string (write "id": "7"), got a number""")
def _(c: Ctx) -> list[str]:
    path = c.tmp / "prompts.jsonl"
    path.write_text('{"relation": "P19", "template": "[X] was born in [Y] .", "id": 7}\n')
    return c.run_freq() + ["--prompts", str(path)]


@case("prompt file with a blank id", "prompts.jsonl:2: field 'id' is blank: give the prompt a name or leave 'id' out")
def _(c: Ctx) -> list[str]:
    path = c.tmp / "prompts.jsonl"
    path.write_text('{"relation": "P19", "template": "[X] was born in [Y] ."}\n'
                    '{"relation": "P19", "template": "[X] is from [Y] .", "id": " "}\n')
    return c.run_freq() + ["--prompts", str(path)]


@case("LM-KBC alias list is a directory", "alias_TREx_en.txt: the alias list is a directory; put the file there or "
      "remove it")
def _(c: Ctx) -> list[str]:
    from lmkbc_fixtures import write_lmkbc

    root = write_lmkbc(c.tmp / "lmkbc2024")  # beside the LAMA copy, as in the shared data
    (root / "xfactr" / "alias_TREx_en.txt").mkdir(parents=True)
    return ["run", "lmkbc", "--predictors", "freq", "--data-dir", str(c.data), "--out", str(c.tmp / "run"), "--quiet"]


@case("X-FACTR instance-of list is a link loop", "TREx_instanceof.txt: the instance-of list is a link loop")
def _(c: Ctx) -> list[str]:
    (c.data / "xfactr").mkdir()
    (c.data / "xfactr" / "TREx_instanceof.txt").symlink_to(c.tmp / "loop.txt")
    (c.tmp / "loop.txt").symlink_to(c.data / "xfactr" / "TREx_instanceof.txt")
    argv = c.run_freq()
    argv[1] = "kmir"
    return argv


@case("X-FACTR instance-of list is a dangling link", "TREx_instanceof.txt: the instance-of list is a dangling link")
def _(c: Ctx) -> list[str]:
    (c.data / "xfactr").mkdir()
    (c.data / "xfactr" / "TREx_instanceof.txt").symlink_to(c.tmp / "gone.txt")
    argv = c.run_freq()
    argv[1] = "kmir"
    return argv


def _run(c: Ctx, predictor: str, *extra: str) -> list[str]:
    """`run_freq` with another predictor in place of freq, and `extra` flags."""
    argv = c.run_freq()
    argv[argv.index("freq")] = predictor
    return argv + list(extra)


# -- servers asked by generation ----------------------------------------------------------------
def _served(c: Ctx, url: str, *sets: str) -> list[str]:
    return ["run", "lama", "--corpus", "google_re", "--relations", "place_of_birth", "--predictors", f"llm={url}",
            *[x for s in sets for x in ("--set", s)], "--limit", "2", "--data-dir", str(c.data), "--out",
            str(c.tmp / "run"), "--quiet"]


@case("server down", "Connection refused); start it, or check the URL; results written "
      "so far are kept; rerun the same command to resume", after_report=True)
def _(c: Ctx) -> list[str]:
    from served_support import free_port

    return _served(c, f"http://127.0.0.1:{free_port()}/v1", "llm.model=tiny")


@case("server refuses the key", "the server refuses the request (HTTP 401); check the key in $KBC_TEST_KEY",
      after_report=True)
def _(c: Ctx) -> list[str]:
    from served_support import Scripted

    os.environ["KBC_TEST_KEY"] = "wrong"  # the fixture's monkeypatch puts the environment back
    server = Scripted(lambda path, body, n: (401, {"error": "invalid key"}))
    return _served(c, server.url, "llm.model=tiny", "llm.key_env=KBC_TEST_KEY")


@case("server answers garbage", "the answer is not JSON", after_report=True)
def _(c: Ctx) -> list[str]:
    from served_support import Scripted

    return _served(c, Scripted(lambda path, body, n: (200, b"<html>")).url, "llm.model=tiny")


@case("server without model name", "predictor llm (http://127.0.0.1:9/v1) needs --set llm.model=...")
def _(c: Ctx) -> list[str]:
    return _served(c, "http://127.0.0.1:9/v1")


@case("chat turns over the completions api", "error: --set llm.chat=on needs llm.api=chat (the server renders")
def _(c: Ctx) -> list[str]:
    return _served(c, "http://127.0.0.1:9/v1", "model=tiny", "api=completions", "chat=on")


@case("server key in an unset variable", "error: --set llm.key_env=KBC_UNSET_KEY: that environment variable is not "
      "set; export it with the server's API key")
def _(c: Ctx) -> list[str]:
    os.environ.pop("KBC_UNSET_KEY", None)
    return _served(c, "http://127.0.0.1:9/v1", "llm.model=tiny", "llm.key_env=KBC_UNSET_KEY")


@case("generation in an experiment that ranks", "predictor llm answers by generation, which `kbc run negated` "
      "cannot score (it needs ranked answers)", after_report=True)
def _(c: Ctx) -> list[str]:
    from eval.datadir import resolve_data_dir

    negated = "negated_misprimed_lama"  # the shared data's, beside the LAMA folder, linked into the copy
    (c.data / negated).symlink_to(resolve_data_dir(os.environ["KBC_DATA"]).parent / negated)
    return ["run", "negated", "--corpus", "negated-google_re", "--relations", "place_of_death", "--predictors",
            "llm=http://127.0.0.1:9/v1", "--set", "llm.model=tiny", "--data-dir", str(c.data), "--out",
            str(c.tmp / "run"), "--quiet"]



# -- graph stores: damaged ones, and folders kbc did not make ------------------------------------
def _store(c: Ctx) -> Path:
    """A graph store holding a few facts, and its live generation (the RocksDB folder)."""
    from tests_support_facts import toy_facts

    from kb.store import GraphStore

    with GraphStore.open(c.tmp / "store") as store:
        store.ensure_facts(toy_facts(), "toy@1")
    return c.tmp / "store" / (c.tmp / "store" / "LIVE").read_text()


def _stats(c: Ctx) -> list[str]:
    return ["kb", "stats", "--store", str(c.tmp / "store")]


@case("graph store CURRENT damaged", "is damaged (Corruption: CURRENT file corrupted); it is a cache: delete the "
      "folder")
def _(c: Ctx) -> list[str]:
    (_store(c) / "CURRENT").write_text("garbage\n")
    return _stats(c)


@case("graph store .sst missing", "is damaged (Corruption: Corruption: IO error: No such file or directory: While open "
      "a file for random read")
def _(c: Ctx) -> list[str]:
    max(_store(c).glob("*.sst"), key=lambda p: p.stat().st_size).unlink()
    return _stats(c)


@case("graph store MANIFEST damaged", "is damaged (Corruption: no log_file_number, next_file_number, last_sequence "
      "entry in MANIFEST")
def _(c: Ctx) -> list[str]:
    with next(_store(c).glob("MANIFEST-*")).open("r+b") as handle:
        handle.write(b"\xff" * 40)
    return _stats(c)


@case("graph store generation missing", "whose kbc-readers file is missing); it is a cache: delete the folder")
def _(c: Ctx) -> list[str]:
    shutil.rmtree(_store(c))
    return _stats(c)


@case("index --out into a graph store", "is not empty (LIVE, kbc-store.json, writer.lock) and is not a text index")
def _(c: Ctx) -> list[str]:
    _store(c)
    (c.tmp / "p.jsonl").write_text(json.dumps(PARAGRAPHS[0]) + "\n")
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "p.jsonl"), "--out", str(c.tmp / "store")]


@case("index --out into the data folder", "/lama is inside the LAMA data directory ")
def _(c: Ctx) -> list[str]:
    (c.tmp / "p.jsonl").write_text(json.dumps(PARAGRAPHS[0]) + "\n")
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "p.jsonl"), "--out", str(c.data)]


@case("index build --input that does not exist", "Invalid value for '--input': File '")
def _(c: Ctx) -> list[str]:
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "none.jsonl"), "--out", str(c.tmp / "idx")]


@case("index --out a new folder inside the data folder", "/idx is inside the LAMA data directory ")
def _(c: Ctx) -> list[str]:
    (c.tmp / "p.jsonl").write_text(json.dumps(PARAGRAPHS[0]) + "\n")
    return ["index", "build", "--source", "jsonl", "--input", str(c.tmp / "p.jsonl"), "--out", str(c.data / "idx")]


@case("store into a run directory", "is not empty (config.json, summary.json) and holds no kbc graph store "
      "(kbc-store.json is missing); kbc writes a store only into a new or empty folder or one it made")
def _(c: Ctx) -> list[str]:
    (c.tmp / "run").mkdir()
    (c.tmp / "run" / "config.json").write_text("{}")
    (c.tmp / "run" / "summary.json").write_text("[]")
    return ["kb", "load", "--corpus", "google_re", "--data-dir", str(c.data), "--store", str(c.tmp / "run")]


@case("store folder of an unreadable database", "holds a database kbc cannot read (Corruption: CURRENT file "
      "corrupted); if an earlier kbc made it, delete the folder (a cache: it is rebuilt from the data), else pass "
      "another --store DIR")
def _(c: Ctx) -> list[str]:
    (c.tmp / "old").mkdir()
    (c.tmp / "old" / "CURRENT").write_text("garbage\n")
    (c.tmp / "old" / "IDENTITY").write_text("x\n")
    return ["kb", "stats", "--store", str(c.tmp / "old")]


@case("store into the folder holding the data", "holds the LAMA data directory")
def _(c: Ctx) -> list[str]:
    return ["kb", "load", "--corpus", "google_re", "--data-dir", str(c.data), "--store", str(c.tmp)]



# -- FewRel relation classification ------------------------------------------------------------
def _fewrel(c: Ctx, rows: list) -> str:
    folder = c.tmp / "fewrel"
    folder.mkdir(exist_ok=True)
    (folder / "val_wiki.json").write_text(json.dumps({"P177": rows}))
    return str(folder)


FEWREL_ROW = {"tokens": ["A", "crosses", "B"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[2]]]}


@case("fewrel position outside the sentence", "val_wiki.json: relation P177, row 1, t: positions [7] are not word "
      "positions 0..2")
def _(c: Ctx) -> list[str]:
    bad = {**FEWREL_ROW, "t": ["b", "Q2", [[7]]]}
    return ["run", "fewrel", "--predictors", "kb", "--data-dir", _fewrel(c, [FEWREL_ROW, bad]), "--out",
            str(c.tmp / "out")]


@case("fewrel data not found", "no FewRel data (val_wiki.json) found (looked in")
def _(c: Ctx) -> list[str]:
    return ["run", "fewrel", "--predictors", "bert", "--data-dir", str(c.tmp / "nowhere"), "--out", str(c.tmp / "out")]


@case("fewrel E-BERT without vectors", "predictor ebert (ebert) needs --set ebert.wikipedia2vec=...")
def _(c: Ctx) -> list[str]:
    return ["run", "fewrel", "--predictors", "ebert", "--set", f"model={c.models('bert-cased')}", "--data-dir",
            _fewrel(c, [FEWREL_ROW] * 10), "--out", str(c.tmp / "out"), "--quiet"]


@case("fewrel corpus in the LAMA probe", "--corpus fewrel is relation classification: run it with `kbc run fewrel`")
def _(c: Ctx) -> list[str]:
    return ["run", "lama", "--corpus", "fewrel", "--predictors", "freq", "--data-dir", str(c.data), "--out",
            str(c.tmp / "out")]


# -- generation in coherency and KMIR: prompts they cannot word their questions in ------------------
def _generating(c: Ctx, experiment: str, *sets: str) -> list[str]:
    return ["run", experiment, "--corpus", "trex", "--relations", "P19", "--predictors", "llm=http://127.0.0.1:9/v1",
            "--set", "llm.model=tiny", *[x for s in sets for x in ("--set", s)], "--data-dir", str(c.data), "--out",
            str(c.tmp / "run"), "--quiet"]


@case("generation asked kmir with shots", "predictor llm: `kbc run kmir` asks each question as written, zero-shot; "
      "leave llm.prompt, llm.shots and llm.question_file unset", after_report=True)
def _(c: Ctx) -> list[str]:
    return _generating(c, "kmir", "llm.shots=2")


@case("generation asked coherency with the lmkbc2024 prompt", "predictor llm: `kbc run coherency` asks subjects "
      "back, which a question about the subject cannot word; use llm.prompt=question or lama without a question "
      "file", after_report=True)
def _(c: Ctx) -> list[str]:
    return _generating(c, "coherency", "llm.prompt=lmkbc2024")


@case("generation asked with an evidence context", "predictor llm answers by generation, whose prompt holds no "
      "evidence context; leave --context gold out", after_report=True)
def _(c: Ctx) -> list[str]:
    return [*_generating(c, "coherency"), "--context", "gold"]


# -- FewRel training whose loss stops being finite ---------------------------------------------
@case("fewrel training that diverges", "the training loss is nan at epoch 1, step 2 (learning rate 1e+30, bfloat16); "
      "lower --set lr= or train in float32", after_report=True)
def _(c: Ctx) -> list[str]:
    folder = Path(_fewrel(c, []))
    (folder / "val_wiki.json").write_text(json.dumps({"P177": [FEWREL_ROW] * 10, "P364": [FEWREL_ROW] * 10}))
    return ["run", "fewrel", "--predictors", "bert", "--set", f"model={c.models('bert-cased')}", "--set", "lr=1e30",
            "--set", "epochs=1", "--set", "train_batch=4", "--dtype", "bfloat16", "--data-dir", str(folder), "--out",
            str(c.tmp / "out"), "--quiet"]


# -- precision: --dtype on the command line and in a run file -------------------------------------
@case("dtype not offered", "'float64' is not one of 'float32', 'bfloat16', 'float16'")
def _(c: Ctx) -> list[str]:
    return [*c.run_freq(), "--dtype", "float64"]


@case("dtype alias in --config", "run.yaml: dtype: expected one of 'float32', 'bfloat16', 'float16', got 'fp16'")
def _(c: Ctx) -> list[str]:
    (c.tmp / "run.yaml").write_text("corpus: [trex]\npredictors: [freq]\nrelations: [P19]\ndtype: fp16\n")
    return ["run", "lama", "--config", str(c.tmp / "run.yaml"), "--data-dir", str(c.data), "--out",
            str(c.tmp / "r")]


# -- report --out: only folders the report owns -------------------------------------------------
@case("report --out a folder of the user's files", "holds files `kbc report` did not write; name a new or empty folder")
def _(c: Ctx) -> list[str]:
    (c.tmp / "results").mkdir()
    (c.tmp / "results" / "my_table.csv").write_text("a,b\n")
    return ["report", str(_finished_run(c)), "--out", str(c.tmp / "results")]


@case("report --out a new folder in another run", "is inside the run directory")
def _(c: Ctx) -> list[str]:
    run = _finished_run(c)
    other = c.tmp / "other"
    shutil.copytree(run, other)
    return ["report", str(run), "--out", str(other / "figures")]


# -- prediction records the run did not write: a conflicting copy appended, a value edited -------------
FIX = "delete that file so that the run recomputes it, or use a new --out"
WRITTEN = 10  # the records a Freq run writes for the copy's 10 P19 facts


def _tampered(c: Ctx, edit: Callable[[list[dict]], None]) -> Path:
    """A finished Freq run whose P19 records `edit` changes (still valid JSON, other values)."""
    run = _finished_run(c)
    shutil.copytree(run, c.tmp / "untouched")  # what `compare` sets the tampered run beside
    path = run / "predictions" / "trex" / "freq" / "P19.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == WRITTEN
    edit(records)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))  # as the runner writes
    return run


def _append_conflicting_copy(records: list[dict]) -> None:
    records.append({**records[0], "rank_raw": 50})


def _edit_second(records: list[dict]) -> None:
    records[1]["rank_raw"] = 1 if records[1].get("rank_raw") != 1 else 50


def _reading(c: Ctx, run: Path, command: str) -> list[str]:
    """`command` reading the run: the same `kbc run` again, compare, show, report or leaderboard."""
    return {"run": ["run", "lama", "--corpus", "trex", "--relations", "P19", "--predictors", "freq", "--data-dir",
                    str(c.data), "--out", str(run), "--quiet"],
            "compare": ["compare", str(run), "freq", "freq", "--b-run", str(c.tmp / "untouched")],
            "show": ["show", str(run), "--subject", "nobody", "--relation", "P19"],
            "report": ["report", str(run), "--out", str(c.tmp / "report")],
            "leaderboard": ["leaderboard", str(run)]}[command]


for _command in ("run", "compare", "show", "report", "leaderboard"):
    @case(f"a conflicting copy of a record appended, then {_command}",
          f"P19.jsonl:{WRITTEN + 1}: a record this run did not write (it wrote {WRITTEN} lines there); {FIX}",
          after_report=_command == "run")  # the run's loader report comes first
    def _(c: Ctx, command: str = _command) -> list[str]:
        return _reading(c, _tampered(c, _append_conflicting_copy), command)

    @case(f"a record's values edited, then {_command}", f"P19.jsonl:2: not the record this run wrote there (changed "
          f"since); {FIX}", after_report=_command == "run")
    def _(c: Ctx, command: str = _command) -> list[str]:
        return _reading(c, _tampered(c, _edit_second), command)


# -- leaderboard with nothing to rank: every predictor answered nothing --------------------------------
@case("leaderboard of a run whose only predictor answered nothing", "trex: no predictor of these runs answered a "
      "fact, so none can be ranked (")
def _(c: Ctx) -> list[str]:
    vocab = c.tmp / "vocab.txt"
    vocab.write_text("table\n")  # no P19 object: every fact is dropped
    run = _finished_run(c, (f"bert={c.models('bert-cased')}",), "silent", limit=3,
                        options={"bert.vocab_file": str(vocab)})
    return ["leaderboard", str(run), "--format", "csv"]


@pytest.fixture
def ctx(tmp_path, lama_dir, tiny_models, monkeypatch) -> Ctx:
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KBC_TEST_KEY", raising=False)  # restored after a case sets it
    data = _lama_copy(lama_dir, tmp_path / "lama")
    tiny_models("bert-cased")  # built (once per session) before any case captures stderr
    return Ctx(tmp_path, data, tiny_models)


def _assert_one_error_line(code: int, err: str, expected: str, after_report: bool) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    assert len(errors) == 1 and lines[-1] == errors[0], err
    assert after_report or len(lines) == 1, err
    assert expected in errors[0], errors[0]


@pytest.mark.parametrize("name", list(CASES))
def test_failure_is_one_error_line(ctx, capsys, name):
    this = CASES[name]
    code, _, err = run_kbc(this.make(ctx), capsys)
    _assert_one_error_line(code, err, this.expected, this.after_report)


def test_unreadable_file_is_one_error_line(ctx, capsys):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not block reads (a directory in place of a file "
                    "is the case 'Google-RE file is a directory')")
    ctx.rows("trex").chmod(0)
    try:
        code, _, err = run_kbc(ctx.stats("trex"), capsys)
    finally:
        ctx.rows("trex").chmod(0o644)
    _assert_one_error_line(code, err, "P19.jsonl: cannot read it (Permission denied)", False)


@pytest.mark.parametrize("number,reason", [(errno.EROFS, "Read-only file system"),
                                           (errno.ENOSPC, "No space left on device"),
                                           (errno.EACCES, "Permission denied")])
def test_operating_system_failures_name_the_path(ctx, capsys, monkeypatch, number, reason):
    """A failure the commands do not anticipate still ends as one line that names the path."""
    def refuse(self: Path, *args, **kwargs) -> None:
        raise OSError(number, os.strerror(number), str(self))

    src = ctx.tmp / "p.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    monkeypatch.setattr(Path, "mkdir", refuse)
    code, _, err = run_kbc(["index", "build", "--source", "jsonl", "--input", str(src), "--out",
                            str(ctx.tmp / "i"), "--quiet"], capsys)
    _assert_one_error_line(code, err, f"error: {reason}: {ctx.tmp / 'i'}", False)


# -- checked before any data is read: FewRel's model and options ----------------------------------
def _broken_fewrel(c: Ctx) -> str:
    """FewRel data that fails to load: an error about anything else shows the check came first."""
    return _fewrel(c, [FEWREL_ROW, {**FEWREL_ROW, "t": ["b", "Q2", [[7]]]}])


@pytest.mark.parametrize(("given", "kind"), [
    ("gpt2", "a causal LM (GPT2LMHeadModel)"), ("t5", "a seq2seq LM (T5ForConditionalGeneration)")])
@pytest.mark.parametrize("how", ["spec", "set"])
def test_fewrel_refuses_a_model_that_is_no_encoder(ctx, capsys, given, kind, how):
    model = lm_fixtures.tiny_t5_dir(ctx.tmp) if given == "t5" else ctx.models("gpt2")
    capsys.readouterr()  # the progress bars of building the tiny model
    chosen = (["--predictors", f"bert={model}"] if how == "spec"
              else ["--predictors", "bert", "--set", f"model={model}"])
    code, _, err = run_kbc(["run", "fewrel", *chosen, "--data-dir", _broken_fewrel(ctx), "--out",
                            str(ctx.tmp / "out")], capsys)
    where = f"--predictors bert={model}" if how == "spec" else f"--set model={model}"
    _assert_one_error_line(code, err, f"error: {where}: {kind}; FewRel fine-tunes a BERT-style encoder (a masked LM, "
                           "e.g. models/bert-base-cased)", False)


@pytest.mark.parametrize(("rate", "why"), [
    ("abc", "expected a number or comma-separated numbers (e.g. 5e-5,3e-5,2e-5)"),
    ("2e-5,0", "learning rates must be positive")])
def test_fewrel_options_are_checked_before_the_data(ctx, capsys, rate, why):
    code, _, err = run_kbc(["run", "fewrel", "--predictors", f"bert={ctx.models('bert-cased')}", "--set",
                            f"bert.lr={rate}", "--data-dir", _broken_fewrel(ctx), "--out", str(ctx.tmp / "out")],
                           capsys)
    _assert_one_error_line(code, err, f"error: --set bert.lr={rate}: {why}", False)


# -- run files: the key meant, and options named where the file holds them --------------------------
@pytest.mark.parametrize(("value", "meant"), [('["bert.candidates=full"]', "set"), ("{bert.candidates: full}", "set"),
                                              ("filtered", "setting")])
def test_a_misspelled_run_file_key_is_matched_by_what_it_holds(ctx, capsys, value, meant):
    path = ctx.tmp / "run.yaml"
    path.write_text(f"corpus: trex\npredictors: [freq]\nsettings: {value}\n")
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(ctx.data), "--out",
                            str(ctx.tmp / "out")], capsys)
    _assert_one_error_line(code, err, f"error: --config {path}: unknown key 'settings' (did you mean {meant!r}?)",
                           False)


@pytest.mark.parametrize(("name", "text", "where"), [
    ("run.yaml", "predictors:\n  bert:\n    spec: {model}\n    candidates: commn\n", "predictors.bert.candidates"),
    ("run.toml", 'predictors = ["bert={model}"]\n[set]\n"bert.candidates" = "commn"\n', "set.bert.candidates"),
    ("run.yaml", "predictors: [bert={model}]\nset: [bert.candidates=commn]\n", "set bert.candidates"),
])
def test_a_bad_option_in_a_run_file_is_named_by_its_file_and_key(ctx, capsys, name, text, where):
    path = ctx.tmp / name
    path.write_text(("corpus = \"trex\"\n" if name.endswith(".toml") else "corpus: trex\n")
                    + text.format(model=ctx.models("bert-cased")))
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(ctx.data), "--out",
                            str(ctx.tmp / "out")], capsys)
    _assert_one_error_line(code, err, f"error: --config {path}: {where}=commn: use one of common, full, relation (did "
                           "you mean 'common'?)", False)
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--set", "bert.candidates=commn", "--data-dir",
                            str(ctx.data), "--out", str(ctx.tmp / "out")], capsys)
    _assert_one_error_line(code, err, "error: --set bert.candidates=commn: use one of", False)


# -- kbc compare --b-run: runs of other data or other questions, named as the command run -----------
@pytest.mark.parametrize(("other", "why"), [
    ("data", "differ in trex data versions (P19); `kbc compare --b-run` needs runs of the same data"),
    ("compat", "differ in question settings (--compat lama vs not given); `kbc compare --b-run` needs runs asked the "
               "same questions"),
])
def test_compare_across_runs_names_itself_when_the_runs_differ(ctx, capsys, other, why):
    a, b = ctx.tmp / "a", ctx.tmp / "b"
    base = ["run", "lama", "--corpus", "trex", "--predictors", "freq", "--quiet", "--bootstrap", "0"]
    code, _, err = run_kbc([*base, "--data-dir", str(ctx.data), "--out", str(a)], capsys)
    assert code == 0, err
    data, flags = ctx.data, []
    if other == "data":  # the same facts but one
        data = shutil.copytree(ctx.data, ctx.tmp / "other-data")
        rows = (data / "TREx" / "P19.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (data / "TREx" / "P19.jsonl").write_text("".join(rows[:-1]), encoding="utf-8")
    else:
        flags = ["--compat", "lama"]
    code, _, err = run_kbc([*base, "--data-dir", str(data), "--out", str(b), *flags], capsys)
    assert code == 0, err
    code, _, err = run_kbc(["compare", str(a), "freq", "freq", "--b-run", str(b)], capsys)
    _assert_one_error_line(code, err, f"error: {b} and {a} {why}", False)
    # a report's deltas are over the facts both runs answered: of other data or questions they are not the same
    code, _, err = run_kbc(["report", str(a), "--compare", str(b), "--delta", "freq", "freq", "--out",
                            str(ctx.tmp / "report")], capsys)
    _assert_one_error_line(code, err, f"error: {b} and {a} {why.replace('compare --b-run', 'report --compare')}",
                           False)
    assert not (ctx.tmp / "report").exists()


# -- paths that do not exist: reading commands refuse them, failed builds leave no folder -----------
@pytest.mark.parametrize(("argv", "fill"), [
    (["kb", "stats"], "kbc kb load"),
    (["kb", "types", "--corpus", "google_re"], "kbc kb load --corpus google_re"),
])
@pytest.mark.parametrize("there", ["nothing", "an empty folder"])
def test_a_reading_kb_command_refuses_a_store_that_does_not_exist(ctx, capsys, argv, fill, there):
    path = ctx.tmp / "no-store"
    if there == "an empty folder":
        path.mkdir()
    data = ["--data-dir", str(ctx.data)] if argv[1] == "types" else []
    code, _, err = run_kbc([*argv, *data, "--store", str(path)], capsys)
    _assert_one_error_line(code, err, f"error: no graph store at {path}; fill one with `{fill} --store {path}` (or "
                           "check the --store path)", False)
    assert (path.exists(), list(path.iterdir()) if path.exists() else []) == (there != "nothing", [])
    code, _, err = run_kbc([*argv, *data], capsys)  # the cache's store, not made yet
    _assert_one_error_line(code, err, f"error: no graph store at {ctx.tmp / 'cache' / 'store'} (the cache's); fill "
                           f"one with `{fill}`, or name one with --store DIR", False)
    assert not (ctx.tmp / "cache" / "store").exists()


def test_kb_load_makes_the_store_the_reading_commands_then_read(ctx, capsys):
    store = ["--store", str(ctx.tmp / "new" / "store")]
    code, out, err = run_kbc(["kb", "load", "--corpus", "google_re", "--data-dir", str(ctx.data), *store], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["kb", "stats", *store], capsys)
    assert code == 0, err
    assert out.splitlines()[0].startswith("gold-google_re: 30 fact triples, 3 relations")


@pytest.mark.parametrize(("source", "text", "why"), [
    ("dump", "x\n", "the compressed dump is truncated or corrupt (Invalid data stream); download it again"),
    ("jsonl", "{x\n", "1: malformed JSON (Expecting property name enclosed in double quotes at column 2)"),
])
def test_a_failed_index_build_leaves_no_folder_it_made(ctx, capsys, source, text, why):
    src = ctx.tmp / ("f.xml.bz2" if source == "dump" else "p.jsonl")
    src.write_text(text)
    sep = ": " if source == "dump" else ":"
    for out in (ctx.tmp / "idx", ctx.tmp / "new" / "parents" / "idx"):
        code, _, err = run_kbc(["index", "build", "--source", source, "--input", str(src), "--out", str(out),
                                "--quiet"], capsys)
        _assert_one_error_line(code, err, f"error: {src}{sep}{why}", False)
        left = sorted(str(p.relative_to(ctx.tmp)) for p in ctx.tmp.rglob("*") if "idx" in p.parts)
        assert not out.exists() and not (ctx.tmp / "new").exists(), left
    (ctx.tmp / "mine").mkdir()
    code, _, err = run_kbc(["index", "build", "--source", source, "--input", str(src), "--out", str(ctx.tmp / "mine"),
                            "--quiet"], capsys)
    _assert_one_error_line(code, err, f"error: {src}{sep}{why}", False)
    assert (ctx.tmp / "mine").is_dir()  # it was there before: it stays


# -- --device: refused before any data is read, and a run that fails is recorded as failed ------------------
def _no_gpus(monkeypatch, count: int) -> None:
    """This machine as one with `count` visible GPUs (0: no CUDA), whatever it has."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


@pytest.mark.parametrize("device", ["mps", "xpu", "meta", "cuda:x", "cpu:1"])
@pytest.mark.parametrize("line_up", ["kb", "lm"])
def test_a_device_kbcompare_does_not_run_on_is_refused_first(ctx, capsys, device, line_up):
    lm = [f"bert={ctx.models('bert-cased')}"] if line_up == "lm" else []
    code, _, err = run_kbc([*ctx.run_freq(), "--predictors", "freq", *lm, "--limit", "5", "--device", device],
                           capsys)
    _assert_one_error_line(code, err, f"error: --device {device!r} is not a device kbcompare runs on; use cpu, cuda "
                           "or cuda:N", False)
    assert not (ctx.tmp / "run").exists()  # nothing read, nothing written, no attempt recorded


@pytest.mark.parametrize("command", [["data", "uhn", "--out", "{tmp}/uhn"], ["serve", "--data-dir", "{tmp}/none"],
                                     ["analyze", "evidence", "{tmp}/none"]])
def test_every_command_with_a_device_refuses_one_it_does_not_run_on(ctx, capsys, command):
    argv = [word.format(tmp=ctx.tmp) for word in command]
    code, _, err = run_kbc([*argv, "--data-dir", str(ctx.data), "--device", "gpu"] if argv[0] == "data"
                           else [*argv, "--device", "gpu"], capsys)
    _assert_one_error_line(code, err, "error: --device 'gpu' is not a device kbcompare runs on; use cpu, cuda or "
                           "cuda:N", False)
    assert not (ctx.tmp / "uhn").exists()


@pytest.mark.parametrize(("gpus", "device", "why"), [
    (0, "cuda", "CUDA is not available on this machine; use --device cpu"),
    (0, "cuda:0", "CUDA is not available on this machine; use --device cpu"),
    (1, "cuda:1", "this machine has 1 visible GPU (cuda:0); use one of those"),
    (2, "cuda:7", "this machine has 2 visible GPUs (cuda:0 to cuda:1); use one of those"),
])
@pytest.mark.parametrize("line_up", ["kb", "lm"])
def test_a_gpu_this_machine_lacks_is_refused_before_the_data(ctx, capsys, monkeypatch, gpus, device, why, line_up):
    _no_gpus(monkeypatch, gpus)
    lm = [f"bert={ctx.models('bert-cased')}"] if line_up == "lm" else []
    code, _, err = run_kbc([*ctx.run_freq(), "--predictors", "freq", *lm, "--limit", "5", "--device", device],
                           capsys)
    _assert_one_error_line(code, err, f"error: --device {device}: {why}", False)
    assert not (ctx.tmp / "run").exists()


def test_a_device_is_refused_from_python_as_on_the_command_line(ctx):
    import kbcompare
    from eval.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        kbcompare.run("lama", corpus="trex", relations=["P19"], predictors={"freq": "freq"}, limit=3,
                      data_dir=str(ctx.data), out=str(ctx.tmp / "api"), device="mps")
    assert str(caught.value) == "--device 'mps' is not a device kbcompare runs on; use cpu, cuda or cuda:N"
    assert not (ctx.tmp / "api").exists()


def test_a_run_that_ends_in_an_error_is_recorded_as_failed(ctx, capsys):
    weights = ctx.model() / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    code, _, err = run_kbc([*ctx.run_freq(), "--predictors", "freq", f"bert={ctx.model()}", "--limit", "5"], capsys)
    _assert_one_error_line(code, err, f"error: cannot load masked LM from {ctx.model()}", True)
    runs = json.loads((ctx.tmp / "run" / "config.json").read_text())["runs"]
    assert [sorted(r) for r in runs] == [["argv", "asked", "batch_size", "corpora", "device", "done", "error",
                                          "executor", "failed", "limit", "predictors", "relations", "seed", "started",
                                          "usage_log", "versions"]]
    assert runs[0]["done"] == {c: {"freq": relations} for c, relations in runs[0]["asked"].items()}  # bert: none
    assert "error: " + runs[0]["error"] == err.strip().splitlines()[-1]
    code, _, err = run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)  # freq alone: the rerun completes
    assert code == 0, err
    runs = json.loads((ctx.tmp / "run" / "config.json").read_text())["runs"]
    assert [("failed" in r, "finished" in r) for r in runs] == [(True, False), (False, True)]


# -- options of generation given to a model that ranks: refused before any work ----------------------------
@pytest.mark.parametrize(("option", "key"), [
    ("g.beams=4", "--set g.beams"), ("g.max_new_tokens=5", "--set g.max_new_tokens"),
    ("g.temperature=0.5", "--set g.temperature"), ("g.top_p=0.5", "--set g.top_p"), ("g.shots=2", "--set g.shots"),
    ("beams=4", "--set beams"), ("g.answer=rank g.beams=4", "--set g.beams")])
def test_an_option_of_generation_without_answer_generate_is_refused(ctx, capsys, option, key):
    sets = [x for item in option.split() for x in ("--set", item)]
    model = ctx.models("gpt2")
    capsys.readouterr()  # the progress bars of building the tiny model
    code, _, err = run_kbc([*ctx.run_freq(), "--predictors", "freq", f"g={model}", *sets], capsys)
    _assert_one_error_line(code, err, f"error: {key} applies to answer=generate only; add --set g.answer=generate "
                           "or drop it", False)
    assert not (ctx.tmp / "run").exists()


def test_an_option_of_generation_in_a_run_file_is_named_where_the_file_holds_it(ctx, capsys):
    path = ctx.tmp / "run.yaml"
    path.write_text(f"corpus: trex\npredictors:\n  g:\n    spec: {ctx.models('gpt2')}\n    beams: 4\n")
    capsys.readouterr()
    code, _, err = run_kbc(["run", "lama", "--config", str(path), "--data-dir", str(ctx.data), "--out",
                            str(ctx.tmp / "out")], capsys)
    _assert_one_error_line(code, err, f"error: --config {path}: predictors.g.beams applies to answer=generate only; "
                           "add --set g.answer=generate or drop it", False)


# -- where `kbc run` writes, and the messages of leaderboard, show and compare ---------------------------------
@pytest.mark.parametrize("where", ["", "x", "TREx/x"])
def test_a_run_into_the_data_it_reads_is_refused_and_writes_nothing(ctx, capsys, where):
    out = ctx.data / where if where else ctx.data
    before = sorted(p.relative_to(ctx.data) for p in ctx.data.rglob("*"))
    code, _, err = run_kbc(ctx.run_freq(out=out), capsys)
    _assert_one_error_line(code, err, f"error: --out {out} is inside the LAMA data directory {ctx.data.resolve()}, "
                           "and a run writes its files into --out; pass a folder outside the data", False)
    assert sorted(p.relative_to(ctx.data) for p in ctx.data.rglob("*")) == before


@pytest.mark.parametrize("named", ["root", "lama"])
def test_a_run_into_a_shared_data_root_is_refused(ctx, capsys, named):
    """A folder holding the LAMA copy is the data root the run reads when named, and a shared one when read-only
    (as root, the run could write there anyway)."""
    root = ctx.tmp / "root"
    shutil.copytree(ctx.data, root / "lama")
    out = root / "x"
    if named == "lama":
        root.chmod(0o555)
    try:
        code, _, err = run_kbc(ctx.run_freq(out=out, data=root / "lama" if named == "lama" else root),
                                capsys)
        where = (f"is inside the read-only data folder {root.resolve()} (it holds lama/)" if named == "lama" else
                 f"is inside the data directory {root.resolve()}")
        _assert_one_error_line(code, err, f"error: --out {out} {where}, and a run writes its files into --out; pass a "
                               "folder outside the data", False)
        assert not out.exists()
    finally:
        root.chmod(0o755)


def test_a_run_into_a_folder_of_other_files_is_refused(ctx, capsys):
    notes = ctx.tmp / "notes"
    notes.mkdir()
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        (notes / name).write_text("mine\n")
    code, _, err = run_kbc(ctx.run_freq(out=notes), capsys)
    _assert_one_error_line(code, err, f"error: --out {notes} holds files but no run (no config.json; a.txt, b.txt, "
                           "c.txt and 1 more); name a new or empty folder, or a run directory of `kbc run`", False)
    assert sorted(p.name for p in notes.iterdir()) == ["a.txt", "b.txt", "c.txt", "d.txt"]


def test_a_run_into_a_new_folder_inside_another_run_is_refused(ctx, capsys):
    run = ctx.tmp / "run"
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0
    for inner in (run / "again", run / "predictions" / "again"):
        code, _, err = run_kbc([*ctx.run_freq(out=inner), "--limit", "5"], capsys)
        _assert_one_error_line(code, err, f"error: --out {inner} is inside the run directory {run.resolve()}; pass a "
                               "folder outside it (a run writes only into a folder of its own)", False)
        assert not inner.exists()


def test_a_run_into_a_report_folder_is_refused_and_a_run_resumes(ctx, capsys):
    run = ctx.tmp / "run"
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0
    report = ctx.tmp / "rep"
    assert run_kbc(["report", str(run), "--out", str(report)], capsys)[0] == 0
    code, _, err = run_kbc([*ctx.run_freq(out=report), "--limit", "5"], capsys)
    _assert_one_error_line(code, err, f"error: --out {report} is a `kbc report` output folder, not a run directory; "
                           "name a new or empty folder, or a run directory of `kbc run`", False)
    assert not (report / "config.json").exists()
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0  # its own run directory: a resume


def test_a_report_into_the_data_is_refused(ctx, capsys):
    run = ctx.tmp / "run"
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0
    out = ctx.data / "report"
    code, _, err = run_kbc(["report", str(run), "--out", str(out)], capsys)
    _assert_one_error_line(code, err, f"error: --out {out} is inside the LAMA data directory {ctx.data.resolve()}; "
                           f"write the report to a folder outside the data, or leave --out out (it writes "
                           f"{run / 'report'})", False)
    assert not out.exists()


def test_an_unfinished_run_is_refused_in_the_same_words_by_leaderboard_and_report(ctx, capsys):
    run = ctx.tmp / "run"
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0
    for name in ("summary.json", "summary.md", "curves.json", "dropped.json", "instances.parquet", ".kbc-summaries"):
        path = run / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    want = (f"error: {run} has predictions but no summary.json: the run has not finished; rerun the same `kbc run` "
            "command to complete it")
    for argv in (["leaderboard", str(run)], ["report", str(run), "--out", str(ctx.tmp / "rep")]):
        code, _, err = run_kbc(argv, capsys)
        _assert_one_error_line(code, err, want, False)
        assert err == want + "\n"


def test_a_mistyped_leaderboard_corpus_gets_a_did_you_mean(ctx, capsys):
    run = ctx.tmp / "run"
    assert run_kbc([*ctx.run_freq(), "--limit", "5"], capsys)[0] == 0
    code, _, err = run_kbc(["leaderboard", str(run), "--corpus", "trexx"], capsys)
    _assert_one_error_line(code, err, "is not one of 'trex', ", False)
    assert err.endswith(" 'fewrel' (did you mean 'trex'?). (see `kbc leaderboard --help`)\n")


@pytest.mark.parametrize(("argv", "command"), [(["show", "RUN", "--uid"], "kbc show"),
                                               (["compare", "RUN", "a", "b", "--list"], "kbc compare"),
                                               (["run", "lama", "--out"], "kbc run lama"),
                                               (["leaderboard", "RUN", "--metric"], "kbc leaderboard")])
def test_an_option_without_its_value_points_at_its_commands_help(ctx, capsys, argv, command):
    run = ctx.tmp / "run"
    run.mkdir()
    code, _, err = run_kbc([str(run) if a == "RUN" else a for a in argv], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err == f"error: Option '{argv[-1]}' requires an argument. (see `{command} --help`)\n"


def test_compare_refuses_a_ranking_against_a_generating_predictor_as_the_report_does(ctx, capsys):
    run = ctx.tmp / "run"
    code, _, err = run_kbc([*ctx.run_freq(), "--limit", "3", "--predictors", "freq", f"llm={ctx.models('gpt2')}",
                            "--set", "llm.answer=generate", "--set", "llm.max_new_tokens=3"], capsys)
    assert code == 0, err
    code, out, err = run_kbc(["compare", str(run), "freq", "llm"], capsys)
    _assert_one_error_line(code, err, "", False)
    assert (out, err) == ("", "error: no comparison of freq and llm in trex: freq ranks its answers (P@1), llm writes "
                              "its answers by generation (EM); no metric scores both, and a difference of two measures "
                              "is no delta; compare two predictors of one kind\n")


def test_a_run_into_the_lmkbc_data_it_reads_is_refused(ctx, capsys, shared_data):
    data = ctx.tmp / "lmk" / "lmkbc2024"
    shutil.copytree(shared_data / "lmkbc2024", data)
    out = data / "run"
    code, _, err = run_kbc(["run", "lmkbc", "--predictors", "gold", "--data-dir", str(data), "--out", str(out),
                            "--quiet"], capsys)
    _assert_one_error_line(code, err, f"error: --out {out} is inside the data directory {data.resolve()}, and a run "
                           "writes its files into --out; pass a folder outside the data", False)
    assert not out.exists()


# --- no data where a run looks by default: each error names the download that puts it there ---

@pytest.mark.parametrize(("argv", "expected"), [
    (["bear", "--predictors", "freq"],
     "no BEAR data (metadata_relations.json) found (looked in data/lama/BEAR, data/lama/bear/BEAR, data/bear/BEAR); "
     "run `kbc data download bear` (into ./data/) or point --data-dir or KBC_BEAR at the folder holding BEAR/"),
    (["fewrel", "--predictors", "kb"],
     "no FewRel data (val_wiki.json) found (looked in data/lama/fewrel, data/fewrel); run `kbc data download fewrel` "
     "(into ./data/) or point --data-dir at the folder holding it"),
    (["lmkbc", "--predictors", "gold"],
     "no LM-KBC data (train.jsonl / val.jsonl) found (looked in data/lama, data/lama/lmkbc2024, data/lmkbc2024); "
     "run `kbc data download lmkbc2024` (into ./data/) or point --data-dir or KBC_DATA at the folder holding them"),
    (["negated", "--corpus", "negated-trex", "--predictors", "freq"],
     "no negated/misprimed LAMA data (TREx, GoogleRE, ConceptNet, SQUAD) found (looked in data/lama, "
     "data/lama/negated_misprimed_lama, data/negated_misprimed_lama); run `kbc data download negated-lama` "
     "(into ./data/) or point --data-dir or KBC_DATA at the folder holding it"),
    (["lama", "--corpus", "trex", "--predictors", "freq"],
     "LAMA data directory data/lama does not exist; run `kbc data download lama` (fetches the official LAMA release "
     "into ./data/lama), or point --data-dir / KBC_DATA at a copy"),
])
def test_a_run_without_data_names_the_download_that_puts_it_where_it_looks(tmp_path, capsys, monkeypatch, argv,
                                                                            expected):
    monkeypatch.chdir(tmp_path)
    for var in ("KBC_DATA", "KBC_BEAR"):
        monkeypatch.delenv(var, raising=False)
    code, _, err = run_kbc(["run", *argv, "--out", str(tmp_path / "out"), "--quiet"], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err == f"error: {expected}\n"


# --- relations a run cannot ask, changed summary files, a local data copy: what differs, and where ---

@pytest.mark.parametrize(("argv", "expected"), [
    (["lama", "--corpus", "trex", "--relations", "P102"],
     "--relations P102: corpus trex knows this relation (relations.jsonl lists it) but has no data for it: no "
     "P102.jsonl in {lama}/TREx or {lama}/TREx_reconstructed"),
    (["lmkbc", "--relations", "P19"],
     "--relations P19: no chosen corpus (lmkbc2024) has this relation; choose from awardWonBy, "
     "companyTradesAtStockExchange, countryLandBordersCountry, personHasCityOfDeath, seriesHasNumberOfEpisodes"),
    (["bear", "--relations", "P999"],
     "--relations P999: no chosen corpus (bear) has this relation; `kbc data stats --corpus bear` lists its 60 "
     "relations"),
    (["bear", "--relations", "P19x"],
     "--relations P19x: no chosen corpus (bear) has this relation (did you mean 'P19'?)"),
])
def test_a_relation_a_run_cannot_ask_says_why_and_what_there_is(lama_dir, tmp_path, monkeypatch, capsys, argv,
                                                                  expected):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    predictor = "gold" if argv[0] == "lmkbc" else "freq"
    code, out, err = run_kbc(["run", *argv, "--predictors", predictor, "--data-dir", str(lama_dir), "--out",
                              str(tmp_path / "run"), "--quiet"], capsys)
    assert (code, out, err) == (2, "", f"error: {expected.format(lama=lama_dir)}\n")
    assert not (tmp_path / "run").exists()


def test_changed_summary_files_are_named_each_by_its_own_digest(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    code, _, err = run_kbc(["run", "lama", "--corpus", "trex", "--relations", "P19", "--limit", "3", "--predictors",
                            "freq", "--data-dir", str(lama_dir), "--out", str(run), "--quiet"], capsys)
    assert code == 0, err
    fix = "; rerun the same `kbc run` command to rescore it\n"
    with (run / "summary.md").open("a") as handle:
        handle.write("edited\n")
    code, out, err = run_kbc(["leaderboard", str(run)], capsys)
    assert (code, out, err) == (2, "", f"error: {run}: its summary.md is not the one its scoring wrote (edited or "
                                       f"replaced){fix}")
    with (run / "curves.json").open("a") as handle:
        handle.write(" ")
    code, _, err = run_kbc(["leaderboard", str(run)], capsys)
    assert err == (f"error: {run}: its summary.md and curves.json are not the ones its scoring wrote (edited or "
                   f"replaced){fix}")
    stamp = json.loads((run / ".kbc-summaries").read_text())
    del stamp["output_files"]  # a record written before each file's digest was kept: which one cannot be told
    (run / ".kbc-summaries").write_text(json.dumps(stamp))
    code, _, err = run_kbc(["leaderboard", str(run)], capsys)
    assert err == (f"error: {run}: one of its summary files (summary.json, summary.md, curves.json, dropped.json, "
                   f"instances.parquet) is not the one its scoring wrote (edited or replaced){fix}")


def test_a_local_mirror_that_cannot_serve_a_download_says_what_to_do(shared_data, tmp_path, capsys, monkeypatch):
    from eval.sources import BY_NAME, MIRROR_ENV

    monkeypatch.delenv(MIRROR_ENV, raising=False)
    example = ("expected e.g. http://HOST[:PORT][/PATH] holding each upstream file at HOST/PATH below it, or a local "
               "folder (such a mirror, or a data folder `kbc data download` filled)")
    laid_out = tmp_path / "copy"
    pinned = BY_NAME["coherency-prompts"].files()[0]
    (laid_out / pinned.dest).parent.mkdir(parents=True)
    (laid_out / pinned.dest).write_bytes((shared_data / pinned.dest).read_bytes())
    empty = tmp_path / "empty"
    empty.mkdir()
    overlap = "and a download never writes into the folder it copies from; choose another --dest"
    bear = BY_NAME["bear"].files()[0]
    zipped = shared_data / "dl.fbaipublicfiles.com" / "LAMA" / "data.zip"
    for argv, expected in [
        (["lama", "--mirror", str(shared_data)],
         f"--mirror {shared_data} holds LAMA unpacked ({shared_data / 'lama'}), not its release archive, so it cannot "
         f"be checked against the archive's SHA-256; read it where it is: pass --data-dir {shared_data / 'lama'} to "
         f"`kbc run` (or export KBC_DATA={shared_data / 'lama'}), or put data.zip at {zipped} (or pass --url "
         "file:///path/to/data.zip)"),
        (["coherency-prompts", "--mirror", str(laid_out), "--dest", str(laid_out)],
         f"--dest {laid_out} and --mirror {laid_out} overlap, {overlap}, or read the copy where it is: pass "
         f"--data-dir {laid_out} to `kbc run`"),
        (["bear", "--mirror", str(empty), "--dest", str(empty / "data")],
         f"--dest {empty / 'data'} and --mirror {empty} overlap, {overlap}"),
        (["bear", "--mirror", empty.as_uri()],
         f"--mirror {empty} lacks 64 of the 64 files of bear, e.g. {bear.dest}: looked for {empty / bear.dest} (the "
         f"layout `kbc data download` makes) and {empty / bear.url.removeprefix('https://')} (a mirror's HOST/PATH)"),
        (["bear", "--mirror", str(tmp_path / "nowhere")],
         f"--mirror {tmp_path / 'nowhere'}: {tmp_path / 'nowhere'} does not exist; {example}"),
    ]:
        dest = [] if "--dest" in argv else ["--dest", str(tmp_path / "dl")]
        code, out, err = run_kbc(["data", "download", *argv, *dest, "--quiet"], capsys)
        assert (code, out, err) == (2, "", f"error: {expected}\n"), argv
        assert not (tmp_path / "dl").exists() and not (empty / "data").exists()
    assert sorted(p.relative_to(laid_out).as_posix() for p in laid_out.rglob("*")) == [
        "prompts", "prompts/coherency", f"{pinned.dest}"]


# --- a run directory whose generated answers were read by another rule ---

def test_a_rerun_into_answers_read_by_another_rule_is_refused(ctx, capsys):
    """Answers read from generations by two rules never mix in one run: a directory whose generating predictor
    was recorded without the rule it was read by (written before there was one) is refused, its records kept."""
    from served_support import Scripted, completion

    server = Scripted(lambda path, body, n: (200, completion("Tokyo, Berlin", "chat")))
    try:
        argv = [*ctx.run_freq(), "--limit", "3", "--predictors", f"llm={server.url}", "--set", "llm.model=tiny"]
        code, _, err = run_kbc(argv, capsys)
        assert code == 0, err
        config_path = ctx.tmp / "run" / "config.json"
        config = json.loads(config_path.read_text())
        assert config["predictor_specs"]["llm"].pop("answer_rule") == 7
        config_path.write_text(json.dumps(config))
        records = (ctx.tmp / "run" / "predictions" / "trex" / "llm" / "P19.jsonl").read_text()
        code, _, err = run_kbc(argv, capsys)
        _assert_one_error_line(code, err, f"error: {ctx.tmp / 'run'}: predictor 'llm' has answers there read from "
                               "its generations by another rule (answer_rule 1, now 7: where an answer line ends, "
                               "where it is split into answers, how a label is compared, how a number is read; "
                               "docs/generation.md); their scores stay as they were: use another --out to score it "
                               "by this rule", True)
        assert (ctx.tmp / "run" / "predictions" / "trex" / "llm" / "P19.jsonl").read_text() == records
        assert len(server.bodies) == 3
    finally:
        server.close()


# --- --dtype where no predictor of the run loads a local model ---

@pytest.mark.parametrize(("predictor", "why"), [
    ("llm=http://127.0.0.1:9/v1", "llm is served: the server sets the precision"),
    ("freq", "none of them is a local model"),
])
def test_a_dtype_no_predictor_takes_is_refused(ctx, capsys, predictor, why):
    argv = _run(ctx, predictor, "--dtype", "bfloat16")
    if predictor.startswith("llm="):
        argv += ["--set", "llm.model=tiny"]
    code, _, err = run_kbc(argv, capsys)
    _assert_one_error_line(code, err, "", True)
    assert err.splitlines()[-1] == (f"error: --dtype bfloat16 applies to local models, and no predictor of this run "
                                    f"loads one ({why}); drop --dtype")
    assert not (ctx.tmp / "run").exists()


# --- kbc show on a run that holds no records yet: one line, whatever the experiment's layout ---

@pytest.mark.parametrize("experiment", ["coherency", "negated", "evidence"])
def test_show_on_a_run_without_records_is_one_error_line(tmp_path, capsys, experiment):
    from bridge.run.config import new_config

    (tmp_path / "config.json").write_text(json.dumps(new_config(experiment)))
    code, _, err = run_kbc(["show", str(tmp_path), "--subject", "Mark Strong", "--relation", "P19"], capsys)
    _assert_one_error_line(code, err, "", True)
    assert err.splitlines()[-1] == f"error: {tmp_path} has no relation 'P19' (known: none)"
    code, _, err = run_kbc(["show", str(tmp_path), "--uid", "u1"], capsys)
    _assert_one_error_line(code, err, "", True)
    assert err.splitlines()[-1] == f"error: no fact with uid 'u1' in {tmp_path} (corpora none)"


@pytest.mark.parametrize("beside", [["--relation", "P36"], ["--subject", "Mark Strong", "--relation", "P19"]])
def test_show_refuses_a_uid_with_a_subject_or_relation_beside_it(tmp_path, capsys, beside):
    from bridge.run.config import new_config

    (tmp_path / "config.json").write_text(json.dumps(new_config("lama")))
    code, _, err = run_kbc(["show", str(tmp_path), "--uid", "u1", *beside], capsys)
    _assert_one_error_line(code, err, "error: --uid names the fact alone: give --uid, or --subject with --relation, "
                           "not both", False)


def test_show_of_a_pair_an_lmkbc_run_lacks_is_one_error_line(tmp_path, capsys):
    from bridge.run.config import new_config

    (tmp_path / "config.json").write_text(json.dumps({**new_config("lmkbc"), "corpora": ["lmkbc2024"]}))
    code, _, err = run_kbc(["show", str(tmp_path), "--uid", "u1"], capsys)
    _assert_one_error_line(code, err, "", True)
    assert err.splitlines()[-1] == f"error: no fact with uid 'u1' in {tmp_path} (corpora lmkbc2024)"


# --- FewRel: a setting it does not score, its data changed under a run ---

def _fewrel_kb_run(shared_data: Path, tmp_path: Path, capsys) -> tuple[list[str], Path]:
    from fewrel_fixtures import kb_slice

    data = kb_slice(shared_data, tmp_path / "data")
    argv = ["run", "fewrel", "--predictors", "kb", "--data-dir", str(data), "--out", str(tmp_path / "run"), "--quiet",
            "--bootstrap", "0"]
    assert run_kbc(argv, capsys)[0] == 0
    return argv, data


def test_fewrel_refuses_the_filtered_setting(shared_data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv, _ = _fewrel_kb_run(shared_data, tmp_path, capsys)
    code, _, err = run_kbc([*argv[:7], str(tmp_path / "filtered"), *argv[8:], "--setting", "filtered"], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == ("error: --setting filtered: `kbc run fewrel` scores the raw setting only; use --setting "
                           "raw")
    assert not (tmp_path / "filtered").exists()
    for command in ("leaderboard", "report"):
        code, _, err = run_kbc([command, str(tmp_path / "run"), "--setting", "filtered"], capsys)
        _assert_one_error_line(code, err, "", False)
        assert err.strip() == ("error: --setting filtered: `kbc run fewrel` scores the raw setting only; use "
                               "--setting raw")


def test_an_edited_fewrel_file_under_a_run_is_named(shared_data, tmp_path, capsys, monkeypatch):
    from eval.fewrel import DATA_FILE

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv, data = _fewrel_kb_run(shared_data, tmp_path, capsys)
    path = data / "fewrel" / DATA_FILE
    sentences = json.loads(path.read_text(encoding="utf-8"))
    sentences["P364"] = sentences["P364"][:9]
    path.write_text(json.dumps(sentences), encoding="utf-8")
    code, _, err = run_kbc(argv, capsys)
    _assert_one_error_line(code, err, "", True)
    assert err.splitlines()[-1] == (f"error: {tmp_path / 'run'} holds FewRel results of other data: {path} differs "
                                    "from the file they were made from (edited since, or another --data-dir); use "
                                    "another --out for this data")


@pytest.mark.parametrize(("content", "why"), [
    ({}, "holds no relation; expected an object {relation: [sentences]}"),
    ({"P26": []}, "relation P26: no sentences (a relation needs some to train, select and test)"),
])
def test_an_empty_fewrel_file_is_refused(tmp_path, capsys, content, why):
    from eval.fewrel import DATA_FILE

    path = tmp_path / "data" / "fewrel" / DATA_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(content), encoding="utf-8")
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "kb", "--data-dir", str(tmp_path / "data"), "--out",
                            str(tmp_path / "run")], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == f"error: {path}: {why}"
    assert not (tmp_path / "run").exists()


def test_an_edited_fewrel_confusion_matrix_is_refused_as_summaries_are(shared_data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv, _ = _fewrel_kb_run(shared_data, tmp_path, capsys)
    run = tmp_path / "run"
    assert run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)[0] == 0
    path = run / "figures" / "confusion-kb.json"
    matrix = json.loads(path.read_text(encoding="utf-8"))
    matrix["counts"][0][-1] += 5
    path.write_text(json.dumps(matrix), encoding="utf-8")
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == (f"error: {run}: its figures/confusion-kb.json is not the one its scoring wrote (edited or "
                           "replaced); rerun the same `kbc run` command to rescore it")
    assert run_kbc(argv, capsys)[0] == 0  # rescored: the matrix of the records again
    matrix["counts"][0][-1] -= 5
    assert json.loads(path.read_text(encoding="utf-8")) == matrix
    assert run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)[0] == 0


def test_a_fewrel_file_too_small_to_split_is_refused(shared_data, tmp_path, capsys):
    """Two sentences of each of two relations leave the test part empty (nothing to ask); four leave the dev part
    empty, which a fine-tuned model is selected on."""
    from lm_fixtures import tiny_model_dir

    from eval.fewrel import DATA_FILE

    every = json.loads((shared_data / "fewrel" / DATA_FILE).read_text(encoding="utf-8"))
    path = tmp_path / "data" / "fewrel" / DATA_FILE
    path.parent.mkdir(parents=True)
    model = tiny_model_dir("bert-cased", tmp_path)
    for n, predictor, part in ((2, "kb", "test"), (4, f"bert={model}", "dev")):
        path.write_text(json.dumps({r: every[r][:n] for r in ("P26", "P177")}), encoding="utf-8")
        code, _, err = run_kbc(["run", "fewrel", "--predictors", predictor, "--data-dir", str(tmp_path / "data"),
                                "--out", str(tmp_path / f"run-{n}"), "--quiet"], capsys)
        _assert_one_error_line(code, err, "", True)
        assert err.splitlines()[-1] == (f"error: {path}: the seeded 8:1:1 split of its {2 * n} sentences leaves the "
                                        f"{part} part empty; a relation of 10 or more sentences has some in every "
                                        "part")


def test_a_fewrel_run_scored_before_its_confusion_matrices_were_digested_says_so(shared_data, tmp_path, capsys,
                                                                                   monkeypatch):
    from bridge.run import freshness

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv, _ = _fewrel_kb_run(shared_data, tmp_path, capsys)
    run = tmp_path / "run"
    stamp = json.loads((run / freshness.STAMP).read_text(encoding="utf-8"))
    with monkeypatch.context() as earlier:  # the record an earlier version wrote: the summary files alone
        earlier.setattr(freshness, "output_names", lambda out: list(freshness.OUTPUTS))
        freshness.write_stamp(run, stamp["inputs"], stamp["files"])
    code, _, err = run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)
    _assert_one_error_line(code, err, "", False)
    # the heat map is written where matplotlib is installed
    png = (run / "figures" / "confusion-kb.png").is_file()
    listed = ("figures/confusion-kb.json, figures/confusion-kb.png and figures/confusion-kb.svg have" if png
              else "figures/confusion-kb.json has")
    them, are = ("them", "they are") if png else ("it", "it is")
    assert err.strip() == (f"error: {run}: its {listed} no digest in .kbc-summaries (an earlier kbc version wrote "
                           f"{them} without one), so whether {are} what its scoring wrote cannot be known; rerun the "
                           "same `kbc run` command to rescore it")
    assert run_kbc(argv, capsys)[0] == 0
    assert run_kbc(["report", str(run), "--out", str(tmp_path / "report")], capsys)[0] == 0


# --- the text index: an interrupted build, a query or a name without words ---

def test_an_interrupted_index_build_says_nothing_of_it_is_kept(tmp_path, capsys, monkeypatch):
    from kb.text import paragraphs

    rows = tmp_path / "paragraphs.jsonl"
    rows.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))

    read = paragraphs.read_paragraph_jsonl

    def interrupted(path, report):
        yield next(iter(read(path, report)))
        raise KeyboardInterrupt

    monkeypatch.setattr(paragraphs, "read_paragraph_jsonl", interrupted)
    out = tmp_path / "idx"
    code, _, err = run_kbc(["index", "build", "--source", "jsonl", "--input", str(rows), "--out", str(out),
                            "--quiet"], capsys)
    assert code == 130 and not out.exists()
    assert err.strip() == ("interrupted: no index was built and nothing of it is kept; the index at --out before, "
                           "if any, is unchanged; rerun the same command to build it from the start")


@pytest.mark.parametrize(("argv", "expected"), [
    (["index", "search", ""], "error: QUERY '' has no word to search for (letters or digits)"),
    (["index", "search", " ?! "], "error: QUERY ' ?! ' has no word to search for (letters or digits)"),
    (["cooccur", "", "Florence"], "error: A='' has no word to look for (letters or digits); give a name, or "
                                  "--alias-a NAME"),
    (["cooccur", "Dante", "."], "error: B='.' has no word to look for (letters or digits); give a name, or "
                                "--alias-b NAME"),
    (["cooccur", "", "Florence", "--alias-a", "Dante"], None),
])
def test_a_search_or_cooccurrence_without_words_is_refused(tmp_path, capsys, argv, expected):
    from kb.text.index import build_index
    from kb.text.paragraphs import Paragraph

    index = tmp_path / "idx"
    build_index([Paragraph(f"{p['title']}#{i}", p["title"], i, p["text"]) for i, p in enumerate(PARAGRAPHS)],
                "tantivy", index).close()
    code, out, err = run_kbc([*argv, "--index", str(index)], capsys)
    if expected is None:  # an alias of words is looked for as before
        assert code == 0 and out == "A='': 2  B='Florence': 1  both: 1  of 2 paragraphs  pmi=0.000  npmi=0.000\n"
        return
    _assert_one_error_line(code, err, expected, False)
    assert err.strip() == expected and out == ""


# --- a served model's fixes name the option as the run writes it (--set NAME.KEY) ---

@pytest.mark.parametrize(("status", "fix"), [
    (400, "the server lists no model tiny, it serves /m/gpt2: --set llm.model=NAME"),
    (401, "give the key's environment variable with --set llm.key_env=NAME"),
    (404, "check the URL (it ends in /v1) and --set llm.model=tiny"),
])
def test_a_served_model_refusal_names_the_predictors_option(ctx, capsys, status, fix):
    from served_support import Scripted

    server = Scripted(lambda path, body, n: (status, {"error": "refused"}), models=[{"id": "/m/gpt2"}])
    try:
        code, _, err = run_kbc([*ctx.run_freq(), "--limit", "1", "--predictors", f"llm={server.url}", "--set",
                                "llm.model=tiny", "--set", "llm.retries=0"], capsys)
        _assert_one_error_line(code, err, fix, True)
    finally:
        server.close()


# --- kbc data uhn: an --out among the data it reads is refused, as kbc run --out is ---

def _uhn_argv(out: Path, data: Path) -> list[str]:
    return ["data", "uhn", "--filters", "string", "--data-dir", str(data), "--out", str(out)]


def test_a_uhn_build_into_the_data_it_reads_is_refused_and_writes_nothing(ctx, capsys):
    src = ctx.tmp / "src"
    mine = src / "mine"  # a data directory not named lama/ or data/: known as the one read, not by its layout
    shutil.copytree(ctx.data, mine)
    fix = "and LAMA-UHN is written into --out; pass a folder outside the data"
    for out, data, where in (
            (ctx.data / "uhn_x", ctx.data, f"is inside the LAMA data directory {ctx.data.resolve()}"),
            (ctx.data, ctx.data, f"is inside the LAMA data directory {ctx.data.resolve()}"),
            (ctx.tmp, ctx.data, f"holds the LAMA data directory {ctx.data.resolve()}"),
            (src, mine, f"holds the data directory {mine.resolve()}")):
        before = sorted(p.relative_to(ctx.tmp) for p in ctx.tmp.rglob("*") if "cache" not in p.parts)
        code, _, err = run_kbc(_uhn_argv(out, data), capsys)
        _assert_one_error_line(code, err, f"error: --out {out} {where}, {fix}", False)
        assert sorted(p.relative_to(ctx.tmp) for p in ctx.tmp.rglob("*") if "cache" not in p.parts) == before


def test_a_uhn_build_over_its_own_output_is_refused_and_an_earlier_build_elsewhere_is_replaced(ctx, capsys):
    build = ctx.tmp / "builds" / "uhn"
    assert run_kbc(_uhn_argv(build, ctx.data), capsys)[0] == 0
    files = {p: p.read_bytes() for p in build.rglob("*") if p.is_file()}
    code, _, err = run_kbc(_uhn_argv(build, build), capsys)  # read from the build, written over it
    _assert_one_error_line(code, err, f"error: --out {build} is the data directory {build.resolve()}, and LAMA-UHN "
                           "is written into --out; pass a folder outside the data", False)
    code, _, err = run_kbc(_uhn_argv(build / "sub", ctx.data), capsys)
    _assert_one_error_line(code, err, f"error: --out {build / 'sub'} is inside the LAMA data directory "
                           f"{build.resolve()}, and LAMA-UHN is written into --out; pass a folder outside the data",
                           False)
    assert {p: p.read_bytes() for p in build.rglob("*") if p.is_file()} == files
    code, out, err = run_kbc(_uhn_argv(build, ctx.data), capsys)  # from the data again: the earlier build replaced
    assert code == 0, err
    assert json.loads((build / "uhn.json").read_text())["source"] == str(ctx.data.resolve())


# --- a T-REx or Google-RE id is a Wikidata id or null: facts are told apart and matched by it ---

@pytest.mark.parametrize(("corpus", "key", "value", "got"), [
    ("trex", "obj_uri", "", "an empty string"),
    ("trex", "sub_uri", "Q 1 <x>", "'Q 1 <x>'"),
    ("trex", "sub_uri", "P19", "'P19'"),
    ("google_re", "obj_w", "/m/02_286", "'/m/02_286'"),
    ("google_re", "sub_w", "", "an empty string"),
])
def test_an_id_that_is_no_wikidata_id_is_refused(ctx, capsys, corpus, key, value, got):
    ctx.set_field(corpus, key, value)
    relation = "P19" if corpus == "trex" else "place_of_death"
    code, _, err = run_kbc(ctx.run_freq(corpus, relation), capsys)
    expected = (f"error: {ctx.rows(corpus)}:1: field {key!r} must be a Wikidata id such as Q123 (or null where "
                f"there is none), got {got}")
    _assert_one_error_line(code, err, expected, False)
    assert err.strip() == expected


def test_a_null_id_is_an_entity_without_one(ctx, capsys):
    ctx.set_field("trex", "obj_uri", None)  # as T-REx P276 holds "USA Film Festival -> Dallas"
    code, out, err = run_kbc(ctx.stats("trex"), capsys)
    assert code == 0, err
    from eval.lama import load_trex

    first = load_trex(ctx.data).facts[0]
    assert (first.subject.id, first.object.id) == ("Q1886736", None)


# --- coherency and KMIR: the filtered setting they do not score ---

@pytest.mark.parametrize("experiment", ["coherency", "kmir"])
def test_coherency_and_kmir_refuse_the_filtered_setting(lama_dir, tmp_path, capsys, monkeypatch, experiment):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    argv = ["run", experiment, "--corpus", "trex", "--relations", "P36", "--limit", "2", "--predictors", "gold",
            "--data-dir", str(lama_dir), "--quiet"]
    expected = f"error: --setting filtered: `kbc run {experiment}` scores the raw setting only; use --setting raw"
    code, _, err = run_kbc([*argv, "--out", str(tmp_path / "filtered"), "--setting", "filtered"], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == expected and not (tmp_path / "filtered").exists()
    assert run_kbc([*argv, "--out", str(tmp_path / "run")], capsys)[0] == 0
    for command in ("leaderboard", "report"):
        code, _, err = run_kbc([command, str(tmp_path / "run"), "--setting", "filtered"], capsys)
        _assert_one_error_line(code, err, "", False)
        assert err.strip() == expected


# --- T-REx rows and files: a label of the wrong type, a control character, a relation without its file ---

def test_a_label_of_another_type_is_named_as_such(ctx, capsys):
    ctx.set_field("trex", "obj_label", 5)
    code, _, err = run_kbc(ctx.run_freq(), capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == f"error: {ctx.rows('trex')}:1: field 'obj_label' must be a non-empty string, got a number"


def test_malformed_json_names_its_column(ctx, capsys):
    path = ctx.rows("trex")
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = '{"sub_label": "a\tb", "obj_label": "x"}\n'
    path.write_text("".join(lines))
    code, _, err = run_kbc(ctx.run_freq(), capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == f"error: {path}:2: malformed JSON (Invalid control character at column 17)"


def test_a_relation_without_its_file_names_every_folder_looked_in(ctx, lama_dir, capsys):
    p36 = next(r for r in (lama_dir / "relations.jsonl").read_text().splitlines() if '"P36"' in r)
    with (ctx.data / "relations.jsonl").open("a") as handle:
        handle.write(p36 + "\n")
    code, _, err = run_kbc(ctx.run_freq("trex", "P36"), capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == (
        "error: --relations P36: corpus trex knows this relation (relations.jsonl lists it) but has no data for it: "
        f"no P36.jsonl in {ctx.data}/TREx or {ctx.data}/TREx_reconstructed")


# --- --executor ray without Ray installed: said before any cluster is looked for ---

def test_ray_missing_is_said_before_the_cluster_is_tried(ctx, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as where the extra is not installed
    code, _, err = run_kbc([*ctx.run_freq(), "--executor", "ray", "--ray-address", "127.0.0.1:1"], capsys)
    _assert_one_error_line(code, err, "", False)
    assert err.strip() == ("error: --executor ray needs Ray, which is not installed: pip install -e '.[ray]' in the "
                           "kbcompare checkout")


@pytest.mark.parametrize("command", ["show", "report", "compare", "analyze stats"])
def test_a_folder_whose_name_starts_with_a_dash_is_refused_naming_how_to_give_it(command, tmp_path, capsys,
                                                                                monkeypatch):
    """Click reads `-o2` as options; where a folder is named so, the line says how to name it. An unknown option
    that names nothing here points at the command's help, as before."""
    monkeypatch.chdir(tmp_path)
    words = command.split()
    code, _, err = run_kbc([*words, "-x2"], capsys)
    assert (code, err) == (2, f"error: No such option '-x'. (see `kbc {command} --help`)\n")
    (tmp_path / "-o2").mkdir()
    code, _, err = run_kbc([*words, "-o2"], capsys)
    assert (code, err) == (2, f"error: -o2 was read as options (`kbc {command}` has no option -o); to name the "
                              "folder -o2, write ./-o2 (or put -- before it)\n")
    for named in (["./-o2"], ["--", "-o2"]):
        code, _, err = run_kbc([*words, *named], capsys)
        assert code == 2 and "option" not in err, err  # read as the folder


def test_a_command_naming_no_folder_by_position_points_at_its_help_whatever_folders_are_there(tmp_path, capsys,
                                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-o2").mkdir()
    code, _, err = run_kbc(["run", "lama", "-o2"], capsys)
    assert (code, err) == (2, "error: No such option '-o'. (see `kbc run lama --help`)\n")
