"""MLA decode (DeepSeek-style absorbed attention, d_qk 576, d_v 512) over a paged KV cache of
64-token pages.

Once per decode step, plan() (or Plan.update() on the plan of the previous step) enqueues the
split schedule of that step's lengths; every layer of the step then calls decode() with its own
q and KV cache. Calls never synchronise the host and can be captured in CUDA graphs.

    plan = cutelab.mla.plan(seqlens, block_table, num_heads_q=128)
    for layer in range(60):
        out, lse = cutelab.mla.decode(plan, q[layer], kv_cache[layer])

The KV cache is in q's dtype or in one of two FP8 formats (q, out bf16), chosen when planning:
    kv_format="fp8_tensor": e4m3 (or uint8) [num_blocks, 64, h_kv, 576] and one float32 scale for
        the cache, passed to decode() as kv_scale (dequantised = kv_scale * e4m3);
    kv_format="fp8_token": uint8 [num_blocks, 64, h_kv, 656] per (token, KV head): 512 e4m3 latent
        values, 4 float32 scales (one per 128 values), 64 bf16 RoPE values (DeepSeek V3.2's layout).
quantize_kv() writes new tokens' bf16 KV rows into their slots of such a cache (as a serving engine
appends tokens); dequantize_kv() reads a cache back as float32.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from . import _C
from . import _arrays as arr

HEAD_DIM_QK = 576
HEAD_DIM_V = 512
PAGE_SIZE = 64
KV_FORMATS = ("bf16", "f16", "fp8_tensor", "fp8_token")
FP8_ENTRY_BYTES = {"fp8_tensor": 576, "fp8_token": 656}
_DEVICE_DB = os.path.join(os.path.dirname(__file__), "conf", "devices.json")


def _db_path() -> str:
    return os.environ.get("CUTELAB_DEVICE_DB") or (_DEVICE_DB if os.path.exists(_DEVICE_DB) else "")


@dataclass(frozen=True)
class DecodeShape:
    """What stays fixed while a plan is reused: the model's shape and the largest batch."""
    max_batch: int
    s_q: int
    h_q: int
    h_kv: int
    dtype: str  # of q and out: "bf16" | "f16"
    kv_format: str  # of the KV cache: q's dtype, "fp8_tensor" or "fp8_token"


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(e)) for e in shape) + "]"


def _require(cond: bool, exc: type, message: str) -> None:
    if not cond:
        raise exc(message)


def _check_int_vector(x: Any, name: str, rank: int, layout: str) -> None:
    _require(arr.array_dtype(x, name) == "i32", TypeError,
             f"{name}: expected int32, got {getattr(x, 'dtype', None)}")
    _require(len(x.shape) == rank, ValueError,
             f"{name}: expected rank {rank} {layout}, got shape {_shape_text(x.shape)}")


def _cuda_device(x: Any, name: str) -> int:
    kind, index = arr.device_of(x)
    _require(kind == arr.DL_CUDA, ValueError, f"{name}: expected a CUDA device array, got one in {arr.describe_device(x)}")
    return index


# Decoders hold device scratch sized for their shape; a plan takes one from here and gives it
# back when it is garbage collected, so a new plan per decode step allocates nothing. One given
# back is taken over only once the GPU has finished its last work (checked, never waited for),
# and one a CUDA graph captured is never given back: the graph keeps using its buffers, which
# live until the plan and then the decoder are gone (keep a plan alive as long as its graphs).
_pool_lock = threading.Lock()
_pool: dict[tuple, list] = {}


def _take_decoder(key: tuple, make) -> Any:
    with _pool_lock:
        free = _pool.get(key, [])
        for i, decoder in enumerate(free):
            if decoder.reusable():
                return free.pop(i)
    return make()


def _give_back(key: tuple, decoder: Any) -> None:
    if decoder.captured:
        return
    with _pool_lock:
        _pool.setdefault(key, []).append(decoder)


