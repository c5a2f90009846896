"""The training data of gk-tiny: which examples each step sees, and how they are batched.

The batch of step k is a function of (seed, k) and of the copy-loss feedback (`observe`), which
is itself deterministic for a seed and thread count; see `train.py` for the curriculum's reasons.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch

from gatekeeper import tasks
from gatekeeper.engine.tokenizer import Tokenizer
from gatekeeper.training.tokenizer_train import EOS_TOKEN, chat_renderer
from gatekeeper.tasks import vocab

MAX_LEN = 2048
TOKENS_PER_STEP = 3072
MICRO_BATCH_TOKENS = 4096  # padded tokens per forward pass
PASS_COST_TOKENS = 200  # a forward/backward pass's fixed cost, in padded tokens (measured: 100-300 best)
COPY_WARMUP_MAX = 0.4  # share of the run that may go to the copy warm-up
COPY_READY_LOSS = 1.0  # nats per copied token; from ~7.6 (guessing) it falls fast once heads form


@dataclass(frozen=True)
class Example:
    """One training sequence: token ids and the positions whose next token is supervised."""

    ids: list[int]
    targets: list[bool]  # targets[i]: predict ids[i + 1] from position i
    kind: str


class DataSource:
    """Builds the examples of one step from (seed, step)."""

    def __init__(self, tok: Tokenizer, seed: int, total_steps: int, weights: dict[str, float] | None = None) -> None:
        self.tok = tok
        self.seed = seed
        self.total_steps = total_steps
        self.weights = dict(weights or {})  # overrides of the main phase's family weights
        self.copy_ema: float | None = None  # running mean of the copy loss
        self.copy_ready_step: int | None = None  # first step after which the copy loss was low
        self.renderer = chat_renderer()
        self.im_start = tok.encode("<|im_start|>")[0]
        self.im_end = tok.encode(EOS_TOKEN)[0]
        self.assistant_head = tok.encode("<|im_start|>assistant\n")
        self.num_plain = tok.vocab_size - 3  # ids below this are ordinary (non-special) tokens
        self._sentence_cache: dict[str, list[int]] = {}

    def observe(self, step: int, copy_loss: float) -> None:
        """Feed a step's copy loss back. The losses are deterministic for a seed and thread
        count, so the step at which copying counts as learned is too."""
        if math.isnan(copy_loss):
            return
        self.copy_ema = copy_loss if self.copy_ema is None else 0.9 * self.copy_ema + 0.1 * copy_loss
        if self.copy_ready_step is None and self.copy_ema < COPY_READY_LOSS:
            self.copy_ready_step = step + 1

    def count_tokens(self, text: str) -> int:
        return len(self.tok.encode(text))

    # chat samples
    def chat_example(self, sample: tasks.Sample) -> Example:
        prompt = self.renderer.apply_chat_template(list(sample.messages), tools=list(sample.tools or []) or None)
        ids = self.tok.encode(prompt + sample.answer + EOS_TOKEN)[:MAX_LEN]
        targets = [False] * len(ids)
        head = self.assistant_head
        i = 0
        while i < len(ids):  # supervise every assistant turn, its end-of-turn token included
            if ids[i : i + len(head)] == head:
                j = i + len(head)
                while j < len(ids) and ids[j] != self.im_end:
                    targets[j - 1] = True
                    j += 1
                if j < len(ids):
                    targets[j - 1] = True
                i = j
            else:
                i += 1
        return Example(ids, targets, sample.family)

    # dense copy
    def _filler_tokens(self, rng: random.Random, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            s = vocab.filler_sentence(rng) + " "
            if s not in self._sentence_cache:
                self._sentence_cache[s] = self.tok.encode(s)
            out += self._sentence_cache[s]
        return out[:n]

    def _segment(self, rng: random.Random, n: int) -> list[int]:
        """n random ordinary tokens. (gk-tiny v4 drew some segments from 2-10 symbols, against
        the place loss in digit strings; counting and needles got worse, see the model README.)"""
        return [rng.randrange(self.num_plain) for _ in range(n)]

    def repeat_example(self, rng: random.Random, length: int) -> Example:
        """Random sequences each followed (after a short gap) by themselves; the loss is on every
        repeated token after the first. About half of all tokens are supervised: the densest
        signal there is for growing induction heads."""
        ids: list[int] = []
        targets: list[bool] = []
        short = length <= 128
        while len(ids) < length:
            seq = self._segment(rng, rng.randint(4, 24) if short else rng.randint(8, 96))
            gap = [rng.randrange(self.num_plain) for _ in range(rng.choice((0, 0, rng.randint(1, 16 if short else 64))))]
            ids += seq + gap + seq
            targets += [False] * (len(seq) + len(gap)) + [True] * (len(seq) - 1) + [False]
        return Example(ids[:length], targets[:length], "copy")

    def copy_example(self, rng: random.Random, length: int) -> Example:
        """Segments planted in a haystack, then all repeated (shuffled) at the end.

        Each repeat starts with the segment's first two tokens (the key, unsupervised); the rest
        is supervised. Haystack is random tokens or filler text.
        """
        m = max(1, length // 48)
        segs = [self._segment(rng, rng.randint(4, 24)) for _ in range(m)]
        tail = sum(len(s) for s in segs)
        hay_len = max(8, length - 2 * tail)
        hay = (self._filler_tokens(rng, hay_len) if rng.random() < 0.5
               else [rng.randrange(self.num_plain) for _ in range(hay_len)])
        cuts = sorted(rng.randrange(hay_len) for _ in range(m))
        ids: list[int] = []
        prev = 0
        for c, s in zip(cuts, segs):
            ids += hay[prev:c] + s
            prev = c
        ids += hay[prev:]
        targets = [False] * len(ids)
        order = list(range(m))
        rng.shuffle(order)
        for k in order:
            start = len(ids)
            ids += segs[k]
            targets += [False] * len(segs[k])
            for p in range(start + 1, len(ids) - 1):
                targets[p] = True  # position p predicts ids[p + 1]: tokens 3.. of the repeat
        return Example(ids[:MAX_LEN], targets[:MAX_LEN], "copy")

    # schedule
    def mix(self, step: int) -> tuple[float, dict[str, float], int]:
        """(share of step tokens spent on copy, family weights, longest needle) at `step`.

        Dense plain repeats until copying is learned (copy loss below COPY_READY_LOSS) or
        COPY_WARMUP_MAX of the run has passed; then the full mix with needles up to 1,024 tokens for at least 15%
        of the run and until half-way; then needles up to the full context.
        """
        frac = step / self.total_steps
        ready = self.copy_ready_step
        if ready is None and frac < COPY_WARMUP_MAX or ready is not None and step < ready:
            fam = {"echo": 4, "eos": 1, "arithmetic": 1, "multi_turn": 1, "multilingual": 1, "refusal": 0.3}
            return 0.85, fam, 0
        # Weighted towards what gk-tiny v1 (2,400 steps) got wrong: copying values into JSON and
        # tool arguments, arithmetic, recall; code, refusal and EOS were learned early and stay.
        # v2 (10,000 steps) still hallucinated JSON values and tool arguments and missed recalls at
        # round 10: those get more weight (the v3 experiment took JSON from 20% to 68%, tool calls
        # from 13% to 50%); code, multilingual, refusal and EOS were at target.
        fam = {"echo": 3, "arithmetic": 5, "json": 4, "tool_call": 4.5, "needle": 1.2, "multi_turn": 2.5,
               "long_output": 0.6, "code": 0.5, "multilingual": 1.5, "refusal": 0.3, "eos": 0.6}
        fam.update(self.weights)
        switched = min(ready if ready is not None else self.total_steps, COPY_WARMUP_MAX * self.total_steps)
        if frac < 0.5 or step < switched + 0.15 * self.total_steps:
            return 0.4, fam, 1024
        return 0.25, fam, MAX_LEN

    def step_examples(self, step: int) -> list[Example]:
        rng = random.Random(f"{self.seed}:{step}")
        copy_share, fam, longest = self.mix(step)
        out: list[Example] = []
        used = 0
        copy_budget = int(TOKENS_PER_STEP * copy_share)
        while used < copy_budget:
            if not longest:
                # While induction heads form: dense plain repeats in short rows. At initialisation
                # attention is spread evenly over the row, so the gradient towards the earlier copy
                # shrinks with row length: 512-token rows learned nothing in 650 steps, 64-token
                # rows start copying within 200.
                ex = self.repeat_example(rng, min(rng.randint(64, 128), copy_budget - used))
            else:
                length = int(math.exp(rng.uniform(math.log(96), math.log(MAX_LEN))))
                if used and used + length > copy_budget:
                    break  # the first copy example may overrun the share: long gaps must occur
                ex = self.copy_example(rng, length) if rng.random() < 0.75 else self.repeat_example(rng, length)
            out.append(ex)
            used += len(ex.ids)
        names, weights = list(fam), list(fam.values())
        while used < TOKENS_PER_STEP:
            family = rng.choices(names, weights)[0]
            kw: dict = {}
            if family == "needle":
                kw = {"context_tokens": int(math.exp(rng.uniform(math.log(64), math.log(longest)))),
                      "count_tokens": self.count_tokens}
            ex = self.chat_example(tasks.generate(family, rng, **kw))
            out.append(ex)
            used += len(ex.ids)
        return out


def micro_batches(examples: list[Example]) -> list[list[Example]]:
    """Group by length so that padded size stays under MICRO_BATCH_TOKENS (greedy; gk-tiny v2)."""
    out: list[list[Example]] = []
    cur: list[Example] = []
    for ex in sorted(examples, key=lambda e: len(e.ids)):
        if cur and len(ex.ids) * (len(cur) + 1) > MICRO_BATCH_TOKENS:
            out.append(cur)
            cur = []
        cur.append(ex)
    if cur:
        out.append(cur)
    return out


def least_cost_batches(examples: list[Example]) -> list[list[Example]]:
    """Split the step's examples, sorted by length, into the micro-batches that cost least.

    `micro_batches` (gk-tiny v2's recipe) pads 58-71% more tokens than real in the main phase;
    this picks the contiguous split of the sorted list that minimises padded tokens
    (weighted by row length, for attention) plus a fixed cost per forward pass, under
    MICRO_BATCH_TOKENS: 5-7% padding, 1.35x the training throughput (`benchmarks/train_batching.py`).
    Gradients are sums over examples, so the split changes float rounding only, but that is
    enough to make a run differ from one with the other split (`train --batching`).
    """
    ex = sorted(examples, key=lambda e: len(e.ids))
    lengths = [len(e.ids) for e in ex]
    best = [0.0] + [math.inf] * len(ex)  # best[j]: cheapest split of ex[:j]
    cut = [0] * (len(ex) + 1)
    for j in range(1, len(ex) + 1):
        t = lengths[j - 1]  # the longest row of any batch ending at j
        for i in range(j - 1, -1, -1):
            rows = j - i
            if rows > 1 and t * rows > MICRO_BATCH_TOKENS:
                break
            cost = best[i] + t * rows * (1 + t / MAX_LEN) + PASS_COST_TOKENS
            if cost < best[j]:
                best[j], cut[j] = cost, i
    out: list[list[Example]] = []
    j = len(ex)
    while j > 0:
        out.append(ex[cut[j]:j])
        j = cut[j]
    return out[::-1]


SPLITS = {"greedy": micro_batches, "least-cost": least_cost_batches}  # train --batching


def collate(batch: list[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """-> ids [B, T], mask [B, T] (position predicts a supervised token), targets [B, T]."""
    t = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), t), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), t), dtype=torch.bool)
    for b, e in enumerate(batch):
        ids[b, : len(e.ids)] = torch.tensor(e.ids)
        mask[b, : len(e.ids)] = torch.tensor(e.targets)
    mask[:, -1] = False
    targets = torch.roll(ids, -1, dims=1)
    return ids, mask, targets
