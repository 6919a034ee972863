"""The input files that shape a run's questions, known by what they hold rather than where they lie.

A prompt set or an instance-of file edited between reruns would otherwise let one prompt id (or one
question) cover two wordings in the same directory; a file moved elsewhere with the same content is
the same input. So a run's question settings keep a digest of each file's content, not its path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PATH_FREE = "file"  # what a settings value given as a file path becomes (its content goes into the digest)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()[:16]


def _named_set(spec: str) -> bool:
    """Whether `spec` names one of the project's prompt sets (else it is a file path)."""
    from eval.prompts import ONE_FILE, PER_MODEL, PER_RELATION

    name, _, model = spec.partition(":")
    return spec in ONE_FILE or spec in PER_RELATION or (name in PER_MODEL and bool(model))


def prompts_identity(spec: str, data_dir: Path, file_name: str | None = None) -> dict[str, str]:
    """A prompt set as its name (a file as `file`) and a digest of every prompt it gives every known relation.

    The digest covers ids and templates as read, so an edited template, a renamed file whose prompt ids
    come from its name, or a new row all change it; the same file in another folder does not.
    `file_name`: the file's name as another one (what it gave under that name).
    """
    from eval.prompts import _lama_relations, load_prompts

    prompts = load_prompts(spec, data_dir, _lama_relations(data_dir), file_name)
    text = "\x1e".join(f"{rel}\x1f{p.id}\x1f{p.template}" for rel in sorted(prompts) for p in prompts[rel])
    return {"prompts": spec if _named_set(spec) else PATH_FREE, "prompts_digest": _sha256(text.encode("utf-8"))}


def prompt_file_name(settings: dict) -> str | None:
    """The name of the prompt file a run reads (what its run log keeps), None when its prompts are no file."""
    spec = settings.get("prompts")
    if not isinstance(spec, str) or spec in ("lama", "templates") or _named_set(spec):
        return None
    return Path(spec).expanduser().name


def _earlier_name(runs: list) -> str | None:
    """The prompt file name an earlier run of the directory read: its log entry's, else its `--prompts` argument."""
    for run in reversed(runs):
        if not isinstance(run, dict):
            continue
        if isinstance(run.get("prompt_file"), str):
            return run["prompt_file"]
        argv = run.get("argv") if isinstance(run.get("argv"), list) else []
        for i, arg in enumerate(argv):
            if arg == "--prompts" and i + 1 < len(argv) and isinstance(argv[i + 1], str):
                return Path(argv[i + 1]).name
            if isinstance(arg, str) and arg.startswith("--prompts="):
                return Path(arg.partition("=")[2]).name
    return None


def prompt_file_change(spec: str, data_dir: Path, recorded: str, runs: list) -> str:
    """What differs between the prompt file of a directory's results (`recorded` digest, earlier `runs`) and file
    `spec`: its content, or its name, which the ids of rows without an `id` come from (`<stem>:<n>`)."""
    now = Path(spec).expanduser().name
    before = _earlier_name(runs)
    if before is None:
        return ("the name or content of the prompt file changed since; rows without an \"id\" take their prompt ids "
                "from its file name")
    as_before = prompts_identity(spec, data_dir, before)["prompts_digest"]
    if as_before == recorded:
        return (f"the prompt file's name changed since, not its content: rows without an \"id\" take their prompt "
                f"ids from its file name, {before} then, {now} now")
    if as_before != prompts_identity(spec, data_dir)["prompts_digest"]:
        return f"the content of the prompt file changed since, and its name, {before} then, {now} now"
    return "the content of the prompt file changed since"


def file_identity(path: Path | None) -> str:
    """A digest of one input file's bytes, or `none` when there is no file."""
    if path is None:
        return "none"
    from eval.errors import DataError

    try:
        return _sha256(Path(path).read_bytes())
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def question_identity(settings: dict, data_dir: Path) -> dict:
    """An experiment's question settings with each input file replaced by a digest of its content."""
    out = dict(settings)
    spec = settings.get("prompts")
    if isinstance(spec, str) and spec not in ("lama", "templates"):  # templates: the corpus's own (its version)
        out.update(prompts_identity(spec, data_dir))
    if "instance_of" in settings:
        from bridge.experiments.kmir import default_instance_of, multi_rel_beside

        given = settings["instance_of"]
        if given in (None, "default"):
            given = default_instance_of(data_dir)
        out["instance_of"] = file_identity(given)
        out["multi_rel"] = file_identity(multi_rel_beside(given))  # no corrupted statement names what it holds
    return out