class Plan:
    """The plan of one decode step: the kernel and config chosen for the shape, and the split
    schedule of the step's lengths. Reuse it for every layer of the step; call update() at the
    next step (the same object, so CUDA graphs and torch.compile see one plan)."""

    def __init__(self, decoder: Any, key: tuple, shape: DecodeShape, causal: bool):
        self._decoder = decoder
        self.shape = shape
        self.causal = causal
        self.seqlens: Any = None
        self.block_table: Any = None
        self._finalizer = weakref.finalize(self, _give_back, key, decoder)

    @property
    def kernel(self) -> str:
        """The kernel that runs: "cute/mla_decode/paged_sm90/v12"."""
        return self._decoder.kernel

    @property
    def config(self) -> str:
        return self._decoder.config

    @property
    def config_source(self) -> str:
        """"given", "cache" / "cache (rotating)" (the tuning cache's winner, ranked by the flush or
        the rotating figure; a rotating one is preferred) or "first valid"."""
        return self._decoder.config_source

    @property
    def device(self) -> int:
        return self._decoder.device

    @property
    def kv_format(self) -> str:
        """The cache format every decode() of this plan takes: "bf16", "f16", "fp8_tensor", "fp8_token"."""
        return self.shape.kv_format

    @property
    def tolerances(self) -> dict:
        """The bounds the lab's tests hold this kernel's outputs to, as {"out": {...}, "lse": {...}} with
        atol, rtol and max_rel_l2 (an FP8 cache's against a reference on the dequantised cache)."""
        return self._decoder.tolerances

    @property
    def batch(self) -> int:
        return 0 if self.seqlens is None else int(self.seqlens.shape[0])

    def update(self, seqlens: Any, block_table: Any, *, stream: Any = None) -> "Plan":
        """Plans the next decode step (its lengths and block table) into this plan; enqueued on
        `stream` (default: the caller's current stream), no host synchronisation."""
        _check_int_vector(seqlens, "seqlens", 1, "[b]")
        _check_int_vector(block_table, "block_table", 2, "[b, max_blocks]")
        b = int(seqlens.shape[0])
        _require(1 <= b <= self.shape.max_batch, ValueError,
                 f"seqlens: batch {b} outside the 1..{self.shape.max_batch} this plan was made for")
        _require(int(block_table.shape[0]) == b, ValueError,
                 f"block_table: expected {b} rows (one per request of seqlens), got shape {_shape_text(block_table.shape)}")
        device = _cuda_device(seqlens, "seqlens")
        _require(_cuda_device(block_table, "block_table") == device, ValueError,
                 f"block_table: on {arr.describe_device(block_table)}, seqlens on {arr.describe_device(seqlens)}")
        _require(device == self.device, ValueError,
                 f"seqlens: on cuda:{device}, this plan's kernels were set up on cuda:{self.device}")
        s = arr.caller_stream(seqlens, device, stream)
        self._decoder.plan_step(arr.capsule(seqlens, s), s)
        self.seqlens, self.block_table = seqlens, block_table
        return self

    def reuse_error(self, stream: Any = None) -> Optional[str]:
        """None, or what went wrong when a decode() since the last update met lengths whose page
        counts differ from the planned ones (those requests were written as NaN). Synchronises."""
        s = arr.caller_stream(self.seqlens, self.device, stream)
        text = self._decoder.reuse_error(s)
        return text or None

    def __repr__(self) -> str:
        return (f"cutelab.mla.Plan(kernel={self.kernel!r}, config={self.config!r} ({self.config_source}), "
                f"batch={self.batch}, shape={self.shape})")


