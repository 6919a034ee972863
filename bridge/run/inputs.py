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


def prompts_identity(spec: str, data_dir: Path) -> dict[str, str]:
    """A prompt set as its name (a file as `file`) and a digest of every prompt it gives every known relation.

    The digest covers ids and templates as read, so an edited template, a renamed file whose prompt ids
    come from its name, or a new row all change it; the same prompts from another path do not.
    """
    from eval.prompts import ONE_FILE, PER_MODEL, PER_RELATION, _lama_relations, load_prompts

    name, _, model = spec.partition(":")
    named = spec in ONE_FILE or spec in PER_RELATION or (name in PER_MODEL and bool(model))
    prompts = load_prompts(spec, data_dir, _lama_relations(data_dir))
    text = "\x1e".join(f"{rel}\x1f{p.id}\x1f{p.template}" for rel in sorted(prompts) for p in prompts[rel])
    return {"prompts": spec if named else PATH_FREE, "prompts_digest": _sha256(text.encode("utf-8"))}


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
        from bridge.experiments.kmir import default_instance_of

        given = settings["instance_of"]
        if given in (None, "default"):
            given = default_instance_of(data_dir)
        out["instance_of"] = file_identity(given)
    return out
