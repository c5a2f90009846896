"""Continuous batching: which sequences run in the next step, prefill first, then decode.

A step is either a prefill of newly admitted sequences (bounded by `max_num_seqs` and
`max_num_batched_tokens`) or one decode token for every running sequence. When a decode step
runs out of blocks, the most recently admitted sequence is preempted: its blocks are freed and
it goes back to the front of the waiting queue, to be recomputed from its tokens (vLLM's
preemption by recompute).
"""

from __future__ import annotations

from collections import deque

from gatekeeper.engine.block_manager import BlockManager
from gatekeeper.engine.sequence import Sequence, SequenceStatus


class Scheduler:
    """Waiting and running queues over one block manager."""

    def __init__(self, block_manager: BlockManager, max_num_seqs: int, max_num_batched_tokens: int) -> None:
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: deque[Sequence] = deque()
        self.num_preemptions_total = 0

    def add(self, seq: Sequence) -> None:
        """Queue a new sequence."""
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        """Whether any sequence is waiting or running."""
        return bool(self.waiting or self.running)

    def schedule(self) -> tuple[list[Sequence], bool]:
        """The sequences of the next step and whether it is a prefill step."""
        bm = self.block_manager
        scheduled: list[Sequence] = []
        num_batched = 0
        while self.waiting and len(self.running) + len(scheduled) < self.max_num_seqs:
            seq = self.waiting[0]
            if scheduled and num_batched + len(seq) > self.max_num_batched_tokens:
                break
            if not bm.can_allocate(seq):
                break
            bm.allocate(seq)
            num_batched += len(seq) - seq.num_cached_tokens
            seq.status = SequenceStatus.RUNNING
            self.waiting.popleft()
            scheduled.append(seq)
        if scheduled:
            self.running.extend(scheduled)
            return scheduled, True
        while self.running:
            seq = self.running.popleft()
            while not bm.can_append(seq):
                if self.running:
                    self._preempt(self.running.pop())
                else:
                    self._preempt(seq)
                    break
            else:
                bm.may_append(seq)
                scheduled.append(seq)
        self.running.extendleft(reversed(scheduled))
        return scheduled, False

    def _preempt(self, seq: Sequence) -> None:
        seq.status = SequenceStatus.WAITING
        self.block_manager.deallocate(seq)
        self.waiting.appendleft(seq)
        self.num_preemptions_total += 1

    def finish(self, seq: Sequence) -> list[int]:
        """Remove a finished or aborted sequence; returns its freed uncached block ids."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
            return []
        seq.status = SequenceStatus.FINISHED
        return self.block_manager.deallocate(seq)
