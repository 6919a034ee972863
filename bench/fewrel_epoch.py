"""FewRel fine-tuning speed: training epochs over `--n` sentences of the seeded train part (default 512; `--n 0`:
the whole part) with the dev part's scoring after each, as `kbc run fewrel` trains, on bert-base-cased's
architecture randomly initialised (speed does not depend on the weights) with the real bert-base-cased tokenizer.
Prints sentences per second and the projected time of E-BERT's 10 epochs over the whole split (8,960 train
sentences, 1,120 dev sentences scored after each epoch).

    python bench/fewrel_epoch.py [--n 512] [--epochs 1] [--device cuda] [--dtype bfloat16] [--batch 32]
        [--size tiny] [--data-dir ../shared/data/fewrel]

`--size tiny` trains a 2-layer BERT of width 32 instead, whose passes cost next to nothing: its milliseconds per
step (printed for the epochs after the first, which also loads the model) are the host work around each step.

`bench/gpu.py` runs the same epochs (`time_epochs`) over the whole split on a GPU.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TOKENIZERS = ROOT.parent / "shared" / "data" / "tokenizers"
EPOCHS = 10  # E-BERT's fixed number of epochs
SIZES = {"base": {}, "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                              "intermediate_size": 48}}


def time_epochs(data_dir: str | Path, tokenizer, size: dict, device: str, dtype: str = "float32", batch: int = 32,
                n: int | None = None, epochs: int = 1, budget_s: float = math.inf,
                say: Callable[[str], None] = print) -> dict:
    """Train a randomly initialised BERT of `size` (a `BertConfig`'s sizes; {} is bert-base) for up to `epochs`
    epochs over `n` train sentences (None: the whole train part) and the dev part's matching share, in one
    `train_classifier` call as `kbc run fewrel` makes it. After each epoch training goes on only while the epochs
    so far, plus one more at their mean, fit in `budget_s`; `say` gets a line per epoch as it ends. Returns the
    sentence counts, the whole split's, the tokenising seconds, each epoch's seconds (the first with the model's
    load) and the whole call's (with the saving of the selected model when every epoch ran)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from eval.fewrel import load_split
    from lm.relation_classifier import TrainSettings, train_classifier
    from lm.relation_inputs import RelationInputBuilder

    parts = load_split(data_dir)
    train = parts["train"] if n is None else parts["train"][:: max(1, len(parts["train"]) // n)][:n]
    dev = parts["dev"] if n is None else parts["dev"][:max(1, n // 8)]
    classes = list(dict.fromkeys(s.relation for s in parts["train"]))
    builder = RelationInputBuilder(tokenizer)
    started = time.perf_counter()
    inputs = (builder.build(train, "bert"), [s.relation for s in train])
    dev_in = (builder.build(dev, "bert"), [s.relation for s in dev])
    out = {"train": len(train), "dev": len(dev), "split_train": len(parts["train"]), "split_dev": len(parts["dev"]),
           "tokenise_s": time.perf_counter() - started, "epoch_s": []}
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    marks: list[float] = []

    def after_epoch(row: dict) -> bool:
        sync()
        marks.append(time.perf_counter())
        done = out["epoch_s"]
        done.append(marks[-1] - (marks[-2] if len(marks) > 1 else start))
        say(f"  epoch {row['epoch']}/{epochs}: {done[-1]:.1f} s ({len(train)} train + {len(dev)} dev sentences, "
            f"loss {row['loss']})")
        return sum(done) + sum(done) / len(done) > budget_s

    with tempfile.TemporaryDirectory(prefix="kbc_fewrel_") as tmp:
        model = Path(tmp) / "bert"
        torch.manual_seed(0)
        BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **size)
                        ).save_pretrained(model)
        tokenizer.save_pretrained(model)
        sync()
        start = time.perf_counter()
        train_classifier(Path(tmp) / "run", str(model), tokenizer, {"bench": True}, classes, inputs, dev_in, None,
                         TrainSettings(batch_size=batch, epochs=epochs, dtype=dtype), str(device), progress=False,
                         after_epoch=after_epoch)
        sync()
        out["call_s"] = time.perf_counter() - start
    return out


def projected_s(timed: dict, epochs: int = EPOCHS) -> float:
    """Seconds of `epochs` epochs over the whole split, at the mean rate of the epochs timed."""
    rate = len(timed["epoch_s"]) * (timed["train"] + timed["dev"]) / sum(timed["epoch_s"])
    return epochs * (timed["split_train"] + timed["split_dev"]) / rate


def main() -> None:
    import torch
    from transformers import BertTokenizerFast

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512, help="training sentences timed (0: the whole train part)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="bfloat16: under autocast")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", choices=sorted(SIZES), default="base", help="tiny: what each step costs besides FLOPs")
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data" / "fewrel"))
    args = ap.parse_args()
    tokenizer = BertTokenizerFast.from_pretrained(TOKENIZERS / "bert-base-cased", do_lower_case=False)
    print(f"device {args.device}, {args.dtype}, threads {torch.get_num_threads()}, batch {args.batch}")
    timed = time_epochs(args.data_dir, tokenizer, SIZES[args.size], args.device, args.dtype, args.batch,
                        args.n or None, args.epochs)
    seconds = timed["call_s"]
    print(f"inputs: {timed['train'] + timed['dev']} sentences tokenized in {timed['tokenise_s']:.2f} s")
    print(f"{len(timed['epoch_s'])} epoch(s) of {timed['train']} train + {timed['dev']} dev sentences (model load, "
          f"checkpoints and the selected model's saving included): {seconds:.1f} s, "
          f"{len(timed['epoch_s']) * (timed['train'] + timed['dev']) / seconds:.1f} sentences/s")
    if len(timed["epoch_s"]) > 1:
        later = timed["epoch_s"][1:]
        print(f"epochs after the first: {1000 * sum(later) / len(later) / -(-timed['train'] // args.batch):.2f} ms "
              "per training step (the dev part's scoring included)")
    print(f"projected {EPOCHS} epochs over the split ({timed['split_train']} train, {timed['split_dev']} dev): "
          f"{projected_s(timed) / 60:.1f} min")


if __name__ == "__main__":
    main()
