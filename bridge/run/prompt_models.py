"""Per-model prompt sets of searched trigger tokens are asked of the model they were searched for only.

AutoPrompt's per-model prompts (`autoprompt:MODEL`) are the trigger tokens a gradient search chose in MODEL's
vocabulary, stored decoded: `[X] parliament">GreenParty of [Y]. </s` is gpt2's. Another model's tokenizer
cuts that text into other tokens (bert-base-cased reads `Green ##P ##art ##y` and `< / s`), so it would be
asked a prompt nobody optimized, and the run recorded as AutoPrompt's. A run refuses it before anything runs.
"""

from __future__ import annotations

from pathlib import Path

from eval.errors import ConfigError


def model_names(spec: str) -> set[str]:
    """The names a predictor's model goes by: a hub id's last part or a model folder's name, and the hub name its
    config.json was saved from (`_name_or_path`), e.g. {"gpt2"} for `openai-community/gpt2` or `/models/gpt2`."""
    from lm.loading import local_config

    names = {Path(spec.rstrip("/")).name}
    config = local_config(spec) or {}
    origin = config.get("_name_or_path")
    if isinstance(origin, str) and origin.strip("/"):
        names.add(Path(origin.rstrip("/")).name)
    return names


def check_prompt_models(prompts: str | None, predictors: list, data_dir: Path) -> None:
    """Refuse a per-model set of searched trigger tokens for a language model other than the one it was searched for,
    naming that model's own set where there is one (`predictors`: the run's `PlannedPredictor`s)."""
    from bridge.run.options import shown
    from eval.prompts import per_model_file, per_model_models, searched_for

    model = searched_for(prompts or "")
    if model is None:
        return
    name = prompts.partition(":")[0]
    for p in predictors:
        if "scoring" not in p.declared:  # not a language model: no tokenizer reads the trigger tokens
            continue
        names = model_names(p.spec)
        if model in names:
            continue
        sets = per_model_models(name, data_dir)
        own = sorted(names & set(sets))
        instead = (
            f"ask it with its own, --prompts {name}:{own[0]}, in a run of its own"
            if own
            else f"{name} has none for it (models: {', '.join(sets)}; a model folder goes by its name)"
        )
        raise ConfigError(
            f"--prompts {prompts}: {name}'s prompts for {model} are trigger tokens searched in {model}'s "
            f"vocabulary, which predictor {p.name} ({shown(p.spec)}) does not share (its tokenizer cuts "
            f"their text into other tokens); {instead}; to ask their text of any model, give the file: "
            f"--prompts {per_model_file(name, model, data_dir)}"
        )
