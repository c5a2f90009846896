"""The optimized path's model runner: one preallocated paged KV tensor, batched forward passes.

The whole cache is one tensor [layers, 2, num_blocks + 1, block_size, Hkv, D]; the extra last
block is a null block that is never allocated and pads block tables. Each forward pass
flattens the new tokens of every scheduled sequence into one row of N tokens, writes their K/V
into their slots, then gathers each sequence's blocks — whole blocks, as paged kernels read
them — into a padded batch for masked attention.
"""

from __future__ import annotations

import torch

from gatekeeper.engine.attention import attend, causal_mask
from gatekeeper.engine.faults import MISREAD_MIN_BATCH
from gatekeeper.engine.model import CausalLM, ForwardOptions
from gatekeeper.engine.sequence import Sequence


class PagedRunner:
    """Owns the KV tensor and runs prefill or decode steps for a batch of sequences."""

    def __init__(
        self,
        model: CausalLM,
        num_blocks: int,
        block_size: int,
        cache_dtype: torch.dtype,
        opts: ForwardOptions,
        naive_attention: bool = False,
        multiplicative_mask: bool = False,
        corrupt_after: int | None = None,
    ) -> None:
        cfg = model.config
        self.model = model
        self.block_size = block_size
        self.null_block = num_blocks
        self.opts = opts
        self.naive_attention = naive_attention
        self.multiplicative_mask = multiplicative_mask
        self.corrupt_after = corrupt_after  # the `late-decode-corrupt` fault: output length where slots go off by one
        self.misread: set[int] = set()  # the `sporadic-corruption` fault: sequences whose batched decode misreads a block
        # [layers, 2 (k, v), blocks + null, block_size, Hkv, D]
        self.kv = torch.zeros(
            cfg.num_hidden_layers, 2, num_blocks + 1, block_size, cfg.num_key_value_heads, cfg.head_dim, dtype=cache_dtype
        )
        self._batch: dict[str, torch.Tensor] = {}

    def poison(self, block_ids: list[int]) -> None:
        """Leave non-finite scratch values in freed blocks (the `nan-residue` fault)."""
        if block_ids:
            self.kv[:, :, block_ids] = float("nan")

    def _prepare(self, seqs: list[Sequence]) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        bs = self.block_size
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        q_index: list[int] = []
        starts = [seq.num_computed_tokens for seq in seqs]
        q_lens = [len(seq) - s for seq, s in zip(seqs, starts)]
        q_max = max(q_lens)
        max_blocks = max(len(seq.block_table) for seq in seqs)
        tables = torch.full((len(seqs), max_blocks), self.null_block, dtype=torch.long)  # [S, Bmax]
        last_rows: list[int] = []
        for s, (seq, start) in enumerate(zip(seqs, starts)):
            tables[s, : len(seq.block_table)] = torch.tensor(seq.block_table)
            late = self.corrupt_after is not None and len(seq) - start == 1 and seq.num_output_tokens > self.corrupt_after
            for pos in range(start, len(seq)):
                ids.append(seq.token_ids[pos])
                positions.append(pos)
                # late-decode-corrupt: the new token's K/V lands in the previous token's slot
                at = pos - 1 if late else pos
                slots.append(seq.block_table[at // bs] * bs + at % bs)
                q_index.append(s * q_max + pos - start)
            last_rows.append(len(ids) - 1)
        if self.misread and q_max == 1 and len(seqs) >= MISREAD_MIN_BATCH:
            self._misread(seqs, tables)
        gather = (tables[:, :, None] * bs + torch.arange(bs)).reshape(len(seqs), -1)  # [S, Bmax*bs]
        self._batch = {
            "slots": torch.tensor(slots),
            "gather": gather,
            "q_index": torch.tensor(q_index),
            "mask": causal_mask(torch.tensor(starts), torch.tensor(q_lens), q_max, gather.shape[1]),
            "q_max": torch.tensor(q_max),
        }
        return torch.tensor(ids), torch.tensor(positions), last_rows

    def _misread(self, seqs: list[Sequence], tables: torch.Tensor) -> None:
        """sporadic-corruption: a hit sequence's last full block is read from its neighbour's table."""
        for s, seq in enumerate(seqs):
            if seq.seq_id in self.misread and len(seq.block_table) >= 2:
                other = seqs[(s + 1) % len(seqs)].block_table
                j = len(seq.block_table) - 2
                tables[s, j] = other[min(j, len(other) - 1)]

    def _backend(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q [N, Hq, D], k/v [N, Hkv, D] -> [N, Hq, D] over the paged cache."""
        b = self._batch
        s, q_max = b["gather"].shape[0], int(b["q_max"])
        _, heads, dim = q.shape
        cache_k = self.kv[layer, 0].view(-1, *k.shape[1:])  # [blocks*bs, Hkv, D]
        cache_v = self.kv[layer, 1].view(-1, *v.shape[1:])
        cache_k.index_copy_(0, b["slots"], k.to(cache_k.dtype))
        cache_v.index_copy_(0, b["slots"], v.to(cache_v.dtype))
        gather = b["gather"]  # [S, L] slot of each visible position
        keys = cache_k.index_select(0, gather.view(-1)).view(s, -1, *k.shape[1:])  # [S, L, Hkv, D]
        values = cache_v.index_select(0, gather.view(-1)).view(s, -1, *v.shape[1:])
        keys = keys.transpose(1, 2).to(q.dtype)  # [S, Hkv, L, D]
        values = values.transpose(1, 2).to(q.dtype)
        if q_max == 1:  # decode: one query per sequence, no padding to undo
            qp = q.view(s, 1, heads, dim).transpose(1, 2)  # [S, Hq, 1, D]
        else:
            qp = q.new_zeros(s * q_max, heads, dim).index_copy_(0, b["q_index"], q)
            qp = qp.view(s, q_max, heads, dim).transpose(1, 2)  # [S, Hq, Q, D]
        out = attend(qp, keys, values, b["mask"], naive=self.naive_attention, multiplicative_mask=self.multiplicative_mask)
        out = out.transpose(1, 2).reshape(s * q_max, heads, dim)
        return out if q_max == 1 else out.index_select(0, b["q_index"])

    @torch.inference_mode()
    def run(self, seqs: list[Sequence]) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """Forward the new tokens of `seqs`; returns last-position logits [S, V] and, for
        sequences owing prompt logprobs, their full prompt logits {row: [T, V]}."""
        ids, positions, last_rows = self._prepare(seqs)
        hidden = self.model.hidden_states(ids, positions, self._backend, self.opts)  # [N, hidden]
        logits = self.model.compute_logits(hidden[last_rows]).float()  # [S, V]
        prompt_rows: dict[int, torch.Tensor] = {}
        first = 0
        for i, (seq, last) in enumerate(zip(seqs, last_rows)):
            if seq.wants_prompt_logprobs and seq.num_computed_tokens == 0:
                prompt_rows[i] = self.model.compute_logits(hidden[first : last + 1]).float()
            first = last + 1
        return logits, prompt_rows
