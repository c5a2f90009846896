"""Training throughput of gk-tiny's micro-batching: the greedy split of length-sorted examples
(`train_data.micro_batches`, gk-tiny v2's recipe) against the least-cost split
(`train_data.least_cost_batches`, `train --batching least-cost`), on the same main-phase steps,
measured in this run.

    python benchmarks/train_batching.py [--steps N] [--threads T]

Both time full optimizer steps (forward, backward, a zero-learning-rate update) of a freshly
initialised model; padded tokens per real token are printed beside the throughput. Run it on
an otherwise idle machine: 2-thread OpenMP slows badly when anything else is busy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from gatekeeper.training import train, train_data
from gatekeeper.engine.model import CausalLM
from gatekeeper.engine.tokenizer import Tokenizer
from gatekeeper.training.tokenizer_train import PAD_TOKEN
from gatekeeper.training.train_data import Example

GK_TINY = Path(__file__).resolve().parents[1] / "gatekeeper" / "models" / "gk-tiny"


def measure(name: str, split, model: CausalLM, opt, steps: list[list[Example]], pad_id: int) -> float:
    """Prints and returns tokens/s of full training steps with `split` as the micro-batcher."""
    train.train_step(model, opt, steps[0], pad_id, split)  # warm-up
    real = sum(len(e.ids) for s in steps for e in s)
    padded = sum(max(len(e.ids) for e in b) * len(b) for s in steps for b in split(s))
    t0 = time.perf_counter()
    for s in steps:
        train.train_step(model, opt, s, pad_id, split)
    rate = real / (time.perf_counter() - t0)
    passes = sum(len(split(s)) for s in steps) / len(steps)
    print(f"{name:<10} {rate:8.0f} tok/s   padded/real {padded / real:5.2f}   {passes:4.1f} passes/step", flush=True)
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=15, help="main-phase steps timed per splitter")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tok = Tokenizer.from_dir(GK_TINY)
    model = CausalLM(train.make_config(tok, train.Hyper()))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    data = train_data.DataSource(tok, seed=0, total_steps=10_000)
    data.copy_ready_step = 3_000  # main phase: the full family mix, needles and haystacks up to 2,048 tokens
    steps = [data.step_examples(s) for s in range(4_000, 10_000, 6_000 // args.steps)][: args.steps]
    print(f"{len(steps)} main-phase steps, {sum(len(e.ids) for s in steps for e in s) // len(steps)} tokens each, "
          f"{args.threads} threads")
    old = measure("greedy", train_data.micro_batches, model, opt, steps, tok.encode(PAD_TOKEN)[0])
    new = measure("least-cost", train_data.least_cost_batches, model, opt, steps, tok.encode(PAD_TOKEN)[0])
    print(f"least-cost / greedy: {new / old:.2f}x")


if __name__ == "__main__":
    main()
