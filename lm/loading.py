"""Loading Hugging Face models by id or local path, with user-facing errors instead of tracebacks.

A hub id is only tried when the hub answers: an unreachable hub would otherwise cost half a
minute of retries before the same failure, so we probe it first and say to pass a local path.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from eval.errors import ConfigError, DataError, KbcError
from lm.precision import DTYPES, plan_free_attention, warn_if_slow

Kind = str  # "masked" | "causal" | "seq2seq"

CAUSAL_TYPES = {
    "gpt2", "gpt_neo", "gpt_neox", "gptj", "opt", "llama", "mistral", "bloom", "falcon", "pythia", "qwen2",
    "phi", "gemma", "codegen", "ctrl", "transfo-xl", "xglm", "mpt", "olmo", "smollm",
}
MASKED_TYPES = {
    "bert", "roberta", "distilbert", "albert", "electra", "xlm-roberta", "camembert", "deberta", "deberta-v2",
    "mpnet", "xlm", "megatron-bert", "modernbert", "ernie", "data2vec-text", "flaubert", "big_bird",
}
SEQ2SEQ_TYPES = {"t5", "mt5", "umt5", "longt5", "switch_transformers", "bart", "mbart", "pegasus", "led", "plbart"}
NAME_HINTS_SEQ2SEQ = ("t5", "bart", "pegasus")
NAME_HINTS_CAUSAL = ("gpt", "opt-", "llama", "pythia", "bloom", "falcon", "mistral", "qwen", "phi-", "gemma", "smollm")
NAME_HINTS_MASKED = ("bert", "roberta", "albert", "electra", "deberta", "mpnet", "xlm")
# what a model directory holds when its tokenizer was saved with it (any one of them will do; ByT5 saves only
# tokenizer_config.json, there being no vocabulary to store)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model",
                   "sentencepiece.bpe.model", "tokenizer.model", "special_tokens_map.json", "added_tokens.json")
HEADS = {"masked": ("masked-LM head", "a masked LM"), "causal": ("causal-LM head", "a causal LM"),
         "seq2seq": ("sequence-to-sequence LM head", "an encoder-decoder LM")}


FILES_PREFIX = "sha256:"  # files fingerprints of every byte; earlier versions wrote "files:" (ends and mtime only)


@dataclass(frozen=True)
class Loaded:
    model: object  # a transformers PreTrainedModel in eval mode
    tokenizer: object
    name: str
    fingerprint: str
    device: str
    dtype: str


DEVICE = re.compile(r"^(cpu(:0)?|cuda(:(\d+))?)$")  # what `--device` accepts: the devices the LMs are run on


def max_positions(model) -> int | None:
    """Positions a model has (GPT-2: 1,024): a longer input has no position embedding; None: no limit named."""
    config = getattr(model, "config", None)
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def check_device(device: str, here: bool = True) -> None:
    """`device` is cpu, cuda or cuda:N, refused in one line otherwise (torch knows more types, none of them run).

    `here`: the models run in this process, so CUDA and the GPU `cuda:N` names must be on this machine too (Ray
    actors check on their own machines). torch is imported only for a GPU."""
    match = DEVICE.match(device)
    if match is None:
        raise ConfigError(f"--device {device!r} is not a device kbcompare runs on; use cpu, cuda or cuda:N")
    if not here or not device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: CUDA is not available on this machine; use --device cpu")
    count = torch.cuda.device_count()
    if match.group(4) is not None and int(match.group(4)) >= count:
        names = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise ConfigError(f"--device {device}: this machine has {count} visible GPU{'s' if count > 1 else ''} "
                          f"({names}); use one of those")


def resolve_device(device: str):
    """The torch device of `--device`, checked by `check_device`."""
    import torch

    check_device(device)
    dev = torch.device(device)
    plan_free_attention(dev)
    return dev


def resolve_dtype(dtype: str):
    import torch

    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype not in table:
        raise ConfigError(f"--dtype {dtype!r} is not supported; use {', '.join(DTYPES)}")
    return table[dtype]


def local_config(name: str) -> dict | None:
    """The config.json of a local model directory, or None when `name` is not one."""
    path = Path(name).expanduser()
    config = path / "config.json"
    if not config.is_file():
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except ValueError as exc:  # malformed JSON, or not UTF-8
        raise DataError(f"{config}: not valid JSON ({exc})") from None
    except OSError as exc:
        raise DataError(f"{config}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{config}: expected a JSON object, got {type(data).__name__}")
    archs = data.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)):
        raise DataError(f"{config}: 'architectures' must be a list of class names")
    if not isinstance(data.get("model_type", ""), str):
        raise DataError(f"{config}: 'model_type' must be a string")
    return data


def kind_from_config(config: dict) -> Kind | None:
    """masked, causal or seq2seq, from `architectures` first and `model_type` second.

    Encoder-decoder text models come first: old T5 checkpoints name `T5WithLMHeadModel`.
    """
    model_type = config.get("model_type", "")
    archs = config.get("architectures") or ()
    if model_type in SEQ2SEQ_TYPES or (config.get("is_encoder_decoder") and any(
            a.endswith(("ForConditionalGeneration", "WithLMHeadModel")) for a in archs)):
        return "seq2seq"
    for arch in archs:
        if arch.endswith("ForMaskedLM"):
            return "masked"
        if arch.endswith(("ForCausalLM", "LMHeadModel")) and "ForMaskedLM" not in arch:
            return "causal"
    if model_type in MASKED_TYPES:
        return "masked"
    if model_type in CAUSAL_TYPES:
        return "causal"
    return None


def other_kind(name: str, wanted: Kind) -> str | None:
    """What a local model directory holds when its config.json names another kind than `wanted` (e.g. "a causal LM
    (GPT2LMHeadModel)"), else None: checked before any data is read. Hub ids are not guessed at."""
    config = local_config(name)
    if config is None:
        return None
    kind = kind_from_config(config)
    if kind in (wanted, None):
        return None
    archs = ", ".join(config.get("architectures") or ()) or f"model_type {config.get('model_type')!r}"
    return f"a {kind} LM ({archs})"


def kind_from_name(name: str) -> Kind | None:
    """A guess for hub ids (nothing can be read before download): by well-known family names."""
    base = name.rsplit("/", 1)[-1].lower()
    if any(h in base for h in NAME_HINTS_MASKED):
        return "masked"
    if any(h in base for h in NAME_HINTS_SEQ2SEQ):
        return "seq2seq"
    if any(base.startswith(h) or f"-{h}" in base for h in NAME_HINTS_CAUSAL):
        return "causal"
    return None


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face endpoint accepts a TCP connection (honours HF_HUB_OFFLINE)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def _no_hub(name: str, why: str) -> KbcError:
    short = name.rsplit("/", 1)[-1]
    return KbcError(
        f"cannot load model {name!r}: {why}; pass a local model directory instead "
        f"(a folder with config.json, weights and tokenizer files, e.g. /path/to/{short})"
    )


def _fingerprint(name: str, model) -> str:
    """Identity of the weights for the result cache: a local folder by what its files hold (`files_fingerprint`),
    a hub id by its commit."""
    path = Path(name).expanduser()
    if path.is_dir():
        return files_fingerprint(path)
    digest = hashlib.sha256()
    digest.update(name.encode())
    digest.update(str(getattr(model.config, "_commit_hash", None)).encode())
    return digest.hexdigest()[:16]


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' own notes and bars off while it loads or saves weights: "weights not used" notes for base
    checkpoints are not ours to show, and a run has its own progress bar."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


# one load at a time in a process: transformers' lazy first import of its classes is not thread-safe (a second
# thread gets an ImportError), and `quiet_transformers` saves and restores process-wide verbosity and bars
_LOADING = threading.RLock()


def load(name: str, kind: Kind, device: str = "cpu", dtype: str = "float32") -> Loaded:
    """Model and tokenizer for `name` (local dir or hub id), in eval mode on `device` in `dtype`; runs in other
    threads of the process load one after another."""
    with _LOADING:
        return _load(name, kind, device, dtype)


def _load(name: str, kind: Kind, device: str, dtype: str) -> Loaded:
    from huggingface_hub.errors import StrictDataclassError
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoTokenizer

    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    warn_if_slow(dtype, dev.type)
    local = Path(name).expanduser()
    check_folder(local)
    is_local = local.is_dir()
    source = str(local) if is_local else name
    before = files_fingerprint(local) if is_local else None  # compared after loading: the files read were these
    offline = False
    if not is_local and not hub_reachable():
        if _try_cached(name) is None:
            raise _no_hub(name, "the Hugging Face hub is not reachable from here")
        offline = True  # in the local HF cache: load it without retrying the network
    auto = {"masked": AutoModelForMaskedLM, "seq2seq": AutoModelForSeq2SeqLM}.get(kind, AutoModelForCausalLM)
    try:
        with quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=offline)
            model, info = auto.from_pretrained(source, dtype=torch_dtype, local_files_only=offline,
                                               output_loading_info=True)
    except (OSError, ValueError, KeyError, RuntimeError, pickle.UnpicklingError, SafetensorError,
            StrictDataclassError) as exc:
        # damaged or mismatched files: truncated weights, a config field of the wrong type, ...
        text = " ".join(str(exc).split()) or type(exc).__name__
        first = text if len(text) <= 300 else text[:300] + "..."
        if is_local:
            raise KbcError(f"cannot load {kind} LM from {local}: {first}") from exc
        raise _no_hub(name, first) from exc
    if info.get("missing_keys"):
        # transformers fills weights missing from the checkpoint with random values: answers would be noise
        raise _missing_weights(str(local) if is_local else name, kind, model, info["missing_keys"])
    model.to(dev)
    model.eval()
    fingerprint = _fingerprint(source, model)
    if is_local and fingerprint != before:
        raise KbcError(f"{local}: its files changed while the model was loaded; load it again once they are written")
    return Loaded(model, tokenizer, name, fingerprint, str(dev), dtype)