def plan(seqlens: Any, block_table: Any, *, num_heads_q: int, num_heads_kv: int = 1, s_q: int = 1,
         dtype: Any = "bf16", kv_format: Optional[str] = None, causal: bool = False, max_batch: Optional[int] = None,
         kernel: Optional[str] = None, config: Optional[str] = None, max_seqlen: Optional[int] = None,
         stream: Any = None) -> Plan:
    """Plans a decode step: picks the kernel and config for the shape and enqueues the split schedule.

    seqlens: [b] int32 KV lengths on the GPU; block_table: [b, max_blocks] int32 page ids.
    dtype: of q and out (bf16 or f16). kv_format: of the KV cache, default q's dtype; "fp8_tensor" or
    "fp8_token" (module docstring) with bf16 q. max_batch: the largest batch the plan will be updated
    to (default b). kernel: a registry name ("cute/mla_decode/paged_sm90/v2"); default: the kernel
    with the fastest tuning-cache entry for this shape, else the family default (for an FP8 cache
    the newest FP8 version). config: a config name; default: the tuning cache's winner, else the
    first valid one (a design lists its untuned default first). Winners tuned by the rotating figure
    (`cutelab run --tune --timing rotating`: calls on KV not in L2, as in serving) come before those
    tuned by the flush one. max_seqlen: the sequence length the tuning cache is looked up for
    (`cutelab run --t`), default 4096.
    """
    _check_int_vector(seqlens, "seqlens", 1, "[b]")
    b = int(seqlens.shape[0])
    for name, value, lo, hi in (("num_heads_q", num_heads_q, 1, 128), ("num_heads_kv", num_heads_kv, 1, 8),
                                ("s_q", s_q, 1, 8), ("max_batch", max_batch if max_batch is not None else b, 1, 1024)):
        _require(isinstance(value, numbers.Integral) and lo <= value <= hi, ValueError,
                 f"{name} = {value!r} is unsupported, expected an integer in {lo}..{hi}")
    _require(num_heads_q % num_heads_kv == 0, ValueError,
             f"num_heads_q ({num_heads_q}) must be a multiple of num_heads_kv ({num_heads_kv})")
    dtype_text = arr.dtype_name(dtype)
    _require(dtype_text in ("bf16", "f16"), TypeError, f"dtype: expected bf16 or f16, got {dtype!r}")
    kv_text = _kv_format_name(kv_format, dtype_text)
    num_heads_q, num_heads_kv, s_q = int(num_heads_q), int(num_heads_kv), int(s_q)
    shape = DecodeShape(int(max_batch) if max_batch is not None else b, s_q, num_heads_q, num_heads_kv, dtype_text,
                        kv_text)
    _require(b <= shape.max_batch, ValueError, f"seqlens: batch {b} exceeds max_batch = {shape.max_batch}")
    _check_int_vector(block_table, "block_table", 2, "[b, max_blocks]")
    _require(int(block_table.shape[0]) == b, ValueError,
             f"block_table: expected {b} rows (one per request of seqlens), got shape {_shape_text(block_table.shape)}")
    device = _cuda_device(seqlens, "seqlens")

    key = (device, shape, kernel or "", config or "", bool(causal), int(max_seqlen or 0))
    decoder = _take_decoder(key, lambda: _C.MlaDecoder(
        device=device, db_path=_db_path(), max_batch=shape.max_batch, s_q=s_q, h_q=num_heads_q, h_kv=num_heads_kv,
        dtype=dtype_text, kv_format=kv_text if kv_text in FP8_ENTRY_BYTES else "", kernel=kernel or "",
        config=config or "", causal=bool(causal), lens=[],
        max_seqlen=int(max_seqlen or 0), cache_dir=""))
    return Plan(decoder, key, shape, bool(causal)).update(seqlens, block_table, stream=stream)


def _kv_format_name(kv_format: Optional[str], dtype: str) -> str:
    """The cache format a plan takes: q's dtype by default; an FP8 format only with bf16 q."""
    if kv_format is None:
        return dtype
    _require(isinstance(kv_format, str) and kv_format in KV_FORMATS, ValueError,
             f"kv_format = {kv_format!r} is unknown, expected one of {', '.join(KV_FORMATS)}")
    if kv_format in FP8_ENTRY_BYTES:
        _require(dtype == "bf16", ValueError, f"kv_format {kv_format} takes bf16 q and out, got dtype {dtype}")
    else:
        _require(kv_format == dtype, ValueError,
                 f"kv_format {kv_format} with dtype {dtype}: a cache that is not FP8 is in q's dtype")
    return kv_format


def _kv_format_of(kv_cache: Any, name: str = "kv_cache") -> Optional[str]:
    """The FP8 format a cache's dtype and last dimension say, or None (a cache in q's dtype)."""
    dtype = arr.array_dtype(kv_cache, name)
    last = int(kv_cache.shape[-1]) if len(kv_cache.shape) else 0
    if dtype == "e4m3":
        return "fp8_tensor"
    if dtype == "u8":
        for fmt, entry in FP8_ENTRY_BYTES.items():
            if last == entry:
                return fmt
        raise ValueError(f"{name}: a uint8 cache holds fp8_tensor (last dim 576) or fp8_token (last dim 656) "
                         f"entries, got shape {_shape_text(kv_cache.shape)}")
    return None


