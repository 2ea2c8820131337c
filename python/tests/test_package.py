"""What needs no GPU: import, version, argument errors with NumPy (CPU) arrays, the FlashMLA
signature, verify() on NumPy functions, the timing statistics."""

import inspect
import pathlib
import re
import time
import tomllib

import numpy as np
import pytest

import cutelab
from cutelab import mla, testing
from cutelab.compat import flash_mla

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_matches_pyproject_and_cmake():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    cmake = re.search(r"project\(cutelab VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert cutelab.__version__ == project == cmake


def test_error_types():
    assert issubclass(cutelab.UsageError, ValueError)
    assert issubclass(cutelab.Error, RuntimeError)


def test_mla_kernels_listed():
    names = mla.kernels()
    assert "cute/mla_decode/paged_sm90/v3" in names
    assert "cute/mla_decode/paged_sm90_fp8/v18" in names
    assert all(n.startswith("cute/mla_decode/") for n in names)


def test_mla_kernels_by_cache_format():
    same, f16 = set(mla.kernels("bf16")), set(mla.kernels("f16"))
    tensor, token = set(mla.kernels(kv_format="fp8_tensor")), set(mla.kernels(kv_format="fp8_token"))
    assert "cute/mla_decode/paged_sm90/v3" in same and "cute/mla_decode/paged_sm90/v3" in f16
    assert {"cute/mla_decode/paged_sm90_fp8/v13", "cute/mla_decode/paged_sm90_fp8/v10"} <= tensor
    assert {"cute/mla_decode/paged_sm90_fp8/v18", "cute/mla_decode/paged_sm90_fp8/v17"} <= token
    assert not same & (tensor | token)
    assert "cute/mla_decode/paged_sm90_fp8/v18" not in tensor and "cute/mla_decode/paged_sm90_fp8/v13" not in token
    assert set(mla.kernels()) == same | f16 | tensor | token
    with pytest.raises(ValueError, match=r"kv_format fp8_token takes bf16 q and out, got dtype f16"):
        mla.kernels("f16", "fp8_token")


def case(b=2, s_q=1, h_q=16, h_kv=1, blocks=8, max_blocks=4, dtype=np.float16):
    return dict(q=np.zeros((b, s_q, h_q, 576), dtype), kv_cache=np.zeros((blocks, 64, h_kv, 576), dtype),
                block_table=np.zeros((b, max_blocks), np.int32), seqlens=np.full((b,), 100, np.int32),
                out=np.zeros((b, s_q, h_q, 512), dtype), lse=np.zeros((b, h_q, s_q), np.float32))


def check(**kw):
    mla.check_args(**kw)


def test_check_args_cpu_arrays_rejected_after_shapes_pass():
    with pytest.raises(ValueError, match=r"q: expected a CUDA device array, got one in cpu"):
        check(**case())


@pytest.mark.parametrize("field,value,pattern", [
    ("q", np.zeros((2, 1, 16, 576), np.float32), r"q: expected dtype bf16 or f16, got f32"),
    ("q", np.zeros((2, 16, 576), np.float16), r"q: expected rank 4"),
    ("q", np.zeros((2, 1, 16, 512), np.float16), r"q: unsupported head dim 512, expected 576"),
    ("kv_cache", np.zeros((8, 32, 1, 576), np.float16), r"kv_cache: expected 64 tokens per page, got 32"),
    ("kv_cache", np.zeros((8, 64, 1, 576), np.float32), r"kv_cache"),
    ("block_table", np.zeros((3, 4), np.int32), r"block_table: expected 2 rows"),
    ("block_table", np.zeros((2, 4), np.int64), r"block_table: expected dtype i32"),
    ("seqlens", np.zeros((2,), np.float32), r"seqlens: expected dtype i32"),
    ("out", np.zeros((2, 1, 16, 576), np.float16), r"out: expected shape \[2, 1, 16, 512\]"),
    ("lse", np.zeros((2, 1, 16), np.float32), r"lse: expected shape \[2, 16, 1\]"),
    ("lse", np.zeros((2, 16, 1), np.float16), r"lse: expected dtype f32"),
])
def test_check_args_names_the_bad_argument(field, value, pattern):
    kw = case()
    kw[field] = value
    with pytest.raises((ValueError, TypeError), match=pattern):
        check(**kw)


@pytest.mark.parametrize("kw,pattern", [
    (dict(kv_cache=np.zeros((8, 64, 1, 600), np.uint8)),
     r"kv_cache: a u8 cache holds fp8_tensor \(last dim 576\) or fp8_token \(last dim 656\) entries"),
    (dict(kv_cache=np.zeros((8, 64, 1, 656), np.uint8)), r"q: expected dtype bf16 with an fp8_token cache"),
    (dict(kv_cache=np.zeros((8, 64, 1, 576), np.uint8)), r"q: expected dtype bf16 with an fp8_tensor cache"),
    (dict(kv_scale=np.ones((1,), np.float32)), r"kv_scale: given for an f16 cache \(same as q\); only fp8_tensor"),
    (dict(kv_cache=np.zeros((8, 64, 1, 576), np.uint8), kv_scale=np.ones((1,), np.float64)),
     r"kv_scale: expected float32, got f64"),
    (dict(kv_cache=np.zeros((8, 64, 1, 576), np.uint8), kv_scale=np.ones((2,), np.float32)),
     r"kv_scale: expected one value"),
])
def test_check_args_fp8_caches_and_scales(kw, pattern):
    args = case()
    args.update(kw)
    with pytest.raises(ValueError, match=pattern):
        mla.check_args(**args)


@pytest.mark.parametrize("call,pattern", [
    (lambda: mla.quantize_kv(np.zeros((3, 1, 576), np.float16), np.zeros(3, np.int32), np.zeros((4, 64, 1, 600), np.uint8)),
     r"cache: a uint8 cache holds fp8_tensor \(last dim 576\) or fp8_token \(last dim 656\)"),
    (lambda: mla.quantize_kv(np.zeros((3, 1, 576), np.float16), np.zeros(3, np.int32),
                             np.zeros((4, 64, 1, 656), np.uint8), kv_format="bf16"),
     r"kv_format: expected fp8_tensor or fp8_token, got 'bf16'"),
    (lambda: mla.quantize_kv(np.zeros((3, 1, 576), np.float16), np.zeros(3, np.int32), np.zeros((4, 64, 1, 656), np.uint8)),
     r"cache: expected a CUDA device array, got one in cpu"),
    (lambda: mla.dequantize_kv(np.zeros((4, 64, 1, 576), np.float16)), r"cache: expected an FP8 cache"),
    (lambda: mla.dequantize_kv(np.zeros((4, 64, 1, 656), np.uint8)), r"cache: expected a CUDA device array"),
])
def test_quantize_and_dequantize_argument_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_check_args_rejects_padded_q():
    kw = case()
    kw["q"] = np.zeros((2, 1, 16, 600), np.float16)[..., :576]
    with pytest.raises(ValueError, match=r"q: "):
        check(**kw)


def test_check_args_rejects_heads_not_multiple_of_kv_heads():
    with pytest.raises(ValueError, match=r"h_q \(16\) must be a multiple of h_kv \(3\)"):
        check(**case(h_kv=3))


def test_check_args_rejects_bad_softmax_scale():
    with pytest.raises(ValueError, match=r"softmax_scale = -1"):
        mla.check_args(**case(), softmax_scale=-1.0)


def test_check_args_rejects_non_arrays():
    kw = case()
    kw["q"] = [[1.0]]
    with pytest.raises(TypeError, match=r"expected an array"):
        check(**kw)


@pytest.mark.parametrize("kw,exc,pattern", [
    (dict(seqlens=np.zeros((2,), np.float32)), TypeError, r"seqlens: expected int32, got float32"),
    (dict(seqlens=np.zeros((2, 1), np.int32)), ValueError, r"seqlens: expected rank 1 \[b\], got shape \[2, 1\]"),
    (dict(block_table=np.zeros((2,), np.int32)), ValueError, r"block_table: expected rank 2"),
    (dict(block_table=np.zeros((3, 4), np.int32)), ValueError, r"block_table: expected 2 rows"),
    (dict(num_heads_q=0), ValueError, r"num_heads_q = 0 is unsupported, expected an integer in 1..128"),
    (dict(num_heads_q=16, num_heads_kv=3), ValueError, r"num_heads_q \(16\) must be a multiple of num_heads_kv \(3\)"),
    (dict(s_q=9), ValueError, r"s_q = 9 is unsupported"),
    (dict(dtype="f32"), TypeError, r"dtype: expected bf16 or f16"),
    (dict(dtype="complex64"), TypeError, r"dtype: unknown element type"),
    (dict(max_batch=1), ValueError, r"seqlens: batch 2 exceeds max_batch = 1"),
    (dict(kv_format="fp8"), ValueError, r"kv_format = 'fp8' is unknown, expected one of bf16, f16, fp8_tensor"),
    (dict(kv_format="fp8_token", dtype="f16"), ValueError, r"kv_format fp8_token takes bf16 q and out, got dtype f16"),
    (dict(kv_format="bf16", dtype="f16"), ValueError, r"a cache that is not FP8 is in q's dtype"),
    (dict(kv_format="fp8_tensor"), ValueError, r"seqlens: expected a CUDA device array, got one in cpu"),
    (dict(), ValueError, r"seqlens: expected a CUDA device array, got one in cpu"),
])
def test_plan_argument_errors(kw, exc, pattern):
    args = dict(seqlens=np.full((2,), 100, np.int32), block_table=np.zeros((2, 4), np.int32), num_heads_q=16)
    args.update(kw)
    with pytest.raises(exc, match=pattern):
        mla.plan(**args)


def test_decode_needs_a_plan():
    with pytest.raises(TypeError, match=r"plan: expected a cutelab.mla.Plan, got dict"):
        mla.decode({}, np.zeros((1, 1, 16, 576), np.float16), np.zeros((1, 64, 1, 576), np.float16))


def test_flash_mla_signatures_match_flash_mla():
    assert list(inspect.signature(flash_mla.get_mla_metadata).parameters) == [
        "cache_seqlens", "num_q_tokens_per_head_k", "num_heads_k", "num_heads_q", "is_fp8_kvcache", "topk"]
    assert list(inspect.signature(flash_mla.flash_mla_with_kvcache).parameters) == [
        "q", "k_cache", "block_table", "cache_seqlens", "head_dim_v", "tile_scheduler_metadata", "num_splits",
        "softmax_scale", "causal", "is_fp8_kvcache", "indices"]
    defaults = {k: p.default for k, p in inspect.signature(flash_mla.flash_mla_with_kvcache).parameters.items()}
    assert defaults["softmax_scale"] is None and defaults["causal"] is False


@pytest.mark.parametrize("call", [
    lambda: flash_mla.get_mla_metadata(None, 128, 1, is_fp8_kvcache=True),
    lambda: flash_mla.get_mla_metadata(None, 128, 1, topk=2048),
    lambda: flash_mla.flash_mla_with_kvcache(None, None, None, None, 512, None, None, is_fp8_kvcache=True),
    lambda: flash_mla.flash_mla_with_kvcache(None, None, None, None, 512, None, None, indices=object()),
])
def test_flash_mla_fp8_and_sparse_are_not_implemented(call):
    with pytest.raises(NotImplementedError, match=r"not served"):
        call()


def test_flash_mla_rejects_other_head_dim_v():
    with pytest.raises(ValueError, match=r"head_dim_v = 128"):
        flash_mla.flash_mla_with_kvcache(None, None, None, None, 128, None, None)


def test_verify_passes_and_fails_like_the_lab_checker():
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    ok = testing.verify(lambda a: a * 2, lambda a: a.astype(np.float64) * 2, lambda: (x,), rtol=1e-6, atol=1e-6)
    assert ok[0].passed and ok[0].count == 1000 and ok[0].max_abs == 0
    with pytest.raises(testing.VerificationError, match=r"out: FAIL") as e:
        testing.verify(lambda a: a * 2.01, lambda a: a * 2, lambda: (x,), rtol=1e-3, atol=1e-3, names=["out"])
    assert e.value.results[0].mismatches > 0


def test_verify_nan_where_the_reference_is_finite_fails():
    x = np.ones(16, np.float32)
    results = testing.verify(lambda a: np.where(np.arange(16) == 3, np.nan, a), lambda a: a, lambda: (x,),
                             rtol=0.1, atol=0.1, raise_on_fail=False)
    assert not results[0].passed and results[0].first_bad == 3


def test_verify_compares_every_output():
    x = np.ones(4, np.float32)
    results = testing.verify(lambda a: (a, a + 1), lambda a: (a, a + 1), lambda: (x,), rtol=0, atol=0)
    assert [r.passed for r in results] == [True, True]
    with pytest.raises(ValueError, match=r"kernel_fn returned 2 outputs, reference_fn 1"):
        testing.verify(lambda a: (a, a), lambda a: a, lambda: (x,), rtol=0, atol=0)


def test_verify_rejects_bad_tolerances():
    with pytest.raises(ValueError, match=r"rtol = -1"):
        testing.verify(lambda a: a, lambda a: a, lambda: (np.ones(2),), rtol=-1, atol=0)


def test_bench_rejects_bad_options_before_touching_the_gpu():
    with pytest.raises(ValueError, match=r"timing = 'both'"):
        testing.bench(lambda: None, timing="both")
    with pytest.raises(ValueError, match=r"needs get_inputs"):
        testing.bench(lambda: None, timing="rotating")
    with pytest.raises(ValueError, match=r"min_samples = 30 > max_samples = 10"):
        testing.bench(lambda: None, min_samples=30, max_samples=10)


def test_timing_statistics_are_the_labs():
    s = cutelab._C.summarize_samples([3.0, 1.0, 2.0])
    assert s["n"] == 3 and s["median_us"] == 2.0 and s["min_us"] == 1.0
    done, reason = cutelab._C.sampling_done([1.0] * 20, 0.1, 20, 2000, 2.0, 0.005)
    assert done and reason == "converged"
    done, _ = cutelab._C.sampling_done([1.0] * 5, 0.1, 20, 2000, 2.0, 0.005)
    assert not done


def test_clock_sampler_says_why_without_nvidia_smi(monkeypatch):
    monkeypatch.setenv("CUTELAB_NVIDIA_SMI", "/nonexistent/nvidia-smi")
    sampler = cutelab._C.ClockSampler(0, 5)
    sampler.start()
    clocks = sampler.stop()
    assert clocks["available"] is False and "nvidia-smi not found" in clocks["why"]
    assert clocks["brief"] == "-" and "not recorded" in clocks["text"]


def test_clock_sampler_reads_the_slowdown_reasons(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho '1500, 2619, 1980, 250.5, 50, 0x0000000000000004'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CUTELAB_NVIDIA_SMI", str(fake))
    sampler = cutelab._C.ClockSampler(0, 5)
    sampler.start()
    time.sleep(0.05)
    clocks = sampler.stop()
    assert clocks["available"] is True, clocks
    assert clocks["sm_mhz_median"] == 1500 and clocks["slowdowns"] == "SW power cap"
    assert clocks["slowed_samples"] == clocks["samples"] >= 1
    assert clocks["brief"] == f"1500 slow {clocks['samples']}/{clocks['samples']}"


def test_energy_meter_over_an_instant_says_why_not():
    """bench's energy a call comes from the harness's meter: at once it has no figure, and says why."""
    got = cutelab._C.EnergyMeter(0).finish(10.0, "min_samples and max_samples")
    assert set(got) == {"energy_note"}, got
    why = cutelab._C.energy_unavailable(0)
    if why:
        assert got["energy_note"] == f"no energy counter: {why}"
    else:
        assert "raise min_samples and max_samples" in got["energy_note"]