def load_tokenizer(name: str):
    """The tokenizer of `name` (local dir or hub id) alone, without the weights: what can be checked of it before any
    model loads (its casing). None where it cannot be read here: loading the model reports why."""
    local = Path(name).expanduser()
    is_local = local.is_dir()
    offline = not is_local and (_try_cached(name) is not None or not hub_reachable())
    try:
        with _LOADING, quiet_transformers():
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(local) if is_local else name, local_files_only=offline)
    except (OSError, ValueError, KeyError, RuntimeError):
        return None


def files_fingerprint(path: str | Path) -> str:
    """What a file or model folder holds, without loading it: per file its name and the SHA-256 of all its bytes,
    so no edit keeps it (and a copy elsewhere is the same input). Digests are remembered per file state
    (`eval.file_digests`), so an unchanged checkpoint is read once. Hidden files (VCS, tool caches) are left out."""
    from eval.file_digests import file_sha256

    root = Path(path).expanduser()
    files = sorted(p for p in root.rglob("*") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(root).parts)) if root.is_dir() else [root]
    digest = hashlib.sha256()
    for file in files:
        try:
            content = file_sha256(file)
        except OSError as exc:
            raise DataError(f"{file}: cannot read it ({exc.strerror or exc})") from None
        name = file.relative_to(root).as_posix() if root.is_dir() else ""
        digest.update(f"{name}\x1f{content}\x1f".encode())
    return FILES_PREFIX + digest.hexdigest()[:16]


