"""The Qwen2/Llama decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU.

Parameter names follow Hugging Face's `Qwen2ForCausalLM` / `LlamaForCausalLM`, so a state dict
loads without renaming. Attention itself is delegated to a backend passed per call (training:
plain causal SDPA; reference path: a contiguous cache; optimized path: the paged cache), so the
maths of the model reads top to bottom here and the caches live with their engines.

Two options of the optimized path live in the layer maths because that is where they act:
`tp` (row-parallel projections split into `tp` shards whose partial outputs are summed, as an
all-reduce would) and `fused_norm` (residual-add + RMSNorm fused, with the dtype guard that the
`fused-norm-dtype` fault removes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from gatekeeper.engine.config import ModelConfig

AttentionBackend = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
"""(layer_idx, q [..., Hq, D], k [..., Hkv, D], v [..., Hkv, D]) -> out [..., Hq, D]."""


@dataclass(frozen=True)
class ForwardOptions:
    """Execution options of one forward pass (the optimized path's switches)."""

    tp: int = 1
    fused_norm: bool = False
    fused_norm_guard: bool = True


def causal_sdpa(layer_idx: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain causal attention over a padded batch, for training and scoring.

    q: [B, T, Hq, D], k/v: [B, T, Hkv, D] -> [B, T, Hq, D].
    """
    groups = q.shape[-2] // k.shape[-2]
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, T, D]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out.transpose(1, 2)


def row_parallel_linear(x: torch.Tensor, weight: torch.Tensor, tp: int) -> torch.Tensor:
    """x @ weight.T with the input features split into `tp` shards and the partials summed.

    With tp == 1 this is F.linear. With tp > 1 each shard's partial product is rounded to the
    activation dtype before the sum, exactly where a real all-reduce adds rank outputs.
    """
    if tp == 1:
        return F.linear(x, weight)
    xs = x.chunk(tp, dim=-1)
    ws = weight.chunk(tp, dim=-1)
    out = F.linear(xs[0], ws[0])
    for xi, wi in zip(xs[1:], ws[1:]):
        out = out + F.linear(xi, wi)
    return out


class RMSNorm(nn.Module):
    """Root-mean-square norm computed in fp32, with HF's order of operations."""

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * h.to(dtype)).to(dtype)

    def fused_add(
        self, x: torch.Tensor, residual: torch.Tensor, *, allreduce: bool, guard: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Residual add fused with the norm; returns (normed, new residual).

        `allreduce` marks the tp > 1 kernel that also takes the all-reduce. That kernel writes
        its fp32 result into a buffer of the weight's dtype; the guard converts when the
        activations have another dtype. Without the guard the fp32 bits are reinterpreted as
        half-precision values: garbage hidden states (docs/bug-classes.md#fused-norm-dtype).
        """
        residual = x + residual
        if allreduce and not guard and residual.dtype != self.weight.dtype:
            h = residual.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            out32 = (self.weight.float() * h).contiguous()  # [..., hidden] fp32
            # [..., 2*hidden] half-precision view of the same bytes; the kernel reads the front.
            garbled = out32.view(residual.dtype)[..., : residual.shape[-1]]
            return garbled.contiguous(), residual
        return self(residual), residual


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[x1, x2] -> [-x2, x1] over the last dimension (HF's RoPE layout)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    """RoPE with HF's default frequencies; cos/sin are computed from positions per call."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)  # [D/2]

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor):
        freqs = positions[..., None].float() * self.inv_freq.float()  # [..., D/2]
        emb = torch.cat((freqs, freqs), dim=-1)  # [..., D]
        cos = emb.cos().to(q.dtype)[..., None, :]  # [..., 1, D], broadcast over heads
        sin = emb.sin().to(q.dtype)[..., None, :]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Attention(nn.Module):
    """Grouped-query self-attention; the backend owns the KV cache."""

    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        bias = cfg.attention_bias
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, cfg.hidden_size, bias=False)

    def forward(self, x, positions, rope: RotaryEmbedding, backend: AttentionBackend, opts: ForwardOptions):
        lead = x.shape[:-1]
        q = self.q_proj(x).view(*lead, self.num_heads, self.head_dim)  # [..., Hq, D]
        k = self.k_proj(x).view(*lead, self.num_kv_heads, self.head_dim)  # [..., Hkv, D]
        v = self.v_proj(x).view(*lead, self.num_kv_heads, self.head_dim)
        q, k = rope(q, k, positions)
        out = backend(self.layer_idx, q, k, v).reshape(*lead, self.num_heads * self.head_dim)
        return row_parallel_linear(out, self.o_proj.weight, opts.tp)


class MLP(nn.Module):
    """SwiGLU feed-forward."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, opts: ForwardOptions) -> torch.Tensor:
        h = F.silu(self.gate_proj(x)) * self.up_proj(x)  # [..., I]
        return row_parallel_linear(h, self.down_proj.weight, opts.tp)


class DecoderLayer(nn.Module):
    """Pre-norm attention + MLP block with residual connections."""

    def __init__(self, cfg: ModelConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = Attention(cfg, layer_idx)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, residual, positions, rope, backend, opts: ForwardOptions):
        """Returns (hidden, residual); with fused norm the last residual add is left pending."""
        if not opts.fused_norm:
            h = x + self.self_attn(self.input_layernorm(x), positions, rope, backend, opts)
            return h + self.mlp(self.post_attention_layernorm(h), opts), None
        fused = dict(allreduce=opts.tp > 1, guard=opts.fused_norm_guard)
        if residual is None:
            residual, h = x, self.input_layernorm(x)
        else:
            h, residual = self.input_layernorm.fused_add(x, residual, **fused)
        attn = self.self_attn(h, positions, rope, backend, opts)
        h, residual = self.post_attention_layernorm.fused_add(attn, residual, **fused)
        return self.mlp(h, opts), residual


class DecoderModel(nn.Module):
    """Embeddings, the layer stack and the final norm (HF's `model.` prefix)."""

    def __init__(self, cfg: ModelConfig, rope_theta: float) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, rope_theta)

    def forward(self, input_ids, positions, backend, opts: ForwardOptions) -> torch.Tensor:
        x = self.embed_tokens(input_ids)  # [..., hidden]
        residual = None
        for layer in self.layers:
            x, residual = layer(x, residual, positions, self.rotary_emb, backend, opts)
        if residual is not None:
            x = x + residual
        return self.norm(x)


class CausalLM(nn.Module):
    """Qwen2ForCausalLM / LlamaForCausalLM: the decoder plus the LM head."""

    def __init__(self, cfg: ModelConfig, rope_theta: float | None = None) -> None:
        super().__init__()
        self.config = cfg
        self.model = DecoderModel(cfg, cfg.rope_theta if rope_theta is None else rope_theta)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor | None = None,
        backend: AttentionBackend | None = None,
        opts: ForwardOptions = ForwardOptions(),
    ) -> torch.Tensor:
        """Logits for every position. With only `input_ids` [B, T]: causal training mode."""
        return self.lm_head(self.hidden_states(input_ids, positions, backend, opts))

    def hidden_states(self, input_ids, positions=None, backend=None, opts=ForwardOptions()):
        """Final-norm hidden states [..., hidden], before the LM head."""
        if backend is None:
            backend = causal_sdpa
            positions = torch.arange(input_ids.shape[-1]).expand_as(input_ids)
        return self.model(input_ids, positions, backend, opts)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM head on selected hidden states [N, hidden] -> [N, V]."""
        return self.lm_head(hidden)
