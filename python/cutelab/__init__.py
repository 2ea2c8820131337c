"""cutelab from Python: the lab's kernels on PyTorch, JAX, CuPy (any DLPack) arrays, without copies.

    import cutelab
    plan = cutelab.mla.plan(seqlens, block_table, num_heads_q=128)   # once per decode step
    out, lse = cutelab.mla.decode(plan, q, kv_cache)                  # every layer

cutelab.compat.flash_mla serves FlashMLA's dense decode signature; cutelab.testing checks and times
any Python kernel the lab's way. With PyTorch installed, torch.ops.cutelab.mla_decode is a custom
op (torch.compile, CUDA graphs).
"""

from __future__ import annotations

import importlib.util

from . import _C

__version__: str = _C.version
UsageError = _C.UsageError  # bad arguments found by the C++ layer (a ValueError)
Error = _C.Error            # anything else the C++ layer reports (a RuntimeError)

from . import compat, mla, testing  # noqa: E402


def device_count() -> int:
    """CUDA devices visible to cutelab (0 without a GPU or driver)."""
    return int(_C.device_count()[0])


def no_gpu_reason() -> str:
    """Empty when a CUDA device is present, else what the CUDA runtime said."""
    n, why = _C.device_count()
    return "" if n > 0 else (why or "no CUDA device")


if importlib.util.find_spec("torch") is not None:
    from . import _torch_ops  # noqa: E402,F401  registers torch.ops.cutelab.mla_decode

    mla._torch_fast = mla._make_torch_fast()

__all__ = ["mla", "compat", "testing", "device_count", "no_gpu_reason", "UsageError", "Error", "__version__"]
