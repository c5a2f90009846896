"""The paged KV cache's allocator: free list, reference counts and prefix caching.

A full block is cached under a hash of (parent block's hash, the block's token ids). Entries are
invalidated lazily: when a cached block is evicted (taken from the free list for new content),
its hash-table entry stays, and every lookup checks that the block still holds what the entry
says — same generation stamp, same hash, same token ids — before reusing it. The
`kv-stale-reuse` fault skips exactly that check, so an entry can hand out a block that another
sequence has since overwritten (docs/bug-classes.md#kv-cache-reuse).

Free blocks sit in LRU order: blocks with no cached content first, then cached blocks in the
order they were freed (a sequence frees its tail first, so tails are evicted first, as in vLLM).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from gatekeeper.engine.sequence import Sequence


@dataclass(slots=True)
class Block:
    """One KV block: who last wrote it, under which generation, and what it caches."""

    block_id: int
    ref_count: int = 0
    hash: int | None = None
    token_ids: tuple[int, ...] = ()
    owner: int = -1
    generation: int = 0


def block_hash(token_ids: tuple[int, ...], parent: int | None) -> int:
    """Chained hash of a full block (Python's tuple hash is stable for ints across runs)."""
    return hash((parent, token_ids))


class BlockManager:
    """Allocates blocks to sequences and shares full blocks through the prefix cache."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True, verify_reuse: bool = True):
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.verify_reuse = verify_reuse
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.hash_to_block: dict[int, tuple[int, int]] = {}  # hash -> (block id, generation)
        self.num_allocated_total = 0
        self.num_reused_total = 0
        self.num_evicted_total = 0
        self.num_stale_rejected_total = 0
        self.prefix_queries_total = 0
        self.prefix_hits_total = 0

    @property
    def num_blocks(self) -> int:
        """Blocks in the pool."""
        return len(self.blocks)

    @property
    def num_free_blocks(self) -> int:
        """Blocks no live sequence references (cached or not)."""
        return len(self.free)

    def usage(self) -> float:
        """Fraction of blocks referenced by live sequences (vLLM's kv_cache_usage_perc)."""
        return 1.0 - len(self.free) / len(self.blocks)

    def can_allocate(self, seq: Sequence) -> bool:
        """Whether every block of `seq` fits, counting no prefix hits (conservative)."""
        return len(self.free) >= seq.num_blocks(self.block_size)

    def _take_free_block(self, seq: Sequence) -> Block:
        block_id, _ = self.free.popitem(last=False)
        block = self.blocks[block_id]
        if block.hash is not None:
            self.num_evicted_total += 1  # its hash entry is left for lookups to invalidate
        block.generation += 1
        block.owner = seq.seq_id
        block.hash, block.token_ids, block.ref_count = None, (), 1
        self.num_allocated_total += 1
        return block

    def _lookup(self, h: int, token_ids: tuple[int, ...]) -> Block | None:
        entry = self.hash_to_block.get(h)
        if entry is None:
            return None
        block = self.blocks[entry[0]]
        if self.verify_reuse and (block.generation != entry[1] or block.hash != h or block.token_ids != token_ids):
            del self.hash_to_block[h]  # the block was evicted and rewritten since
            self.num_stale_rejected_total += 1
            return None
        return block

    def allocate(self, seq: Sequence) -> None:
        """Give `seq` blocks for all its tokens, reusing cached prefix blocks where they match.

        The last token is never taken from the cache (its logits must be computed), and a
        sequence that wants prompt logprobs computes its whole prompt.
        """
        assert not seq.block_table
        bs = self.block_size
        use_cache = self.enable_prefix_caching and not seq.wants_prompt_logprobs
        num_cacheable = (len(seq) - 1) // bs if use_cache else 0
        seq.num_cached_tokens = 0
        seq.block_hashes = []
        parent = None
        for i in range(seq.num_blocks(bs)):
            block = None
            if i < num_cacheable and len(seq.block_hashes) == i:
                ids = seq.block_token_ids(i, bs)
                h = block_hash(ids, parent)
                block = self._lookup(h, ids)
                if block is not None:
                    if block.ref_count == 0:
                        del self.free[block.block_id]
                    block.ref_count += 1
                    self.num_reused_total += 1
                    seq.num_cached_tokens += bs
                    seq.block_hashes.append(h)
                    parent = h
            if block is None:
                block = self._take_free_block(seq)
            seq.block_table.append(block.block_id)
        seq.num_computed_tokens = seq.num_cached_tokens
        if self.enable_prefix_caching:
            self.prefix_queries_total += len(seq)
            self.prefix_hits_total += seq.num_cached_tokens

    def can_append(self, seq: Sequence) -> bool:
        """Whether the next decode step of `seq` finds the block it needs."""
        return len(seq.block_table) * self.block_size >= len(seq) or len(self.free) >= 1

    def may_append(self, seq: Sequence) -> None:
        """Add a block when the newest token starts a new one."""
        if len(seq.block_table) * self.block_size < len(seq):
            seq.block_table.append(self._take_free_block(seq).block_id)

    def commit_computed(self, seq: Sequence) -> None:
        """Register every full block whose K/V is now computed in the prefix cache."""
        if not self.enable_prefix_caching:
            return
        bs = self.block_size
        while (len(seq.block_hashes) + 1) * bs <= seq.num_computed_tokens:
            i = len(seq.block_hashes)
            ids = seq.block_token_ids(i, bs)
            h = block_hash(ids, seq.block_hashes[-1] if seq.block_hashes else None)
            block = self.blocks[seq.block_table[i]]
            if block.hash is None:
                block.hash, block.token_ids = h, ids
                self.hash_to_block[h] = (block.block_id, block.generation)
            seq.block_hashes.append(h)

    def deallocate(self, seq: Sequence) -> list[int]:
        """Release `seq`'s blocks; returns the ids that became free with no cached content."""
        uncached: list[int] = []
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            block.ref_count -= 1
            assert block.ref_count >= 0, block
            if block.ref_count == 0:
                self.free[block_id] = None
                if block.hash is None:
                    self.free.move_to_end(block_id, last=False)  # nothing cached: reuse first
                    uncached.append(block_id)
        seq.block_table = []
        seq.block_hashes = []
        seq.num_computed_tokens = 0  # num_cached_tokens stays: the request's output still reports it
        return uncached
