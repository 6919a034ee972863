"""`kbc run fewrel` end to end on a FewRel slice with a tiny BERT and wikipedia2vec vectors for most entities:
the records, the summary rows against the records, resuming, the AVG ensemble, `kbc show`, the KB's relations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import serve_support
from cli_support import run_kbc
from fewrel_fixtures import HAWAII, MILLAIS, entity_vectors, fewrel_slice, kb_slice, trex_rows
from lm_fixtures import tiny_model_dir

from bridge.experiments.fewrel import METRICS
from eval.classification import macro_scores
from kb.reasoning import closure_graph, load_axioms

serve_explorer = serve_support.serve_explorer


def _records(out, name):
    rows = []
    for path in sorted((out / "predictions" / "fewrel" / name).glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return {r["uid"]: r for r in rows}


def _finished(run, capsys, monkeypatch):
    """(argv, out) of the module's run, run to the end first where an earlier test did not."""
    root, argv = run
    monkeypatch.setenv("KBC_CACHE", str(root / "cache"))
    out = root / "out"
    if not (out / "summary.json").is_file():
        assert run_kbc(argv, capsys)[0] == 0
    return argv, out


@pytest.fixture(scope="module")
def run(shared_data, tmp_path_factory):
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("fewrel-run")
    folder = fewrel_slice(shared_data, root / "data", per_relation=10)
    model = tiny_model_dir("bert-cased", root)
    w2v = entity_vectors(folder, root, AutoTokenizer.from_pretrained(model).get_vocab())
    argv = ["run", "fewrel", "--predictors", "bert", "ebert", "ebert-avg", f"ebert-concat={model}", "--set",
            f"bert.model={model}", "--set", f"ebert.model={model}", "--set", f"ebert-avg.model={model}",
            "--set", f"wikipedia2vec={w2v}", "--set", "epochs=1", "--set", "lr=1e-3", "--set", "train_batch=8",
            "--data-dir", str(folder), "--out", str(root / "out"), "--quiet", "--bootstrap", "50"]
    return root, argv


def test_the_run_writes_records_the_summary_recomputes(run, capsys, monkeypatch):
    root, argv = run
    monkeypatch.setenv("KBC_CACHE", str(root / "cache"))
    code, stdout, err = run_kbc(argv, capsys)
    assert code == 0, err
    out = root / "out"
    assert "FewRel F1 (%) (Total: macro over relations)" in stdout
    assert "marked entities with an entity vector" in err
    assert "Writing model shards" not in err and "UNEXPECTED" not in err  # transformers' own notes stay out
    rows = json.loads((out / "summary.json").read_text())
    classes = ["P177", "P364", "P2094"]
    for name in ("bert", "ebert", "ebert-avg", "ebert-concat"):
        records = _records(out, name)
        assert len(records) == 3  # one test sentence per relation (10 -> 8:1:1)
        for r in records.values():
            assert set(r["distribution"]) == set(classes)
            assert r["predicted"] == max(r["distribution"], key=r["distribution"].get)
            assert sum(r["distribution"].values()) == pytest.approx(1.0, abs=1e-5)
        expected = macro_scores([r["relation"] for r in records.values()],
                                [r["predicted"] for r in records.values()], classes)
        for metric, value in expected.items():
            row = next(x for x in rows if x["predictor"] == name and x["scope"] == "own" and x["group"] == "all"
                       and x["metric"] == METRICS[metric])
            assert row["value"] == pytest.approx(value) and row["n_facts"] == 3
            # one test sentence per relation: every resample is the sample, so no (zero-width) interval
            assert (row["stderr"], row["ci_low"], row["ci_high"]) == (None, None, None)
    avg, bert, ebert = _records(out, "ebert-avg"), _records(out, "bert"), _records(out, "ebert")
    for uid, r in avg.items():  # AVG: the mean of BERT's and E-BERT's distributions, from the same two models
        for rel, p in r["distribution"].items():
            assert p == pytest.approx((bert[uid]["distribution"][rel] + ebert[uid]["distribution"][rel]) / 2,
                                      abs=1e-6)
    models = sorted(p.name.split("-")[0] for p in (out / "models").iterdir())
    assert models == ["bert", "concat", "ebert"]  # AVG trained nothing of its own
    config = json.loads((out / "config.json").read_text())
    coverage = config["predictor_configs"]["fewrel"]["ebert"]["models"]["ebert"]["entity_coverage"]
    assert coverage["test"]["entities"] == 6 and 0 < coverage["test"]["fallback"] < 6
    summary = (out / "summary.md").read_text()
    assert "## F1 per relation (shared sentences)" in summary
    trained = summary.split("## Training of the fine-tuned predictors", 1)[1].split("\n\n")[2].splitlines()
    assert trained[0] == ("| predictor | model | lr (chosen of tried) | kept epoch / epochs | dev macro F1 | batch "
                          "| dtype |")
    described = config["predictor_configs"]["fewrel"]
    assert trained[2:] == [f"| {p} | {m} | 0.001 | 1 / 1 | {described[p]['models'][m]['best']['f1']:.2f} | 8 | "
                           "float32 |" for p, m in (("bert", "bert"), ("ebert", "ebert"), ("ebert-avg", "bert"),
                                                    ("ebert-avg", "ebert"), ("ebert-concat", "concat"))]
    from bridge.experiments.fewrel import precision_note

    assert "\n".join(precision_note(rows)) in summary and "zero_division=0" in summary
    assert (out / "figures" / "confusion-bert.png").is_file()
    matrix = json.loads((out / "figures" / "confusion-bert.json").read_text())
    assert int(np.sum(matrix["counts"])) == 3


