"""Evaluate a checkpoint on held-out prompts from the task generators, greedy decoding.

    python -m gatekeeper.training.evaluate --model DIR [--n N] [--seed S] [--json PATH]

Prints a per-family accuracy table against gk-tiny's targets, the needle-retrieval grid
(prompt length x depth, out to 2,048 tokens), multi-turn recall by round, and accuracy by sample
kind (echo's kind, arithmetic's operator, ...) to show where a family misses. Prompts come from
streams named `eval:<seed>:<family>`, which training (streams `<seed>:<step>`) never draws from.
EOS discipline counts a reply right only if it is exact *and* ended with the end-of-turn token.

Decoding goes through the engine's `LLM` reference path when it is available, else through a
small greedy loop with a contiguous KV cache over `CausalLM`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from gatekeeper import tasks

TARGETS = {"echo": 0.98, "json": 0.98, "tool_call": 0.98, "eos": 0.98, "arithmetic": 0.95, "code": 0.95,
           "refusal": 0.95, "multilingual": 0.95, "long_output": None, "needle": 0.95, "multi_turn": 0.95}
MAX_TOKENS = {"long_output": 320, "tool_call": 192, "json": 128, "code": 64}
NEEDLE_LENGTHS = (128, 256, 512, 1024, 1536, 2048)
NEEDLE_DEPTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
ROUNDS = (2, 4, 6, 8, 10, 12, 14, 16)
_ANSWER_ROOM = 24  # tokens kept free after the longest needle prompt
_GRIDDED = ("grid_length", "context_tokens", "depth", "round")  # shown as the needle grid and recall curve
_MAX_BREAKDOWN_VALUES = 8


@dataclass
class Result:
    """Per-case outcome, kept for the JSON dump."""

    family: str
    correct: bool
    stopped: bool
    output: str
    answer: str
    meta: dict = field(default_factory=dict)


class GreedyDecoder:
    """Greedy decoding of token-id prompts; returns (token ids, stopped at EOS)."""

    def __init__(self, model_dir: str) -> None:
        try:
            from gatekeeper.engine.llm import LLM
            from gatekeeper.engine.sampling_params import SamplingParams
        except ImportError:
            LLM = None  # noqa: N806
        if LLM is not None:
            self.llm = LLM(model_dir, profile="reference")
            self.tokenizer = self.llm.tokenizer
            self._params = SamplingParams
            self.backend = "gatekeeper.engine.llm.LLM (reference)"
        else:
            from gatekeeper.engine.checkpoint import load_model
            from gatekeeper.engine.tokenizer import Tokenizer

            self.llm = None
            self.model, _ = load_model(model_dir)
            self.tokenizer = Tokenizer.from_dir(model_dir)
            self.backend = "evaluate.py greedy loop over CausalLM"
        self.eos = set(getattr(self.tokenizer, "eos_token_ids", []) or []) | {self.tokenizer.eos_token_id}

    def generate(self, prompts: list[list[int]], max_tokens: int) -> list[tuple[list[int], bool]]:
        if self.llm is not None:
            outs = self.llm.generate(prompts, self._params(temperature=0.0, max_tokens=max_tokens))
            res = []
            for o in outs:
                ids = list(o.token_ids)
                reason = getattr(o, "finish_reason", None)
                stopped = reason == "stop" if reason is not None else (bool(ids) and ids[-1] in self.eos) or len(ids) < max_tokens
                res.append(([i for i in ids if i not in self.eos], stopped))
            return res
        return [self._greedy(p, max_tokens) for p in prompts]

    @torch.no_grad()
    def _greedy(self, prompt: list[int], max_tokens: int) -> tuple[list[int], bool]:
        cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def backend(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            # q, k, v: [T, H, D] for the new tokens; the cache holds [S, Hkv, D] before them.
            if layer in cache:
                k = torch.cat((cache[layer][0], k))
                v = torch.cat((cache[layer][1], v))
            cache[layer] = (k, v)
            t, s = q.shape[0], k.shape[0]
            groups = q.shape[1] // k.shape[1]
            qh, kh, vh = q.transpose(0, 1), k.repeat_interleave(groups, 1).transpose(0, 1), v.repeat_interleave(groups, 1).transpose(0, 1)
            mask = torch.ones(t, s, dtype=torch.bool).tril(s - t)  # [T, S]: query i sees keys <= s - t + i
            out = torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask)
            return out.transpose(0, 1)

        ids = torch.tensor(prompt)
        pos = torch.arange(len(prompt))
        out: list[int] = []
        for _ in range(max_tokens):
            hidden = self.model.hidden_states(ids, pos, backend)  # [T, H]
            nxt = int(self.model.compute_logits(hidden[-1:]).argmax(-1))
            if nxt in self.eos:
                return out, True
            out.append(nxt)
            pos = pos[-1:] + 1
            ids = torch.tensor([nxt])
        return out, False


def run_cases(dec: GreedyDecoder, samples: list[tasks.Sample], max_tokens: int, batch: int = 8) -> list[Result]:
    tok = dec.tokenizer
    results = []
    for i in range(0, len(samples), batch):
        chunk = samples[i : i + batch]
        prompts = [tok.encode(tok.apply_chat_template(list(s.messages), tools=list(s.tools) if s.tools else None))
                   for s in chunk]
        for s, (ids, stopped) in zip(chunk, dec.generate(prompts, max_tokens)):
            text = tok.decode(ids)
            ok = tasks.score(s, text) and (stopped or not s.meta.get("needs_eos"))
            results.append(Result(s.family, ok, stopped, text, s.answer, dict(s.meta)))
    return results


def _acc(rs: list[Result]) -> float:
    return sum(r.correct for r in rs) / max(1, len(rs))


def breakdown(results: list[Result]) -> dict[str, dict[str, dict]]:
    """Accuracy by each sample attribute with a few scalar values (echo's kind, arithmetic's op,
    JSON's field count...): where a family misses. Lengths, depths and rounds have their own grids."""
    values: dict[str, set] = {}
    for r in results:
        for key, v in r.meta.items():
            if key not in _GRIDDED and isinstance(v, (str, int, bool)):
                values.setdefault(key, set()).add(v)
    out: dict[str, dict[str, dict]] = {}
    for key, vs in values.items():
        if 2 <= len(vs) <= _MAX_BREAKDOWN_VALUES:
            groups = {str(v): [r for r in results if r.meta.get(key) == v] for v in sorted(vs, key=str)}
            out[key] = {v: {"n": len(rs), "accuracy": _acc(rs)} for v, rs in groups.items()}
    return out


def evaluate(model_dir: str, n: int, seed: int, log=print) -> dict:
    """Run every family; returns a JSON-able report."""
    dec = GreedyDecoder(model_dir)
    tok = dec.tokenizer
    log(f"decoding with {dec.backend}")
    count = lambda text: len(tok.encode(text))  # noqa: E731
    by_family: dict[str, list[Result]] = {}
    for family in tasks.FAMILIES:
        rng = random.Random(f"eval:{seed}:{family}")
        if family == "needle":
            cells = max(2, n // 10)
            samples = [tasks.generate("needle", rng, context_tokens=min(length, 2048 - _ANSWER_ROOM), depth=d,
                                      count_tokens=count)
                       for length in NEEDLE_LENGTHS for d in NEEDLE_DEPTHS for _ in range(cells)]
            for s, length in zip(samples, [x for x in NEEDLE_LENGTHS for _ in range(cells * len(NEEDLE_DEPTHS))]):
                s.meta["grid_length"] = length
        elif family == "multi_turn":
            per = max(4, n // 4)
            samples = [tasks.generate("multi_turn", rng, rounds=r) for r in ROUNDS for _ in range(per)]
            # The target is at round 10: it gets n chats in all (the extra ones drawn last, so the
            # curve's samples are the same as with fewer).
            samples += [tasks.generate("multi_turn", rng, rounds=10) for _ in range(n - per)]
        else:
            samples = [tasks.generate(family, rng) for _ in range(n)]
        by_family[family] = run_cases(dec, samples, MAX_TOKENS.get(family, 48))
        log(f"  {family:<13} {_acc(by_family[family]):6.1%}  ({len(samples)} cases)")

    rows = []
    for family, rs in by_family.items():
        if family == "needle":
            rs = [r for r in rs if r.meta["grid_length"] <= 1024]
        elif family == "multi_turn":
            rs = [r for r in rs if r.meta["round"] == 10]
        rows.append({"family": family, "n": len(rs), "accuracy": _acc(rs), "target": TARGETS.get(family)})
    short = [r for f, rs in by_family.items() if f not in ("long_output", "code", "tool_call", "json") for r in rs]
    needle = {f"{length}x{d}": _acc([r for r in by_family["needle"]
                                     if r.meta["grid_length"] == length and r.meta["depth"] == d])
              for length in NEEDLE_LENGTHS for d in NEEDLE_DEPTHS}
    rounds = {r: _acc([x for x in by_family["multi_turn"] if x.meta["round"] == r]) for r in ROUNDS}
    return {"model": model_dir, "seed": seed, "n": n, "backend": dec.backend, "families": rows,
            "stopped_at_eos_short_answers": sum(r.stopped for r in short) / max(1, len(short)),
            "needle": needle, "multi_turn_by_round": rounds,
            "breakdown": {f: b for f, rs in by_family.items() if (b := breakdown(rs))},
            "cases": {f: [asdict(r) for r in rs] for f, rs in by_family.items()}}


def render(report: dict) -> str:
    """The human-readable tables."""
    lines = [f"model {report['model']}  seed {report['seed']}  greedy, {report['backend']}", "",
             f"{'family':<14}{'n':>5}{'accuracy':>10}{'target':>8}  ", "-" * 42]
    for row in report["families"]:
        t = row["target"]
        note = {"needle": " (<=1024 tok, all depths)", "multi_turn": " (round 10)"}.get(row["family"], "")
        mark = "" if t is None else ("ok" if row["accuracy"] >= t else "SHORT")
        lines.append(f"{row['family']:<14}{row['n']:>5}{row['accuracy']:>10.1%}"
                     f"{'-' if t is None else format(t, '.0%'):>8}  {mark}{note}")
    lines.append(f"{'(EOS stop rate, short-answer families)':<40}{report['stopped_at_eos_short_answers']:.1%}")
    lines += ["", "needle retrieval, prompt tokens x depth", "length " + "".join(f"{d:>7}" for d in NEEDLE_DEPTHS)]
    for length in NEEDLE_LENGTHS:
        lines.append(f"{length:>6} " + "".join(f"{report['needle'][f'{length}x{d}']:>7.0%}" for d in NEEDLE_DEPTHS))
    lines += ["", "multi-turn recall by round", "round  " + "".join(f"{r:>6}" for r in ROUNDS),
              "acc    " + "".join(f"{report['multi_turn_by_round'][r]:>6.0%}" for r in ROUNDS)]
    lines += ["", "accuracy by sample kind (cases)"]
    for family, keys in report["breakdown"].items():
        for key, groups in keys.items():
            cells = ", ".join(f"{v} {g['accuracy']:.0%} ({g['n']})" for v, g in groups.items())
            lines.append(f"{family:<14}{key}: {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--n", type=int, default=100, help="cases per family (needle: n/10 per grid cell)")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--json", default=None, help="also write the full report, every case included")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = evaluate(args.model, args.n, args.seed, log=lambda s: print(s, file=sys.stderr, flush=True))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(render(report))


if __name__ == "__main__":
    main()
