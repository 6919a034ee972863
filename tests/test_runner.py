"""The runner: outputs, resume after an interruption, refusal of incompatible reruns."""

import json

import pytest
from lm_fixtures import tiny_models  # noqa: F401  (fixture)

from bridge.predictors import registry
from bridge.run.record_digests import line_digest
from bridge.run.runner import RunConfig, run_lama
from eval.errors import ConfigError, DataError
from eval.types import QUERIES_PER_CALL as CHUNK
from kb.freq import FreqPredictor

CALLS = []


class Flaky(FreqPredictor):
    """Freq that is interrupted after its first chunk, the first time it runs."""

    name = "flaky"

    def predict(self, queries, depth):
        CALLS.append(len(queries))
        if len(CALLS) == 2:
            raise KeyboardInterrupt
        return super().predict(queries, depth)


def make_flaky(name, ctx):
    return Flaky(ctx.corpus.facts)


@pytest.fixture
def flaky(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(registry.ENTRIES, "flaky", (f"{__name__}:make_flaky", "test"))


def _chunks(n):
    return [min(CHUNK, n - start) for start in range(0, n, CHUNK)]


def _cfg(tmp_path, lama_dir, **kw):
    return RunConfig(["trex"], ["flaky"], tmp_path / "out", str(lama_dir), relations=["P19", "P47"],
                     cache_dir=tmp_path / "cache", **kw)


def test_resume_after_interrupt(tmp_path, lama_dir, flaky, caplog):
    with pytest.raises(KeyboardInterrupt):
        run_lama(_cfg(tmp_path, lama_dir), progress=False)
    p19 = tmp_path / "out" / "predictions" / "trex" / "flaky" / "P19.jsonl"
    assert len(p19.read_text().splitlines()) == CHUNK  # the finished chunk was kept
    with p19.open("a") as handle:  # a torn line, as a crash mid-write leaves it
        handle.write('{"uid": "torn')
    caplog.set_level("INFO", logger="kbc")
    caplog.clear()
    rows = run_lama(_cfg(tmp_path, lama_dir), progress=False)
    # a resume says what was recorded before, in the words of a stage recorded whole
    assert [m for m in caplog.messages if "queries" in m and "trex / flaky:" in m] == [
        f"trex / flaky: {CHUNK} of {944 + 922} queries recorded earlier; asking {944 + 922 - CHUNK}"]
    # resumed: only the remaining 944 - CHUNK queries of P19 and all 922 of P47 were asked
    assert CALLS[2:] == _chunks(944 - CHUNK) + _chunks(922)
    lines = [json.loads(x) for x in p19.read_text().splitlines()]
    assert len(lines) == 944 and len({x["uid"] for x in lines}) == 944
    digests = tmp_path / "out" / ".kbc-records" / "trex" / "flaky" / "P19.digests"  # one per line, as written
    assert digests.read_bytes() == b"".join(line_digest(raw) for raw in p19.read_bytes().splitlines(keepends=True))
    get = {(r["setting"], r["group"], r["metric"]): r["value"] for r in rows}
    fresh = run_lama(RunConfig(["trex"], ["freq"], tmp_path / "fresh", str(lama_dir), relations=["P19", "P47"],
                               cache_dir=tmp_path / "cache"), progress=False)
    assert get == {(r["setting"], r["group"], r["metric"]): r["value"] for r in fresh}
    CALLS.clear()
    caplog.clear()
    run_lama(_cfg(tmp_path, lama_dir), progress=False)
    assert CALLS == []  # everything done: nothing recomputed
    assert "trex / flaky: all 1866 queries done, skipped" in caplog.messages


def test_outputs(tmp_path, lama_dir):
    out = tmp_path / "out"
    run_lama(RunConfig(["google_re"], ["freq"], out, str(lama_dir), cache_dir=tmp_path / "cache"), progress=False)
    config = json.loads((out / "config.json").read_text())
    assert config["predictors"] == ["freq"] and config["data_versions"]["google_re"]
    assert config["predictor_configs"]["google_re"]["freq"]["ties"] == "first occurrence in the data"
    assert config["predictor_configs"]["google_re"]["freq"]["slots"] == ["object", "subject"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary[0]) == {"corpus", "predictor", "setting", "scope", "group", "metric", "value", "n_facts",
                               "stderr", "ci_low", "ci_high"}
    assert {r["metric"] for r in summary} == {"p@1", "p@10", "mrr", "answer_space"}
    assert {r["scope"] for r in summary} == {"own", "shared"}
    curves = json.loads((out / "curves.json").read_text())
    assert [r["k"] for r in curves if r["setting"] == "raw" and r["scope"] == "own"] == list(range(1, 101))
    record = json.loads((out / "predictions/google_re/freq/place_of_birth.jsonl").open().readline())
    assert record["prompt"] == "Khatchig Mouradian was born in [MASK] ."
    assert record["gold"] == "Lebanon" and len(record["answers"]) == 10
    assert record["answers"][0][0] == "London"
    assert "| google_re | freq | 372 | 5527 | 1.86 ± 0.32 | 4.63 ± 0.39 | 6.80 ± 0.91 | 4.43 ± 0.35 | [3.74, 5.12] |" \
        in (out / "summary.md").read_text()


def test_rerun_with_other_settings_refused(tmp_path, lama_dir):
    cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                    relations=["place_of_death"])
    run_lama(cfg, progress=False)
    cfg.depth = 50
    with pytest.raises(ConfigError, match="predictor 'freq' was run as"):
        run_lama(cfg, progress=False)