def test_a_rerun_resumes_and_changes_no_score(run, capsys, monkeypatch):
    argv, out = _finished(run, capsys, monkeypatch)
    before = json.loads((out / "summary.json").read_text())
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    assert "all 3 queries done, skipped" in err
    assert json.loads((out / "summary.json").read_text()) == before
    record = next(iter(_records(out, "bert").values()))
    code, stdout, err = run_kbc(["show", str(out), "--uid", record["uid"]], capsys)
    assert code == 0, err
    assert "<- gold" in stdout and " $ " in stdout and " # " in stdout
    assert f"/ uid {record['uid']}\n" in stdout and f"  gold:     {record['relation']}\n" in stdout
    assert stdout.count(f"predicted {record['predicted']} (") >= 1 and stdout.count("  predicted ") == 4
    inputs = [line.strip() for line in stdout.splitlines() if line.strip().startswith("input: ")]
    # each predictor's own form: E-BERT's entity tokens, CONCAT's `entity / words`, BERT's word pieces alone
    assert [x.removeprefix("input: ") for x in inputs] == [_records(out, n)[record["uid"]]["prompt"]
                                                            for n in ("bert", "ebert", "ebert-avg", "ebert-concat")]
    assert " / " in inputs[3] and " / " not in inputs[0]


def test_the_leaderboard_and_the_explorer_rank_by_macro_f1(run, capsys, monkeypatch):
    _, out = _finished(run, capsys, monkeypatch)
    rows = json.loads((out / "summary.json").read_text())
    code, stdout, err = run_kbc(["leaderboard", str(out), "--format", "json"], capsys)
    assert code == 0, err
    board = {r["predictor"]: r for r in json.loads(stdout)["rows"]}
    for name, row in board.items():
        assert row["metric"] == "f1-macro"
        want = next(x for x in rows if x["predictor"] == name and x["metric"] == "f1-macro" and x["group"] == "all"
                    and x["scope"] == "shared" and x["setting"] == "raw")
        assert row["value"] == pytest.approx(want["value"], abs=1e-9)


def test_the_leaderboard_says_what_each_classifier_is(run, capsys, monkeypatch):
    """Parameters (every weight it asks: an ensemble's models together), dtype and device, as for a probed LM."""
    import kbcompare
    from lm.relation_classifier import load_classifier

    argv, out = _finished(run, capsys, monkeypatch)
    config = json.loads((out / "config.json").read_text())["predictor_configs"]["fewrel"]
    board = kbcompare.leaderboard(kbcompare.load_run(out)).set_index("predictor")
    for name in ("bert", "ebert", "ebert-avg", "ebert-concat"):
        weights = 0
        for model in config[name]["models"].values():
            saved = load_classifier(model["folder"])
            weights += sum(x.numel() for x in (*saved.encoder.parameters(), *saved.head.parameters()))
        assert (board.loc[name, "parameters"], board.loc[name, "dtype"], board.loc[name, "device"]) == (
            weights, "float32", "cpu")
        spec = next(a for a in argv if a.startswith("ebert-concat=")).partition("=")[2] if name == "ebert-concat" \
            else name
        assert board.loc[name, "spec"] == f"{spec} (lr 0.001, 1 epochs, batch 8)"  # the training told apart
    assert len(config["ebert-avg"]["models"]) == 2


