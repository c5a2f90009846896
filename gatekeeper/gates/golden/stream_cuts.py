"""Streams a server cuts short at random: `golden.stream_cuts`, the candidate's rate against the reference's.

A cut stream ends (`data: [DONE]`) with no choice carrying `finish_reason`, and what it streamed is
the beginning of the non-streamed answer to the same request (often nothing at all). Some servers
cut streams not for a given request but at random: llama-cpp-python's server, by default
(`interrupt_requests`), ends the stream it is serving as soon as another request waits for the model.
Judged case by case, each cut is blamed on whichever target it fell on, so two servers of one build
ROLLBACK each other. So when the candidate's stream variants show a cut, the reference streams every
stream-variant case too, at the same concurrency, and the cuts are judged as a rate:

- the reference cuts none of its streams: the candidate's cuts are its own, and each case's `.stream`
  check judges its difference as before (a FAIL where the reference's stream of that case is whole);
- the reference cuts some: the behaviour is the server's, on both sides, and each cut case's `.stream`
  check is a WARN pointing here; `golden.stream_cuts` compares the candidate's share of cut streams
  with the reference's by Fisher's exact test, one-sided (scipy.stats.fisher_exact,
  alternative="greater"): FAIL when the candidate cuts more beyond chance at `ALPHA`, PASS otherwise.
  One pass over a golden set holds a handful of stream variants (8 in the default set), too few for
  any count to be beyond chance when the reference cuts half of them; so once both targets have cut,
  each streams every stream-variant case both answered again, one request at a time, in alternating
  order, until each side holds at least `MIN_STREAMS` streams (`extra_rounds`), a number fixed before
  any count is read. One at a time: a server that cuts the stream it serves when another request
  waits cuts none of these, so a candidate that cuts streams on its own stands out (the first pass,
  at the gate's concurrency, is where cuts under load show). Where the reference cannot be asked
  again (a recorded baseline), or the reference cuts so many that no count could be beyond chance,
  the check is undecided, not a PASS.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatekeeper.endpoints.responses import ChatResponse

ALPHA = 0.01  # one blocking test per run, and only where both targets cut streams
MIN_STREAMS = 48
"""Streams per side the rate is judged over once both cut: with the reference cutting a quarter of
them, a candidate cutting 61% is caught with 95% probability at `ALPHA`."""
MAX_ROUNDS = 12
"""Passes over the stream variants at most, the first included (a set with few stream variants stays
below `MIN_STREAMS`, and may be undecided)."""


def extra_rounds(cases: int) -> int:
    """Further passes over `cases` stream variants that bring each side to `MIN_STREAMS` streams,
    `MAX_ROUNDS` passes in all at most."""
    return min(MAX_ROUNDS, -(-MIN_STREAMS // max(cases, 1))) - 1


def is_cut(streamed: ChatResponse, plain: ChatResponse) -> bool:
    """Whether a stream was cut short: no finish_reason where the non-streamed answer has one, and
    the streamed text and tool calls are a beginning of the non-streamed answer's."""
    if streamed.finish_reason is not None or plain.finish_reason is None:
        return False
    calls = [c.name for c in streamed.tool_calls]
    return plain.text.startswith(streamed.text) and calls == [c.name for c in plain.tool_calls][:len(calls)]


@dataclass(frozen=True)
class CutRates:
    """Cut streams per target among the stream-variant cases both of whose answers each target gave:
    `candidate_cut` of `candidate_streams`, `reference_cut` of `reference_streams`."""

    candidate_cut: int
    candidate_streams: int
    reference_cut: int
    reference_streams: int

    @property
    def shared(self) -> bool:
        """Whether both targets cut streams: the server's behaviour, judged as a rate, not per case."""
        return self.candidate_cut > 0 and self.reference_cut > 0

    def p_value(self) -> float:
        """One-sided Fisher's exact test: the candidate cuts a larger share than the reference."""
        from scipy.stats import fisher_exact  # scipy.stats when a gate judges, not when a plan is made

        table = [[self.candidate_cut, self.candidate_streams - self.candidate_cut],
                 [self.reference_cut, self.reference_streams - self.reference_cut]]
        return float(fisher_exact(table, alternative="greater")[1])

    def describe(self) -> str:
        """Both shares, in words."""
        return (f"the candidate cut {self.candidate_cut} of {self.candidate_streams} streams short (no finish_reason, "
                f"the answer's beginning or nothing), the reference {self.reference_cut} of {self.reference_streams}")


def count_cuts(pairs: list[tuple[ChatResponse, ChatResponse] | None]) -> tuple[int, int]:
    """(cut, streams) over (streamed, plain) pairs; None where a side failed to answer."""
    answered = [p for p in pairs if p is not None]
    return sum(is_cut(s, p) for s, p in answered), len(answered)
