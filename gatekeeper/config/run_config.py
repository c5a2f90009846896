"""The run's configuration in layers: built-in defaults → run-config YAML → GATEKEEPER_*
environment → command-line flags, read through one table (`config/option_table.py`) so that
`--help` and the docs can list every option with where it may come from. `resolve` returns the
typed `RunOptions` and where each came from."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Mapping

from gatekeeper.config.option_table import BY_NAME, NOT_OPTIONS, OPTIONS
from gatekeeper.config.run_options import OptionSources, RunOptions
from gatekeeper.config.yaml_lines import load_yaml, line_of
from gatekeeper.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def resolve(config_path: str | None, env: Mapping[str, str], flags: Mapping[str, object]
            ) -> tuple[RunOptions, OptionSources]:
    """The effective options and, for each, the layer it came from ("default", the file, "env",
    "flag"). `flags`: the command's keyword arguments by option name (None or empty: not given).
    Every bad value is a ConfigError naming the file, line and key, the variable or the flag."""
    values: dict[str, object] = {o.name: o.default for o in OPTIONS}
    source = {o.name: "default" for o in OPTIONS}
    if config_path:
        data = load_yaml(config_path)
        if not isinstance(data, dict):
            raise ConfigError("a run config must be a YAML mapping", config_path, line_of(data))
        for key, value in data.items():
            opt = BY_NAME.get(str(key).replace("-", "_"))
            if opt is None:
                raise ConfigError(f"unknown option (known: {', '.join(BY_NAME)})", config_path, line_of(data, key), str(key))
            try:
                values[opt.name] = value if opt.name in ("reference", "candidate") else opt.value(value)
            except (ValueError, TypeError) as e:
                raise ConfigError(str(e), config_path, line_of(data, key), str(key)) from None
            source[opt.name] = config_path
    known = {o.env for o in OPTIONS} | set(NOT_OPTIONS)
    for name in sorted(k for k in env if k.startswith("GATEKEEPER_") and k not in known):
        near = difflib.get_close_matches(name, sorted(o.env for o in OPTIONS), n=1, cutoff=0.6)
        raise ConfigError(f"{name} is not a gatekeeper option" + (f"; did you mean {near[0]}?" if near else
                          f" (options: {', '.join(o.env for o in OPTIONS)})"))
    for opt in OPTIONS:
        if opt.env in env:
            try:
                values[opt.name] = opt.value(env[opt.env])
            except (ValueError, TypeError) as e:
                raise ConfigError(f"{opt.env}: {e}") from None
            source[opt.name] = "env"
    for name, value in flags.items():
        if value is None or value == () or value == []:
            continue
        opt = BY_NAME[name]
        try:
            values[name] = opt.value(list(value) if isinstance(value, tuple) else value)
        except (ValueError, TypeError) as e:
            raise ConfigError(f"{opt.flag_name}: {e}") from None
        source[name] = "flag"
    return RunOptions.from_values(values), OptionSources(source)


def find_file(path: str) -> Path:
    """A relative path from the working directory, else from the project root, else among the
    installed package's shipped files (the defaults `gates/default.yaml` and
    `golden_sets/core.yaml` are found in a checkout and in an installed wheel alike)."""
    from gatekeeper.shipped import SHIPPED

    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    for base in (REPO_ROOT, SHIPPED):
        if (base / p).exists():
            return base / p
    return p
