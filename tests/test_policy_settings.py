"""Typed gate settings: the policy loader builds each gate's Settings and names file:line:key for
every value it refuses; a renamed key's error names the new one."""

from __future__ import annotations

import pytest

from gatekeeper.config.policy import load_policy
from gatekeeper.errors import ConfigError
from gatekeeper.gates.longctx.settings import LongContextSettings
from gatekeeper.gates.numerics.settings import NumericsSettings
from gatekeeper.gates.registry import settings_types


def _load(tmp_path, body: str):
    path = tmp_path / "policy.yaml"
    path.write_text("version: 1\ngates:\n" + body)
    return load_policy(path, settings_types())


@pytest.mark.parametrize("body,message", [
    ("  numerics:\n    noise_concurrency: 1\n", r"policy.yaml:4: gates.numerics.noise_concurrency: unknown setting .*renamed to "
                                             r"noise_floor_concurrency"),
    ("  numerics:\n    noise_floor_concurrency: 0\n", r"policy.yaml:4: gates.numerics.noise_floor_concurrency: must be at least 1"),
    ("  longctx:\n    needle_depths: [0.5, 2.0]\n", r"policy.yaml:4: gates.longctx.needle_depths: must be a list of depths"),
    ("  startup:\n    log_rules:\n      - {pattern: '(', severity: FAIL}\n",
     r"policy.yaml:4: gates.startup.log_rules: rule 1: pattern is not a regular expression"),
    ("  golden:\n    enabled: maybe\n", r"policy.yaml:4: gates.golden.enabled: must be a boolean"),
    ("  numerics:\n    top_k: five\n", r"policy.yaml:4: gates.numerics.top_k: must be an integer"),
])
def test_a_refused_setting_names_file_line_and_key(tmp_path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, body)


def test_settings_are_typed_values_with_the_policy_overlaid(tmp_path) -> None:
    policy = _load(tmp_path, "  longctx:\n    noise_floor_concurrency: 0\n  golden:\n    enabled: false\n")
    longctx = policy.settings("longctx")
    assert isinstance(longctx, LongContextSettings) and longctx.noise_floor_concurrency == 0
    assert longctx.needle_lengths == LongContextSettings().needle_lengths  # defaults where the file says nothing
    assert isinstance(policy.settings("numerics"), NumericsSettings) and policy.settings("numerics").concurrency == 4
    assert "golden" not in policy.enabled and "longctx" in policy.enabled
    assert policy.where("longctx", "noise_floor_concurrency") == (str(tmp_path / "policy.yaml"), 4)


@pytest.mark.parametrize("body,message", [
    ("  longctx:\n    needle_lengths: []\n", r"policy.yaml:4: gates.longctx.needle_lengths: must not be empty"),
    ("  longctx:\n    boundary_tokens: []\n", r"policy.yaml:4: gates.longctx.boundary_tokens: must not be empty"),
    ("  longctx:\n    decay_sessions: 0\n", r"policy.yaml:4: gates.longctx.decay_sessions: must be at least 1"),
    ("  longctx:\n    decay_sessions: 6\n", r"policy.yaml:4: gates.longctx.decay_sessions: 6 sessions cannot show decay "
     r"beyond chance at decay_alpha 0.01"),
    ("  longctx:\n    decay_max_excess_slope: 0.003\n", r"policy.yaml:4: gates.longctx.decay_max_excess_slope: must be "
     r"above 0.003205, the most one \(session, round\) cell can move"),
    ("  longctx:\n    sqdr_max_excess: 0.005\n", r"policy.yaml:4: .*sqdr_max_excess.*renamed to decay_max_excess_slope"),
    ("  numerics:\n    prompts: []\n", r"policy.yaml:4: gates.numerics.prompts: must name at least one prompt"),
])
def test_a_setting_that_would_judge_nothing_is_refused(tmp_path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, body)
