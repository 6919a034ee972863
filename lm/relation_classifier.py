"""Fine-tuning a BERT-family encoder as a relation classifier (E-BERT Appendix A, Zhang et al.'s setup).

The `[CLS]` vector of the last layer feeds one linear layer (after dropout). Every parameter is trained except
the embedding tables (word pieces, positions, segments): E-BERT's entity vectors live in the word-piece space,
so that space stays fixed. Defaults are ERNIE's FewRel settings (learning rate 2e-5 from the range {5e-5, 3e-5,
2e-5}, batch 32, linear warm-up over the first 10% of steps) with 10 epochs, as E-BERT fixes them. The epoch of
best dev macro F1 is the model kept. `dtype="bfloat16"` computes the forward passes (training and prediction)
under bf16 autocast on any device; weights, gradients and optimizer state stay float32, so a checkpoint resumes
the same way in either precision.

A training folder holds `checkpoint.pt` (the last finished epoch: weights, optimizer, schedule, random states,
dev history; written while the next epoch trains), so an interrupted run resumes where it stopped and ends with
the same weights as an uninterrupted one; and, once done, the selected model: `encoder/` (`save_pretrained`, with
its tokenizer), `head.pt` and `classifier.json` (classes, input form, settings, dev history), which
`load_classifier` reads back.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from eval.classification import macro_scores
from eval.durable import fsync_tree, write_atomic
from eval.errors import ConfigError, DataError
from lm.background_save import BackgroundSaver, atomic_save, check_digest, digest_path
from lm.batches import encoder_mask, pad_rows, to_device
from lm.precision import plan_free_attention
from lm.relation_inputs import RelationInput, RelationInputBuilder

CHECKPOINT = "checkpoint.pt"
DONE = "classifier.json"
DTYPES = ("float32", "bfloat16")
LOSS_READS = 16  # training steps between reads of the loss from the device (a read waits for the card)


@dataclass(frozen=True)
class TrainSettings:
    lr: float = 2e-5
    batch_size: int = 32
    epochs: int = 10
    seed: int = 0
    warmup: float = 0.1
    dropout: float = 0.1
    dtype: str = "float32"  # or "bfloat16": forward passes under bf16 autocast


def _torch():
    import torch

    return torch


def build_model(encoder_path: str, n_classes: int, dropout: float, device: str):
    """The encoder (any `AutoModel`, e.g. a masked LM checkpoint without its head) and a fresh linear head."""
    torch = _torch()

    encoder = load_encoder(encoder_path)
    head = torch.nn.Sequential(torch.nn.Dropout(dropout), torch.nn.Linear(encoder.config.hidden_size, n_classes))
    for emb in _embedding_tables(encoder):
        emb.weight.requires_grad_(False)
    plan_free_attention(device)
    return encoder.to(device), head.to(device)


def load_encoder(path: str | Path):
    """The encoder of a checkpoint (a masked LM's without its head; BERT's without the unused pooler)."""
    from transformers import AutoConfig, AutoModel

    from lm.loading import quiet_transformers

    with quiet_transformers():  # a masked LM's head is left out on purpose: transformers' note on it is noise
        if AutoConfig.from_pretrained(path).model_type == "bert":
            return AutoModel.from_pretrained(path, add_pooling_layer=False)
        return AutoModel.from_pretrained(path)


def _embedding_tables(encoder) -> list:
    torch = _torch()
    return [m for m in encoder.embeddings.modules() if isinstance(m, torch.nn.Embedding)]


@dataclass(frozen=True)
class Collated:
    """Inputs padded once into device tensors, so a batch is a few indexing operations on the device instead of
    host work (padding, copies, entity lists) each step. `ids` and `att` are padded to the longest input; a batch
    takes its rows cut to its own longest (`width`), the same tensors the inputs padded per batch would give."""

    ids: object  # [n, longest] token ids on the device, padded on the right
    att: object  # [n, longest] attention mask (int64)
    lengths: np.ndarray  # [n] input lengths, on the host
    slots: object | None  # [n, k] flat entity slot (position) of each input, -1 where none; None: no entity input
    vectors: object | None  # [n, k, hidden] the vector each slot takes (embedding dtype)

    def __len__(self) -> int:
        return len(self.lengths)

    def widths(self, order: np.ndarray, rows: int) -> list[tuple[int, bool]]:
        """(padded width, whether any input is shorter) of each batch of `rows` consecutive inputs of `order`:
        known on the host, so that no forward pass asks the device whether its batch is padded."""
        if not len(order):
            return []
        lengths, starts = self.lengths[order], np.arange(0, len(order), rows)
        longest, shortest = np.maximum.reduceat(lengths, starts), np.minimum.reduceat(lengths, starts)
        return [(int(w), bool(s < w)) for w, s in zip(longest, shortest)]


class Batcher:
    """Padded ids, attention masks and `inputs_embeds` with entity vectors spliced in."""

    def __init__(self, encoder, mapped: np.ndarray | None, pad_id: int, device: str, dtype: str = "float32") -> None:
        if dtype not in DTYPES:
            raise ConfigError(f"dtype {dtype!r}: use one of {', '.join(DTYPES)}")
        self.encoder = encoder
        self.pad_id = pad_id
        self.device = device
        self.dtype = dtype
        self.mapped = None if mapped is None else np.asarray(mapped, np.float32)

    def __call__(self, batch: Sequence[RelationInput]):
        """(attention mask, input embeddings) of one batch, padded to its longest input."""
        inputs = self.collate(batch)
        everything = np.arange(len(inputs))
        return self.take(inputs, self.index(everything), *inputs.widths(everything, len(inputs))[0])

    def collate(self, inputs: Sequence[RelationInput]) -> Collated:
        """`inputs` as device tensors, once for every batch later taken from them; entity vectors only for the
        entities the inputs hold (the whole mapped table can be far larger than the device's memory)."""
        empty = (np.zeros((0, 0), np.int64), None)
        array, keep = pad_rows([x.ids for x in inputs], self.pad_id) if inputs else empty
        att = np.ones(array.shape, dtype=np.int64) if keep is None else keep.astype(np.int64)
        lengths = np.fromiter((len(x.ids) for x in inputs), dtype=np.int64, count=len(inputs))
        k = max((len(x.entities) for x in inputs), default=0)
        slots = vectors = None
        if k:
            if self.mapped is None:
                raise DataError("an entity input needs mapped entity vectors")
            pos = np.full((len(inputs), k), -1, dtype=np.int64)
            rows = np.zeros((len(inputs), k), dtype=np.int64)
            for i, x in enumerate(inputs):
                for j, (p, r) in enumerate(x.entities):
                    pos[i, j], rows[i, j] = p, r
            weight = self.encoder.get_input_embeddings().weight
            slots = to_device(pos, self.device)
            vectors = to_device(self.mapped[rows], self.device).to(weight.dtype)
        return Collated(to_device(array, self.device), to_device(att, self.device), lengths, slots, vectors)

    def index(self, rows: np.ndarray):
        """Row indices as a device tensor (copied without waiting for the device)."""
        return to_device(np.asarray(rows, dtype=np.int64), self.device)

    def take(self, inputs: Collated, rows, width: int, padded: bool = True):
        """(attention mask, None where no input is `padded`; input embeddings) of the inputs at device indices
        `rows`, `width` positions wide."""
        torch = _torch()
        ids, att = inputs.ids[rows, :width], inputs.att[rows, :width] if padded else None
        embeds = self.encoder.get_input_embeddings()(ids)
        if inputs.slots is None:
            return att, embeds
        n, _, hidden = embeds.shape
        pos = inputs.slots[rows]  # [n, k]; an empty slot writes a spare last row, dropped below (no host sync)
        flat = torch.where(pos >= 0, torch.arange(n, device=pos.device)[:, None] * width + pos, n * width)
        out = torch.cat([embeds.reshape(n * width, hidden), embeds.new_zeros(1, hidden)])
        out.index_copy_(0, flat.reshape(-1), inputs.vectors[rows].reshape(-1, hidden))
        return att, out[:-1].reshape(n, width, hidden)


def _autocast(device: str, dtype: str):
    """bf16 autocast on the device's type (cuda, cpu, ...) when asked; float32 computes in full precision."""
    torch = _torch()
    import contextlib

    if dtype == "bfloat16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def logits_of(encoder, head, batcher: Batcher, att, embeds):
    with _autocast(batcher.device, batcher.dtype):
        hidden = encoder(inputs_embeds=embeds, attention_mask=encoder_mask(encoder, att)).last_hidden_state[:, 0]
        return head(hidden).float()


def predict_proba(encoder, head, batcher: Batcher, inputs: Sequence[RelationInput] | Collated, batch_size: int = 64
                  ) -> np.ndarray:
    """Class probabilities (n, C), batched by length; eval mode, no gradients. The probabilities stay on the
    device until the last batch: one wait for it, not one a batch."""
    torch = _torch()
    encoder.eval()
    head.eval()
    collated = inputs if isinstance(inputs, Collated) else batcher.collate(inputs)
    out = np.zeros((len(collated), head[-1].out_features), dtype=np.float32)
    if not len(collated):
        return out
    order = np.argsort(collated.lengths, kind="stable")
    rows = batcher.index(order)
    found = []
    with torch.inference_mode():
        for k, (width, padded) in enumerate(collated.widths(order, batch_size)):
            idx = rows[k * batch_size:(k + 1) * batch_size]
            inputs = batcher.take(collated, idx, width, padded)
            found.append(torch.softmax(logits_of(encoder, head, batcher, *inputs), dim=-1))
        out[order] = torch.cat(found).cpu().numpy()
    return out


@dataclass
class Trained:
    """A selected classifier: its modules, classes, and what training recorded."""

    encoder: object
    head: object
    tokenizer: object
    classes: list[str]
    info: dict

    @property
    def dtype(self) -> str:
        """The precision it was trained in; its predictions keep it (dev selection saw them so)."""
        return self.info["identity"]["settings"].get("dtype", "float32")

    def batcher(self, mapped: np.ndarray | None = None) -> Batcher:
        """The batcher its predictions need (entity vectors `mapped` for the E-BERT forms)."""
        return Batcher(self.encoder, mapped, int(self.tokenizer.pad_token_id), str(self.encoder.device), self.dtype)

    def predict_proba(self, sentences: Sequence, link: Callable | None = None,
                      mapped: np.ndarray | None = None) -> np.ndarray:
        """Class probabilities (n, len(classes)) of `eval.fewrel.Sentence`s, their inputs built in the form it
        was trained on (the E-BERT forms need the entity `link` and `mapped` vectors training had)."""
        inputs = RelationInputBuilder(self.tokenizer, link).build(sentences, self.info["identity"]["form"])
        return predict_proba(self.encoder, self.head, self.batcher(mapped), inputs)


def _rng_state() -> dict:
    torch = _torch()
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch = _torch()
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def train_classifier(folder: Path, encoder_path: str, tokenizer, identity: dict, classes: list[str],
                     train: tuple[list[RelationInput], list[str]], dev: tuple[list[RelationInput], list[str]],
                     mapped: np.ndarray | None, settings: TrainSettings, device: str = "cpu",
                     progress: bool = True, stop_after: int | None = None,
                     after_epoch: Callable[[dict], bool] | None = None) -> Trained:
    """Fine-tune (or resume, or load the finished model of) one classifier in `folder`.

    `identity` says what the model is trained from (model, input form, data, vectors): a folder holding another
    model's training is refused, never continued. `stop_after` ends after that many epochs this call (tests of
    resuming); `after_epoch` gets each finished epoch's dev row once its checkpoint is taken, and a true answer
    ends training there as `stop_after` does (a bench's time budget). Checkpoints are written while the next epoch
    trains (`BackgroundSaver`); this call returns or raises only once every finished epoch's checkpoint is on disk."""
    torch = _torch()
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    folder.mkdir(parents=True, exist_ok=True)
    identity = {**identity, "settings": asdict(settings), "classes": classes}
    done = folder / DONE
    if done.is_file():
        info = json.loads(done.read_text(encoding="utf-8"))
        _check_identity(folder, info.get("identity"), identity)
        if info.get("weights") != _weights(folder):
            raise DataError(f"{folder}: the saved weights changed since training selected them; delete the folder "
                            "to retrain")
        return load_classifier(folder, device)
    index = {c: i for i, c in enumerate(classes)}
    x_train, y_train = train[0], torch.tensor([index[c] for c in train[1]])
    torch.manual_seed(settings.seed)
    encoder, head = build_model(encoder_path, len(classes), settings.dropout, device)
    params = [p for p in [*encoder.parameters(), *head.parameters()] if p.requires_grad]
    # on a GPU one fused kernel updates every parameter (the per-tensor launches cost more than the arithmetic);
    # on a CPU one call per operation over all of them (the numbers of a loop over the parameters, without its
    # Python); a GPU's gradient clipping takes them together already
    kind = torch.device(device).type
    foreach = True if kind == "cpu" else None
    optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.01, fused=kind == "cuda" or None,
                                  foreach=foreach)
    steps_per_epoch = -(-len(x_train) // settings.batch_size)
    total = steps_per_epoch * settings.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup * total), total)
    history: list[dict] = []
    best: dict = {"epoch": 0, "f1": -1.0}
    start = 0
    ckpt = folder / CHECKPOINT
    if ckpt.is_file():
        state = _load_state(ckpt, device, RESTART)
        _check_identity(folder, state.get("identity"), identity)
        try:
            encoder.load_state_dict(state["encoder"])
            head.load_state_dict(state["head"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            _set_rng_state(state["rng"])
            history, best, start = state["history"], state["best"], state["epoch"]
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise DataError(f"{ckpt}: not a checkpoint of this training ({type(exc).__name__}: "
                            f"{first_sentence(str(exc))}); {RESTART}") from None
        if start < settings.epochs:
            print(f"{folder.name}: resuming from epoch {start + 1}/{settings.epochs} ({ckpt.name} holds epochs 1-"
                  f"{start})", file=sys.stderr)
    batcher = Batcher(encoder, mapped, int(tokenizer.pad_token_id), device, settings.dtype)
    # every batch is taken from tensors built once here: no per-step padding, entity lists or label copies
    train_set, dev_set = batcher.collate(x_train), batcher.collate(dev[0])
    labels = to_device(y_train.numpy(), device)
    ran = 0
    with BackgroundSaver() as saver:  # each epoch's files are written while the next one trains
        for epoch in range(start, settings.epochs):
            if stop_after is not None and ran >= stop_after:
                break
            encoder.train()
            head.train()
            order = torch.randperm(len(x_train),
                                   generator=torch.Generator().manual_seed(settings.seed * 1000 + epoch)).numpy()
            rows, widths = batcher.index(order), train_set.widths(order, settings.batch_size)
            bar = tqdm(total=steps_per_epoch, desc=f"{folder.name} epoch {epoch + 1}/{settings.epochs}",
                       disable=not progress, file=sys.stderr, unit="batch")
            losses: list[float] = []
            queued = []  # losses still on the device: read every LOSS_READS steps, so the host never waits per step
            for s in range(steps_per_epoch):
                idx = rows[s * settings.batch_size:(s + 1) * settings.batch_size]
                logits = logits_of(encoder, head, batcher, *batcher.take(train_set, idx, *widths[s]))
                loss = torch.nn.functional.cross_entropy(logits, labels[idx])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=foreach)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                queued.append(loss.detach())
                if len(queued) == LOSS_READS or s == steps_per_epoch - 1:
                    losses += _read_losses(queued, folder, epoch, len(losses), settings)
                    queued.clear()
                    saver.check()  # a failed write of the epoch before ends training now, not an epoch later
                    bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)  # drawn at the bar's own pace
                    bar.update(s + 1 - bar.n)  # the bar moves with the loss reads, not each step
            bar.close()
            probs = predict_proba(encoder, head, batcher, dev_set)
            scores = macro_scores(dev[1], [classes[i] for i in probs.argmax(1)], classes)
            history.append({"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 4),
                            **{k: round(v, 4) for k, v in scores.items()}})
            files = []
            if scores["f1"] > best["f1"]:
                best = {"epoch": epoch + 1, "f1": scores["f1"]}
                files.append(({"encoder": encoder.state_dict(), "head": head.state_dict()}, folder / "best.pt"))
            files.append(({"identity": identity, "encoder": encoder.state_dict(), "head": head.state_dict(),
                           "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                           "rng": _rng_state(), "history": history, "best": best, "epoch": epoch + 1}, ckpt))
            saver.save(files)  # best.pt, then checkpoint.pt: a checkpoint never names a best epoch not on disk
            if progress:  # the bar shows only the loss: the dev score that picks the kept epoch is said here
                print(epoch_line(folder.name, history[-1], settings.epochs), file=sys.stderr)
            ran += 1
            if after_epoch is not None and after_epoch(history[-1]):
                break
    if not history or history[-1]["epoch"] < settings.epochs:
        return Trained(encoder, head, tokenizer, classes, {"identity": identity, "history": history, "best": best,
                                                           "finished": False})
    if progress:
        print(f"{folder.name}: kept epoch {best['epoch']}/{settings.epochs} (dev macro F1 {best['f1']:.2f})",
              file=sys.stderr)
    return _finish(folder, encoder, head, tokenizer, classes, identity, history, best, device)


def epoch_line(name: str, row: dict, epochs: int) -> str:
    """One finished epoch of a training log: its mean loss and the dev macro F1 the kept epoch is chosen by."""
    return f"{name} epoch {row['epoch']}/{epochs}: loss {row['loss']:.4f}, dev macro F1 {row['f1']:.2f}"


def _read_losses(queued: list, folder: Path, epoch: int, before: int, settings: TrainSettings) -> list[float]:
    """The values of the losses queued on the device (one wait for the card); a non-finite one ends training
    with the epoch and step it came from."""
    values = _torch().stack(queued).float().cpu().tolist()
    for step, value in enumerate(values, start=before + 1):
        if not np.isfinite(value):
            fix = "lower --set lr=" + (" or train in float32" if settings.dtype != "float32" else "")
            raise DataError(f"{folder}: the training loss is {value} at epoch {epoch + 1}, step {step} "
                            f"(learning rate {settings.lr:g}, {settings.dtype}); {fix}")
    return values


def _finish(folder: Path, encoder, head, tokenizer, classes, identity, history, best, device) -> Trained:
    """Keep the best dev epoch as the model (`encoder/`, `head.pt`, `classifier.json`); drop the checkpoints."""
    state = _load_state(folder / "best.pt", device, f"delete {folder} to train that model again")
    encoder.load_state_dict(state["encoder"])
    head.load_state_dict(state["head"])
    from lm.loading import quiet_transformers

    with quiet_transformers():
        encoder.save_pretrained(folder / "encoder")
        tokenizer.save_pretrained(folder / "encoder")
    atomic_save(head.state_dict(), folder / "head.pt")
    info = {"identity": identity, "classes": classes, "history": history, "best": best, "finished": True,
            "dropout": identity["settings"]["dropout"], "weights": _weights(folder)}
    fsync_tree(folder / "encoder")  # on disk before the marker that says the model is finished
    write_atomic(folder / DONE, json.dumps(info, indent=1).encode("utf-8"), folder / (DONE + ".tmp"))
    for name in (CHECKPOINT, "best.pt"):
        (folder / name).unlink(missing_ok=True)
        digest_path(folder / name).unlink(missing_ok=True)
    return Trained(encoder, head, tokenizer, classes, info)


def _weights(folder: Path) -> str:
    """What the saved model's files hold (a run reusing its own model checks it was not replaced)."""
    from lm.loading import files_fingerprint

    return files_fingerprint(folder / "encoder") + ":" + files_fingerprint(folder / "head.pt")


def first_sentence(text: str, limit: int = 200) -> str:
    """An error's first sentence on one line (torch's load errors run on for paragraphs), cut with an ellipsis
    only where that sentence alone is longer than `limit`."""
    first = " ".join(text.split()).split(". ", 1)[0].rstrip(".")
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def _load_state(path: Path, device: str, fix: str, weights_only: bool = False):
    """A saved state, or one line naming the file when it cannot be read (cut short by a full disk or an edit,
    not a torch file): `fix` says what to do."""
    import pickle

    try:
        state = _torch().load(path, map_location=device, weights_only=weights_only)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        raise DataError(f"{path}: not a readable saved state ({first_sentence(str(exc)) or type(exc).__name__}); "
                        f"{fix}") from None
    check_digest(path, fix)  # a flipped bit in a weight still loads
    if not isinstance(state, dict):
        raise DataError(f"{path}: not a saved state of kbc's classifier training; {fix}")
    return state


RESTART = "delete it to train that model again from its first epoch"


def _check_identity(folder: Path, found: dict | None, wanted: dict) -> None:
    if found != wanted:
        diff = sorted(k for k in set(found or {}) | set(wanted) if (found or {}).get(k) != wanted.get(k))
        raise ConfigError(f"{folder} holds a classifier trained otherwise (differs in {', '.join(diff) or 'all'}); "
                          "delete that folder to retrain, or use another --out")


def load_classifier(folder: str | Path, device: str = "cpu") -> Trained:
    """A finished classifier folder (the model a run selected on its dev part): `load_classifier(folder)
    .predict_proba(sentences)` gives the class probabilities of `eval.fewrel.Sentence`s, columns in `.classes`."""
    torch = _torch()
    from transformers import AutoTokenizer

    folder = Path(folder)
    path = folder / DONE
    if not path.is_file():
        raise DataError(f"{folder}: no {DONE}; not a finished classifier (its training may still be running)")
    info = json.loads(path.read_text(encoding="utf-8"))
    plan_free_attention(device)
    encoder = load_encoder(folder / "encoder").to(device)
    head = torch.nn.Sequential(torch.nn.Dropout(info["dropout"]),
                               torch.nn.Linear(encoder.config.hidden_size, len(info["classes"]))).to(device)
    head.load_state_dict(_load_state(folder / "head.pt", device, f"delete {folder} to train that model again",
                                     weights_only=True))
    tokenizer = AutoTokenizer.from_pretrained(folder / "encoder")
    return Trained(encoder, head, tokenizer, list(info["classes"]), info)

