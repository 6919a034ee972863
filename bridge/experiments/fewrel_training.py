"""What each fine-tuned FewRel predictor was trained with (the learning rate chosen on dev, the epoch kept and its
dev macro F1, epochs, batch size, dtype), from a run's `config.json`: two runs whose score tables look alike may
differ only there."""

from __future__ import annotations

TRAINING_HEAD = ["predictor", "model", "lr (chosen of tried)", "kept epoch / epochs", "dev macro F1", "batch",
                 "dtype"]


def _number(value: float) -> str:
    return f"{value:g}"


def trained_models(config: dict) -> list[tuple[str, str, dict, dict]]:
    """(predictor, model folder name, the model's record, its training setting) of every fine-tuned model of the run,
    an ensemble's models each on its own."""
    found = []
    for name, described in ((config.get("predictor_configs") or {}).get("fewrel") or {}).items():
        if not isinstance(described, dict) or not isinstance(described.get("models"), dict):
            continue
        settings = [s for s in described.get("settings") or [] if isinstance(s, dict)]
        for model, record in described["models"].items():
            chosen = next((s for s in settings if s.get("lr") == record.get("lr")), settings[0] if settings else {})
            found.append((name, model, record, chosen))
    return found


def training_rows(config: dict) -> list[list[str]]:
    """One row of `TRAINING_HEAD` per fine-tuned model of the run (`-` where its record lacks the field)."""
    rows = []
    for name, model, record, setting in trained_models(config):
        lr = record.get("lr", setting.get("lr"))
        tried = list(record.get("dev_f1_by_lr") or {})
        lr_text = "-" if lr is None else _number(lr) + (f" of {', '.join(tried)}" if len(tried) > 1 else "")
        best = record.get("best") or {}
        kept = f"{best.get('epoch', '-')} / {setting.get('epochs', '-')}"
        f1 = f"{best['f1']:.2f}" if isinstance(best.get("f1"), (int, float)) else "-"
        rows.append([name, model, lr_text, kept, f1, str(setting.get("batch_size", "-")),
                     str(setting.get("dtype", "-"))])
    return rows


def training_brief(config: dict, predictor: str) -> str | None:
    """`lr 0.001, 2 epochs, batch 8` (an ensemble's models joined by ` + `): what tells two trainings of one
    predictor apart in a leaderboard row; None for a predictor that trained nothing."""
    parts = [f"lr {_number(record['lr']) if record.get('lr') is not None else '-'}, {setting.get('epochs', '-')} "
             f"epochs, batch {setting.get('batch_size', '-')}"
             for name, _, record, setting in trained_models(config) if name == predictor]
    return " + ".join(dict.fromkeys(parts)) or None


def training_section(config: dict) -> list[str]:
    """summary.md's table of training choices (empty where no predictor was fine-tuned)."""
    rows = training_rows(config)
    if not rows:
        return []
    return ["## Training of the fine-tuned predictors", "",
            "Per model: the learning rate kept (of those tried, the best on dev), the epoch kept (best dev macro F1) "
            "of those trained, its dev macro F1, the batch size and dtype (config.json's `predictor_configs` holds "
            "every epoch's dev scores).", "",
            "| " + " | ".join(TRAINING_HEAD) + " |", "|" + "---|" * len(TRAINING_HEAD),
            *("| " + " | ".join(r) + " |" for r in rows), ""]
