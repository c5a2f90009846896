"""The evidence beside a check that a failed request decided: where the request stood.

`request_evidence(error)` turns an `EndpointError`'s `RequestFacts` (kept by the recording endpoint
that saw it fail) into a table — the target, the gate, what was asked, when it was sent, how long
it ran, the transient answers retried first, the error, where the answer file holds it, what a
broken stream had delivered, and whether the target was alive before and after — and the lines the
target's log gained while the request was in flight. An error without facts (one
made by a gate, not by a request) has no such evidence.
"""

from __future__ import annotations

from collections.abc import Iterable

from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Evidence, Log, Table

MAX_SHOWN = 2  # a check several failed requests decided shows the first two
MAX_PARTIAL = 400  # characters of a broken stream's partial answer shown (its end: where it broke)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_PARTIAL else "…" + text[-(MAX_PARTIAL - 1):]


def request_evidence(errors: Iterable[EndpointError]) -> tuple[Evidence, ...]:
    """The first MAX_SHOWN failed requests' facts and log lines, key evidence first."""
    out: list[Evidence] = []
    for error in [e for e in errors if e.facts is not None][:MAX_SHOWN]:
        f = error.facts
        assert f is not None
        rows = [("target", f.role), ("gate", f.gate), ("request", f.request), ("sent (UTC)", f.started_at),
                ("failed after", f"{f.elapsed_s:.2f} s"), ("transient answers retried first", str(f.retries)),
                ("error", str(error)[:400]), ("recorded in", f"answers/{f.role}.jsonl: key {f.key}, occurrence {f.occurrence}")]
        if f.partial:
            rows.append(("delivered before it broke", _clip(f.partial)))
        rows += [(name, text) for name, text in (("alive before", f.before), ("alive after", f.after)) if text]
        out.append(Table(f"the failed request ({f.role})", ("fact", "value"), tuple(rows), is_key=True))
        if f.log:
            out.append(Log(f"the {f.role}'s log while the request was in flight", f.log))
    return tuple(out)
