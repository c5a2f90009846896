"""The reference path: fp32 (or fp64), one sequence at a time, a contiguous cache per sequence.

Nothing is shared between requests: each sequence gets a fresh zeroed cache when it starts and
drops it when it ends. Slow, simple and trusted — the oracle the optimized path is judged by.
"""

from __future__ import annotations

from collections import deque

import torch

from gatekeeper.engine.attention import attend, causal_mask
from gatekeeper.engine.engine_core import EngineCore
from gatekeeper.engine.sequence import Sequence, SequenceStatus, StepOutput


class ContiguousCache:
    """K/V for one sequence: [layers, 2, max_len, Hkv, D], filled front to back."""

    def __init__(self, num_layers: int, max_len: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> None:
        self.kv = torch.zeros(num_layers, 2, max_len, num_kv_heads, head_dim, dtype=dtype)
        self.start = 0  # position of the first token of the current forward pass

    def backend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Attention for T new tokens: q [T, Hq, D], k/v [T, Hkv, D] -> [T, Hq, D]."""
        t = q.shape[0]
        end = self.start + t
        self.kv[layer, 0, self.start : end] = k
        self.kv[layer, 1, self.start : end] = v
        keys = self.kv[layer, 0, :end].transpose(0, 1)[None]  # [1, Hkv, L, D]
        values = self.kv[layer, 1, :end].transpose(0, 1)[None]
        mask = causal_mask(torch.tensor([self.start]), torch.tensor([t]), t, end)
        out = attend(q.transpose(0, 1)[None], keys, values, mask)  # [1, Hq, T, D]
        return out[0].transpose(0, 1)


class ReferenceCore(EngineCore):
    """Runs sequences strictly one after another."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        cfg = self.model.config
        self.dtype = next(self.model.parameters()).dtype
        self.shape = (cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim)
        self.waiting: deque[Sequence] = deque()
        self.current: Sequence | None = None
        self.cache: ContiguousCache | None = None

    def _enqueue(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def _release(self, seq: Sequence) -> None:
        if seq is self.current:
            self.current, self.cache = None, None
        elif seq in self.waiting:
            self.waiting.remove(seq)
        seq.status = SequenceStatus.FINISHED

    @torch.inference_mode()
    def step(self) -> list[StepOutput]:
        """Prefill the next sequence, or decode one token of the current one."""
        if self.current is None:
            if not self.waiting:
                return []
            self.current = self.waiting.popleft()
            self.current.status = SequenceStatus.RUNNING
            layers, heads, dim = self.shape
            self.cache = ContiguousCache(layers, self.max_model_len, heads, dim, self.dtype)
        seq, cache = self.current, self.cache
        assert cache is not None
        prefill = seq.num_computed_tokens == 0
        cache.start = seq.num_computed_tokens
        ids = torch.tensor(seq.token_ids[cache.start :])  # [T]
        positions = torch.arange(cache.start, len(seq))
        hidden = self.model.hidden_states(ids, positions, cache.backend)  # [T, hidden]
        want_prompt = prefill and seq.wants_prompt_logprobs
        rows = self.model.compute_logits(hidden if want_prompt else hidden[-1:])  # [T or 1, V]
        prompt_rows = {0: rows} if want_prompt else {}
        return self._postprocess([seq], rows[-1:], prompt_rows, decode_step=not prefill)

    def stats(self) -> dict[str, float]:
        """Gauges and counters; the reference path has no shared cache to report."""
        return {
            "num_requests_running": float(self.current is not None),
            "num_requests_waiting": float(len(self.waiting)),
            "kv_cache_usage_perc": 0.0,
            "prompt_tokens_total": float(self.prompt_tokens_total),
            "generation_tokens_total": float(self.generation_tokens_total),
        }