def test_the_explorer_shows_the_summary_and_each_sentence(run, capsys, monkeypatch, serve_explorer):
    """The run page's macro F1, P, R and accuracy are the summary's, in the API exactly and on the page as printed
    to two decimals; a sentence's page names its uid, gold relation and each classifier's predicted one."""
    import html
    import re

    from fastapi.testclient import TestClient

    from bridge.serve.app import create_app
    from bridge.serve.runs import Runs

    _, out = _finished(run, capsys, monkeypatch)
    own = {(r["predictor"], r["metric"]): r for r in json.loads((out / "summary.json").read_text())
           if r["scope"] == "own" and r["group"] == "all" and r["setting"] == "raw"}
    bert = _records(out, "bert")
    uid = sorted(bert)[0]
    with TestClient(create_app(serve_explorer, Runs([out]))) as c:
        body = c.get("/api/runs/out").json()
        page = c.get("/runs/out").text
        sentence = c.get(f"/runs/out/facts/{uid}").text
        assert c.get("/api/runs/out/facts/P177:999").status_code == 404
    names = ["bert", "ebert", "ebert-avg", "ebert-concat"]
    assert body["metric"] == "f1-macro" and body["extra_metrics"] == ["precision-macro", "recall-macro", "accuracy"]
    assert [r["predictor"] for r in body["table"]] == names
    cells = dict(re.findall(r"<tr><td>fewrel</td><td>([\w-]+)</td><td>lm</td>(.*?)</tr>", page))
    assert list(cells) == names
    for row in body["table"]:
        name = row["predictor"]
        f1 = own[(name, "f1-macro")]
        # one test sentence per relation: no interval, in the API nor on the page
        assert row["f1-macro"] == {"all": f1["value"]} and row["ci"] == {"all": None} and f1["ci_low"] is None
        assert [row[m] for m in body["extra_metrics"]] == [own[(name, m)]["value"] for m in body["extra_metrics"]]
        shown = re.findall(r"<td>([^<]*)", cells[name])
        assert shown[:5] == [f"{f1['value']:.2f}", *(f"{own[(name, m)]['value']:.2f}" for m in body["extra_metrics"]),
                             "3"]
        assert '<small class="ci">' not in cells[name]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", sentence)).split())
    assert f"fewrel / {bert[uid]['relation']} / {uid} " in text and f" gold {bert[uid]['relation']} " in text
    for name in names:
        assert f"predicted {_records(out, name)[uid]['predicted']} " in text
    assert text.count("predicted ") == len(names)
    assert "Each sentence's page is /runs/out/facts/UID" in html.unescape(re.sub(r"<[^>]+>", "", page))


def test_a_predictor_that_classifies_nothing_is_refused(run, capsys, monkeypatch):
    root, argv = run
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "freq", "--data-dir", argv[argv.index("--data-dir") + 1],
                            "--out", str(root / "refused")], capsys)
    assert code == 2 and err.strip() == ("error: predictor freq does not classify sentences; `kbc run fewrel` takes "
                                         "bert, ebert, ebert-concat, ebert-avg, kb, kb-inferred or a model path / hub "
                                         "id (BERT on that model)")


