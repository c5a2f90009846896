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
    ("  numerics:\n    noise_floor_concurrency: 0\n", r"policy.yaml:4: gates.numerics.noise_floor_concurrency: "
                                                     r"must be an integer from 1 to 1024, not 0"),
    ("  longctx:\n    needle_depths: [0.5, 2.0]\n", r"policy.yaml:4: gates.longctx.needle_depths\[1\]: "
                                                 r"must be a number from 0 to 1, not 2.0"),
    ("  startup:\n    log_rules:\n      - {pattern: '(', severity: FAIL}\n",
     r"policy.yaml:4: gates.startup.log_rules: rule 1: pattern is not a regular expression"),
    ("  golden:\n    enabled: maybe\n", r"policy.yaml:4: gates.golden.enabled: must be true or false, not 'maybe'"),
    ("  numerics:\n    top_k: five\n", r"policy.yaml:4: gates.numerics.top_k: must be an integer"),
    ("  golden:\n    concurrency: 1000000000\n", r"policy.yaml:4: gates.golden.concurrency: must be an integer from 1 to 1024"),
    ("  golden:\n    concurrency: 1e9\n", r"policy.yaml:4: gates.golden.concurrency: must be an integer .*, not '1e9'"),
    ("  shadow:\n    alpha: .nan\n", r"policy.yaml:4: gates.shadow.alpha: must be a number above 0 and below 1, not .nan"),
    ("  shadow:\n    stages:\n      - {name: a, budget: 10}\n      - {name: b, share: 1.5}\n",
     r"policy.yaml:6: gates.shadow.stages\[1\].share: must be a number above 0 and at most 1, not 1.5"),
    ("  golden:\n    near_tie_gap: {float32: .inf}\n", r"policy.yaml:4: gates.golden.near_tie_gap.float32: must be a number "
     r"from 0 to 10, not .inf"),
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
    ("  longctx:\n    decay_sessions: 0\n", r"policy.yaml:4: gates.longctx.decay_sessions: must be an integer from 1 to 10000, "
     r"not 0: 0 would pass having judged nothing"),
    ("  longctx:\n    decay_sessions: 6\n", r"policy.yaml:4: gates.longctx.decay_sessions: 6 sessions cannot show decay "
     r"beyond chance at decay_alpha 0.01"),
    ("  longctx:\n    decay_max_excess_slope: 0.003\n", r"policy.yaml:4: gates.longctx.decay_max_excess_slope: must be "
     r"above 0.003205, the most one \(session, round\) cell can move"),
    ("  longctx:\n    sqdr_max_excess: 0.005\n", r"policy.yaml:4: .*sqdr_max_excess.*renamed to decay_max_excess_slope"),
    ("  numerics:\n    prompts: []\n", r"policy.yaml:4: gates.numerics.prompts: must be a non-empty list of strings, not \[\]"),
    ("  shadow:\n    noise_absolute: 0.01\n", r"policy.yaml:4: .*noise_absolute.*renamed to materiality \(per critical measure"),
    ("  shadow:\n    materiality: {errors: 0.01}\n", r"policy.yaml:\d+: gates.shadow.materiality: names no critical measure: errors"),
])
def test_a_setting_that_would_judge_nothing_is_refused(tmp_path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, body)


ROW = {"max_abs_delta": "0.01", "p99_abs_delta": "0.005", "mean_abs_delta": "0.001", "top1_min": "0.99",
       "topk_overlap_min": "0.95", "kl_max": "0.001", "nll_rel_drift_max": "0.002"}


@pytest.mark.parametrize("key,value,message", [
    ("max_abs_delta", ".inf", r"max_abs_delta: must be a number from 0 to 100, not .inf"),
    ("kl_max", "-1", r"kl_max: must be a number from 0 to 100, not -1"),
    ("top1_min", "'abc'", r"top1_min: must be a number from 0 to 1, not 'abc'"),
    ("kl_mx", "0.1", r"kl_mx: unknown key"),
])
def test_a_tolerance_must_be_a_finite_number_in_its_range(tmp_path, key: str, value: str, message: str) -> None:
    """A tolerance of .inf is a check that cannot fail; a negative one, one that cannot pass."""
    row = ", ".join(f"{k}: {v}" for k, v in {**ROW, key: value}.items())
    with pytest.raises(ConfigError, match=r"policy.yaml:5: gates.numerics.tolerances.float32." + message):
        _load(tmp_path, f"  numerics:\n    tolerances:\n      float32: {{{row}}}\n")


def test_settings_made_in_code_are_checked_against_the_same_schema() -> None:
    from gatekeeper.config.settings import SettingError

    with pytest.raises(SettingError, match="must be an integer from 1 to 1024, not 0"):
        NumericsSettings(concurrency=0)
