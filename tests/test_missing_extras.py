"""A command that needs a package of an extra not installed names the extra in one `error:` line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bridge.cli.environment import EXTRAS, missing_extra_line

ROOT = Path(__file__).resolve().parent.parent


def _kbc_without(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`kbc ARGS` in a process where importing `module` fails as it does where it is not installed."""
    code = (f"import sys; sys.modules[{module!r}] = None; sys.argv = ['kbc', *{list(args)!r}]; "
            "from bridge.cli import main; main()")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("module", "args", "extra"), [
    ("matplotlib", ("report", "."), "report"),
    ("fastapi", ("serve", "--predictors", "freq", "--port", "0"), "serve"),
    ("jinja2", ("serve", "--predictors", "freq", "--port", "0"), "serve"),  # starlette raises its own ImportError
])
def test_a_command_needing_an_extra_not_installed_names_it(tmp_path, module, args, extra):
    done = _kbc_without(module, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: this command needs {module}, which is not installed: pip install "
                                         f"'kbcompare[{extra}]'"]


def test_every_extra_named_is_one_pyproject_declares_and_holds_the_package():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    distribution = {"sklearn": "scikit-learn", "faiss": "faiss-cpu", "huggingface_hub": "huggingface-hub"}
    for module, extra in EXTRAS.items():
        if module in ("tokenizers", "safetensors"):  # transformers' own requirements
            continue
        wanted = distribution.get(module, module)
        assert any(spec.startswith((wanted, f"{wanted}[")) for spec in extras[extra]), (module, extra)


def test_any_other_missing_module_is_not_taken_for_an_extra():
    assert missing_extra_line(ModuleNotFoundError("No module named 'bridge.nothing'", name="bridge.nothing")) is None
