"""What both execution paths share: request bookkeeping, sampling and stop checks per step."""

from __future__ import annotations

import torch

from gatekeeper.engine.engine_args import EngineArgs
from gatekeeper.engine.errors import RequestError
from gatekeeper.engine.grammar import Grammars
from gatekeeper.engine.model import CausalLM
from gatekeeper.engine.outputs import TokenLogprob
from gatekeeper.engine.sampler import prompt_logprobs, sample
from gatekeeper.engine.sequence import Sequence, SequenceStatus, StepOutput, check_stop


class EngineCore:
    """Base of the reference and optimized cores: `add`, `abort`, `step`, `stats`.

    Subclasses schedule and run the model; this class turns logits into tokens, records
    logprobs and decides when a sequence stops.
    """

    def __init__(self, model: CausalLM, args: EngineArgs, eos_token_ids: list[int], max_model_len: int) -> None:
        self.model = model
        self.args = args
        self.eos_token_ids = frozenset(eos_token_ids)
        self.max_model_len = max_model_len
        self.honour_eos = True
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.sequences: dict[str, Sequence] = {}
        self.grammars: Grammars | None = None  # set by the builder
        self.misalign_grammar = False  # the grammar-mask-misalign fault (optimized path only)
        self.close_call_shift = 0.0  # the close-call-shift fault, nats (optimized path only)

    def add(self, seq: Sequence) -> None:
        """Accept a new sequence (with a fresh grammar matcher when its output is constrained)."""
        if seq.params.grammar is not None:
            if self.grammars is None:
                raise RequestError("this engine has no grammar backend")
            seq.matcher = self.grammars.matcher(seq.params.grammar)
        self.sequences[seq.request_id] = seq
        self.prompt_tokens_total += seq.num_prompt_tokens
        self._enqueue(seq)

    def abort(self, request_id: str) -> None:
        """Drop a sequence wherever it is and free what it holds."""
        seq = self.sequences.pop(request_id, None)
        if seq is not None:
            self._release(seq)

    def has_unfinished(self) -> bool:
        """Whether any sequence is waiting or running."""
        return bool(self.sequences)

    def _postprocess(
        self,
        seqs: list[Sequence],
        logits: torch.Tensor,
        prompt_rows: dict[int, torch.Tensor],
        decode_step: bool,
    ) -> list[StepOutput]:
        """Sample one token per sequence from logits [S, V]; `prompt_rows` maps a row index to
        that sequence's prompt logits [T, V] when it asked for prompt logprobs."""
        tokens, records = sample(logits, seqs, sorted(self.eos_token_ids), self.misalign_grammar, self.close_call_shift)
        outputs = []
        for i, (seq, tid, rec) in enumerate(zip(seqs, tokens, records)):
            plp: list[TokenLogprob | None] | None = None
            if i in prompt_rows:
                lp = torch.log_softmax(prompt_rows[i].float(), dim=-1)
                plp = prompt_logprobs(lp, seq.prompt_token_ids, seq.params.prompt_logprobs or 0)
                seq.prompt_logprobs_done = True
            seq.num_computed_tokens = len(seq)
            seq.token_ids.append(tid)
            self.generation_tokens_total += 1
            check_stop(seq, tid, self.eos_token_ids, self.max_model_len, honour_eos=self.honour_eos or not decode_step)
            if seq.finish_reason is None and seq.matcher is not None and seq.matcher.is_stopped():
                seq.finish_reason, seq.status = "stop", SequenceStatus.FINISHED  # the grammar allows nothing more
            outputs.append(StepOutput(seq, tid, rec, plp))
            self._after_token(seq)
            if seq.finish_reason is not None:
                self.sequences.pop(seq.request_id, None)
                self._release(seq)
        return outputs

    # Subclass hooks.
    def _enqueue(self, seq: Sequence) -> None:
        raise NotImplementedError

    def _release(self, seq: Sequence) -> None:
        raise NotImplementedError

    def _after_token(self, seq: Sequence) -> None:
        """Called once a token is appended (the optimized core registers full blocks here)."""

    def step(self) -> list[StepOutput]:
        """Run one model step; returns one output per sequence that advanced."""
        raise NotImplementedError

    def stats(self) -> dict[str, float]:
        """Counters and gauges for /metrics."""
        raise NotImplementedError
