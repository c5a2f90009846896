"""Counting chat-prompt tokens and steering prompts to exact lengths.

Counts come from the target's `/tokenize` (vLLM's endpoint: chat messages in, token ids out,
the chat template applied) when a target has one. A target whose `/tokenize` refuses a request
(404/405/501, or a 4xx naming it: llama-cpp-python's server has none) is not asked again; its
counts come from then on from the engine's own `usage.prompt_tokens` of the same messages sent as
a one-token chat request, exact too, at the cost of a prefill each. A prompt the target refuses
that way (longer than its context) is counted at the tokens-per-character the earlier answers
showed; without an endpoint, or where the answers carry no usage, counts are estimated at about
four characters a token, and every report that uses them says "estimated". A transient failure
(a timeout, a 5xx left after the client's retries, a cut connection) is not a reason to size
prompts by guesswork: it propagates, and the gate ERRORs with its class.

Steering pads a prompt with plain words whose token cost is measured, not assumed (" the" is one
token in most vocabularies, two where spaces are tokens of their own, with "." to make up an odd
count), so a prompt can be placed at B·k−1, B·k or B·k+1 tokens.
"""

from __future__ import annotations

from collections.abc import Callable

from gatekeeper.endpoints.chat_types import ChatMessage
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError

Messages = list[ChatMessage]
PAD_WORDS = (" the", " and", " a")
PAD_TAILS = (".", ",", ";")
_PROBE_BASE = "Padding probe: the river and the bridge."
_PROBE_REPS = 7


class TokenCounter:
    """Token counts of chat prompts (generation prompt included) through one endpoint's
    `/tokenize`, else its chat answers' `usage.prompt_tokens` (`by_usage`), else an estimate."""

    def __init__(self, endpoint: Endpoint | None) -> None:
        self.endpoint = endpoint
        self.estimated = endpoint is None
        self.why_estimated = "no target exposes /tokenize" if endpoint is None else ""
        self.by_usage = False  # counting through one-token chat requests: the target has no /tokenize
        self.calls = 0
        self._units: tuple[str, int, str | None] | None = None
        self._unit_probed = False
        self._seen = [0, 0]  # characters and tokens of the prompts counted by usage: the scale for a refused one
        self.why_tokenize = ""

    @classmethod
    def by_usage_of(cls, endpoint: Endpoint, why: str) -> TokenCounter:
        """A counter that asks `endpoint` for usage.prompt_tokens from the start (`why`: why not /tokenize,
        e.g. "no target exposes /tokenize")."""
        counter = cls(endpoint)
        counter.by_usage, counter.why_tokenize = True, why
        return counter

    def count(self, messages: Messages) -> int:
        """Tokens the engine will see for these messages (EndpointError on a transient failure)."""
        if self.endpoint is not None and not self.by_usage:
            try:
                self.calls += 1
                return len(self.endpoint.tokenize(messages=messages))
            except EndpointError as e:
                if not (e.refusal or e.kind == "unsupported"):
                    raise
                self.by_usage = True
                status = f", HTTP {e.status}" if e.status else ""
                self.why_tokenize = f"/tokenize refused a request ({e.kind}{status}: {e.detail[:80]})"
        if self.endpoint is not None:
            return self._by_usage(messages)
        return estimate(messages)

    def _by_usage(self, messages: Messages) -> int:
        """The engine's own count: the messages as a one-token chat request, its usage.prompt_tokens."""
        assert self.endpoint is not None
        chars = sum(len(str(m.get("content") or "")) for m in messages)
        try:
            self.calls += 1
            n = self.endpoint.chat(messages, max_tokens=1).prompt_tokens
        except EndpointError as e:
            if not e.refusal:
                raise
            seen_chars, seen_tokens = self._seen  # refused (longer than the context): scaled by what was seen
            return estimate(messages) if not seen_chars else round(chars * seen_tokens / seen_chars) + 1
        if n is None:
            self.endpoint, self.estimated, self.by_usage = None, True, False
            self.why_estimated = self.why_tokenize + "; its chat answers report no usage.prompt_tokens"
            return estimate(messages)
        self._seen[0] += chars
        self._seen[1] += n
        return n

    @property
    def source(self) -> str:
        """Where the counts come from, for the gate's notes."""
        if self.endpoint is None:
            return f"estimated: {self.why_estimated}"
        if self.by_usage:
            return f"from {self.endpoint.role}'s usage.prompt_tokens of one-token chat requests ({self.why_tokenize})"
        return f"from {self.endpoint.role}'s /tokenize"

    def _grows(self, text: str, extra: str) -> int:
        base = self.count([{"role": "user", "content": text}])
        return self.count([{"role": "user", "content": text + extra}]) - base

    def pad_units(self) -> tuple[str, int, str | None] | None:
        """(word, its tokens per repetition, a one-token remainder or None), measured once: padding
        is plain words (" the the the."), since runs of punctuation leak into a small model's
        answers (codes like "GK-8399" contain dashes). None when nothing adds a fixed count."""
        if not self._unit_probed:
            self._unit_probed = True
            if not self.estimated:
                for word in PAD_WORDS:
                    cost, rest = divmod(self._grows(_PROBE_BASE, word * _PROBE_REPS), _PROBE_REPS)
                    if rest or cost not in (1, 2):
                        continue
                    if cost == 1:
                        self._units = (word, 1, None)
                        break
                    tail = next((t for t in PAD_TAILS if self._grows(_PROBE_BASE + word * 3, t) == 1), None)
                    if tail is not None:
                        self._units = (word, 2, tail)
                        break
        return self._units

    def pad(self, n: int) -> str:
        """Padding of `n` tokens (as measured at the end of a message)."""
        units = self.pad_units()
        if units is None or n <= 0:
            return ""
        word, cost, tail = units
        return word * (n // cost) + (tail or "") * (n % cost)

    def fit(self, build: Callable[[str], Messages], target: int, tries: int = 4) -> tuple[Messages, int, bool]:
        """Messages of exactly `target` tokens where possible: `build(pad)` must put `pad` at the
        end of some message's text. Returns (messages, count, exact)."""
        units = self.pad_units()
        messages = build("")
        n = self.count(messages)
        if units is None or n > target:
            return messages, n, n == target and not self.estimated
        reps = target - n
        for _ in range(tries):
            messages = build(self.pad(reps))
            n = self.count(messages)
            if n == target:
                return messages, n, not self.estimated
            reps = max(0, reps + target - n)
        return messages, n, False


def estimate(messages: Messages) -> int:
    """About four characters a token, plus the chat template's few tokens per message."""
    return sum(len(str(m.get("content") or "")) // 4 + 4 for m in messages) + 3
