"""The live proxy's policy reader (`gatekeeper/live/policy.py`): gate 5's section of a policy,
read without importing a gate, with the same settings and errors as a run's loader."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.live.policy import shadow_settings
from gatekeeper.run.plan import load_gate_policy


def _refusal(load: Callable[[str], object], path: str) -> str:
    with pytest.raises(ConfigError) as refused:
        load(path)
    return str(refused.value)


@pytest.mark.parametrize("policy", ["gates/default.yaml", "gates/smoke.yaml"])
def test_the_shipped_policies_give_the_run_loaders_shadow_settings(policy: str) -> None:
    assert shadow_settings(policy) == load_gate_policy(policy).settings("shadow")


def test_a_bad_shadow_setting_or_an_unknown_gate_is_refused_as_a_run_refuses_it(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ngates:\n  shadow:\n    concurrency: 0\n")
    assert _refusal(shadow_settings, str(bad)) == _refusal(load_gate_policy, str(bad))
    assert "bad.yaml:4" in _refusal(shadow_settings, str(bad))
    bad.write_text("version: 1\ngates:\n  shaddow:\n    concurrency: 2\n")
    with pytest.raises(ConfigError, match=r"bad.yaml:3: gates.shaddow: unknown gate"):
        shadow_settings(str(bad))


def test_the_other_gates_sections_are_left_to_the_run(tmp_path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\ngates:\n  golden:\n    limit: 3\n  shadow:\n    concurrency: 2\n")
    assert shadow_settings(str(policy)).concurrency == 2
