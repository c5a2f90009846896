"""The optimized path: block manager + continuous-batching scheduler + paged runner, where the
fault switches live.

Each fault is a real branch of this path, active only under its trigger: the block manager's
reuse check (`kv-stale-reuse`), poisoned freed blocks with multiplicative masking
(`nan-residue`), the fused-norm dtype guard (`fused-norm-dtype`), EOS handling in decode steps
(`eos-ignored`), extra work per decode step (`decode-slowdown`) and the attention fallback
(`silent-fallback`).
"""

from __future__ import annotations

import logging
import random
import time

import torch

from gatekeeper.engine.block_manager import BlockManager
from gatekeeper.engine.engine_core import EngineCore
from gatekeeper.engine.errors import EngineCoreError
from gatekeeper.engine.model import ForwardOptions
from gatekeeper.engine.paged_runner import PagedRunner
from gatekeeper.engine.scheduler import Scheduler
from gatekeeper.engine.sequence import Sequence, StepOutput

log = logging.getLogger("gatekeeper.engine")

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


class OptimizedCore(EngineCore):
    """Continuous batching over a paged, prefix-cached KV cache."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        args, faults = self.args, self.args.faults
        self.block_manager = BlockManager(
            args.num_kv_blocks, args.block_size, args.prefix_caching, verify_reuse="kv-stale-reuse" not in faults
        )
        self.scheduler = Scheduler(self.block_manager, args.max_num_seqs, max(args.max_num_batched_tokens, self.max_model_len))
        opts = ForwardOptions(tp=args.tp, fused_norm=args.fused_norm, fused_norm_guard="fused-norm-dtype" not in faults)
        self.runner = PagedRunner(
            self.model,
            args.num_kv_blocks,
            args.block_size,
            TORCH_DTYPES[args.cache_dtype],
            opts,
            naive_attention="silent-fallback" in faults,
            multiplicative_mask="nan-residue" in faults,
            corrupt_after=int(faults.value("late-decode-corrupt") or 0) if "late-decode-corrupt" in faults else None,
        )
        self.honour_eos = "eos-ignored" not in faults
        self.misalign_grammar = "grammar-mask-misalign" in faults
        self.close_call_shift = (faults.value("close-call-shift") or 0.0) if "close-call-shift" in faults else 0.0
        self.misread_p = (faults.value("sporadic-corruption") or 0.0) if "sporadic-corruption" in faults else 0.0
        self._fault_rng = random.Random(args.seed)  # which requests the sporadic fault hits: reproducible per seed
        self.seeded_batch_dies = "seeded-batch-dies" in faults
        self.slowdown = (faults.value("decode-slowdown") or 0.0) / 100.0 if "decode-slowdown" in faults else 0.0
        self.num_fallback_steps = 0
        self.slowdown_seconds_total = 0.0
        self._step_end: float | None = None  # when the last step (and its spin) ended, on the wall clock

    def _enqueue(self, seq: Sequence) -> None:
        if self.misread_p and self._fault_rng.random() < self.misread_p:
            self.runner.misread.add(seq.seq_id)
        self.scheduler.add(seq)

    def _release(self, seq: Sequence) -> None:
        self.runner.misread.discard(seq.seq_id)
        freed = self.scheduler.finish(seq)
        if "nan-residue" in self.args.faults:
            self.runner.poison(freed)

    def _after_token(self, seq: Sequence) -> None:
        if seq.block_table:
            self.block_manager.commit_computed(seq)

    def step(self) -> list[StepOutput]:
        """Schedule and run one prefill or decode step."""
        seqs, is_prefill = self.scheduler.schedule()
        if not seqs:
            return []
        if self.seeded_batch_dies and is_prefill and self._beside_others(seqs):
            raise EngineCoreError("CPU Generator does not use offset (a seeded, sampled request prefilled beside others)")
        logits, prompt_rows = self.runner.run(seqs)
        if self.runner.naive_attention:
            self.num_fallback_steps += 1
            if self.num_fallback_steps % 1000 == 1:
                log.warning("attention: fused kernel unavailable for this batch shape, using the naive fallback path")
        outputs = self._postprocess(seqs, logits, prompt_rows, decode_step=not is_prefill)
        if self.slowdown:
            self._slow_down(is_prefill)
        return outputs

    def _beside_others(self, seqs: list[Sequence]) -> bool:
        """Whether a prefill step of `seqs` holds a seeded, sampled request while another request is
        in the engine (prefilled with it, decoding, or waiting): the bundled copy of a prefill split
        in a full batch. A request served alone never meets it, and whether two requests sent at once
        reach one prefill step depends on how fast the server accepts them; that they are both in the
        engine does not."""
        sched = self.scheduler
        return any(q.generator is not None for q in seqs) and len(sched.running) + len(sched.waiting) > 1

    def _slow_down(self, is_prefill: bool) -> None:
        """decode-slowdown=PCT: decode takes PCT% longer, as a dependency bump that slows each decode
        step would. A decode step ends with a spin, on the engine thread, of PCT% of the wall-clock
        time since the step before it ended (that step's spin included): at concurrency 1 the
        interval between two tokens a client receives, so decode seconds per output token (the
        performance gate's primary figure, `decode_s_per_token`) grow by PCT%. Prefill steps are
        not slowed, and end the interval (a decode step right after one is timed from its end).
        Timed by the wall clock, not the thread's CPU clock: what a client waits for is wall time,
        and a spin timed by CPU would cost more than it says whenever the thread is descheduled.
        Earlier switches, defined on CPU time, cost 4.4% to 8% of decode time for a 5% switch
        (docs/bug-classes.md#decode-regression)."""
        if not is_prefill and self._step_end is not None:
            self.slowdown_seconds_total += busy_wait((time.perf_counter() - self._step_end) * self.slowdown)
        self._step_end = time.perf_counter()

    def stats(self) -> dict[str, float]:
        """Scheduler gauges and block-manager counters, under vLLM-like names."""
        bm = self.block_manager
        return {
            "num_requests_running": float(len(self.scheduler.running)),
            "num_requests_waiting": float(len(self.scheduler.waiting)),
            "kv_cache_usage_perc": bm.usage(),
            "prefix_cache_queries": float(bm.prefix_queries_total),
            "prefix_cache_hits": float(bm.prefix_hits_total),
            "num_blocks_total": float(bm.num_blocks),
            "num_blocks_free": float(bm.num_free_blocks),
            "blocks_allocated_total": float(bm.num_allocated_total),
            "blocks_reused_total": float(bm.num_reused_total),
            "blocks_evicted_total": float(bm.num_evicted_total),
            "blocks_stale_rejected_total": float(bm.num_stale_rejected_total),
            "num_preemptions_total": float(self.scheduler.num_preemptions_total),
            "prompt_tokens_total": float(self.prompt_tokens_total),
            "generation_tokens_total": float(self.generation_tokens_total),
            **({"decode_slowdown_seconds_total": self.slowdown_seconds_total} if self.slowdown else {}),
        }


def busy_wait(seconds: float) -> float:
    """Spin for `seconds` of wall-clock time, as extra compute would, holding the GIL; returns the
    time spent. Not `time.sleep`: the OS's sleep overshoots a 200 µs wait by a varying amount,
    which made a 5% fault cost between 5% and 22% of a decode step from one run to the next. (A
    spin that lets go of the GIL — hashing a buffer — cost clients the same, measured: +6.8% TPOT
    against +6.4%.)"""
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        pass
    return time.perf_counter() - start
