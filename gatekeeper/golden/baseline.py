"""Baselines: a reference's answers to a golden set, snapshotted to JSONL.

`gatekeeper golden record --target T --out golden_sets/baselines/NAME.jsonl` calls
`record_baseline`, so later runs can judge a candidate against the trusted engine's answers
without that engine running (set the golden gate's `baseline` setting to the file).

Each case is answered twice, at two concurrencies and in opposite orders (`gatekeeper/stats/noise.py`,
so the batch composition differs), which keeps the noise floor in the file: answers that differ between the two passes mark a case on
which even the reference disagrees with itself. Stream variants are recorded once.

Format (one JSON object per line): a header
`{"format": "gatekeeper-golden-baseline/1", "golden_set", "version", "model", "target",
"recorded_at", "num_cases"}`, then per case `{"case": ID, "answers": [ANSWER, ANSWER],
"stream": ANSWER | null, "error": str | null}` where ANSWER is
`{"text", "tool_calls": [{"name", "arguments", "id"}], "finish_reason", "prompt_tokens",
"completion_tokens"}`. The file is written atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import ConfigError, EndpointError
from gatekeeper.endpoints.fanout import fan_out
from gatekeeper.golden.golden_set import GoldenSet
from gatekeeper.golden.request import ask
from gatekeeper.stats.noise import ask_twice
from gatekeeper.endpoints.responses import ChatResponse, ToolCall

FORMAT = "gatekeeper-golden-baseline/1"


@dataclass(frozen=True)
class Baseline:
    """A loaded baseline: header facts, and per case the recorded answers (one or more passes)
    and the streamed answer (if recorded). Cases whose recording failed map to their error."""

    path: str
    golden_set: str
    version: str
    model: str
    answers: dict[str, tuple[ChatResponse, ...]] = field(default_factory=dict)
    stream: dict[str, ChatResponse] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def response_to_dict(r: ChatResponse) -> dict[str, Any]:
    """The recorded form of an answer."""
    return {"text": r.text, "tool_calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in r.tool_calls],
            "finish_reason": r.finish_reason, "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens}


def response_from_dict(d: dict[str, Any], streamed: bool = False) -> ChatResponse:
    """An answer back from its recorded form (KeyError/TypeError on a malformed record)."""
    calls = tuple(ToolCall(c["name"], c["arguments"], c.get("id")) for c in d.get("tool_calls") or [])
    return ChatResponse(text=d["text"], tool_calls=calls, finish_reason=d.get("finish_reason"),
                        prompt_tokens=d.get("prompt_tokens"), completion_tokens=d.get("completion_tokens"), streamed=streamed)


def record_baseline(endpoint: Endpoint, golden_set: GoldenSet, out_path: str | Path, concurrency: int = 4,
                    noise_floor_concurrency: int = 1, stream_variants: bool = True) -> Path:
    """Answer every case of `golden_set` on `endpoint` (greedy) twice, at `concurrency` and at
    `noise_floor_concurrency`, plus the stream variants, and write the baseline JSONL atomically.
    A case whose request fails is recorded with its error (and no answers). Returns the path."""
    cases = list(golden_set.cases)
    passes = ask_twice(lambda case: ask(endpoint, case), cases, concurrency, max(1, noise_floor_concurrency))
    first, second = passes.first, passes.second or passes.first
    streamed_cases = [c for c in cases if c.stream_variant] if stream_variants else []
    streamed = dict(zip((c.id for c in streamed_cases), fan_out(lambda case: ask(endpoint, case, stream=True),
                                                                 streamed_cases, concurrency)))
    lines = [{"format": FORMAT, "golden_set": golden_set.name, "version": golden_set.version, "model": endpoint.model,
              "target": endpoint.base_url, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "num_cases": len(cases)}]
    for case, a, b in zip(cases, first, second):
        error = next((str(x) for x in (a, b) if isinstance(x, EndpointError)), None)
        answers = [] if error else [response_to_dict(a), response_to_dict(b)]  # type: ignore[arg-type]
        s = streamed.get(case.id)
        lines.append({"case": case.id, "answers": answers,
                      "stream": response_to_dict(s) if isinstance(s, ChatResponse) else None, "error": error})
    out = Path(out_path)
    _write_atomic(out, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return out


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline JSONL; ConfigError (file:line) when it is not one."""
    p = Path(path)
    try:
        raw_lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ConfigError(f"cannot read baseline: {e.strerror or e}", str(p)) from None
    records = []
    for n, line in enumerate(raw_lines, 1):
        if line.strip():
            try:
                records.append((n, json.loads(line)))
            except ValueError as e:
                raise ConfigError(f"not JSON: {e}", str(p), n) from None
    if not records or not isinstance(records[0][1], dict) or records[0][1].get("format") != FORMAT:
        raise ConfigError(f"not a golden baseline (the first line must have format {FORMAT!r})", str(p), 1, "format")
    head = records[0][1]
    base = Baseline(str(p), str(head.get("golden_set", "")), str(head.get("version", "")), str(head.get("model", "")))
    for n, rec in records[1:]:
        try:
            case = rec["case"]
            if rec.get("error"):
                base.errors[case] = str(rec["error"])
                continue
            base.answers[case] = tuple(response_from_dict(a) for a in rec["answers"])
            if rec.get("stream"):
                base.stream[case] = response_from_dict(rec["stream"], streamed=True)
        except (KeyError, TypeError) as e:
            raise ConfigError(f"malformed case record ({type(e).__name__}: {e})", str(p), n) from None
    return base
