"""A rerun's identity covers what its files hold: model weights replaced at the same path, a prompt file or an
instance-of list edited between reruns are refused; the same content from another folder is the same input (a
prompt file's name counts where its rows' prompt ids come from it)."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import lm_fixtures
import pytest
from cli_support import run_kbc
from lm_fixtures import kbc_log  # noqa: F401  (the fixture)

from bridge.run.config import ELSEWHERE
from eval.errors import ConfigError

tiny_models = lm_fixtures.tiny_models


def _one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "Traceback" not in err and lines[-1].startswith("error:"), err
    return lines[-1]


def _run(out: Path, lama_dir: Path, *args: str) -> list[str]:
    return ["run", "lama", "--corpus", "trex", "--limit", "3", "--data-dir", str(lama_dir), "--out", str(out),
            "--quiet", *args]


def test_weights_replaced_at_the_same_path_are_refused(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "bert"
    shutil.copytree(tiny_models("bert-cased"), model)
    out = tmp_path / "run"
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", f"bert={model}"), capsys)
    assert code == 0, err
    before = json.loads((out / "config.json").read_text())["predictor_specs"]["bert"]
    shutil.copy(tiny_models("bert-cased", 1) / "model.safetensors", model / "model.safetensors")
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "P36", "--predictors", f"bert={model}"), capsys)
    assert _one_error(code, err) == (f"error: {out}: predictor 'bert' was run with other files at {model} (they were "
                                     "replaced or edited since); give it another name (NAME=SPEC) or use another --out")
    assert json.loads((out / "config.json").read_text())["predictor_specs"]["bert"] == before
    assert not (out / "predictions" / "trex" / "bert" / "P36.jsonl").exists()
    assert before["files"]["spec"].startswith("sha256:")


def test_hub_ids_and_registry_names_have_no_file_fingerprint(tmp_path):
    from bridge.run.config import PlannedPredictor, RunConfig
    from bridge.run.options import Option

    cfg = RunConfig(["trex"], ["x"], tmp_path)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("Paris\nRome\n")
    declared = {"vocab_file": Option("vocab_file", "", "path"), "model": Option("model", "", "model")}
    hub = PlannedPredictor("b", "bert-base-cased", None, {"model": "bert-base-cased"}, declared)
    assert hub.identity(cfg) == {"spec": "bert-base-cased", "options": {"model": "bert-base-cased"}, "depth": 100}
    local = PlannedPredictor("b", "bert-base-cased", None, {"vocab_file": str(vocab)}, declared)
    first = local.identity(cfg)["files"]
    vocab.write_text("Paris\nRoma\n")
    assert list(first) == ["vocab_file"] and local.identity(cfg)["files"] != first


def _prompt_file(path: Path, template: str) -> Path:
    path.write_text(json.dumps({"relation": "P19", "template": template, "id": "born"}) + "\n")
    return path


def test_prompt_file_edited_between_reruns_is_refused(lama_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    prompts = _prompt_file(tmp_path / "p.jsonl", "[X] was born in [Y] .")
    argv = _run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "--prompts", str(prompts))
    code, _, err = run_kbc(argv, capsys)
    assert code == 0, err
    moved = tmp_path / "elsewhere" / "same.jsonl"
    moved.parent.mkdir()
    shutil.copy(prompts, moved)  # same prompts from another path: the same input, nothing new to ask
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "--prompts",
                                str(moved)), capsys)
    assert code == 0, err
    assert len((out / "predictions" / "trex" / "freq" / "P19.jsonl").read_text().splitlines()) == 3
    _prompt_file(prompts, "[X] is a native of [Y] .")
    code, _, err = run_kbc(argv, capsys)
    line = _one_error(code, err)
    assert line.startswith(f"error: {out} holds results made with ") and line.endswith(
        "(the content of the prompt file changed since); use another --out or the same settings")
    settings = json.loads((out / "config.json").read_text())["settings"]
    assert settings["prompts"] == "file" and settings["prompts_digest"].startswith("sha256:")


def _refusal_reason(out: Path, lama_dir: Path, prompts: Path, capsys) -> str:
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "--prompts",
                                str(prompts)), capsys)
    line = _one_error(code, err)
    assert line.startswith(f"error: {out} holds results made with ") and line.endswith(
        "; use another --out or the same settings"), line
    return line.split(" (", 1)[1].removesuffix("; use another --out or the same settings")


def test_a_prompt_file_refused_for_its_name_says_so_not_that_its_content_changed(lama_dir, tmp_path, monkeypatch,
                                                                                 capsys):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    edit = tmp_path / "edit.jsonl"
    edit.write_text(json.dumps({"relation": "P19", "template": "[X] was born in [Y] ."}) + "\n")  # ids: edit:0
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "--prompts", str(edit)),
                           capsys)
    assert code == 0, err
    assert [r.get("prompt_file") for r in json.loads((out / "config.json").read_text())["runs"]] == ["edit.jsonl"]
    (tmp_path / "sub").mkdir()
    shutil.copy(edit, tmp_path / "sub" / "edit.jsonl")  # the same name in another folder: the same input
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "--prompts",
                                str(tmp_path / "sub" / "edit.jsonl")), capsys)
    assert code == 0, err
    renamed = tmp_path / "renamed.jsonl"
    shutil.copy(edit, renamed)
    assert _refusal_reason(out, lama_dir, renamed, capsys) == (
        'the prompt file\'s name changed since, not its content: rows without an "id" take their prompt ids from its '
        "file name, edit.jsonl then, renamed.jsonl now)")
    renamed.write_text(json.dumps({"relation": "P19", "template": "[X] is a native of [Y] ."}) + "\n")
    assert _refusal_reason(out, lama_dir, renamed, capsys) == (
        "the content of the prompt file changed since, and its name, edit.jsonl then, renamed.jsonl now)")
    edit.write_text(renamed.read_text())
    assert _refusal_reason(out, lama_dir, edit, capsys) == "the content of the prompt file changed since)"
    config = json.loads((out / "config.json").read_text())
    for run in config["runs"]:  # a directory written before runs logged the file name: read from --prompts
        del run["prompt_file"]
        run["argv"] = ["kbc", "run", "lama", "--prompts", str(tmp_path / "edit.jsonl")]
    (out / "config.json").write_text(json.dumps(config))
    shutil.copy(tmp_path / "sub" / "edit.jsonl", renamed)
    assert _refusal_reason(out, lama_dir, renamed, capsys).startswith("the prompt file's name changed since, not its")
    for run in config["runs"]:
        run["argv"] = ["kbc", "run", "lama"]
    (out / "config.json").write_text(json.dumps(config))
    assert _refusal_reason(out, lama_dir, renamed, capsys) == (
        'the name or content of the prompt file changed since; rows without an "id" take their prompt ids from its '
        "file name)")


def test_instance_of_file_edited_between_reruns_is_refused(lama_dir, tmp_path):
    from bridge.experiments.kmir import KmirExperiment
    from bridge.run.config import merge_config, plan_run
    from bridge.run.runner import RunConfig

    types = tmp_path / "types.txt"
    types.write_text("Q90\tQ515,city\n")
    cfg = RunConfig(["trex"], ["freq"], tmp_path / "run", str(lama_dir), relations=["P19"], limit=2)
    plan = plan_run(cfg, lama_dir)

    def merged(old):
        experiment = KmirExperiment(2, None, str(types))
        return merge_config(old, cfg, plan, "kmir", experiment.settings)

    first = merged(None)
    assert first["settings"]["instance_of"] == "sha256:" + __import__("hashlib").sha256(
        b"Q90\tQ515,city\n").hexdigest()[:16]
    assert merged(json.loads(json.dumps(first)))["settings"] == first["settings"]
    types.write_text("Q90\tQ6256,country\n")
    with pytest.raises(ConfigError, match=r"\(the content of the instance-of file changed since\)"):
        merged(json.loads(json.dumps(first)))


def test_a_full_disk_names_config_json_and_leaves_no_tmp_file(lama_dir, tmp_path, monkeypatch, capsys):
    """The disk fills while config.json is written: one line naming it, and no config.json.tmp behind."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    real = Path.open

    class Full:
        """A handle on a disk that fills: a partial copy, then ENOSPC."""

        def __init__(self, handle) -> None:
            self.handle = handle

        def write(self, data):
            self.handle.write(data[:1])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.handle.close()

    def opened(self: Path, mode: str = "r", *args, **kwargs):  # however config.json is written
        handle = real(self, mode, *args, **kwargs)
        return Full(handle) if "w" in mode and self.name.startswith("config.json") else handle

    monkeypatch.setattr(Path, "open", opened)
    out = tmp_path / "run"
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq"), capsys)
    assert _one_error(code, err) == f"error: No space left on device: {out / 'config.json'}"
    assert sorted(p.name for p in out.iterdir() if p.name.endswith(".tmp")) == []