@pytest.mark.heavy
def test_the_kb_answers_the_relations_t_rex_holds_between_the_ids(shared_data, trex, tmp_path, capsys, monkeypatch):
    from eval.fewrel import load_split

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"
    fewrel_slice(shared_data, data, per_relation=200, relations=("P364", "P361", "P463"))
    (data / "lama").symlink_to(shared_data / "lama")
    code, stdout, err = run_kbc(["run", "fewrel", "--predictors", "kb", "--data-dir", str(data), "--out",
                                 str(tmp_path / "out"), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    held: dict[tuple[str, str], set[str]] = {}
    for f in trex.facts:
        held.setdefault((f.subject.id, f.object.id), set()).add(f.relation)
    records = _records(tmp_path / "out", "kb")
    test = load_split(data / "fewrel")["test"]
    assert len(records) == len(test) == 60
    answered = 0
    for s in test:
        want = held.get((s.head.id, s.tail.id), set())
        assert records[s.uid]["kb_relations"] == sorted(want)
        in_classes = [r for r in ("P364", "P361", "P463") if r in want]
        assert records[s.uid]["predicted"] == (in_classes[0] if in_classes else None)
        answered += bool(in_classes)
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    coverage = next(r for r in rows if r["scope"] == "own" and r["group"] == "all" and r["metric"] == "coverage")
    assert coverage["value"] == pytest.approx(100 * answered / 60)


def test_several_learning_rates_keep_the_best_on_dev(run, capsys, monkeypatch):
    root, argv = run
    monkeypatch.setenv("KBC_CACHE", str(root / "cache"))
    model = argv[argv.index("--set") + 1].partition("=")[2]
    out = root / "grid"
    code, _, err = run_kbc(["run", "fewrel", "--predictors", f"bert={model}", "--set", "lr=1e-3,1e-6", "--set",
                            "epochs=1", "--set", "train_batch=8", "--data-dir", argv[argv.index("--data-dir") + 1],
                            "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["fewrel"]["bert"]["models"]["bert"]
    by_lr = described["dev_f1_by_lr"]
    assert set(by_lr) == {"0.001", "1e-06"} and len(list((out / "models").iterdir())) == 2
    best = max(by_lr.values())
    assert by_lr[str(described["lr"])] == best
    assert described["lr"] == (0.001 if by_lr["0.001"] == best else 1e-6)
    row = (f"| bert | bert | {described['lr']:g} of 0.001, 1e-06 | 1 / 1 | {described['best']['f1']:.2f} | 8 | "
           "float32 |")
    assert row in (out / "summary.md").read_text(encoding="utf-8").splitlines()
    code, _, err = run_kbc(["run", "fewrel", "--predictors", f"bert={model}", "--set", "lr=fast", "--data-dir",
                            argv[argv.index("--data-dir") + 1], "--out", str(root / "bad-lr")], capsys)
    assert code == 2 and "--set lr=fast: expected a number or comma-separated numbers" in err


def test_bf16_autocast_trains_a_model_of_its_own(run, capsys, monkeypatch):
    root, argv = run
    monkeypatch.setenv("KBC_CACHE", str(root / "cache"))
    model = argv[argv.index("--set") + 1].partition("=")[2]
    out = root / "bf16"
    asked = ["run", "fewrel", "--predictors", f"bert={model}", "--set", "epochs=1", "--set", "lr=1e-3", "--set",
             "train_batch=8", "--data-dir", argv[argv.index("--data-dir") + 1], "--out", str(out), "--quiet",
             "--bootstrap", "0"]
    code, _, err = run_kbc([*asked, "--dtype", "bfloat16"], capsys)
    assert code == 0, err
    described = json.loads((out / "config.json").read_text())["predictor_configs"]["fewrel"]["bert"]
    assert [s["dtype"] for s in described["settings"]] == ["bfloat16"]
    folder = Path(described["models"]["bert"]["folder"])
    assert [p.name for p in (out / "models").iterdir()] == [folder.name]
    assert json.loads((folder / "classifier.json").read_text())["identity"]["settings"]["dtype"] == "bfloat16"
    code, _, err = run_kbc(asked, capsys)  # float32 under the same name would mix two models' answers
    assert code == 2 and "predictor 'bert' was run with dtype bfloat16, now float32;" in err
    assert err.rstrip().endswith("give it another name (NAME=SPEC) or use another --out")


def test_kb_inferred_answers_a_relation_only_the_axioms_derive(shared_data, tmp_path, capsys, monkeypatch):
    """A slice of three test sentences and a T-REx of two facts: the gold graph holds Millais member of (P463) the
    Pre-Raphaelite Brotherhood, and island of Hawaii has part (P527) Pāhoa, whose inverse (`kb/axioms.ttl`: P361
    owl:inverseOf P527) puts Pāhoa part of (P361) island of Hawaii in the inferred graph only."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = kb_slice(shared_data, tmp_path / "data")
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "kb", "kb-inferred", "--data-dir", str(data), "--out",
                            str(tmp_path / "out"), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    found = {name: {uid: (r["predicted"], r["kb_relations"]) for uid, r in _records(tmp_path / "out", name).items()}
             for name in ("kb", "kb-inferred")}
    assert found == {"kb": {"P361:1": (None, []), "P364:6": (None, []), "P463:2": ("P463", ["P463"])},
                     "kb-inferred": {"P361:1": ("P361", ["P361"]), "P364:6": (None, []),
                                     "P463:2": ("P463", ["P463"])}}
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    total = {(r["predictor"], r["metric"]): r["value"] for r in rows
             if r["scope"] == "own" and r["group"] == "all" and r["setting"] == "raw"}
    for metric in ("coverage", "accuracy", "f1-macro", "precision-macro", "recall-macro"):  # one and two of 3 right
        assert total[("kb", metric)] == pytest.approx(100 / 3)
        assert total[("kb-inferred", metric)] == pytest.approx(200 / 3)
    config = json.loads((tmp_path / "out" / "config.json").read_text())["predictor_configs"]["fewrel"]
    assert config["kb"]["coverage"] == {"sentences": 3, "with_a_class": 1}
    assert config["kb-inferred"]["coverage"] == {"sentences": 3, "with_a_class": 2}
    gold = config["kb"]["graphs"]
    assert gold and all(g.startswith("gold-trex-") for g in gold)
    assert config["kb-inferred"]["graphs"] == [*gold, closure_graph(load_axioms(), gold)]


def test_the_leaderboard_of_one_run_is_its_summary_exactly(shared_data, tmp_path, capsys, monkeypatch):
    """Relations whose file order is not the report order (P2094 before P177): the leaderboard's shared scope
    resamples exactly as the run's summary did, so its values and intervals are the summary's to the last bit."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    folder = fewrel_slice(shared_data, tmp_path / "data", per_relation=40, relations=("P2094", "P364", "P177"))
    model = tiny_model_dir("bert-cased", tmp_path)
    out = tmp_path / "out"
    code, _, err = run_kbc(["run", "fewrel", "--predictors", f"bert={model}", f"slow={model}", "--set", "epochs=1",
                            "--set", "train_batch=8", "--set", "bert.lr=1e-3", "--set", "slow.lr=1e-5", "--data-dir",
                            str(folder), "--out", str(out), "--quiet", "--bootstrap", "200", "--bootstrap-seed", "3"],
                           capsys)
    assert code == 0, err
    assert list(json.loads((out / "config.json").read_text())["relation_types"]["fewrel"]) == ["P2094", "P364", "P177"]
    summary = {(r["predictor"], r["metric"]): r for r in json.loads((out / "summary.json").read_text())
               if r["scope"] == "shared" and r["group"] == "all"}
    fields = ("value", "stderr", "ci_low", "ci_high", "n_facts")
    for metric in METRICS.values():
        code, stdout, err = run_kbc(["leaderboard", str(out), "--metric", metric, "--format", "json"], capsys)
        assert code == 0, err
        board = json.loads(stdout)["rows"]
        assert sorted(r["predictor"] for r in board) == ["bert", "slow"]
        for row in board:
            want = summary[(row["predictor"], metric)]
            assert row["stderr"] is not None and row["n_facts"] == 12
            assert [row[k] for k in fields] == [want[k] for k in fields], (row["predictor"], metric)


def test_a_saved_e_bert_classifier_predicts_as_the_docs_show(run, capsys, monkeypatch):
    """docs/fewrel.md's E-BERT example (the link and mapped vectors built from the files the run's --set named, the
    map saved by `kbc entities map`) gives the run's own class distributions."""
    from eval.fewrel import load_split
    from lm.relation_classifier import load_classifier

    root, argv = run
    monkeypatch.setenv("KBC_CACHE", str(root / "cache"))
    model = next(a for a in argv if a.startswith("ebert-concat=")).partition("=")[2]
    w2v = next(a for a in argv if a.startswith("wikipedia2vec=")).partition("=")[2]
    data = argv[argv.index("--data-dir") + 1]
    saved = root / "map.npz"
    code, _, err = run_kbc(["entities", "map", "--model", model, "--wikipedia2vec", w2v, "--out", str(saved)], capsys)
    assert code == 0, err
    out = root / "ebert-map"
    code, _, err = run_kbc(["run", "fewrel", "--predictors", f"ebert={model}", "--set", f"wikipedia2vec={w2v}",
                            "--set", f"map={saved}", "--set", "epochs=1", "--set", "lr=1e-3", "--set", "train_batch=8",
                            "--data-dir", data, "--out", str(out), "--quiet", "--bootstrap", "0"], capsys)
    assert code == 0, err
    folder = json.loads((out / "config.json").read_text())["predictor_configs"]["fewrel"]["ebert"]["models"][
        "ebert"]["folder"]
    doc = (Path(__file__).parents[1] / "docs" / "fewrel.md").read_text(encoding="utf-8")
    example = doc.split("```python\n")[2].split("```")[0]
    assert 'predict_proba(parts["test"], link, mapped)' in example
    sentences = load_split(Path(data))["test"]
    found: dict = {"load_split": load_split, "load_classifier": load_classifier}
    exec(example.replace("runs/fewrel/models/ebert-67c4d3b11d", folder).replace("models/enwiki.npz", w2v)
         .replace('"qid_titles.tsv"', "None").replace('"map.npz"', repr(str(saved)))
         .replace("../shared/data/fewrel", data), found)
    records = _records(out, "ebert")
    classes = found["classifier"].classes
    for s, row in zip(sentences, found["probs"], strict=True):
        assert row == pytest.approx([records[s.uid]["distribution"][c] for c in classes], abs=1e-6)


def test_a_rerun_on_other_t_rex_data_is_refused(shared_data, tmp_path, capsys, monkeypatch):
    """The KB's answers come from T-REx: an edited relation file, or another --data-dir whose T-REx differs, under
    the same --out would keep the old graphs' answers; the same data again resumes."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = kb_slice(shared_data, tmp_path / "data")
    lama = data / "lama"
    out = tmp_path / "out"
    asked = ["run", "fewrel", "--predictors", "kb", "--data-dir", str(data), "--out", str(out), "--quiet",
             "--bootstrap", "0"]
    assert run_kbc(asked, capsys)[0] == 0
    assert run_kbc(asked, capsys)[0] == 0  # the same data: nothing to redo
    recorded = json.loads((out / "config.json").read_text())["predictor_specs"]["kb"]["data"]["trex"]
    assert sorted(recorded) == ["P463", "P527"]
    other = tmp_path / "other"
    (other / "lama").mkdir(parents=True)
    (other / "fewrel").symlink_to(data / "fewrel")
    (other / "lama" / "relations.jsonl").symlink_to(lama / "relations.jsonl")
    trex_rows(other / "lama", "P463", [MILLAIS, ("Q1", "a", "Q2", "b")])
    trex_rows(other / "lama", "P527", [HAWAII])
    code, _, err = run_kbc([*asked[:5], str(other), *asked[6:]], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {out}: predictor 'kb' answered there from other data (T-REx P463 changed since: an edited file or "
        "another --data-dir); use another --out for this data")
    trex_rows(lama, "P463", [("Q1", "a", "Q2", "b")])
    trex_rows(lama, "P361", [("Q2529053", "Pāhoa", "Q68740", "island of Hawaii")])
    code, _, err = run_kbc(asked, capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {out}: predictor 'kb' answered there from other data (T-REx P361, P463 changed since: an edited "
        "file or another --data-dir); use another --out for this data")
    assert {r["uid"]: r["predicted"] for r in _records(out, "kb").values()} == {
        "P361:1": None, "P364:6": None, "P463:2": "P463"}
    fresh = tmp_path / "fresh"
    assert run_kbc([*asked[:7], str(fresh), *asked[8:]], capsys)[0] == 0
    assert {r["uid"]: r["predicted"] for r in _records(fresh, "kb").values()} == {
        "P361:1": "P361", "P364:6": None, "P463:2": None}
    config = json.loads((fresh / "config.json").read_text())
    del config["predictor_specs"]["kb"]["data"]  # as an earlier kbc version wrote it
    (fresh / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc([*asked[:7], str(fresh), *asked[8:]], capsys)
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: {fresh}: predictor 'kb' has answers there from an earlier kbc version, which did not record the T-REx "
        "data it answered from: whether that data changed cannot be known; use another --out for this data")


def test_the_counts_say_what_they_count(shared_data, tmp_path, capsys, monkeypatch):
    """The load line counts the test part (what --relations narrows), not the whole file read; the scope line says
    that every sentence asked is scored, an abstention as a miss (kb answers one of the two shared sentences)."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = kb_slice(shared_data, tmp_path / "data")
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "kb", "kb-inferred", "--relations", "P361", "P463",
                            "--data-dir", str(data), "--out", str(tmp_path / "out"), "--quiet", "--bootstrap", "0"],
                           capsys)
    assert code == 0, err
    assert ("fewrel: 2 relations, read 30: 24 train, 3 dev, 3 test, 0 dropped; asked: 2 of the test part's 3 (1 of "
            "other relations)") in err.splitlines()
    notes = (tmp_path / "out" / "summary.md").read_text().splitlines()
    assert ("- Scope `shared`: per metric, the sentences recorded for every predictor scored on that metric (fewrel: 2 "
            "recorded for all of kb, kb-inferred); a sentence a predictor left without an answer (kb: no relation held "
            "between the two entities) is among them and counts as a miss, coverage saying how many it answered; "
            "`own`: the sentences recorded for each predictor.") in notes


def test_a_fewrel_file_edited_between_two_runs_of_one_process_is_read_again(shared_data, tmp_path, capsys,
                                                                               monkeypatch):
    """The KB asks the entity pairs of the file as it is now (P463:2's tail no longer the Pre-Raphaelite
    Brotherhood: no relation held), not those of the first run's reading."""
    from eval.fewrel import DATA_FILE

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    data = kb_slice(shared_data, tmp_path / "data")
    asked = ["run", "fewrel", "--predictors", "kb", "--data-dir", str(data), "--quiet", "--bootstrap", "0", "--out"]
    assert run_kbc([*asked, str(tmp_path / "first")], capsys)[0] == 0
    assert _records(tmp_path / "first", "kb")["P463:2"]["predicted"] == "P463"
    path = data / "fewrel" / DATA_FILE
    sentences = json.loads(path.read_text(encoding="utf-8"))
    sentences["P463"][2]["t"][1] = "Q1"
    path.write_text(json.dumps(sentences), encoding="utf-8")
    assert run_kbc([*asked, str(tmp_path / "second")], capsys)[0] == 0
    second = _records(tmp_path / "second", "kb")["P463:2"]
    assert (second["object_id"], second["predicted"], second["kb_relations"]) == ("Q1", None, [])


def test_a_kb_without_a_lama_copy_is_refused_before_any_work(shared_data, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KBC_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    fewrel_slice(shared_data, tmp_path / "data", per_relation=10)
    code, _, err = run_kbc(["run", "fewrel", "--predictors", "kb", "--data-dir", "data", "--out", "out"], capsys)
    assert (code, err) == (2, f"error: kb answers from the T-REx graphs of a LAMA copy, and neither {tmp_path}/data "
                              "(no lama/relations.jsonl beside fewrel/) nor ./data/lama holds one: run `kbc data "
                              f"download lama --dest {tmp_path}/data` or point KBC_DATA at a LAMA copy\n")
    assert not (tmp_path / "out").exists()


def test_e_bert_inputs_linked_by_an_earlier_rule_are_neither_resumed_nor_mixed(run, capsys, monkeypatch, tmp_path):
    """The E-BERT forms' models and records go with the rule that linked their entities (`LINK_RULE`): a model
    trained on inputs linked another way is never resumed, and a folder of such records is refused on a rerun."""
    from lm.entities.linking import LINK_RULE

    argv, out = _finished(run, capsys, monkeypatch)
    config = json.loads((out / "config.json").read_text())
    assert {name: ident.get("link_rule") for name, ident in config["predictor_specs"].items()} == {
        "bert": None, "ebert": LINK_RULE, "ebert-avg": LINK_RULE, "ebert-concat": LINK_RULE}
    forms = {}
    for info in (out / "models").glob("*/classifier.json"):
        identity = json.loads(info.read_text())["identity"]
        forms.setdefault(identity["form"], set()).add(identity.get("link_rule"))
    assert forms == {"bert": {None}, "ebert": {LINK_RULE}, "concat": {LINK_RULE}}
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    del config["predictor_specs"]["ebert"]["link_rule"]  # as an earlier version wrote it
    (copy / "config.json").write_text(json.dumps(config))
    code, _, err = run_kbc([*argv[:-4], str(copy), *argv[-3:]], capsys)
    assert (code, err.splitlines()[-1]) == (2, f"error: {copy}: predictor 'ebert' has records there from an earlier "
                                               "kbc version, which linked an entity also by FewRel's own lower-cased "
                                               "name of it and a mention to a rarer entity where its most common one "
                                               "had no vector: its records would mix two linkings; use another --out")
