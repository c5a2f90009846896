"""An assistant answer in comparable form: text plus tool calls, as one readable string.

Reference comparison, stream-versus-non-stream agreement and the report's side-by-side text all
need one canonical rendering of a chat response: the text, stripped, followed by each tool call
as `name(arguments)` with the arguments re-serialised from their decoded JSON (sorted keys), so
two answers that differ only in argument whitespace or key order compare equal, and arguments
that are not JSON show up verbatim. A side-by-side pair shows both answers' parallel calls in
one canonical order (`render_pair`, `call_order.py`), so a pure order swap shows no difference.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gatekeeper.endpoints.responses import ChatResponse, ToolCall
from gatekeeper.golden.call_order import CANONICAL_NOTE, in_canonical_order

_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)\n?```", re.S)


def strip_fences(text: str) -> str:
    """The body of the first Markdown code fence (models often wrap code or JSON in one, with a
    sentence around it), or the whole text stripped when there is none."""
    m = _FENCE.search(text)
    return m.group(1).strip() if m else text.strip()


def clip(text: str, limit: int = 80) -> str:
    """`repr` of text, cut to `limit` characters with an ellipsis: for one-line reasons."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def render_calls(response: ChatResponse) -> list[str]:
    """Each tool call as `name(args)`, args canonical JSON when they parse, raw otherwise."""
    return [_render_call(call) for call in response.tool_calls]


def _render_call(call: ToolCall) -> str:
    parsed = call.parsed
    args = call.arguments if parsed is None else json.dumps(parsed, sort_keys=True, ensure_ascii=False)
    return f"{call.name}({args})"


def render_answer(response: ChatResponse) -> str:
    """Text then tool calls, one per line: what similarity is computed on and judgements compare."""
    return "\n".join([response.text.strip(), *render_calls(response)]).strip()


def render_pair(reference: ChatResponse, candidate: ChatResponse) -> tuple[str, str]:
    """Both answers as `render_answer` renders them, for a side-by-side text: where both made
    more than one call, the calls in canonical order on both sides, and a last line saying so when
    that moved any (`call_order.py`). For the report only: judging keeps `render_answer`."""
    ref_calls, cand_calls, moved = in_canonical_order(reference.tool_calls, candidate.tool_calls,
                                                      lambda c: (c.name, c.arguments))
    note = [CANONICAL_NOTE] if moved else []

    def shown(response: ChatResponse, calls: list[ToolCall]) -> str:
        return "\n".join([response.text.strip(), *map(_render_call, calls), *note]).strip()

    return shown(reference, ref_calls), shown(candidate, cand_calls)


def answer_key(response: ChatResponse, as_json: bool = False) -> Any:
    """A value equal for two answers that mean the same: tool names with decoded arguments, and
    the text (decoded JSON when `as_json` and it parses, so formatting does not matter)."""
    calls = tuple((c.name, _freeze(c.parsed) if c.parsed is not None else ("<not json>", c.arguments))
                  for c in response.tool_calls)
    text: Any = response.text.strip()
    if as_json:
        try:
            text = ("<json>", _freeze(json.loads(strip_fences(response.text))))
        except ValueError:
            pass
    return (text, calls)


def _freeze(value: Any) -> Any:
    """Hashable, order-insensitive for objects, type-preserving (True is not 1)."""
    if isinstance(value, dict):
        return ("{}", tuple(sorted((k, _freeze(v)) for k, v in value.items())))
    if isinstance(value, list):
        return ("[]", tuple(_freeze(v) for v in value))
    return (type(value).__name__, value)
