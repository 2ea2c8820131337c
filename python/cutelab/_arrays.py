"""Arrays of any framework as the extension takes them: DLPack capsules made without a host
synchronisation, the caller's stream, and outputs allocated with the caller's framework."""

from __future__ import annotations

from typing import Any

from . import _C

DL_CPU, DL_CUDA = 1, 2

_DTYPE_NAMES = {
    "bfloat16": "bf16", "float16": "f16", "half": "f16", "float32": "f32", "float": "f32",
    "float64": "f64", "int32": "i32", "int64": "i64", "uint8": "u8", "bf16": "bf16", "f16": "f16",
    "f32": "f32", "i32": "i32", "float8_e4m3fn": "e4m3", "e4m3": "e4m3", "u8": "u8",
}


# Framework dtype objects already seen (torch.bfloat16, numpy.dtype('int32'), ...): one dict lookup per call.
_DTYPE_NAMES_BY_OBJECT: dict = {}


def framework(x: Any) -> str:
    """'torch', 'cupy', 'jax', 'numpy' or 'dlpack' (anything else exporting __dlpack__)."""
    module = type(x).__module__.split(".")[0]
    if module == "torch":
        return "torch"
    if module == "cupy":
        return "cupy"
    if module in ("jax", "jaxlib"):
        return "jax"
    if module == "numpy":
        return "numpy"
    if hasattr(x, "__dlpack__"):
        return "dlpack"
    raise TypeError(f"expected an array (PyTorch, JAX, CuPy, NumPy or any __dlpack__ exporter), "
                    f"got {type(x).__module__}.{type(x).__qualname__}")


def dtype_name(dtype: Any) -> str:
    """The lab's name of a framework dtype or a dtype name: torch.bfloat16, 'bfloat16', 'bf16' -> 'bf16'."""
    text = str(dtype).replace("torch.", "").replace("dtype(", "").strip("')\"")
    if text not in _DTYPE_NAMES:
        raise TypeError(f"dtype: unknown element type {dtype!r} (bf16, f16)")
    return _DTYPE_NAMES[text]


def array_dtype(x: Any, name: str) -> str:
    try:
        return _DTYPE_NAMES_BY_OBJECT[x.dtype]
    except (KeyError, TypeError, AttributeError):
        pass
    try:
        name_of = dtype_name(x.dtype)
        _DTYPE_NAMES_BY_OBJECT[x.dtype] = name_of
        return name_of
    except (TypeError, AttributeError):
        raise TypeError(f"{name}: unsupported element type {getattr(x, 'dtype', None)!r}") from None


def device_of(x: Any) -> tuple[int, int]:
    """(DLPack device type, device id) of an array."""
    fw = framework(x)
    if fw == "numpy":
        return (DL_CPU, 0)
    if fw == "torch" and x.is_cuda:
        return (DL_CUDA, x.get_device())
    kind, index = x.__dlpack_device__()
    return (int(kind), int(index))


def describe_device(x: Any) -> str:
    kind, index = device_of(x)
    return f"cuda:{index}" if kind == DL_CUDA else ("cpu" if kind == DL_CPU else f"DLPack device type {kind}")


_jax_streams: dict[int, int] = {}


def caller_stream(x: Any, device: int, stream: Any = None) -> int:
    """The stream a call runs on: the one given, else the framework's current one (PyTorch, CuPy),
    else (JAX, other DLPack producers) a non-blocking stream of cutelab's for that device, which the
    DLPack exchange names so the producer orders its work before ours."""
    if stream is not None:
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        if hasattr(stream, "__cuda_stream__"):
            return int(stream.__cuda_stream__()[1])
        return int(stream)
    fw = framework(x)
    if fw == "torch":
        import torch
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # 0.1 us against 1.5 for current_stream()
        return int(raw(device)) if raw is not None else int(torch.cuda.current_stream(device).cuda_stream)
    if fw == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    if device not in _jax_streams:
        _jax_streams[device] = _C.new_stream(device)
    return _jax_streams[device]


def capsule(x: Any, stream: int) -> Any:
    """What the extension reads `x` through, without a host synchronisation (CUDA-graph safe)."""
    fw = framework(x)
    if fw == "torch":
        import torch.utils.dlpack
        return torch.utils.dlpack.to_dlpack(x)  # no stream handshake: we run on the tensor's stream
    if fw == "numpy":
        return x
    kind, _ = device_of(x)
    if kind == DL_CUDA:
        # The consumer's stream: the producer makes it wait for pending writes (a device-side wait).
        return x.__dlpack__(stream=stream if stream not in (0,) else 1)
    return x.__dlpack__()


class _Produced:
    """A cutelab-allocated output handed to a framework through DLPack: a consumer naming its
    stream gets a device-side wait on ours, the producer side of the DLPack stream contract."""

    def __init__(self, array: Any, stream: int):
        self._array, self._stream = array, stream

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        if stream is not None and stream != -1:
            # 1 and 2 (legacy and per-thread default stream) are also the CUDA runtime's handles.
            _C.stream_wait(int(stream), self._stream)
        kwargs.pop("dl_device", None)
        kwargs.pop("copy", None)
        return self._array.__dlpack__(**kwargs)


def empty(like: Any, shape: tuple[int, ...], dtype: str, device: int) -> Any:
    """An uninitialised CUDA array for a kernel to write: of the framework of `like` (PyTorch,
    CuPy), or for JAX a cutelab array that export() hands to JAX once the kernel is enqueued."""
    fw = framework(like)
    if fw == "torch":
        import torch
        return torch.empty(shape, dtype={"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype],
                           device=like.device)
    if fw == "cupy":
        import cupy
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype={"f16": "float16", "f32": "float32", "bf16": "bfloat16"}[dtype])
    if fw == "jax":
        return _C.empty(list(shape), dtype, device)
    raise TypeError(f"cannot allocate outputs for {fw} inputs: pass out= and lse= as CUDA arrays")


def export(like: Any, array: Any, stream: int) -> Any:
    """An output made by empty(), as the caller's framework sees it (after the kernel is enqueued)."""
    if framework(like) == "jax":
        import jax.dlpack
        return jax.dlpack.from_dlpack(_Produced(array, stream))
    return array


def to_host_f32(x: Any):
    """A float32 NumPy copy of any array (bf16 included), for checks."""
    import numpy as np
    fw = framework(x)
    if fw == "torch":
        return x.detach().float().cpu().numpy()
    if fw == "cupy":
        import cupy
        return cupy.asnumpy(x.astype("float32"))
    if fw == "dlpack":
        x = np.from_dlpack(x)
    return np.asarray(x, dtype=np.float32)


def is_jax(x: Any) -> bool:
    return framework(x) == "jax"