def test_a_damaged_line_stops_the_rerun_and_is_kept(tmp_path, lama_dir):
    cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                    relations=["place_of_death"], limit=5)
    run_lama(cfg, progress=False)
    path = tmp_path / "out" / "predictions" / "google_re" / "freq" / "place_of_death.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = b"".join(lines[:1] + [b'{"uid": "x", "relation": "place_of_death", "coherent": "false"}\n'] + lines[1:])
    path.write_bytes(damaged)
    with pytest.raises(DataError, match=r"place_of_death.jsonl:2: not the record this run wrote there"):
        run_lama(cfg, progress=False)
    assert path.read_bytes() == damaged  # nothing cut off or rewritten


def test_a_rerun_with_another_sample_says_the_scores_cover_both(tmp_path, lama_dir, caplog):
    def run(limit, seed):
        cfg = RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                        relations=["place_of_death"], limit=limit, seed=seed)
        caplog.clear()
        rows = run_lama(cfg, progress=False)
        return next(r["n_facts"] for r in rows if r["metric"] == "p@1" and r["scope"] == "own"
                    and r["group"] == "all"), [m for m in caplog.messages if "also holds facts asked with" in m]

    assert run(5, 0) == (5, [])
    assert run(5, 0) == (5, [])  # the same sample again: nothing to say
    n, notes = run(5, 1)
    assert 5 < n <= 10 and len(notes) == 1 and "--limit 5 --seed 0" in notes[0]


def test_relations_added_later_keep_the_earlier_answer_spaces(tmp_path, lama_dir):
    def run(*relations):
        return run_lama(RunConfig(["google_re"], ["freq"], tmp_path / "out", str(lama_dir), cache_dir=tmp_path / "c",
                                  relations=list(relations)), progress=False)

    run("place_of_birth")
    rows = run("place_of_death")
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert set(config["answer_space"]["google_re"]["freq"]) == {"place_of_birth", "place_of_death"}
    together = run_lama(RunConfig(["google_re"], ["freq"], tmp_path / "both", str(lama_dir), cache_dir=tmp_path / "c",
                                  relations=["place_of_birth", "place_of_death"]), progress=False)
    assert rows == together


def test_progress_moves_per_batch_inside_a_chunk(tmp_path, lama_dir, monkeypatch):
    """A masked LM's bar moves as its batches finish, not once per 512-query chunk; it ends at the total."""
    import lm_fixtures

    from bridge.run import runner

    steps: list[int] = []

    class Bar:
        def __init__(self, total, **kw):
            self.total = total

        def update(self, n):
            steps.append(n)

        def close(self):
            pass

    monkeypatch.setattr(runner, "tqdm", Bar)
    bert = lm_fixtures.tiny_model_dir("bert-cased", tmp_path)
    run_lama(RunConfig(["trex"], [f"bert={bert}"], tmp_path / "out", str(lama_dir), relations=["P140"], limit=40,
                       batch_size=4, cache_dir=tmp_path / "cache", options={"cache": "off"}), progress=True)
    answered = [json.loads(x) for x in (tmp_path / "out/predictions/trex/bert/P140.jsonl").read_text().splitlines()]
    asked = [r for r in answered if "dropped" not in r]
    assert sum(steps) == len(asked) and len(steps) >= len(asked) // 4 and max(steps) <= 4


def test_ctrl_c_keeps_the_records_and_cached_scores_of_returned_calls_only(tmp_path, lama_dir, tiny_models,  # noqa: F811
                                                                           monkeypatch):
    """docs/lama.md: records and the LM result cache are kept per call of up to QUERIES_PER_CALL queries; the
    batches a cut-off call had scored are kept nowhere, so a resume scores that call again."""
    import sqlite3

    from lm import masked

    model, calls, forward = tiny_models("bert-cased"), [0], masked.MaskedLMScorer._mask_logits

    def cut_at(n):
        def logits(self, *args, **kw):
            calls[0] += 1
            if calls[0] == n:
                raise KeyboardInterrupt
            return forward(self, *args, **kw)
        return logits

    cfg = RunConfig(["trex"], [f"bert={model}"], tmp_path / "out", str(lama_dir), relations=["P19"],
                    cache_dir=tmp_path / "cache", batch_size=4)
    records = tmp_path / "out" / "predictions" / "trex" / "bert" / "P19.jsonl"
    db = tmp_path / "cache" / "lm" / "results.sqlite"
    for at, kept in ((10, 0), (140, CHUNK)):  # within the first call's 128 batches of 4; within the second's
        calls[0] = 0
        masked._PATHS_SAID.clear()
        monkeypatch.setattr(masked.MaskedLMScorer, "_mask_logits", cut_at(at))
        with pytest.raises(KeyboardInterrupt):
            run_lama(cfg, progress=False)
        assert (len(records.read_text().splitlines()) if records.exists() else 0) == kept
        assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM results").fetchone()[0] == kept
