"""Failures of the machine rather than of the input that surface as other exceptions than OSError: memory running
out (Python's MemoryError, torch's allocators raising RuntimeError), a symlink loop (pathlib's RuntimeError on
Python < 3.13) and a package of an extra not installed. Each becomes one `error:` line saying what to change, never
a traceback."""

from __future__ import annotations

import re

_ALLOCATION = re.compile(r"(?:allocate|Tried to allocate) ([0-9.]+ ?[KMGT]?i?B|[0-9]+ bytes)")
_OUT_OF_MEMORY = ("can't allocate memory", "out of memory", "Cannot allocate memory")
MEMORY_FIX = "a smaller --batch-size asks for less memory at once (or free memory, or use a larger machine)"


def environment_line(exc: BaseException) -> str | None:
    """The `error:` line of a memory or symlink-loop failure; None for any other exception (a defect: let it show)."""
    text = str(exc)
    if isinstance(exc, MemoryError):
        return f"error: out of memory; {MEMORY_FIX}"
    if not isinstance(exc, RuntimeError):
        return None
    if text.startswith("Symlink loop from "):  # pathlib's resolve() before Python 3.13
        path = text.removeprefix("Symlink loop from ").strip("'\"")
        return f"error: a symlink loop (links that point at each other): {path}; point the path at a real folder"
    if any(mark in text for mark in _OUT_OF_MEMORY):  # torch: DefaultCPUAllocator, CUDA out of memory
        size = _ALLOCATION.search(text)
        what = f" (could not allocate {size.group(1)})" if size else ""
        return f"error: out of memory{what}; {MEMORY_FIX}"
    return None


# the optional packages each extra of pyproject.toml brings, by the name they are imported as
EXTRAS = {"torch": "lm", "transformers": "lm", "huggingface_hub": "lm", "tokenizers": "lm", "safetensors": "lm",
          "matplotlib": "report", "fastapi": "serve", "uvicorn": "serve", "jinja2": "serve", "tantivy": "text",
          "elasticsearch": "text", "mwxml": "text", "mwparserfromhell": "text", "sklearn": "re",
          "wikipedia2vec": "entities", "faiss": "entities", "owlrl": "reason", "ray": "ray"}


def missing_extra_line(exc: ImportError) -> str | None:
    """The `error:` line naming the extra to install when a command needs a package of one (`kbc report` without
    matplotlib), also where a library raised its own ImportError over the missing module (starlette's "jinja2 must
    be installed"); None for any other missing module (a defect: let it show)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError):
            package = (seen.name or "").split(".")[0]
            if (extra := EXTRAS.get(package)) is not None:
                return f"error: this command needs {package}, which is not installed: pip install 'kbcompare[{extra}]'"
        seen = seen.__cause__ or seen.__context__
    return None