def _tampered(config: dict, edit: str) -> object:
    """`config` with one thing the identity checks need taken away or given the wrong type."""
    config = json.loads(json.dumps(config))
    if edit == "empty":
        return {}
    if edit == "no predictor_specs":
        del config["predictor_specs"]
    elif edit == "no identity for freq":
        del config["predictor_specs"]["freq"]
    elif edit == "identity is a string":
        config["predictor_specs"]["freq"] = "freq"
    elif edit == "settings empty":
        config["settings"] = {}
    elif edit == "data_versions a list":
        config["data_versions"] = []
    elif edit == "no experiment":
        del config["experiment"]
    elif edit == "labels a list":
        config["relation_labels"]["trex"] = ["place of birth"]
    return config


EDITS = [
    ("empty", "no 'corpora' list"), ("no predictor_specs", "no 'predictor_specs' dict"),
    ("no identity for freq", "predictor 'freq' has no identity in 'predictor_specs'"),
    ("identity is a string", "predictor_specs['freq'] is no identity with a 'spec'"),
    ("settings empty", "'settings' is empty"), ("data_versions a list", "'data_versions' is list, not dict"),
    ("no experiment", "no 'experiment' str"), ("labels a list", "relation_labels['trex'] is no map")]


def test_a_config_lacking_what_identity_needs_is_refused(lama_dir, tmp_path, monkeypatch, capsys):
    """`{}` (or any config missing an entry the identity check reads) is no licence to mix: another predictor
    under an existing name is refused, and nothing is written."""
    from bridge.run.config import read_config
    from eval.errors import DataError

    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "P36", "--predictors", "freq"), capsys)
    assert code == 0, err
    config = out / "config.json"
    written = json.loads(config.read_text())
    for edit, why in EDITS:
        config.write_text(json.dumps(_tampered(written, edit)))
        with pytest.raises(DataError) as refused:
            read_config(config)
        assert str(refused.value) == f"{config}: not a kbc run config ({why}); {ELSEWHERE}", edit
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and "predictions" in p.parts}
    config.write_text("{}")
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "P36", "P101", "--predictors", "freq=random"),
                           capsys)
    assert _one_error(code, err) == f"error: {config}: not a kbc run config (no 'corpora' list); {ELSEWHERE}"
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and "predictions" in p.parts} == before


