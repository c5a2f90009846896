"""The ordered builds a bisect searches: a comma-separated list, a file (one build a line, `#`
comments), or `pip:PACKAGE` — the package's released versions from the package index (`pip index
versions`), oldest first, each as `PACKAGE==VERSION`. A build is any string the launch template
takes as `{build}`: a version, a commit, a container tag."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

from gatekeeper.errors import ConfigError

_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def read_builds(spec: str) -> list[str]:
    """The builds `spec` names, in order (ConfigError when none, or one is listed twice)."""
    if spec.startswith("pip:"):
        builds = package_versions(spec[4:])
    elif Path(spec).is_file():
        lines = Path(spec).read_text(encoding="utf-8").splitlines()
        builds = [line.split("#", 1)[0].strip() for line in lines]
        builds = [b for b in builds if b]
    else:
        builds = [b.strip() for b in spec.split(",") if b.strip()]
    if len(builds) < 2:
        raise ConfigError(f"names {len(builds)} build(s); a bisect needs at least a good and a bad one", key="--builds")
    twice = sorted({b for b in builds if builds.count(b) > 1})
    if twice:
        raise ConfigError(f"lists {', '.join(twice)} more than once", key="--builds")
    return builds


def package_versions(package: str) -> list[str]:
    """`PACKAGE==V` for each released version the index lists, oldest first."""
    if not _PACKAGE.fullmatch(package):
        raise ConfigError(f"{package!r} is not a package name", key="--builds")
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package], capture_output=True, text=True,
                          timeout=120, check=False)
    found = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or not found:
        raise ConfigError(f"the package index lists no versions of {package} ({(done.stderr or done.stdout).strip()[-200:]})",
                          key="--builds")
    versions = []
    for v in found.group(1).split(","):
        try:
            versions.append(Version(v.strip()))
        except InvalidVersion:
            continue
    return [f"{package}=={v}" for v in sorted(versions)]


def range_of(builds: list[str], good: str, bad: str) -> tuple[int, int]:
    """The indices of the good and the bad build (a version alone matches `PACKAGE==VERSION`)."""
    def index(name: str, key: str) -> int:
        for i, b in enumerate(builds):
            if b == name or b.endswith(f"=={name}"):
                return i
        raise ConfigError(f"{name!r} is not among the {len(builds)} builds ({builds[0]} … {builds[-1]})", key=key)

    g, b = index(good, "--good"), index(bad, "--bad")
    if g >= b:
        raise ConfigError(f"the good build {good!r} must come before the bad build {bad!r} in the list", key="--good")
    return g, b