def _softmax_scale(softmax_scale: Optional[float]) -> float:
    if softmax_scale is None:
        return 0.0  # the kernels' default, 1/sqrt(576)
    _require(isinstance(softmax_scale, (int, float)) and math.isfinite(softmax_scale) and softmax_scale > 0,
             ValueError, f"softmax_scale = {softmax_scale!r}: expected a finite positive number")
    return float(softmax_scale)


def _outputs(q: Any, out: Any, lse: Any, device: int) -> tuple[Any, Any, bool]:
    """(out, lse, allocated here): the given ones, or new ones of q's framework."""
    _require(len(q.shape) == 4, ValueError, f"q: expected rank 4 [b, s_q, h_q, {HEAD_DIM_QK}], got shape "
                                            f"{_shape_text(q.shape)}")
    b, s_q, h_q, _ = (int(e) for e in q.shape)
    if arr.is_jax(q):
        _require(out is None and lse is None, TypeError,
                 "out/lse: JAX arrays are immutable; leave out and lse unset (they are returned)")
    made = out is None or lse is None
    if out is None:
        out = arr.empty(q, (b, s_q, h_q, HEAD_DIM_V), arr.array_dtype(q, "q"), device)
    if lse is None:
        lse = arr.empty(q, (b, h_q, s_q), "f32", device)
    return out, lse, made


def check_args(q: Any, kv_cache: Any, block_table: Any, seqlens: Any, out: Any, lse: Any,
               softmax_scale: Optional[float] = None, causal: bool = False, kv_scale: Any = None) -> None:
    """Every host-side check of a decode call (dtypes, ranks, shapes, layout, one CUDA device),
    without touching the device; raises TypeError/ValueError naming the argument."""
    named = [("q", q), ("kv_cache", kv_cache), ("block_table", block_table), ("seqlens", seqlens), ("out", out),
             ("lse", lse)] + ([("kv_scale", kv_scale)] if kv_scale is not None else [])
    for name, x in named:
        arr.framework(x)
        arr.array_dtype(x, name)
    _C.check_mla_args(*(arr.capsule(x, 1) for x in (q, kv_cache, block_table, seqlens, out, lse)),
                      None if kv_scale is None else arr.capsule(kv_scale, 1), _softmax_scale(softmax_scale),
                      bool(causal))


def decode(plan: Plan, q: Any, kv_cache: Any, out: Any = None, lse: Any = None,
           softmax_scale: Optional[float] = None, causal: Optional[bool] = None, *, kv_scale: Any = None,
           checked: bool = False, stream: Any = None) -> tuple[Any, Any]:
    """One layer of the planned step: out [b, s_q, h_q, 512] (q's dtype) and lse [b, h_q, s_q]
    (float32, natural log; +inf for a query that sees no key).

    q: [b, s_q, h_q, 576] of the plan's dtype; kv_cache: [num_blocks, 64, h_kv, 576] in q's dtype, or
    in the plan's FP8 format (module docstring); both contiguous, on the plan's GPU. kv_scale: an
    fp8_tensor cache's float32 scale (one value on the GPU), for no other format. out/lse: written
    in place when given, else allocated with q's framework. causal: default the plan's. checked: also
    read lengths and block ids (and fp8_tensor's scale, every fp8_token scale a request owns) back,
    a host synchronisation, and refuse bad ones before anything is written. Runs on `stream`, default
    the caller's current stream (PyTorch, CuPy) or, for other DLPack producers, one that the exchange
    names.
    """
    _require(isinstance(plan, Plan), TypeError, f"plan: expected a cutelab.mla.Plan, got {type(plan).__name__}")
    if arr.framework(q) == "torch":
        if _torch_compiling():
            return _torch_op_call(plan, q, kv_cache, out, lse, softmax_scale, causal, kv_scale)
        if stream is None and _torch_fast is not None and _torch_fast.applies(q, kv_cache, out, lse, kv_scale):
            return _torch_fast.decode(plan, q, kv_cache, out, lse, softmax_scale, causal, checked, kv_scale)
    causal = plan.causal if causal is None else bool(causal)
    q_dtype = arr.array_dtype(q, "q")
    _require(q_dtype == plan.shape.dtype, TypeError, f"q: expected {plan.shape.dtype} like the plan, got {q_dtype}")
    device = _cuda_device(q, "q")
    _require(device == plan.device, ValueError, f"q: on cuda:{device}, the plan is on cuda:{plan.device}")
    out, lse, made = _outputs(q, out, lse, device)
    s = arr.caller_stream(q, device, stream)
    scale = _softmax_scale(softmax_scale)
    caps = [arr.capsule(x, s) for x in (q, kv_cache, plan.block_table, plan.seqlens, out, lse)]
    plan._decoder.run(*caps, kv_scale=None if kv_scale is None else arr.capsule(kv_scale, s), softmax_scale=scale,
                      causal=causal, checked=checked, stream=s)
    if made:
        out, lse = arr.export(q, out, s), arr.export(q, lse, s)
    return out, lse


