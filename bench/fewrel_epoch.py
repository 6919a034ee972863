"""FewRel fine-tuning speed: one training epoch over `--n` sentences of the seeded train part and the dev part's
prediction, on bert-base-cased's architecture randomly initialised (speed does not depend on the weights) with
the real bert-base-cased tokenizer. Prints sentences per second and the projected time of E-BERT's 10 epochs over
the whole split (8,960 train sentences, 1,120 dev sentences scored after each epoch).

    python bench/fewrel_epoch.py [--n 512] [--device cuda] [--dtype bfloat16] [--batch 32]
        [--data-dir ../shared/data/fewrel]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZERS = ROOT.parent / "shared" / "data" / "tokenizers"


def main() -> None:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from eval.fewrel import load_split
    from lm.relation_classifier import TrainSettings, train_classifier
    from lm.relation_inputs import RelationInputBuilder

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512, help="training sentences timed")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="bfloat16: under autocast")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data" / "fewrel"))
    args = ap.parse_args()
    parts = load_split(args.data_dir)
    tokenizer = BertTokenizerFast.from_pretrained(TOKENIZERS / "bert-base-cased", do_lower_case=False)
    builder = RelationInputBuilder(tokenizer)
    train = parts["train"][:: max(1, len(parts["train"]) // args.n)][:args.n]
    dev = parts["dev"][:max(1, args.n // 8)]
    classes = list(dict.fromkeys(s.relation for s in parts["train"]))
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "bert-base"
        torch.manual_seed(0)
        BertForMaskedLM(BertConfig(vocab_size=len(tokenizer))).save_pretrained(model)
        tokenizer.save_pretrained(model)
        started = time.perf_counter()
        inputs = (builder.build(train, "bert"), [s.relation for s in train])
        dev_in = (builder.build(dev, "bert"), [s.relation for s in dev])
        built = time.perf_counter() - started
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        train_classifier(Path(tmp) / "run", str(model), tokenizer, {"bench": True}, classes, inputs, dev_in, None,
                         TrainSettings(batch_size=args.batch, epochs=1, dtype=args.dtype), args.device, progress=False)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
    rate = (len(train) + len(dev)) / seconds
    full = 10 * (len(parts["train"]) + len(parts["dev"])) / rate
    print(f"device {args.device}, {args.dtype}, threads {torch.get_num_threads()}, batch {args.batch}")
    print(f"inputs: {len(train) + len(dev)} sentences tokenized in {built:.2f} s")
    print(f"one epoch of {len(train)} train + {len(dev)} dev sentences (model load and save included): "
          f"{seconds:.1f} s, {rate:.1f} sentences/s")
    print(f"projected 10 epochs over the split ({len(parts['train'])} train, {len(parts['dev'])} dev): "
          f"{full / 60:.1f} min")


if __name__ == "__main__":
    main()
