"""The bisect log (`bisect-log.jsonl` in the output directory): a header naming the search, then
one line per judged build. `gatekeeper bisect --resume` reads it back and goes on where it
stopped; a log of another search (other builds, range, template or checks) is refused."""

from __future__ import annotations

import json
from pathlib import Path

from gatekeeper.json_types import JsonObject
from gatekeeper.bisect.step import StepResult
from gatekeeper.errors import ConfigError

FORMAT = "gatekeeper.bisect-log/1"
NAME = "bisect-log.jsonl"


def header(builds: list[str], good: int, bad: int, template: str, checks: tuple[str, ...]) -> JsonObject:
    """The log's first line: what is searched."""
    return {"format": FORMAT, "builds": builds, "good": good, "bad": bad, "template": template, "checks": list(checks)}


def start(out: Path, head: JsonObject, resume: bool) -> list[StepResult]:
    """Open the log: a new one (refusing to overwrite another search's without --resume), or the
    steps already judged when resuming the same search."""
    path = out / NAME
    if not path.is_file():
        if resume:
            raise ConfigError(f"there is no bisect log to resume in {out}", key="--resume")
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(head) + "\n", encoding="utf-8")
        return []
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        first = json.loads(lines[0])
    except (ValueError, IndexError):
        raise ConfigError(f"{path} is not a bisect log", key="--out") from None
    if not resume:
        raise ConfigError(f"{path} holds a bisect already: resume it with --resume, or choose another --out", key="--out")
    if first != head:
        changed = [k for k in head if first.get(k) != head[k]]
        raise ConfigError(f"{path} is the log of another search (its {', '.join(changed)} differ)", key="--resume")
    steps = []
    for line in lines[1:]:
        try:
            steps.append(StepResult.from_json(json.loads(line)))
        except (ValueError, KeyError):
            break  # a torn last line: that step is judged again
    return steps


def append(out: Path, step: StepResult) -> None:
    """One judged build, appended (and flushed) as soon as it is judged."""
    with (out / NAME).open("a", encoding="utf-8") as f:
        f.write(json.dumps(step.to_json()) + "\n")
