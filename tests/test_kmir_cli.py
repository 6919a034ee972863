"""`kbc run kmir` refuses what it cannot honour, in one `error:` line before any work."""

from __future__ import annotations

from cli_support import run_kbc


def _kmir(lama_dir, out, *extra: str) -> list[str]:
    return ["run", "kmir", "--corpus", "trex", "--relations", "P36", "--limit", "2", "--questions-per-relation", "1",
            "--predictors", "kb", "--data-dir", str(lama_dir), "--out", str(out), "--quiet", *extra]


def _one_error(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    return lines[0]


def test_kmir_refuses_prompt_sets_and_contexts(lama_dir, tmp_path, capsys):
    for extra, flag in ((["--prompts", "pararel"], "--prompts pararel"), (["--context", "gold"], "--context gold"),
                        (["--prompt-draws", "3"], "--prompt-draws 3")):
        line = _one_error(*run_kbc(_kmir(lama_dir, tmp_path / "run", *extra), capsys)[::2])
        assert f"does not take {flag}" in line
    assert not (tmp_path / "run").exists()
    code, stdout, _ = run_kbc(["run", "kmir", "--help"], capsys)
    assert code == 0 and "--questions-per-relation" in stdout
    assert "--prompts" not in stdout and "--context" not in stdout and "--prompt-draws" not in stdout


def test_kmir_instance_of_file_that_is_not_utf8(lama_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KBC_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "types.txt"
    path.write_bytes(b"Q16\tQ6256,country\nQ90\tQ515,cit\xe9\n")
    line = _one_error(*run_kbc(_kmir(lama_dir, tmp_path / "run", "--instance-of", str(path)), capsys)[::2])
    assert line == f"error: instance-of file {path}: not UTF-8 text (byte 30)"
