"""Block-manager invariants under random operation sequences (hypothesis)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gatekeeper.engine.block_manager import BlockManager  # noqa: E402
from gatekeeper.engine.sampling_params import SamplingParams  # noqa: E402
from gatekeeper.engine.sequence import Sequence  # noqa: E402

BS = 4
PREFIXES = [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 9, 9, 9, 9], [5, 5, 5, 5]]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, len(PREFIXES) - 1), st.lists(st.integers(0, 3), max_size=9)),
        st.tuples(st.just("grow"), st.integers(0, 20), st.integers(1, 6)),
        st.tuples(st.just("free"), st.integers(0, 20), st.just(0)),
    ),
    max_size=60,
)


def check_invariants(bm: BlockManager, live: list[Sequence]) -> None:
    refs: dict[int, int] = {}
    owners: dict[int, list[Sequence]] = {}
    for seq in live:
        assert len(seq.block_table) * BS >= seq.num_computed_tokens
        for b in seq.block_table:
            refs[b] = refs.get(b, 0) + 1
            owners.setdefault(b, []).append(seq)
    for block in bm.blocks:
        assert block.ref_count == refs.get(block.block_id, 0)
        assert (block.ref_count == 0) == (block.block_id in bm.free)
    for b, seqs in owners.items():
        if len(seqs) > 1:
            # Shared only as a full, hash-verified prefix block holding the same ids for all.
            block = bm.blocks[b]
            assert block.hash is not None and len(block.token_ids) == BS
            for seq in seqs:
                i = seq.block_table.index(b)
                assert seq.block_token_ids(i, BS) == block.token_ids


def _compute(bm: BlockManager, seq: Sequence) -> None:
    """What a forward pass does: every token's K/V is now in the cache."""
    seq.num_computed_tokens = len(seq)
    bm.commit_computed(seq)


@settings(max_examples=150, deadline=None)
@given(ops=ops, num_blocks=st.integers(6, 24), caching=st.booleans())
def test_invariants_hold_under_random_operations(ops, num_blocks, caching):
    bm = BlockManager(num_blocks, BS, enable_prefix_caching=caching)
    live: list[Sequence] = []
    for kind, a, b in ops:
        if kind == "add":
            seq = Sequence(f"r{len(live)}", PREFIXES[a] + list(b), SamplingParams())
            if bm.can_allocate(seq):
                bm.allocate(seq)
                assert seq.num_cached_tokens % BS == 0 and seq.num_cached_tokens < len(seq)
                _compute(bm, seq)
                live.append(seq)
        elif kind == "grow" and live:
            seq = live[a % len(live)]
            for _ in range(b):
                seq.token_ids.append(7)
                if not bm.can_append(seq):
                    seq.token_ids.pop()
                    break
                bm.may_append(seq)
                _compute(bm, seq)
        elif kind == "free" and live:
            bm.deallocate(live.pop(a % len(live)))
        check_invariants(bm, live)
    for seq in live:
        bm.deallocate(seq)
    assert bm.num_free_blocks == num_blocks
    assert all(block.ref_count == 0 for block in bm.blocks)


def test_prefix_hit_reuses_blocks_and_verifies_ids():
    bm = BlockManager(8, BS)
    a = Sequence("a", [1, 2, 3, 4, 5, 6, 7, 8, 9], SamplingParams())
    bm.allocate(a)
    _compute(bm, a)
    b = Sequence("b", [1, 2, 3, 4, 5, 6, 7, 8, 1], SamplingParams())
    bm.allocate(b)
    assert b.num_cached_tokens == 8 and b.block_table[:2] == a.block_table[:2]
    assert bm.blocks[a.block_table[0]].ref_count == 2


def test_evicted_entry_is_rejected_unless_the_guard_is_off():
    for verify in (True, False):
        bm = BlockManager(3, BS, verify_reuse=verify)
        a = Sequence("a", [1, 2, 3, 4, 5], SamplingParams())
        bm.allocate(a)
        _compute(bm, a)
        bm.deallocate(a)  # block with [1,2,3,4] is now cached and free
        filler = Sequence("f", [9] * 12, SamplingParams())
        bm.allocate(filler)  # takes all 3 blocks, evicting the cached one
        _compute(bm, filler)
        bm.deallocate(filler)
        c = Sequence("c", [1, 2, 3, 4, 6], SamplingParams())
        bm.allocate(c)
        if verify:
            assert c.num_cached_tokens == 0 and bm.num_stale_rejected_total == 1
        else:
            # The fault: the stale entry hands out a block now holding the filler's tokens.
            assert c.num_cached_tokens == BS
            assert bm.blocks[c.block_table[0]].token_ids != (1, 2, 3, 4)
