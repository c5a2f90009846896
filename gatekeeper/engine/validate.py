"""Validate a bundled target's engine options and faults without starting it (torch-free).

    echo '{"profile": "optimized", "options": {"dtype": "bf17"}, "faults": ["bogus"]}' | python -m gatekeeper.engine.validate

Prints one JSON object: {"error": null} or {"error": "<what is wrong>"}. The gate side runs this
in a subprocess at plan time (it never imports the engine), so a bad `--candidate-opt` or
`--candidate-fault` is exit 3 before any engine starts, with the engine's own message.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from typing import Any

from gatekeeper.engine.engine_args import EngineArgs
from gatekeeper.engine.errors import EngineOptionError
from gatekeeper.engine.faults import FaultSet

_NOT_OPTIONS = {"model", "profile", "faults"}  # set by the target's own keys, not as engine options


def _typed(field: dataclasses.Field, raw: str) -> Any:
    kind = str(field.type)
    if "bool" in kind:
        if raw.lower() in ("true", "1", "yes", "on"):
            return True
        if raw.lower() in ("false", "0", "no", "off"):
            return False
        raise EngineOptionError(f"{field.name}={raw!r}: must be true or false")
    if "int" in kind:
        try:
            return int(raw)
        except ValueError:
            raise EngineOptionError(f"{field.name}={raw!r}: must be an integer") from None
    return raw


def check(profile: str, options: dict[str, str], faults: list[str]) -> str | None:
    """What is wrong with these engine options and faults, or None."""
    fields = {f.name: f for f in dataclasses.fields(EngineArgs) if f.name not in _NOT_OPTIONS}
    try:
        kwargs: dict[str, Any] = {}
        for name, raw in options.items():
            key = name.replace("-", "_")
            if key not in fields:
                near = difflib.get_close_matches(key, list(fields), n=1)
                raise EngineOptionError(f"unknown engine option {name!r}" + (f"; did you mean {near[0]!r}?" if near else
                                        f" (known: {', '.join(sorted(fields))})"))
            kwargs[key] = _typed(fields[key], str(raw))
        EngineArgs(model="<checkpoint>", profile=profile, faults=FaultSet.parse(faults), **kwargs)
    except EngineOptionError as e:
        return str(e)
    return None


def main() -> None:
    """Read the request on stdin, print the answer."""
    request = json.load(sys.stdin)
    print(json.dumps({"error": check(request.get("profile", "optimized"), request.get("options") or {},
                                     request.get("faults") or [])}))


if __name__ == "__main__":
    main()