def check_folder(local: Path) -> None:
    """What can be known of a local model folder without loading it (a path that does not exist is a hub id)."""
    if local.exists() and not local.is_dir():
        raise DataError(f"{local} is a file; pass the model directory that holds config.json")
    if not local.is_dir():
        return
    if not (local / "config.json").is_file():
        raise DataError(f"{local} is not a model directory (no config.json)")
    local_config(str(local))  # a config that is not a JSON object fails here, in one line
    if not has_tokenizer_files(local):
        # transformers would build an empty tokenizer from the config alone, and every word would go missing
        raise DataError(f"{local}: no tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...); copy the model's "
                        "tokenizer into it (tokenizer.save_pretrained(DIR))")


def has_tokenizer_files(path: Path) -> bool:
    """Whether a model folder holds its tokenizer (transformers would otherwise build an empty one)."""
    return any((path / f).is_file() for f in TOKENIZER_FILES) or any(path.glob("*.tiktoken"))


def _missing_weights(where: str, kind: Kind, model, missing) -> DataError:
    """The one-line error for a checkpoint lacking weights (after tied weights are filled from their twins)."""
    keys = sorted(missing, key=lambda k: (not k.endswith(".weight"), k))
    names = ", ".join(keys[:3]) + (f", ... ({len(keys)} in all)" if len(keys) > 3 else "")
    head, what = HEADS.get(kind, HEADS["causal"])
    prefix = getattr(model, "base_model_prefix", "")
    if getattr(model, "base_model", model) is not model and prefix:
        in_head = [not k.startswith(prefix + ".") for k in keys]  # the task head: what is outside the base model
    else:  # the model is its own base (T5): its head is the output projection
        out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        top = {name.split(".")[0] for name, module in model.named_modules() if module is out and name}
        in_head = [k.split(".")[0] in top for k in keys]
    if all(in_head):
        return DataError(f"{where}: the checkpoint lacks weights of the {head} ({names}); is it {what}?")
    return DataError(f"{where}: the checkpoint lacks weights of the model ({names}); they would be random, "
                     "so the folder cannot be scored (is the checkpoint complete?)")


def check_available(name: str) -> None:
    """Fail now, not after other predictors' work, when a model folder is incomplete (`check_folder`) or a hub id
    can neither be fetched nor found cached."""
    if Path(name).expanduser().exists():
        check_folder(Path(name).expanduser())
        return
    if not hub_reachable() and _try_cached(name) is None:
        raise _no_hub(name, "the Hugging Face hub is not reachable from here")


def _try_cached(name: str) -> str | None:
    """A hub id already in the local HF cache loads without network; None if it is not there."""
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(name, "config.json")
    except Exception:  # malformed ids are reported by the real load
        return None
    return hit if isinstance(hit, str) and os.path.isfile(hit) else None
