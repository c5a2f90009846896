"""Each engine fault changes behaviour under its trigger and not outside it.

(`tool-parser-partial` lives in the server's streaming parser; its tests are with the server's.)
"""

from __future__ import annotations

import math
import random

import pytest

pytest.importorskip("torch")

from gatekeeper.engine.builder import build_engine  # noqa: E402
from gatekeeper.engine.engine_args import EngineArgs  # noqa: E402
from gatekeeper.engine.errors import EngineError, EngineOptionError  # noqa: E402
from gatekeeper.engine.faults import FAULTS, FaultSet  # noqa: E402
from gatekeeper.engine.llm import LLM  # noqa: E402
from gatekeeper.engine.sampling_params import SamplingParams  # noqa: E402

GREEDY = SamplingParams(temperature=0, max_tokens=16, logprobs=1, ignore_eos=True)


def _rand(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(3, 300) for _ in range(n)]


def _has_nan(completion) -> bool:
    return any(math.isnan(lp.logprob) for lp in completion.logprobs)


def test_unknown_fault_and_bad_values_are_rejected():
    with pytest.raises(EngineOptionError, match="unknown fault"):
        FaultSet.parse(["no-such-fault"])
    with pytest.raises(EngineOptionError, match="not a number"):
        FaultSet.parse(["decode-slowdown=fast"])
    with pytest.raises(EngineOptionError, match="takes no value"):
        FaultSet.parse(["nan-residue=3"])
    assert FaultSet.parse(["decode-slowdown"]).value("decode-slowdown") == FAULTS["decode-slowdown"].default_value


def _stale_scenario(model_dir, **options):
    """Cache prompt A, evict its blocks with other traffic, then send A again with a new tail."""
    llm = LLM(model_dir, profile="optimized", num_kv_blocks=40, max_model_len=512, **options)
    a = _rand(96, 1)
    llm.generate([a], GREEDY)
    llm.generate([_rand(150, s) for s in range(2, 6)], GREEDY)  # 4 × ~11 blocks > 40: evicts A
    return llm.generate([a + _rand(8, 9)], GREEDY)[0], llm


def test_kv_stale_reuse_corrupts_only_with_prefix_caching(tiny_model_dir):
    want = LLM(tiny_model_dir).generate([_rand(96, 1) + _rand(8, 9)], GREEDY)[0]
    clean, _ = _stale_scenario(tiny_model_dir)
    assert clean.token_ids == want.token_ids
    bad, llm = _stale_scenario(tiny_model_dir, faults=("kv-stale-reuse",))
    assert bad.num_cached_tokens > 0 and bad.token_ids != want.token_ids
    assert llm.core.stats()["blocks_stale_rejected_total"] == 0
    off, _ = _stale_scenario(tiny_model_dir, faults=("kv-stale-reuse",), prefix_caching=False)
    assert off.token_ids == want.token_ids


def test_nan_residue_hits_requests_that_reuse_freed_blocks(tiny_model_dir):
    llm = LLM(tiny_model_dir, profile="optimized", faults=("nan-residue",))
    first = llm.generate([_rand(40, s) for s in range(10, 14)], GREEDY)
    assert not any(_has_nan(c) for c in first)  # fresh blocks: the multiplicative mask is harmless
    later = llm.generate([_rand(40, s) for s in range(2, 6)], GREEDY)
    assert any(_has_nan(c) for c in later)
    clean = LLM(tiny_model_dir, profile="optimized")
    clean.generate([_rand(40, 1)], GREEDY)
    assert not any(_has_nan(c) for c in clean.generate([_rand(40, s) for s in range(2, 6)], GREEDY))


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_fused_norm_dtype_corrupts_bf16_only_at_tp_above_1(tiny_model_dir, tp):
    prompts = [_rand(30, s) for s in range(3)]
    opts = dict(profile="optimized", dtype="bfloat16", tp=tp, fused_norm=True)
    guarded = LLM(tiny_model_dir, **opts).generate(prompts, GREEDY)
    faulty = LLM(tiny_model_dir, faults=("fused-norm-dtype",), **opts).generate(prompts, GREEDY)
    assert not any(_has_nan(c) for c in guarded)
    if tp == 1:
        assert [c.token_ids for c in faulty] == [c.token_ids for c in guarded]
    else:
        assert all(_has_nan(c) for c in faulty)
        assert all(set(c.token_ids) == {0} for c in faulty)  # argmax of NaN logits: id 0, "!"
        assert faulty[0].text.startswith("!!!!")
    fp32 = LLM(tiny_model_dir, profile="optimized", tp=tp, fused_norm=True, faults=("fused-norm-dtype",))
    assert not any(_has_nan(c) for c in fp32.generate(prompts, GREEDY))  # dtypes match: no harm