def decode_with_kvcache(q: Any, kv_cache: Any, block_table: Any, seqlens: Any, *, softmax_scale: Optional[float] = None,
                        causal: bool = False, out: Any = None, lse: Any = None, kv_scale: Any = None,
                        kernel: Optional[str] = None, config: Optional[str] = None,
                        stream: Any = None) -> tuple[Any, Any]:
    """plan() and decode() in one call, for a single layer (a step of many layers should plan once).
    The cache format comes from kv_cache: e4m3 or uint8 [.., 576] fp8_tensor (give kv_scale), uint8
    [.., 656] fp8_token, else q's dtype."""
    _require(len(q.shape) == 4, ValueError, f"q: expected rank 4 [b, s_q, h_q, {HEAD_DIM_QK}], got shape "
                                            f"{_shape_text(q.shape)}")
    _require(len(kv_cache.shape) == 4, ValueError,
             f"kv_cache: expected rank 4 [num_blocks, {PAGE_SIZE}, h_kv, {HEAD_DIM_QK}], got shape "
             f"{_shape_text(kv_cache.shape)}")
    p = plan(seqlens, block_table, num_heads_q=int(q.shape[2]), num_heads_kv=int(kv_cache.shape[2]),
             s_q=int(q.shape[1]), dtype=arr.array_dtype(q, "q"), kv_format=_kv_format_of(kv_cache), causal=causal,
             kernel=kernel, config=config, stream=stream)
    return decode(p, q, kv_cache, out, lse, softmax_scale, causal, kv_scale=kv_scale, stream=stream)


def kernels(dtype: Any = None, kv_format: Optional[str] = None) -> list[str]:
    """Kernels that serve callers' tensors (any of them can be passed as plan(kernel=...)): all of
    them, or those for q of `dtype` (default bf16 when a kv_format is named) with a cache in `kv_format`."""
    if dtype is None and kv_format is None:
        return list(_C.decoder_kernels())
    dtype_text = arr.dtype_name(dtype if dtype is not None else "bf16")
    kv_text = _kv_format_name(kv_format, dtype_text)
    return list(_C.decoder_kernels(dtype_text, kv_text if kv_text in FP8_ENTRY_BYTES else ""))


def _fp8_format(cache: Any, kv_format: Optional[str]) -> str:
    fmt = _kv_format_of(cache, "cache") if kv_format is None else kv_format
    _require(fmt in FP8_ENTRY_BYTES, ValueError,
             f"kv_format: expected fp8_tensor or fp8_token, got {kv_format!r}" if kv_format is not None else
             f"cache: expected an FP8 cache (float8_e4m3fn or uint8 [.., 576] fp8_tensor, uint8 [.., 656] fp8_token), "
             f"got {arr.array_dtype(cache, 'cache')} {_shape_text(cache.shape)}")
    return fmt


def quantize_kv(rows: Any, slots: Any, cache: Any, *, kv_format: Optional[str] = None, scale: Any = None,
                checked: bool = False, stream: Any = None) -> None:
    """Writes bf16 KV rows [n, h_kv, 576] into their slots of an FP8 cache [num_blocks, 64, h_kv, entry]
    (in place): slots [n] int32 or int64, page * 64 + offset; a negative slot skips its row.
    kv_format: default what the cache's dtype and last dimension say. scale: fp8_tensor's float32
    scale (one value on the GPU; amax / 448 maps the largest value to e4m3's largest), for no other
    format; fp8_token computes each group's scale (amax / 448). e4m3 rounds to nearest even and
    saturates at +-448; NaN stays NaN. checked: also read the slots back (a host synchronisation)
    and refuse slots outside the cache or two rows for one slot. Runs on `stream`, default the
    caller's current stream."""
    fmt = _fp8_format(cache, kv_format)
    device = _cuda_device(cache, "cache")
    s = arr.caller_stream(cache, device, stream)
    _C.quantize_kv(arr.capsule(rows, s), arr.capsule(slots, s), arr.capsule(cache, s), fmt,
                   None if scale is None else arr.capsule(scale, s), bool(checked), s)


