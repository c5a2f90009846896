"""`gatekeeper golden record`: start (or reach) one target and snapshot its golden answers."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.config.run_config import find_file
from gatekeeper.errors import ConfigError, TargetError
from gatekeeper.golden.baseline import record_baseline
from gatekeeper.golden.golden_set import load_golden_set
from gatekeeper.targets.served import served_model
from gatekeeper.targets.spec import make_target, parse_target


def record_target(target: str, golden_path: str, out_path: str, model: str | None = None) -> int:
    """Record the target's answers to every case; returns the number of cases written."""
    spec = parse_target(target, "--target")
    if model:
        if spec.kind != "bundled":
            raise ConfigError("--model applies to a bundled target only", key="--model")
        spec = replace(spec, model=str(find_file(model).resolve()))
    golden = load_golden_set(find_file(golden_path))
    tgt = make_target("reference", spec)
    with tempfile.TemporaryDirectory() as log_dir:
        started = tgt.start(log_dir)
        try:
            if not started.ready:
                raise TargetError(f"{spec.describe()} did not start: {started.error}")
            ep = Endpoint("reference", started.base_url, served_model(started.base_url, spec, tgt.api_key()), tgt.api_key())
            try:
                record_baseline(ep, golden, Path(out_path))
            finally:
                ep.close()
        finally:
            tgt.stop()
    return len(golden.cases)