def test_a_cut_config_says_a_new_out_recomputes_little(tiny_models, lama_dir, tmp_path, monkeypatch, capsys,
                                                         kbc_log):  # noqa: F811
    """config.json cut off (its records intact): refused, saying that the same command into a new --out reads the
    language models' scores back from the LM result cache: there, nothing is scored again."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out, new = tmp_path / "run", tmp_path / "new"
    argv = _run(out, lama_dir, "--relations", "P19", "--predictors", f"tb={tiny_models('bert-cased')}")
    assert run_kbc(argv, capsys)[0] == 0
    config = out / "config.json"
    text = config.read_text()
    config.write_text(text[:len(text) // 2])
    code, _, err = run_kbc(argv, capsys)
    line = _one_error(code, err)
    assert line.startswith(f"error: {config}: not a readable run config (") and line.endswith(f"); {ELSEWHERE}")
    kbc_log.clear()
    assert run_kbc([str(new) if a == str(out) else a for a in argv], capsys)[0] == 0
    assert [m for _, m in kbc_log if "result cache" in m] == [
        f"trex / tb: 3 of 3 scored results read from the result cache ({tmp_path / 'cache/lm/results.sqlite'}), "
        "0 computed"]
    assert (new / "predictions" / "trex" / "tb" / "P19.jsonl").read_bytes() == \
        (out / "predictions" / "trex" / "tb" / "P19.jsonl").read_bytes()


def test_records_without_a_recorded_identity_or_version_are_refused(lama_dir, tmp_path, monkeypatch, capsys):
    """A name (or relation) with records but no entry in config.json: the records' identity is unknown."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq", "kb=gold"), capsys)
    assert code == 0, err
    config = json.loads((out / "config.json").read_text())
    edited = {**config, "predictors": ["kb"], "predictor_specs": {"kb": config["predictor_specs"]["kb"]}}
    (out / "config.json").write_text(json.dumps(edited))
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq=random"), capsys)
    assert _one_error(code, err) == (f"error: {out}: predictor 'freq' has results there but config.json records no "
                                     "identity for it; give it another name (NAME=SPEC) or use another --out")
    edited = {**config, "data_versions": {"trex": {}}}
    (out / "config.json").write_text(json.dumps(edited))
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "freq"), capsys)
    assert _one_error(code, err) == (f"error: {out} holds trex results for P19 but config.json records no data "
                                     "version for them; use another --out")


def test_question_facts_of_a_corpus_added_later_join_those_recorded(lama_dir, tmp_path):
    """KMIR's questions are drawn per corpus: a rerun adding a corpus keeps the others' record and adds its own; one
    drawing a recorded corpus's questions from another --limit is refused."""
    from bridge.run.config import merge_config, plan_run
    from bridge.run.runner import RunConfig

    cfg = RunConfig(["trex"], ["freq"], tmp_path / "run", str(lama_dir), relations=["P19"], limit=2)
    plan = plan_run(cfg, lama_dir)
    trex, google = {"relations": ["P19"], "limit": 2}, {"relations": ["place_of_birth"], "limit": 2}
    first = merge_config(None, cfg, plan, "kmir", {"question_facts": {"trex": trex}})
    added = merge_config(json.loads(json.dumps(first)), cfg, plan, "kmir", {"question_facts": {"google_re": google}})
    assert added["settings"]["question_facts"] == {"trex": trex, "google_re": google}
    with pytest.raises(ConfigError) as refused:
        merge_config(json.loads(json.dumps(added)), cfg, plan, "kmir",
                     {"question_facts": {"trex": {"relations": ["P19"], "limit": 3}}})
    assert str(refused.value).startswith(f"{tmp_path / 'run'} holds questions of trex drawn from --relations P19 "
                                         "--limit 2, not --relations P19 --limit 3: ")


