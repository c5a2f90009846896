"""Generated tokens/s of the reference and optimized paths at 1, 4 and 16 concurrent requests,
TTFT for a 1,000-token prompt on both paths, the optimized path's tokens/s with and without a
JSON-schema constraint at 1 and 16 (rounds interleaved), and peak RSS — all measured in this run.

    python benchmarks/engine_throughput.py [--model DIR] [--max-tokens 64]

Uses the shipped gk-tiny when present, else a random checkpoint of the same shape. Requests go
through the engine cores directly (no HTTP), all submitted at once, so "concurrency" is the
number of sequences the optimized path can batch.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from gatekeeper.engine.engine_args import DEFAULT_MODEL
from gatekeeper.engine.grammar import GrammarSpec, allowed_mask
from gatekeeper.engine.llm import LLM
from gatekeeper.engine.sampling_params import SamplingParams


def random_checkpoint() -> Path:
    """A random model of gk-tiny's shape, with the test suite's tokenizer."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from conftest import build_checkpoint  # test helper: a local BPE and our chat template

    out = Path(tempfile.mkdtemp(prefix="gk-bench-"))
    return build_checkpoint(out, max_len=2048, hidden=192, layers=4, heads=6, kv_heads=2)


LONG_JSON = {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string", "maxLength": 12},
                                                        "minItems": 40, "maxItems": 60}}, "required": ["items"]}
"""A schema whose answers run long (40-60 short strings), so masks are paid on every step."""


def throughput(llm: LLM, concurrency: int, max_tokens: int, seed: int, grammar: str | None = None) -> float:
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, 300) for _ in range(rng.randrange(50, 200))] for _ in range(concurrency)]
    params = SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True, grammar=grammar)
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - t0
    return sum(len(o.token_ids) for o in outs) / elapsed


def ttft(llm: LLM, n: int = 1000) -> float:
    rng = random.Random(7)
    prompt = [rng.randrange(3, 300) for _ in range(n)]
    t0 = time.perf_counter()
    llm.generate([prompt], SamplingParams(temperature=0, max_tokens=1))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    model = Path(args.model) if args.model else DEFAULT_MODEL
    if not (model / "config.json").is_file():
        print(f"{model} not found; using a random checkpoint of the same shape")
        model = random_checkpoint()
    paths = {p: LLM(model, profile=p) for p in ("reference", "optimized")}
    for llm in paths.values():  # warm-up: first-call allocations and lazy init
        throughput(llm, 2, 4, seed=0)
    print(f"model: {model}   max_tokens per request: {args.max_tokens}")
    print(f"{'concurrency':>11}  {'reference tok/s':>15}  {'optimized tok/s':>15}  {'ratio':>6}")
    for c in (1, 4, 16):
        ref = throughput(paths["reference"], c, args.max_tokens, seed=c)
        opt = throughput(paths["optimized"], c, args.max_tokens, seed=c)
        print(f"{c:>11}  {ref:>15.1f}  {opt:>15.1f}  {opt / ref:>5.2f}x")
    for name, llm in paths.items():
        print(f"TTFT, 1,000-token prompt, {name}: {ttft(llm) * 1000:.0f} ms")
    grammar = GrammarSpec.json_schema(LONG_JSON)
    opt = LLM(model, profile="optimized", prefix_caching=False)  # both sides send the same prompts: no cache hits
    throughput(opt, 2, 8, seed=0, grammar=grammar)  # compiles and caches the grammar
    print(f"optimized path without prefix caching, JSON-schema constraint "
          f"({opt.core.grammars.tokenizer.vocab_size}-token vocabulary), 3 interleaved rounds:")
    print(f"{'concurrency':>11}  {'free tok/s':>10}  {'json tok/s':>10}  {'ratio':>6}")
    for c in (1, 16):
        free, constrained = [], []
        for r in range(3):
            free.append(throughput(opt, c, args.max_tokens, seed=100 + r))
            constrained.append(throughput(opt, c, args.max_tokens, seed=100 + r, grammar=grammar))
        f, j = sorted(free)[1], sorted(constrained)[1]
        print(f"{c:>11}  {f:>10.1f}  {j:>10.1f}  {j / f:>5.2f}x   (medians of 3)")
    for c in (1, 16):
        matchers = [opt.core.grammars.matcher(grammar) for _ in range(c)]
        t0 = time.perf_counter()
        for _ in range(200):
            allowed_mask(matchers, opt.core.grammars.vocab_size)
        print(f"grammar mask for a batch of {c:>2}: {(time.perf_counter() - t0) / 200 * 1e6:.0f} µs per step")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
