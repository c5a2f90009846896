"""Train gk-tiny from scratch on the synthetic task families, on CPU.

    python -m gatekeeper.training.train --out DIR --seed S [--steps N] [--threads T] [--resume]
        [--minutes M] [--stop-at K] [--ship DIR] [--batching greedy|least-cost]
        [--init-from DIR --lr LR --weight FAMILY=W ...]

What makes a model this small copy at all (see notes/training.md):
- Dense copy data first: random sequences repeated after a short gap, loss on every repeated
  token (about half of all tokens supervised), until the copy loss shows induction heads have
  formed. Echo, needle, JSON, tool arguments and multi-turn recall all rely on them. (A first
  attempt that mixed sparse haystack copies with chats from step 0 learned no copying at all
  in 550 steps of 3k tokens.)
- Later, copy data moves to haystacks: random-token or filler-text contexts up to 2,048 tokens
  with segments planted anywhere and repeated at the end, loss after a two-token key, so
  retrieval is trained at the lengths it is tested at.
- The loss covers every assistant turn of a chat (earlier turns are correct by construction
  too), not just the last, to make supervision less sparse.
- A staged mix: copy-heavy and short chats first, the full family mix with long needles later.

The shipped gk-tiny is two runs (gatekeeper/models/gk-tiny/README.md has the commands): the
defaults, `--out runs/gk-tiny-base --seed 0` (13,000 steps, 2 threads, least-cost batching, about
107 minutes on an otherwise idle 2-core machine), then 1,200 steps from those weights with
`--init-from`, a lower peak rate and more weight on counting and needles (about 10 minutes).
Anything else running on the same cores slows 2-thread OpenMP badly, so train alone, or with
`--threads 1` at about half the speed and different float results.

Determinism: the batch of step k is a function of (seed, k) only, the model's initial weights of
the seed; checkpoints hold the optimizer state, so a resumed run continues the same trajectory.
The schedule is fixed by --steps (and float results by --threads); --minutes only stops early
(and says so); --stop-at K stops deterministically after step K of the same schedule.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from gatekeeper import tasks
from gatekeeper.engine.checkpoint import save_checkpoint
from gatekeeper.engine.config import ModelConfig
from gatekeeper.engine.model import CausalLM
from gatekeeper.engine.tokenizer import Tokenizer
from gatekeeper.training import train_data
from gatekeeper.training.tokenizer_train import PAD_TOKEN
from gatekeeper.training.tokenizer_train import build as build_tokenizer
from gatekeeper.training.tokenizer_train import save as save_tokenizer
from gatekeeper.training.train_data import (
    SPLITS,
    DataSource,
    Example,
    collate,
    micro_batches,
)

CHECKPOINT_SECONDS = 180


@dataclass(frozen=True)
class Hyper:
    """Architecture and optimisation settings of gk-tiny."""

    hidden_size: int = 192
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    num_attention_heads: int = 6
    num_key_value_heads: int = 6
    vocab_size: int = 2048
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.01


# --- training -------------------------------------------------------------------------------


def lr_at(step: int, total: int, h: Hyper) -> float:
    if step < h.warmup_steps:
        return h.lr * (step + 1) / h.warmup_steps
    p = (step - h.warmup_steps) / max(1, total - h.warmup_steps)
    return h.lr * (h.min_lr_ratio + (1 - h.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def make_config(tok: Tokenizer, h: Hyper) -> ModelConfig:
    return ModelConfig(
        vocab_size=tok.vocab_size, hidden_size=h.hidden_size, intermediate_size=h.intermediate_size,
        num_hidden_layers=h.num_hidden_layers, num_attention_heads=h.num_attention_heads,
        num_key_value_heads=h.num_key_value_heads, max_position_embeddings=train_data.MAX_LEN, rope_theta=10000.0,
        tie_word_embeddings=True, bos_token_id=tok.encode(PAD_TOKEN)[0], eos_token_id=tok.eos_token_id,
    )


def train_step(model: CausalLM, opt: torch.optim.Optimizer, examples: list[Example], pad_id: int,
               split=micro_batches) -> dict[str, float]:
    """One optimizer step over all examples (micro-batched by `split`); returns mean losses by kind (copy / chat)."""
    n_sup = sum(sum(e.targets[: len(e.ids) - 1]) for e in examples)
    opt.zero_grad(set_to_none=True)
    sums = {"copy": [0.0, 0], "chat": [0.0, 0]}
    for batch in split(examples):
        ids, mask, targets = collate(batch, pad_id)
        hidden = model.hidden_states(ids)  # [B, T, H]
        logits = model.compute_logits(hidden[mask])  # [N, V], only supervised positions
        losses = F.cross_entropy(logits, targets[mask], reduction="none")  # [N]
        (losses.sum() / max(1, n_sup)).backward()
        kinds = torch.tensor([e.kind == "copy" for e in batch])[:, None].expand_as(mask)[mask]
        for name, sel in (("copy", kinds), ("chat", ~kinds)):
            sums[name][0] += losses[sel].sum().item()
            sums[name][1] += int(sel.sum())
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return {k: (s / n if n else float("nan")) for k, (s, n) in sums.items()}


def _run_args(args: argparse.Namespace) -> dict:
    """The arguments a resumed run must repeat."""
    extra = {"batching": args.batching} if args.batching != "greedy" else {}  # older state.pt files lack it
    if args.weight:
        extra["weights"] = dict(args.weight)
    return {"seed": args.seed, "steps": args.steps, "lr": args.lr, "init_from": args.init_from, **extra}


def _family_weight(text: str) -> tuple[str, float]:
    """FAMILY=WEIGHT, for --weight."""
    name, sep, value = text.partition("=")
    if not sep or name not in tasks.FAMILIES:
        raise argparse.ArgumentTypeError(f"expected FAMILY=WEIGHT with FAMILY one of {', '.join(tasks.FAMILIES)}, got {text!r}")
    try:
        weight = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the weight is not a number") from None
    if weight < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a weight cannot be negative")
    return name, weight


def save_all(model: CausalLM, cfg: ModelConfig, opt, data: DataSource, step: int, out: Path,
             args: argparse.Namespace) -> None:
    """Checkpoint for resuming (state.pt, written atomically) plus the HF export."""
    tmp = out / "state.pt.tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "copy_ema": data.copy_ema, "copy_ready_step": data.copy_ready_step,
                "args": _run_args(args)}, tmp)
    tmp.replace(out / "state.pt")
    save_checkpoint(model, cfg, out)
    gen = {"bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id, "pad_token_id": cfg.bos_token_id,
           "do_sample": False, "max_new_tokens": 256}
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")


def export(out: Path, ship: Path) -> None:
    """Copy the shippable files (no optimizer state) to `ship`."""
    ship.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        (ship / name).write_bytes((out / name).read_bytes())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="run directory (checkpoint, tokenizer, state)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=13000, help="optimizer steps; fixes the schedule (13,000: the shipped gk-tiny)")
    p.add_argument("--minutes", type=float, default=None, help="stop early after this wall time")
    p.add_argument("--stop-at", type=int, default=None,
                   help="stop after this step, schedule unchanged: reproduces the state an interrupted run saved there")
    p.add_argument("--resume", action="store_true", help="continue from DIR/state.pt")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--layers", type=int, default=Hyper.num_hidden_layers)
    p.add_argument("--hidden", type=int, default=Hyper.hidden_size)
    p.add_argument("--ship", default=None, help="also copy the final checkpoint files here")
    p.add_argument("--init-from", default=None,
                   help="continue training from this run directory's weights and tokenizer (fresh optimizer, "
                        "no copy warm-up); the new run's data comes from --seed")
    p.add_argument("--lr", type=float, default=Hyper.lr, help="peak learning rate")
    p.add_argument("--weight", type=_family_weight, action="append", default=[], metavar="FAMILY=WEIGHT",
                   help="override a family's weight in the main-phase mix (repeatable), e.g. long_output=3")
    p.add_argument("--batching", choices=tuple(SPLITS), default="least-cost",
                   help="micro-batch split: least-cost (the shipped gk-tiny) or greedy (gk-tiny v2; 1.35x slower)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    h = Hyper(num_hidden_layers=args.layers, hidden_size=args.hidden, lr=args.lr,
              intermediate_size=args.hidden * 8 // 3 // 32 * 32 if args.hidden != 192 else 512,
              num_attention_heads=args.hidden // 32, num_key_value_heads=args.hidden // 32)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.init_from:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (out / name).write_bytes((Path(args.init_from) / name).read_bytes())
    elif not (args.resume and (out / "tokenizer.json").is_file()):
        save_tokenizer(build_tokenizer(h.vocab_size, args.seed), out)
    tok = Tokenizer.from_dir(out)
    pad_id = tok.encode(PAD_TOKEN)[0]
    cfg = make_config(tok, h)
    torch.manual_seed(args.seed)
    model = CausalLM(cfg)
    with torch.no_grad():  # small init, as HF's initializer_range=0.02
        for name, prm in model.named_parameters():
            if prm.dim() == 2:
                prm.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                prm.zero_()
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() == 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": h.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=h.lr, betas=(0.9, 0.95))
    data = DataSource(tok, args.seed, args.steps, dict(args.weight))
    if args.init_from:
        model.load_state_dict(torch.load(Path(args.init_from) / "state.pt", weights_only=False)["model"])
        data.copy_ready_step = 0  # the initial model copies already
    start = 0
    if args.resume and (out / "state.pt").is_file():
        state = torch.load(out / "state.pt", weights_only=False)
        if state["args"] != _run_args(args):
            raise SystemExit(f"--resume: {out}/state.pt was made with {state['args']}, not these arguments")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        data.copy_ema, data.copy_ready_step = state["copy_ema"], state["copy_ready_step"]
        print(f"resumed at step {start}", flush=True)
    n_params = sum(p_.numel() for p_ in model.parameters())
    print(f"gk-tiny: {n_params / 1e6:.2f}M params, {cfg.num_hidden_layers} layers, d{cfg.hidden_size}, "
          f"vocab {cfg.vocab_size}, {args.steps} steps of {train_data.TOKENS_PER_STEP} tokens", flush=True)

    model.train()
    t0 = last_save = time.time()
    tokens = 0
    step = start
    last = min(args.steps, args.stop_at or args.steps)
    while step < last:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args.steps, h)
        examples = data.step_examples(step)
        losses = train_step(model, opt, examples, pad_id, SPLITS[args.batching])
        was_ready = data.copy_ready_step
        data.observe(step, losses["copy"])
        if data.copy_ready_step != was_ready:
            print(f"copying learned at step {data.copy_ready_step} (copy loss ema {data.copy_ema:.3f})", flush=True)
        tokens += sum(len(e.ids) for e in examples)
        step += 1
        elapsed = time.time() - t0
        if step % 10 == 0 or step == args.steps:
            print(f"step {step}/{args.steps} copy {losses['copy']:.3f} chat {losses['chat']:.3f} "
                  f"lr {lr_at(step - 1, args.steps, h):.2e} {tokens / elapsed:.0f} tok/s {elapsed / 60:.1f} min",
                  flush=True)
        if time.time() - last_save > CHECKPOINT_SECONDS:
            save_all(model, cfg, opt, data, step, out, args)
            last_save = time.time()
        if args.minutes is not None and elapsed > args.minutes * 60 and step < args.steps:
            print(f"stopping early at step {step}/{args.steps} (--minutes {args.minutes}); "
                  "the schedule is incomplete, resume with --resume", flush=True)
            break
    save_all(model, cfg, opt, data, step, out, args)
    if args.ship and step == last:
        export(out, Path(args.ship))
    print(f"done: step {step}, {(time.time() - t0) / 60:.1f} min, checkpoint in {out}", flush=True)


if __name__ == "__main__":
    main()
