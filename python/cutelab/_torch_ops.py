"""MLA decode as a PyTorch custom op, torch.ops.cutelab.mla_decode, with a fake (meta)
implementation: torch.compile traces it as one node, CUDA graphs capture it. decode() routes
to it while torch.compile traces; eager calls go straight to the extension."""

from __future__ import annotations

import itertools
import weakref
from typing import Optional

import torch

from . import mla

# Plans by id: the op takes an integer (an opaque plan object cannot cross torch.library). A plan
# keeps its id for life (Plan.update refills it), so a compiled function is not recompiled per step.
_plans: "weakref.WeakValueDictionary[int, mla.Plan]" = weakref.WeakValueDictionary()
_ids = itertools.count(1)


def plan_id(plan: "mla.Plan") -> int:
    pid = getattr(plan, "_torch_id", None)
    if pid is None:
        pid = next(_ids)
        plan._torch_id = pid
        _plans[pid] = plan
    return pid


@torch.library.custom_op("cutelab::mla_decode", mutates_args=())
def mla_decode(q: torch.Tensor, kv_cache: torch.Tensor, block_table: torch.Tensor, seqlens: torch.Tensor,
               plan_id: int, softmax_scale: float, causal: bool,
               kv_scale: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    plan = _plans.get(plan_id)
    if plan is None:
        raise ValueError(f"cutelab::mla_decode: plan {plan_id} no longer exists (keep the Plan alive while "
                         "compiled code uses it)")
    if block_table.data_ptr() != plan.block_table.data_ptr() or seqlens.data_ptr() != plan.seqlens.data_ptr():
        raise ValueError("cutelab::mla_decode: block_table/seqlens are not the tensors the plan was updated with")
    return mla.decode(plan, q, kv_cache, softmax_scale=softmax_scale or None, causal=causal, kv_scale=kv_scale)


@mla_decode.register_fake
def _(q, kv_cache, block_table, seqlens, plan_id, softmax_scale, causal, kv_scale=None):
    b, s_q, h_q, _ = q.shape
    return q.new_empty((b, s_q, h_q, mla.HEAD_DIM_V)), q.new_empty((b, h_q, s_q), dtype=torch.float32)


def decode_op(plan, q, kv_cache, out, lse, softmax_scale, causal, kv_scale=None):
    """decode() through the custom op (used while torch.compile traces)."""
    o, l = torch.ops.cutelab.mla_decode(q, kv_cache, plan.block_table, plan.seqlens, plan_id(plan),
                                        float(softmax_scale or 0.0), plan.causal if causal is None else bool(causal),
                                        kv_scale)
    if out is not None:
        out.copy_(o)
        o = out
    if lse is not None:
        lse.copy_(l)
        l = lse
    return o, l
