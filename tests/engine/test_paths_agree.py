"""In fp32 the optimized path (paged, batched, prefix-cached) gives the reference path's
greedy tokens exactly, and logprobs within 1e-4."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")

from gatekeeper.engine.llm import LLM  # noqa: E402
from gatekeeper.engine.sampling_params import SamplingParams  # noqa: E402


def _prompts(seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, 300) for _ in range(n)] for n in (1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 150, 200)]
    shared = [rng.randrange(3, 300) for _ in range(48)]
    prompts += [shared + [rng.randrange(3, 300) for _ in range(k)] for k in (1, 5, 16, 17)]
    prompts.append(shared)  # the prefix itself, a multiple of the block size
    return prompts


def _assert_agree(ref_out, opt_out):
    for a, b in zip(ref_out, opt_out):
        assert a.token_ids == b.token_ids
        assert a.finish_reason == b.finish_reason
        deltas = [abs(x.logprob - y.logprob) for x, y in zip(a.logprobs, b.logprobs)]
        assert max(deltas) <= 1e-4
        assert [t for t, _ in a.logprobs[0].top] == [t for t, _ in b.logprobs[0].top]


PARAMS = SamplingParams(temperature=0, max_tokens=24, logprobs=5, ignore_eos=True)


@pytest.fixture(scope="module")
def reference_outputs(tiny_model_dir):
    return LLM(tiny_model_dir, profile="reference").generate(_prompts(), PARAMS)


@pytest.mark.parametrize(
    "options",
    [
        {},  # defaults: prefix caching, 16 concurrent
        {"max_num_seqs": 3, "block_size": 8},
        {"num_kv_blocks": 40, "max_num_seqs": 16},  # forces preemption by recompute
        {"prefix_caching": False},
        {"tp": 2},
        {"fused_norm": True},
    ],
    ids=["default", "few-seqs-bs8", "preemption", "no-prefix-cache", "tp2", "fused-norm"],
)
def test_optimized_matches_reference(tiny_model_dir, reference_outputs, options):
    llm = LLM(tiny_model_dir, profile="optimized", **options)
    _assert_agree(reference_outputs, llm.generate(_prompts(), PARAMS))
    if options.get("num_kv_blocks") == 40:
        assert llm.core.scheduler.num_preemptions_total > 0
    stats = llm.core.stats()
    assert stats["num_blocks_free"] == stats["num_blocks_total"]


def test_warm_prefix_cache_gives_cold_answer(tiny_model_dir, reference_outputs):
    llm = LLM(tiny_model_dir, profile="optimized")
    prompts = _prompts()
    llm.generate(prompts, PARAMS)  # warms the cache
    warm = llm.generate(prompts, PARAMS)
    assert llm.core.stats()["prefix_cache_hits"] > 0
    assert any(c.num_cached_tokens > 0 for c in warm)
    _assert_agree(reference_outputs, warm)


def test_prompt_logprobs_agree(tiny_model_dir):
    params = SamplingParams(temperature=0, max_tokens=1, prompt_logprobs=3)
    prompts = _prompts()[5:9]
    ref = LLM(tiny_model_dir, profile="reference").generate(prompts, params)
    opt = LLM(tiny_model_dir, profile="optimized").generate(prompts, params)
    for a, b, p in zip(ref, opt, prompts):
        assert len(a.prompt_logprobs) == len(p) and a.prompt_logprobs[0] is None
        for x, y in zip(a.prompt_logprobs[1:], b.prompt_logprobs[1:]):
            assert abs(x.logprob - y.logprob) <= 1e-4 and x.rank == y.rank


def test_seeded_sampling_reproduces(tiny_model_dir):
    llm = LLM(tiny_model_dir, profile="optimized")
    prompts = _prompts()[:6]
    params = [SamplingParams(temperature=1.0, top_p=0.9, top_k=50, seed=i, max_tokens=16, ignore_eos=True) for i in range(6)]
    first = llm.generate(prompts, params)
    again = llm.generate(prompts[::-1], params[::-1])[::-1]  # other batch order, same seeds
    assert [c.token_ids for c in first] == [c.token_ids for c in again]
    other = llm.generate(prompts, [SamplingParams(temperature=1.0, seed=100 + i, max_tokens=16, ignore_eos=True) for i in range(6)])
    assert [c.token_ids for c in other] != [c.token_ids for c in first]


def test_stop_strings_are_cut_and_min_tokens_hold(tiny_model_dir):
    llm = LLM(tiny_model_dir, profile="reference")
    prompt = _prompts()[9]
    [free] = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))
    stop = free.text[5:8]
    assert stop
    [cut] = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=20, ignore_eos=True, stop=(stop,)))
    assert cut.finish_reason == "stop" and cut.stop_reason == stop
    assert cut.text == free.text[: free.text.index(stop)]
    tid = free.token_ids[2]
    [by_id] = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=20, stop_token_ids=(tid,)))
    assert by_id.token_ids == free.token_ids[: free.token_ids.index(tid) + 1] and by_id.stop_reason == tid
    [held] = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=20, min_tokens=10, stop_token_ids=(tid,)))
    assert len(held.token_ids) >= 10 and tid not in held.token_ids[:10]
