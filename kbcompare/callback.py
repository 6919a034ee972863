"""A `transformers` TrainerCallback that probes the model being trained every N steps, so that knowledge can be
watched as it appears.

Each probe saves the weights and tokenizer as they are at that step into a folder of their own and runs the chosen
experiment on them through `kbcompare.run`: the scores are those a `kbc run` of that checkpoint gives (a fresh
folder per step, so no cached answer of another step can stand in).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from transformers import TrainerCallback

from eval.errors import ConfigError
from eval.report import held_metric, metric_id

PREDICTOR = "model"  # the probed model's name in each probe's run (settings may be scoped to it: "model.KEY")


class ProbeCallback(TrainerCallback):
    """Every `every_n_steps` optimizer steps, run `experiment` (e.g. "lama") on the model being trained and log
    the total of each metric as `PREFIX/CORPUS/METRIC` (own facts, `setting`).

    The other keywords are `kbcompare.run`'s (`corpus`, `relations`, `limit`, `data_dir`, `settings`, ...).
    `out` holds one folder per probed step (`step-N/run`; the saved checkpoint `step-N/model` is removed after
    the probe unless `keep_checkpoints`). `metrics` None logs every metric of the run.

    Scores go through `trainer.log` (every logger the trainer reports to, and `state.log_history`) once the
    callback is attached with `attach(trainer)`; a callback only passed in `Trainer(callbacks=[...])` adds them
    to `state.log_history`, where the trainer keeps its logs.
    """

    def __init__(self, experiment: str = "lama", *, every_n_steps: int = 100, out: str | Path = "probes",
                 metrics: tuple[str, ...] | None = None, setting: str = "raw", prefix: str = "probe",
                 tokenizer=None, keep_checkpoints: bool = False, **run_options) -> None:
        if isinstance(every_n_steps, bool) or not isinstance(every_n_steps, int) or every_n_steps < 1:
            raise ConfigError(f"every_n_steps={every_n_steps!r}: expected an integer of at least 1")
        if "predictors" in run_options:
            raise ConfigError("ProbeCallback probes the model being trained; drop predictors= (probe other models "
                              "with kbcompare.run)")
        self.experiment = experiment
        self.every = every_n_steps
        self.out = Path(out)
        self.metrics = None if metrics is None else tuple(metric_id(m) for m in metrics)
        self.setting = setting
        self.prefix = prefix
        self.tokenizer = tokenizer
        self.keep = keep_checkpoints
        self.options = run_options
        self.trainer = None
        self.history: list[dict] = []  # every probe's logged scores, with its step

    def attach(self, trainer) -> ProbeCallback:
        """Add this callback to `trainer` and log through `trainer.log` (all its loggers)."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if state.global_step % self.every == 0 and state.is_world_process_zero:
            scores = self.probe(model, processing_class, state.global_step)
            self.history.append({**scores, "step": state.global_step})
            if self.trainer is not None:
                self.trainer.log(dict(scores))
            else:
                state.log_history.append({**scores, "step": state.global_step})
        return control

    def probe(self, model, processing_class=None, step: int = 0) -> dict[str, float]:
        """The scores of `model` as it is now: saved to `out/step-N/model`, run into `out/step-N/run`."""
        from kbcompare.runs import run

        tokenizer = self.tokenizer or processing_class
        if model is None or tokenizer is None:
            raise ConfigError("ProbeCallback needs the model and its tokenizer: pass tokenizer= or "
                              "Trainer(processing_class=...)")
        folder = self.out / f"step-{step}"
        if folder.exists():
            raise ConfigError(f"{folder} exists: a probe writes each step into a folder of its own; pass another "
                              "out= or remove it")
        checkpoint = folder / "model"
        model.save_pretrained(checkpoint)
        tokenizer.save_pretrained(checkpoint)
        try:
            result = run(self.experiment, predictors={PREDICTOR: str(checkpoint)}, out=folder / "run", **self.options)
        finally:
            if not self.keep:
                shutil.rmtree(checkpoint, ignore_errors=True)
        rows = result.summary
        mine = rows[(rows["predictor"] == PREDICTOR) & (rows["scope"] == "own") & (rows["group"] == "all")
                    & (rows["setting"] == self.setting)]
        if "prompt" in mine:
            mine = mine[mine["prompt"].isna()]
        if self.metrics is None:
            mine = mine[mine["metric"] != "answer_space"]  # a size, not a score
        else:
            held = set(mine["metric"])
            wanted = {held_metric(m, held) for m in self.metrics}  # either spelling of macro-f1 / f1-macro
            missing = sorted(wanted - held)
            if missing:
                raise ConfigError(f"{result.run_dir / 'summary.json'} has no {', '.join(missing)} ({self.setting}); "
                                  f"metrics: {', '.join(sorted(set(rows['metric'])))}")
            mine = mine[mine["metric"].isin(wanted)]
        return {f"{self.prefix}/{r.corpus}/{r.metric}": float(r.value) for r in mine.itertuples()}
