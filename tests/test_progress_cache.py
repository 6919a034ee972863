"""The progress bar of a run whose answers come back from the LM result cache: they leave its total rather than
count as progress, so its rate and time left are those of the work still computed."""

import json

import pytest
from tqdm import tqdm

from bridge.run.progress import QueryBar, cached_part
from bridge.run.runner import RunConfig, run_lama


class Bar:
    """A stand-in for tqdm that notes each step, the totals it is given and its postfix."""

    made: list["Bar"] = []

    def __init__(self, total, **kwargs) -> None:
        self.total, self.n, self.steps, self.postfix, self.bar_format = total, 0, [], "", None
        Bar.made.append(self)

    def update(self, n: int = 1) -> None:
        self.n += n
        self.steps.append(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = s

    def close(self) -> None:
        pass


def test_cached_answers_leave_the_total_and_computed_ones_move_the_bar():
    bar = QueryBar(100, "trex bert", False, Bar)
    bar.computed(10)
    bar.from_cache(60)
    bar.computed(5)
    assert (bar.bar.n, bar.bar.total, bar.bar.postfix) == (15, 40, "60 queries from the cache")
    assert cached_part(8, 0, 0) == 0 and cached_part(8, 300, 100) == 6 and cached_part(0, 5, 0) == 0


def shown(err: str) -> str:
    """The last line tqdm drew on stderr (each redraw starts with a carriage return)."""
    return err.replace("\n", "\r").rstrip("\r").split("\r")[-1].rstrip()


def test_a_stage_the_cache_answered_whole_says_so_rather_than_a_zero_count(capsys):
    bar = QueryBar(40, "trex gpt2", False, tqdm, "sentence")
    bar.from_cache(30)
    bar.from_cache(10)
    bar.close()
    assert shown(capsys.readouterr().err) == "trex gpt2: 40 sentences, all from the cache"
    one = QueryBar(1, "trex bert", False, tqdm)
    one.from_cache(1)
    one.close()
    assert shown(capsys.readouterr().err) == "trex bert: 1 query, all from the cache"


def test_a_stage_with_nothing_to_ask_says_so_rather_than_a_zero_count(capsys):
    bar = QueryBar(0, "trex bert coherency", False, tqdm)
    bar.close()
    assert shown(capsys.readouterr().err) == "trex bert coherency: nothing to ask"
    typed = QueryBar(0, "trex gpt2", False, tqdm, "sentence")
    typed.close()
    assert shown(capsys.readouterr().err) == "trex gpt2: nothing to ask"


def test_a_partly_cached_stage_counts_what_it_computed_and_names_the_cached_in_their_unit(capsys):
    bar = QueryBar(40, "trex gpt2", False, tqdm, "sentence")
    bar.computed(10)
    bar.from_cache(30)
    bar.close()
    line = shown(capsys.readouterr().err)
    assert line.startswith("trex gpt2: 100%|") and "| 10/10 [" in line, line
    assert line.endswith("sentence/s, 30 sentences from the cache]"), line


@pytest.mark.parametrize("kind", ["bert-cased", "gpt2"])
def test_a_run_read_back_from_the_cache_moves_no_bar(tmp_path, lama_dir, monkeypatch, kind):
    """A second run into a new --out reads every answer from the cache: its bar never moves, its total goes to 0
    and says how many the cache answered; the first run's bar moved over every query asked."""
    import lm_fixtures

    from bridge.run import runner

    monkeypatch.setattr(runner, "tqdm", Bar)
    model = lm_fixtures.tiny_model_dir(kind, tmp_path)

    def run(out: str) -> tuple[Bar, int]:
        """The bar and the work it counts: queries asked, or for typed querying one sentence per candidate."""
        Bar.made = []
        run_lama(RunConfig(["trex"], [f"lm={model}"], tmp_path / out, str(lama_dir), relations=["P140"], limit=12,
                           batch_size=4, cache_dir=tmp_path / "cache"), progress=True)
        lines = (tmp_path / out / "predictions/trex/lm/P140.jsonl").read_text().splitlines()
        asked = sum("dropped" not in json.loads(x) for x in lines)
        space = json.loads((tmp_path / out / "config.json").read_text())["answer_space"]["trex"]["lm"]["P140"]
        return Bar.made[-1], asked * space if kind == "gpt2" else asked

    first, work = run("one")
    assert work > 0 and first.n == work and first.total == work and first.postfix == ""
    again, work_again = run("two")
    assert work_again == work
    unit = "sentences" if kind == "gpt2" else "queries"
    assert again.n == 0 and again.total == 0 and again.postfix == f"{work:,} {unit} from the cache"
    assert again.bar_format == "{desc}: " + f"{work:,} {unit}, all from the cache"


def test_typed_querying_counts_sentences_across_relations_of_unlike_candidates(tmp_path, lama_dir, monkeypatch):
    """A causal LM's cost per query is its relation's candidates (P36's and P19's differ): the bar counts sentences,
    its total the sum over relations of queries x candidates, and it ends there."""
    import lm_fixtures

    from bridge.run import runner

    monkeypatch.setattr(runner, "tqdm", Bar)
    Bar.made = []
    model = lm_fixtures.tiny_model_dir("gpt2", tmp_path)
    out = tmp_path / "out"
    run_lama(RunConfig(["trex"], [f"lm={model}"], out, str(lama_dir), relations=["P36", "P19"], limit=3,
                       cache_dir=tmp_path / "cache", options={"cache": "off"}), progress=True)
    space = json.loads((out / "config.json").read_text())["answer_space"]["trex"]["lm"]
    asked = {rel: sum("dropped" not in json.loads(x)
                      for x in (out / f"predictions/trex/lm/{rel}.jsonl").read_text().splitlines())
             for rel in ("P36", "P19")}
    assert space["P36"] != space["P19"] and all(asked.values())
    sentences = sum(asked[rel] * space[rel] for rel in asked)
    bar = Bar.made[-1]
    assert (bar.total, bar.n, sorted(bar.steps)) == (sentences, sentences, sorted(n * space[r] for r, n in
                                                                                  asked.items()))
