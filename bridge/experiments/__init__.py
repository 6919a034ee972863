"""Experiments by name: each says which queries to ask and how to score them; the runner runs them all."""

from __future__ import annotations

import importlib

from bridge.experiments.base import Experiment
from eval.errors import ConfigError

EXPERIMENTS: dict[str, str] = {
    "lama": "bridge.experiments.lama:LamaExperiment",
    "coherency": "bridge.experiments.coherency:CoherencyExperiment",
    "kmir": "bridge.experiments.kmir:KmirExperiment",
    "evidence": "bridge.experiments.evidence:EvidenceExperiment",
    "lmkbc": "bridge.experiments.lmkbc:LmkbcExperiment",
    "negated": "bridge.experiments.negated:NegatedExperiment",
    "fewrel": "bridge.experiments.fewrel:FewrelExperiment",
}


def get(name: str, **options) -> Experiment:
    if name not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    module, attr = EXPERIMENTS[name].split(":")
    return getattr(importlib.import_module(module), attr)(**options)


def scoring(config: dict) -> Experiment:
    """A run directory's experiment as its summaries score it: built from what its config.json records
    (`scoring`: LAMA's random-prompt draws and seed), never from the defaults, which need not be the run's."""
    name = config.get("experiment", "lama")
    if name not in EXPERIMENTS:
        return get(name)  # the error naming the known experiments
    module, attr = EXPERIMENTS[name].split(":")
    cls = getattr(importlib.import_module(module), attr)
    recorded = config.get("scoring")
    from_scoring = getattr(cls, "from_scoring", None)
    return from_scoring(recorded) if from_scoring is not None and isinstance(recorded, dict) else cls()


def stages(name: str) -> tuple[str, ...]:
    """The stages an experiment writes records of (`Experiment.stages`), without building it."""
    module, attr = EXPERIMENTS[name].split(":")
    return getattr(importlib.import_module(module), attr).stages


def own_outputs(name) -> tuple[str, ...]:
    """The patterns of the files an experiment writes beside its summaries (`own_outputs`: FewRel's confusion
    matrices), without building it; none for a name no experiment has."""
    if not isinstance(name, str) or name not in EXPERIMENTS:
        return ()
    module, attr = EXPERIMENTS[name].split(":")
    return tuple(getattr(getattr(importlib.import_module(module), attr), "own_outputs", ()))
