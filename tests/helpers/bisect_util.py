"""A synthetic build history of the bundled engine for `gatekeeper bisect`: build k is a file of
`gatekeeper serve` arguments (a fault switched on from some build on), and the launch template
starts the engine with the build's arguments, as a real template starts a release."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from paths import ROOT

GK_TINY = ROOT / "gatekeeper" / "models" / "gk-tiny"


def synthetic_history(directory: Path, n: int, first_bad: int | None, fault: str,
                      broken: tuple[int, ...] = ()) -> tuple[list[str], str]:
    """(builds b00…, launch template): builds from `first_bad` on carry `fault` (None: a clean
    history); builds in `broken` die at startup (the optional-import fault), as a build that
    does not install or start."""
    directory.mkdir(parents=True, exist_ok=True)
    builds = []
    for k in range(n):
        name = f"b{k:02d}"
        args = ["--profile", "optimized"]
        if first_bad is not None and k >= first_bad:
            args += ["--fault", fault]
        if k in broken:
            args += ["--fault", "optional-import"]
        (directory / name).write_text(" ".join(args) + "\n")
        builds.append(name)
    serve = f"exec {shlex.quote(sys.executable)} -m gatekeeper.cli serve --model {shlex.quote(str(GK_TINY))} --port {{port}}"
    template = f"sh -c '{serve} $(cat {shlex.quote(str(directory))}/{{build}})'"
    return builds, template