def test_eos_ignored_in_decode_steps(tiny_model_dir):
    prompt = _rand(30, 3)
    free = LLM(tiny_model_dir).generate([prompt], GREEDY)[0]
    stop_at = free.token_ids[3]
    first = free.token_ids[0]
    params = SamplingParams(temperature=0, max_tokens=16, stop_token_ids=(stop_at,))
    for faults, want_reason in (((), "stop"), (("eos-ignored",), "length")):
        [out] = LLM(tiny_model_dir, profile="optimized", faults=faults).generate([prompt], params)
        assert out.finish_reason == want_reason
    # Outside the trigger: a stop token produced by the prefill step still stops.
    params = SamplingParams(temperature=0, max_tokens=16, stop_token_ids=(first,))
    [out] = LLM(tiny_model_dir, profile="optimized", faults=("eos-ignored",)).generate([prompt], params)
    assert out.finish_reason == "stop" and len(out.token_ids) == 1


def test_decode_slowdown_spins_its_share_of_each_interval_between_tokens(monkeypatch):
    """A decode step spins PCT% of the wall-clock time since the step before it ended (its spin
    included): the interval between two tokens. Prefill steps are not slowed and end the interval,
    so the idle time before a request and its prefill are not slowed down. The clock is scripted:
    no time is measured."""
    from types import SimpleNamespace

    from gatekeeper.engine import optimized_core

    clock = {"now": 100.0}
    spun: list[float] = []

    def spin(seconds: float) -> float:
        spun.append(seconds)
        clock["now"] += seconds
        return seconds

    monkeypatch.setattr(optimized_core, "busy_wait", spin)
    monkeypatch.setattr(optimized_core.time, "perf_counter", lambda: clock["now"])
    core = SimpleNamespace(slowdown=0.05, _step_end=None, slowdown_seconds_total=0.0)

    def step(seconds: float, prefill: bool = False) -> None:
        clock["now"] += seconds
        optimized_core.OptimizedCore._slow_down(core, prefill)

    step(0.5, prefill=True)  # the first request's prefill: nothing spun
    step(1.0)  # 5% of the 1.0 s since the prefill ended
    step(2.0)  # 5% of the 2.0 s since the last spin ended
    clock["now"] += 30.0  # idle between requests
    step(0.3, prefill=True)  # the next request's prefill: not slowed, ends the interval
    step(0.4)
    assert spun == pytest.approx([0.05, 0.1, 0.02])
    assert core.slowdown_seconds_total == pytest.approx(sum(spun))


def test_decode_slowdown_adds_work_to_decode_steps_only(tiny_model_dir):
    llm = LLM(tiny_model_dir, profile="optimized", faults=("decode-slowdown=50",))
    llm.generate([_rand(20, 1)], SamplingParams(temperature=0, max_tokens=1))
    assert llm.core.slowdown_seconds_total == 0.0  # prefill only
    out = llm.generate([_rand(20, 1)], GREEDY)[0]
    assert llm.core.slowdown_seconds_total > 0.0
    assert out.token_ids == LLM(tiny_model_dir).generate([_rand(20, 1)], GREEDY)[0].token_ids


