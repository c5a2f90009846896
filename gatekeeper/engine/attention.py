"""Masked attention over a padded batch, shared by both execution paths.

The mask is boolean (True = visible). The default path hands it to SDPA, which excludes masked
keys. `naive` is the slow explicit-softmax path the `silent-fallback` fault takes;
`multiplicative_mask` is the `nan-residue` fault's path: softmax over every key, then multiply
by the mask — equal in exact arithmetic, but 0 × NaN from stale cache residue is NaN
(docs/bug-classes.md#nan-residue).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    *,
    naive: bool = False,
    multiplicative_mask: bool = False,
) -> torch.Tensor:
    """q [S, Hq, Q, D], k/v [S, Hkv, L, D], mask [S, 1, Q, L] -> [S, Hq, Q, D]."""
    if not (naive or multiplicative_mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)  # [S, Hq, L, D]
    v = v.repeat_interleave(groups, dim=1)
    scores = (q @ k.transpose(-1, -2)).float() / math.sqrt(q.shape[-1])  # [S, Hq, Q, L]
    if multiplicative_mask:
        p = torch.softmax(scores, dim=-1) * mask
        p = p / p.sum(dim=-1, keepdim=True)
    else:
        p = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return p.to(v.dtype) @ v


def causal_mask(q_starts: torch.Tensor, q_lens: torch.Tensor, q_max: int, kv_len: int) -> torch.Tensor:
    """Mask [S, 1, Q, L]: query i of sequence s (absolute position q_starts[s] + i) sees keys
    at positions <= its own. Padded query rows see key 0 only, so no row is fully masked."""
    i = torch.arange(q_max)[None, :, None]  # [1, Q, 1]
    j = torch.arange(kv_len)[None, None, :]  # [1, 1, L]
    pos = q_starts[:, None, None] + i  # [S, Q, 1]
    valid_row = i < q_lens[:, None, None]
    mask = (j <= pos) & valid_row | (~valid_row & (j == 0))
    return mask[:, None]