def test_a_model_folder_spelled_another_way_or_copied_resumes(tiny_models, lama_dir, tmp_path, monkeypatch, capsys):
    """Relative, absolute, or a copy of the same files: the same input; the first spelling stays recorded."""
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_models("bert-cased"), tmp_path / "models" / "bert")
    shutil.copytree(tiny_models("bert-cased"), tmp_path / "copy")
    out = tmp_path / "run"
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", "bert=models/bert"), capsys)
    assert code == 0, err
    first = json.loads((out / "config.json").read_text())["predictor_specs"]["bert"]
    assert first["spec"] == "models/bert"
    for spec, relation in ((tmp_path / "models" / "bert", "P36"), (tmp_path / "models" / ".." / "copy", "P1412")):
        code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", relation, "--predictors", f"bert={spec}"),
                               capsys)
        assert code == 0, err
        assert json.loads((out / "config.json").read_text())["predictor_specs"]["bert"] == first
        assert (out / "predictions" / "trex" / "bert" / f"{relation}.jsonl").exists()
    (tmp_path / "copy" / "extra.txt").write_text("x")
    code, _, err = run_kbc(_run(out, lama_dir, "--relations", "P19", "--predictors", f"bert={tmp_path / 'copy'}"),
                           capsys)
    assert _one_error(code, err).startswith(f"error: {out}: predictor 'bert' was run with ")


def test_same_content_ignores_only_hashed_path_spellings():
    from bridge.run.config import same_content

    ident = {"spec": "a", "options": {"vocab": "v"}, "depth": 100, "files": {"spec": "sha256:1", "vocab": "sha256:2"}}
    assert same_content(ident, {**ident, "spec": "/x/a", "options": {"vocab": "/x/v"}})
    assert not same_content(ident, {**ident, "spec": "/x/a", "depth": 10})
    assert not same_content(ident, {**ident, "files": {"spec": "sha256:3", "vocab": "sha256:2"}})
    old = {**ident, "files": {"spec": "files:1", "vocab": "sha256:2"}}
    assert not same_content(old, {**old, "spec": "/x/a"})


def test_a_refusal_names_what_differs_key_by_key():
    from bridge.run.config import changes

    seen = {"spec": "models/bert", "dtype": "float32", "depth": 100, "options": {"reduction": "sum", "pll": "within"}}
    now = {"spec": "models/bert", "dtype": "bfloat16", "depth": 100, "options": {"reduction": "mean"}, "ties": "shared"}
    assert changes(seen, now) == ("dtype float32, now bfloat16; options.pll within, now the default; "
                                  "options.reduction sum, now mean; ties not recorded, now shared")
    many = {f"k{i}": i for i in range(8)}
    assert changes(many, {}, most=2) == ("k0 0, now the default; k1 1, now the default; and 6 more "
                                         "(config.json's records)")
    assert changes({"options": {}}, {"options": {"cache": "on"}}) == "options.cache not recorded, now on"
    assert changes({"options": {}}, {}) == '{"options": {}}, now {}'


def test_an_option_given_at_its_default_resumes_the_run_made_without_it(lama_dir, tmp_path, capsys):
    """`--set random.seed=0` is random's default: the run made without it resumes, as recorded; seed 1 is refused."""
    out = tmp_path / "run"
    base = ["run", "lama", "--corpus", "trex", "--predictors", "random", "--limit", "2", "--data-dir", str(lama_dir),
            "--out", str(out), "--quiet", "--bootstrap", "0"]
    assert run_kbc([*base, "--relations", "P19"], capsys)[0] == 0
    first = json.loads((out / "config.json").read_text())["predictor_specs"]["random"]
    code, _, err = run_kbc([*base, "--relations", "P19", "P101", "--set", "random.seed=0"], capsys)
    assert code == 0, err
    assert json.loads((out / "config.json").read_text())["predictor_specs"]["random"] == first
    assert (out / "predictions" / "trex" / "random" / "P101.jsonl").is_file()
    code, _, err = run_kbc([*base, "--relations", "P19", "--set", "random.seed=1"], capsys)
    line = _one_error(code, err)
    assert line == (f"error: {out}: predictor 'random' was run with options.seed not recorded, now 1; give it "
                    "another name (NAME=SPEC) or use another --out")