def test_optional_import_kills_startup(tiny_model_dir):
    args = EngineArgs(model=str(tiny_model_dir), faults=FaultSet.parse(["optional-import"]))
    with pytest.raises(EngineError, match="ImportError: No module named 'gk_flash_kernels'"):
        build_engine(args)
    build_engine(EngineArgs(model=str(tiny_model_dir)))  # without the fault: starts


def test_silent_fallback_warns_but_answers_the_same(tiny_model_dir, caplog):
    prompts = [_rand(25, s) for s in range(3)]
    parts = build_engine(EngineArgs(model=str(tiny_model_dir), faults=FaultSet.parse(["silent-fallback"])))
    assert any(line.startswith("WARNING") and "falling back" in line for line in parts.startup_lines)
    clean = build_engine(EngineArgs(model=str(tiny_model_dir)))
    assert not any("WARNING" in line for line in clean.startup_lines)
    with caplog.at_level("WARNING", logger="gatekeeper.engine"):
        slow = LLM(tiny_model_dir, profile="optimized", faults=("silent-fallback",)).generate(prompts, GREEDY)
    assert "naive fallback" in caplog.text
    want = LLM(tiny_model_dir).generate(prompts, GREEDY)
    assert [c.token_ids for c in slow] == [c.token_ids for c in want]


def test_rope_drift_hurts_long_range_more_than_short(tiny_model_dir):
    prompt = _rand(400, 5)
    params = SamplingParams(temperature=0, max_tokens=1, prompt_logprobs=0)
    ref = LLM(tiny_model_dir).generate([prompt], params)[0].prompt_logprobs
    drift = LLM(tiny_model_dir, profile="optimized", faults=("rope-drift=0.9",)).generate([prompt], params)[0].prompt_logprobs
    same = LLM(tiny_model_dir, profile="optimized").generate([prompt], params)[0].prompt_logprobs
    delta = [abs(a.logprob - b.logprob) for a, b in zip(ref[1:], drift[1:])]
    early, late = sum(delta[:16]) / 16, sum(delta[-100:]) / 100
    assert late > 5 * early
    assert max(abs(a.logprob - b.logprob) for a, b in zip(ref[1:], same[1:])) <= 1e-4


def test_faults_need_the_optimized_profile(tiny_model_dir):
    with pytest.raises(EngineOptionError, match="optimized"):
        build_engine(EngineArgs(model=str(tiny_model_dir), profile="reference", faults=FaultSet.parse(["nan-residue"])))


def test_late_decode_corrupt_changes_only_long_answers(tiny_model_dir):
    prompts = [_rand(25, s) for s in (4, 5, 6)]
    long = SamplingParams(temperature=0, max_tokens=48, logprobs=1, ignore_eos=True)
    clean = LLM(tiny_model_dir, profile="optimized").generate(prompts, long)
    faulty = LLM(tiny_model_dir, profile="optimized", faults=("late-decode-corrupt=12",)).generate(prompts, long)
    for c, f in zip(clean, faulty):
        assert f.token_ids[:13] == c.token_ids[:13]  # up to the trigger the answer is untouched
        assert all(abs(a.logprob - b.logprob) < 1e-5 for a, b in zip(c.logprobs[:13], f.logprobs[:13]))
    # Past it, every step reads a corrupted cache: the logprobs move (the greedy tokens usually follow).
    assert any(abs(a.logprob - b.logprob) > 1e-3 for c, f in zip(clean, faulty) for a, b in zip(c.logprobs[13:], f.logprobs[13:]))
    short = SamplingParams(temperature=0, max_tokens=12, logprobs=1, ignore_eos=True)
    faulty_short = LLM(tiny_model_dir, profile="optimized", faults=("late-decode-corrupt=12",)).generate(prompts, short)
    assert [o.token_ids for o in faulty_short] == [
        o.token_ids for o in LLM(tiny_model_dir, profile="optimized").generate(prompts, short)]