def dequantize_kv(cache: Any, *, kv_format: Optional[str] = None, scale: Any = None, out: Any = None,
                  stream: Any = None) -> Any:
    """An FP8 cache as float32 [num_blocks, 64, h_kv, 576] (scale x e4m3 latent values, the bf16 RoPE
    values of fp8_token), into `out` when given, else a new array of the cache's framework: what a
    reference for the FP8 kernels reads."""
    fmt = _fp8_format(cache, kv_format)
    device = _cuda_device(cache, "cache")
    _require(len(cache.shape) == 4, ValueError,
             f"cache: expected rank 4 [num_blocks, {PAGE_SIZE}, h_kv, {FP8_ENTRY_BYTES[fmt]}], got shape "
             f"{_shape_text(cache.shape)}")
    s = arr.caller_stream(cache, device, stream)
    made = out is None
    if made:
        out = arr.empty(cache, tuple(int(e) for e in cache.shape[:3]) + (HEAD_DIM_QK,), "f32", device)
    _C.dequantize_kv(arr.capsule(cache, s), fmt, None if scale is None else arr.capsule(scale, s),
                     arr.capsule(out, s), s)
    return arr.export(cache, out, s) if made else out


class _TorchFastPath:
    """decode() for PyTorch tensors on the current stream with the fewest Python steps: a serving
    engine calls it once per layer per step, so its host time is part of every step."""

    def __init__(self, torch):
        self.torch = torch
        self.tensor = torch.Tensor
        self.to_dlpack = torch._C._to_dlpack
        self.raw_stream = torch._C._cuda_getCurrentRawStream
        self.dtype_names = {torch.bfloat16: "bf16", torch.float16: "f16"}

    def applies(self, q, kv_cache, out, lse, kv_scale) -> bool:
        t = self.tensor
        return (isinstance(kv_cache, t) and (out is None or isinstance(out, t)) and (lse is None or isinstance(lse, t))
                and (kv_scale is None or isinstance(kv_scale, t)) and q.is_cuda)

    def decode(self, plan, q, kv_cache, out, lse, softmax_scale, causal, checked, kv_scale):
        q_dtype = self.dtype_names.get(q.dtype)
        if q_dtype != plan.shape.dtype:
            raise TypeError(f"q: expected {plan.shape.dtype} like the plan, got {arr.array_dtype(q, 'q')}")
        device = q.get_device()
        if device != plan.device:
            raise ValueError(f"q: on cuda:{device}, the plan is on cuda:{plan.device}")
        if out is None or lse is None:
            out, lse, _ = _outputs(q, out, lse, device)
        d = self.to_dlpack
        sl, bt = plan.seqlens, plan.block_table
        plan._decoder.run(d(q), d(kv_cache), d(bt) if isinstance(bt, self.tensor) else arr.capsule(bt, 0),
                          d(sl) if isinstance(sl, self.tensor) else arr.capsule(sl, 0), d(out), d(lse),
                          kv_scale=None if kv_scale is None else d(kv_scale), softmax_scale=_softmax_scale(softmax_scale),
                          causal=plan.causal if causal is None else bool(causal), checked=checked,
                          stream=self.raw_stream(device))
        return out, lse


def _make_torch_fast():
    import sys
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch._C, "_to_dlpack") or not hasattr(torch._C, "_cuda_getCurrentRawStream"):
        return None
    return _TorchFastPath(torch)


_torch_fast = None  # set by cutelab/__init__.py once PyTorch is imported


def _torch_compiling() -> bool:
    import torch
    return bool(torch.compiler.is_compiling())


def _torch_op_call(plan, q, kv_cache, out, lse, softmax_scale, causal, kv_scale):
    from . import _torch_ops
    return _torch_ops.decode_op(plan, q, kv_cache, out, lse, softmax_scale, causal, kv_scale)
