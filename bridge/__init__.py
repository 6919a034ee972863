"""Identical queries to both sides: predictor protocol and registry, runner, experiments, CLI."""
