"""FlashMLA's dense decode API (flash_mla.get_mla_metadata / flash_mla_with_kvcache) on cutelab's
kernels: code written for FlashMLA's dense bf16/fp16 decode runs by changing one import,

    from cutelab.compat.flash_mla import get_mla_metadata, flash_mla_with_kvcache

What FlashMLA's dense API does not cover here raises NotImplementedError: the FP8 KV cache
(is_fp8_kvcache; cutelab.mla takes that layout as kv_format="fp8_token") and sparse attention
(topk / indices).

Difference to know: tile_scheduler_metadata is an opaque cutelab object (the plan of the step,
made at the first layer that uses it and reused by the others), not an int32 tensor; num_splits
is an int32 tensor [b + 1] of zeros kept for the signature (cutelab's split schedule lives on the
GPU inside the plan). Code that only passes both on to flash_mla_with_kvcache, as FlashMLA's
examples do, is unaffected.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import mla

# FlashMLA's dense decode has no FP8 cache (its 656-byte fp8 layout comes with sparse indices only).
_FP8_NOT_SERVED = ("cutelab.compat.flash_mla: the FP8 KV cache (is_fp8_kvcache=True) is not served by FlashMLA's "
                   "dense API; cutelab.mla serves that 656-byte layout densely: plan(..., kv_format='fp8_token')")


class MlaMetadata:
    """What get_mla_metadata returns as tile_scheduler_metadata: the step's lengths and, once a
    layer has run, the plan every later layer of the step reuses."""

    def __init__(self, cache_seqlens: Any, num_q_tokens_per_head_k: int, num_heads_k: int,
                 num_heads_q: Optional[int]):
        self.cache_seqlens = cache_seqlens
        self.num_q_tokens_per_head_k = num_q_tokens_per_head_k
        self.num_heads_k = num_heads_k
        self.num_heads_q = num_heads_q
        self._plans: dict = {}

    def plan_for(self, q: Any, k_cache: Any, block_table: Any, causal: bool) -> mla.Plan:
        b, s_q, h_q, _ = (int(e) for e in q.shape)
        h_kv = int(k_cache.shape[2])
        if h_kv != self.num_heads_k:
            raise ValueError(f"k_cache: {h_kv} KV heads, get_mla_metadata was called with num_heads_k = "
                             f"{self.num_heads_k}")
        if s_q * h_q // h_kv != self.num_q_tokens_per_head_k:
            raise ValueError(f"q: s_q * h_q // h_kv = {s_q} * {h_q} // {h_kv} = {s_q * h_q // h_kv}, "
                             f"get_mla_metadata was called with num_q_tokens_per_head_k = "
                             f"{self.num_q_tokens_per_head_k}")
        if q.shape[0] != self.cache_seqlens.shape[0]:
            raise ValueError(f"q: batch {int(q.shape[0])}, cache_seqlens has {int(self.cache_seqlens.shape[0])}")
        key = (s_q, h_q, h_kv, str(q.dtype), bool(causal), block_table.data_ptr())
        p = self._plans.get(key)
        if p is None:
            p = mla.plan(self.cache_seqlens, block_table, num_heads_q=h_q, num_heads_kv=h_kv, s_q=s_q,
                         dtype=q.dtype, causal=causal)
            self._plans[key] = p
        return p


def get_mla_metadata(cache_seqlens: Any, num_q_tokens_per_head_k: int, num_heads_k: int,
                     num_heads_q: Optional[int] = None, is_fp8_kvcache: bool = False,
                     topk: Optional[int] = None) -> Tuple[MlaMetadata, Any]:
    """FlashMLA's get_mla_metadata: (tile_scheduler_metadata, num_splits) for one decode step.

    cache_seqlens: [b] int32; num_q_tokens_per_head_k: s_q * h_q // h_kv; num_heads_k: h_kv.
    """
    if is_fp8_kvcache:
        raise NotImplementedError(_FP8_NOT_SERVED)
    if topk is not None:
        raise NotImplementedError("cutelab.compat.flash_mla: sparse attention (topk) is not served; dense decode only")
    import torch
    if not isinstance(cache_seqlens, torch.Tensor) or cache_seqlens.dtype != torch.int32 or cache_seqlens.dim() != 1:
        raise TypeError(f"cache_seqlens: expected a [b] torch.int32 tensor, got "
                        f"{getattr(cache_seqlens, 'dtype', type(cache_seqlens).__name__)} "
                        f"{tuple(getattr(cache_seqlens, 'shape', ()))}")
    num_splits = torch.zeros(cache_seqlens.shape[0] + 1, dtype=torch.int32, device=cache_seqlens.device)
    return MlaMetadata(cache_seqlens, int(num_q_tokens_per_head_k), int(num_heads_k), num_heads_q), num_splits


def flash_mla_with_kvcache(q: Any, k_cache: Any, block_table: Any, cache_seqlens: Any, head_dim_v: int,
                           tile_scheduler_metadata: Any, num_splits: Any, softmax_scale: Optional[float] = None,
                           causal: bool = False, is_fp8_kvcache: bool = False,
                           indices: Optional[Any] = None) -> Tuple[Any, Any]:
    """FlashMLA's flash_mla_with_kvcache for dense decode: (out [b, s_q, h_q, head_dim_v],
    softmax_lse [b, h_q, s_q] float32). softmax_scale defaults to 1/sqrt(576)."""
    if is_fp8_kvcache:
        raise NotImplementedError(_FP8_NOT_SERVED)
    if indices is not None:
        raise NotImplementedError("cutelab.compat.flash_mla: sparse attention (indices) is not served; "
                                  "dense decode only")
    if head_dim_v != mla.HEAD_DIM_V:
        raise ValueError(f"head_dim_v = {head_dim_v}: cutelab's MLA kernels have head_dim_v = {mla.HEAD_DIM_V}")
    if not isinstance(tile_scheduler_metadata, MlaMetadata):
        raise TypeError("tile_scheduler_metadata: expected what cutelab.compat.flash_mla.get_mla_metadata returned, "
                        f"got {type(tile_scheduler_metadata).__name__}")
    if cache_seqlens is not tile_scheduler_metadata.cache_seqlens:
        raise ValueError("cache_seqlens: not the tensor get_mla_metadata was called with (plan each step anew)")
    p = tile_scheduler_metadata.plan_for(q, k_cache, block_table, causal)
    return mla.decode(p, q, k_cache, softmax_scale=softmax_scale, causal=causal)
