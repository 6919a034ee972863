"""Whether a reduced precision (bfloat16, float16) is fast on the device a model runs on.

On a GPU both run on the tensor cores and are the fast choice. On a CPU they are fast only where the processor
has instructions for them (AVX512-BF16 or AMX for bfloat16, AVX512-FP16 or AMX-FP16 for float16); without them
torch emulates their matrix products, which run slower than float32's. A model of real size spends most of its
time in them (bert-base-sized in bfloat16 on such a CPU: a quarter of float32's queries/s with AVX-512, 0.14x
with AVX2 only, docs/performance.md); a tiny model's time goes mostly to other work, where a reduced precision
may even be faster, so the warning claims no factor. What the CPU has is read from its flags
(`/proc/cpuinfo`), never guessed from its vendor; where the flags cannot be read, torch's own capability query
decides. The warning is given once per process and dtype: a run loads a model per predictor, and one line says
it all.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("kbc")

CPUINFO = Path("/proc/cpuinfo")
DTYPES = ("float32", "bfloat16", "float16")  # what `--dtype` accepts (aliases below aside)
REDUCED = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}
# CPU flags (as /proc/cpuinfo names them) that give each dtype native arithmetic
FAST_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16"), "float16": ("avx512_fp16", "amx_fp16")}
_warned: set[str] = set()


def cpu_flags() -> set[str] | None:
    """The CPU's feature flags from /proc/cpuinfo; None where that file cannot be read (not Linux)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


def torch_says_fast(dtype: str) -> bool:
    """torch's own view of the CPU (its oneDNN backend), where the flags cannot be read."""
    import torch

    mkldnn = getattr(torch.backends, "mkldnn", None)
    query = getattr(mkldnn, "is_bf16_supported" if dtype == "bfloat16" else "is_fp16_supported", None)
    try:
        return bool(query()) if query is not None else False
    except (RuntimeError, TypeError):
        return False


def cpu_has_fast(dtype: str) -> bool:
    """Whether this CPU computes `dtype` natively (float32 always)."""
    name = REDUCED.get(dtype)
    if name is None:
        return True
    flags = cpu_flags()
    if flags is None:
        return torch_says_fast(name)
    return any(f in flags for f in FAST_FLAGS[name])


def warn_if_slow(dtype: str, device: str) -> bool:
    """Warn once per dtype when a reduced precision runs on a CPU without instructions for it; True if warned."""
    name = REDUCED.get(dtype)
    if name is None or not str(device).startswith("cpu") or name in _warned or cpu_has_fast(name):
        return False
    _warned.add(name)
    flags = " or ".join(FAST_FLAGS[name])
    log.warning("--dtype %s on a CPU without %s instructions: torch emulates %s matrix products there, which run "
                "slower than float32's; a model of real size spends most of its time in them and is likely faster "
                "with --dtype float32 (a tiny model's time goes mostly to other work)", dtype, flags, name)
    return True


def agreement_tolerance(dtype, reference) -> float:
    """Largest difference two computations of the same scores (`reference`, a tensor) may show when the model
    runs in torch `dtype`: 1e-3 in float32; in a reduced precision 32 units in the last place at the scores'
    scale (a few roundings per layer, accumulated), so a check passes in bfloat16 for the reason it would in
    float32 and still fails on a real difference of computation."""
    import torch

    if dtype == torch.float32 or not dtype.is_floating_point:
        return 1e-3
    return max(1e-3, 32 * torch.finfo(dtype).eps * float(reference.abs().max()))


def plan_free_attention(device) -> bool:
    """On a GPU, take cuDNN out of scaled-dot-product attention's backends (for the whole process); True if done.

    torch sends padded (masked) half-precision attention on Hopper to cuDNN first, and cuDNN builds an execution
    plan for every new (batch, length) shape, a tenth of a second or more each. Probing pads each batch to its
    own longest prompt, so nearly every batch is a new shape: on an H100 bfloat16 scoring ran at half the speed
    of float32 and the model's own forward at a tenth. The flash and memory-efficient kernels need no plan and
    give the same scores within the precision's rounding."""
    import torch

    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return False
    switch = getattr(torch.backends.cuda, "enable_cudnn_sdp", None)
    if switch is None:
        return False
    switch(False)
    return True
