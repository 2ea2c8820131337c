"""Check and time any kernel from Python the way the lab does its own.

    inputs = get_inputs()                       # a tuple of arrays
    verify(kernel_fn, reference_fn, get_inputs, rtol=2e-2, atol=2e-2)
    bench(lambda: kernel_fn(*inputs))           # one call per graph replay, L2 flushed before each
    bench(kernel_fn, get_inputs=get_inputs, timing="rotating")

verify compares with the lab's checker (|got - ref| <= atol + rtol * |ref| per element, NaN/Inf
must match in kind, and a relative L2 bound). bench uses the lab's stopping rule and statistics
(warm-up, at least min_samples, stop when the 95% confidence interval of the mean is within
target_rel_ci, or at max_samples / max_seconds); it captures and times with PyTorch (CUDA graphs,
events), so the function must launch its work on PyTorch's current stream (cutelab's calls,
PyTorch ops, Triton kernels and most PyTorch extensions do).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from . import _C
from . import _arrays as arr


@dataclass
class CheckResult:
    name: str
    passed: bool
    reason: str
    count: int
    max_abs: float
    max_rel: float
    rel_l2: float
    mismatches: int
    first_bad: int  # index of the first failing element, -1 when none

    def __str__(self) -> str:
        state = "pass" if self.passed else f"FAIL ({self.reason})"
        return (f"{self.name}: {state}; {self.count} values, max |err| {self.max_abs:.3g}, max rel {self.max_rel:.3g}, "
                f"rel L2 {self.rel_l2:.3g}, {self.mismatches} outside the tolerance")


class VerificationError(AssertionError):
    def __init__(self, results: Sequence[CheckResult]):
        self.results = list(results)
        super().__init__("; ".join(str(r) for r in self.results if not r.passed))


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def verify(kernel_fn: Callable, reference_fn: Callable, get_inputs: Callable[[], Any], rtol: float, atol: float,
           max_rel_l2: float = 1.0, names: Optional[Sequence[str]] = None, raise_on_fail: bool = True) -> list[CheckResult]:
    """Runs kernel_fn(*get_inputs()) and reference_fn on the same inputs and compares every output.

    Outputs may be one array or a tuple of arrays of any framework; they are compared as float32 on
    the host (the reference may be computed in higher precision). Raises VerificationError naming
    each failing output unless raise_on_fail is False; returns the per-output results.
    """
    for name, value in (("rtol", rtol), ("atol", atol), ("max_rel_l2", max_rel_l2)):
        if not (isinstance(value, (int, float)) and value >= 0):
            raise ValueError(f"{name} = {value!r}: expected a number >= 0")
    inputs = _as_tuple(get_inputs())
    got = _as_tuple(kernel_fn(*inputs))
    ref = _as_tuple(reference_fn(*inputs))
    if len(got) != len(ref):
        raise ValueError(f"kernel_fn returned {len(got)} outputs, reference_fn {len(ref)}")
    names = list(names) if names is not None else [f"output{i}" for i in range(len(got))]
    results = []
    for name, g, r in zip(names, got, ref):
        g_host, r_host = arr.to_host_f32(g), arr.to_host_f32(r)
        if g_host.shape != r_host.shape:
            raise ValueError(f"{name}: shape {g_host.shape}, the reference's {r_host.shape}")
        d = _C.check_output(name, g_host.reshape(-1).copy(), r_host.reshape(-1).copy(), float(atol), float(rtol),
                            float(max_rel_l2))
        num = lambda v: float("nan") if v is None else float(v)  # noqa: E731  non-finite values come as null
        results.append(CheckResult(name, d["passed"], d["reason"], d["count"], num(d["max_abs"]), num(d["max_rel"]),
                                   num(d["rel_l2"]), d["mismatches"], -1 if d["first_bad"] is None else d["first_bad"]))
    if raise_on_fail and not all(r.passed for r in results):
        raise VerificationError(results)
    return results


@dataclass
class BenchResult:
    mode: str              # "flush", "rotating"
    median_us: float
    p10_us: float
    p90_us: float
    mean_us: float
    min_us: float
    n: int
    rel_ci: float
    stop_reason: str
    graph: bool            # replayed from a CUDA graph (else direct launches)
    sets: int = 1          # input sets rotated over (rotating mode)
    samples_us: list = field(default_factory=list, repr=False)
    # The SM clock and the driver's slowdown reasons while the samples were taken (the CLI's `clocks`
    # record: sm_mhz_min / max, slowed_samples, slowdowns, brief, ...); {"available": False, "why": ..}
    # where nvidia-smi cannot say.
    clocks: dict = field(default_factory=dict, repr=False)
    # Rotating mode: the board's energy over the sampling loop (NVML's counter) a call and the loop's mean
    # power, as `cutelab run --timing rotating` reports them; None with `energy_note` saying why (no counter,
    # or a loop shorter than the counter's resolution allows: raise min_samples).
    joules_per_call: Optional[float] = None
    mean_watts: Optional[float] = None
    energy_note: str = ""

    def __str__(self) -> str:
        how = f"{self.sets} sets rotated" if self.mode == "rotating" else "L2 flushed"
        sm = f"; SM MHz {self.clocks['brief']}" if self.clocks.get("available") else ""
        energy = (f"; {self.joules_per_call:.4g} J a call at {self.mean_watts:.0f} W"
                  if self.joules_per_call is not None else "")
        return (f"{self.median_us:.2f} us median (p10 {self.p10_us:.2f}, p90 {self.p90_us:.2f}; n={self.n}, "
                f"{self.stop_reason}; {how}, {'graph' if self.graph else 'direct'}{sm}{energy})")


def _torch():
    try:
        import torch
    except ImportError:
        raise RuntimeError("cutelab.testing.bench needs PyTorch (CUDA graphs and events)") from None
    if not torch.cuda.is_available():
        raise RuntimeError("cutelab.testing.bench: no CUDA GPU")
    return torch


def _capture(torch, calls: Callable[[], None], use_graph: bool):
    """A zero-argument replay of `calls`: a CUDA graph of it, or `calls` itself."""
    if not use_graph:
        return calls, False, ""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        calls()  # warm-up outside capture: lazy initialisation must not be captured
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            calls()
    except Exception as e:  # noqa: BLE001 - reported, then timed without a graph
        torch.cuda.synchronize()
        return calls, False, f"graph capture failed ({type(e).__name__}: {e}); direct launches"
    return graph.replay, True, ""


def _sample(torch, replay, per_call: int, flush, warmup: int, min_samples: int, max_samples: int,
            max_seconds: float, target_rel_ci: float) -> tuple[list, str, dict, dict]:
    for _ in range(warmup):
        replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples: list[float] = []
    device = torch.cuda.current_device()
    sampler = _C.ClockSampler(device)
    sampler.start()
    # Without a flush the loop is the calls alone: the energy counter around it gives joules a call.
    meter = _C.EnergyMeter(device) if flush is None else None
    began = time.perf_counter()
    try:
        while True:
            if flush is not None:
                flush()
            start.record()
            replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0 / per_call)
            done, reason = _C.sampling_done(samples, time.perf_counter() - began, min_samples, max_samples,
                                            max_seconds, target_rel_ci)
            if done:
                break
    finally:
        clocks = sampler.stop()
    energy = meter.finish(float(len(samples) * per_call), "min_samples and max_samples") if meter else {}
    return samples, reason, clocks, energy


def bench(fn: Callable, *, timing: str = "flush", get_inputs: Optional[Callable[[], Any]] = None,
          sets: Optional[int] = None, warmup: int = 5, min_samples: int = 20, max_samples: int = 2000,
          max_seconds: float = 2.0, target_rel_ci: float = 0.005, use_graph: bool = True) -> BenchResult:
    """Times fn on the GPU the lab's way.

    timing="flush": fn() (or fn(*get_inputs()) with inputs made once) as one CUDA-graph replay per
    sample, L2 flushed before each (the lab's default figure). timing="rotating": fn(*inputs_k) for
    K input sets from K calls of get_inputs (K = `sets`, default enough sets to exceed 3x L2,
    2..32), all in one graph, time / K, no flush: cold data the way a serving engine's layers see it.
    """
    if timing not in ("flush", "rotating"):
        raise ValueError(f"timing = {timing!r}: expected 'flush' or 'rotating'")
    for name, value in (("warmup", warmup), ("min_samples", min_samples), ("max_samples", max_samples)):
        if not isinstance(value, int) or value < (0 if name == "warmup" else 1):
            raise ValueError(f"{name} = {value!r}: expected a positive integer")
    if min_samples > max_samples:
        raise ValueError(f"min_samples = {min_samples} > max_samples = {max_samples}")
    if timing == "rotating" and get_inputs is None:
        raise ValueError("timing='rotating' needs get_inputs (one input set per rotated call)")
    torch = _torch()
    device = torch.cuda.current_device()
    l2 = _C.l2_bytes(device, "") or (64 << 20)

    if timing == "flush":
        args = _as_tuple(get_inputs()) if get_inputs is not None else ()
        scratch = torch.empty(2 * l2 // 4 + 1, dtype=torch.int32, device="cuda")
        replay, graph, note = _capture(torch, lambda: fn(*args), use_graph)
        samples, reason, clocks, energy = _sample(torch, replay, 1, scratch.zero_, warmup, min_samples,
                                                  max_samples, max_seconds, target_rel_ci)
        k = 1
    else:
        first = _as_tuple(get_inputs())
        set_bytes = sum(int(x.numel()) * x.element_size() for x in first if isinstance(x, torch.Tensor))
        if sets is None:
            free, _ = torch.cuda.mem_get_info()
            k = _C.rotating_set_count(float(l2), float(max(set_bytes, 1)), float(free), float(1 << 30))
        else:
            if not isinstance(sets, int) or sets < 2:
                raise ValueError(f"sets = {sets!r}: expected an integer >= 2")
            k = sets
        inputs = [first] + [_as_tuple(get_inputs()) for _ in range(k - 1)]

        def calls():
            for a in inputs:
                fn(*a)

        replay, graph, note = _capture(torch, calls, use_graph)
        samples, reason, clocks, energy = _sample(torch, replay, k, None, warmup, min_samples, max_samples,
                                                  max_seconds, target_rel_ci)
    s = _C.summarize_samples(samples)
    return BenchResult(timing, s["median_us"], s["p10_us"], s["p90_us"], s["mean_us"], s["min_us"], s["n"],
                       s["rel_ci"], reason + (f"; {note}" if note else ""), graph, k, samples, clocks, **energy)
