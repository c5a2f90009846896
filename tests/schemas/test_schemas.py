"""The shipped JSON Schemas are current and every gold file and shipped YAML validates."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from gatekeeper.gates.registry import settings_types
from gatekeeper.schemas import generated, load
from paths import ROOT


def test_generated_schemas_are_current():
    for name, schema in generated(settings_types()).items():
        assert load(name) == json.loads(json.dumps(schema)), f"{name} is stale: run python -m gatekeeper.schemas"


def _unmasked(value):
    """A gold file with its volatile-number placeholder ("<T>": a duration) back as a number."""
    if value == "<T>":
        return 0.0
    if isinstance(value, dict):
        return {k: _unmasked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmasked(v) for v in value]
    return value


@pytest.mark.parametrize("gold", sorted((ROOT / "tests" / "report" / "gold").glob("*.summary.json")), ids=lambda p: p.name)
def test_gold_summaries_validate(gold):
    jsonschema.validate(_unmasked(json.loads(gold.read_text())), load("summary.schema.json"))


@pytest.mark.parametrize("policy", sorted((ROOT / "gates").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_policies_validate(policy):
    jsonschema.validate(yaml.safe_load(policy.read_text()), load("policy.schema.json"))


def test_the_schemas_reject_what_the_loaders_reject():
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": 1, "gates": {"longctx": {"sqdr_max_excess": 0.005}}}, load("policy.schema.json"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"candidate": {"kind": "url", "url": "http://h", "colour": "blue"}}, load("run-config.schema.json"))
    ok = {"reference": {"kind": "url", "url": "http://prod:8000/v1", "model": "m", "api_key_env": "PROD_KEY"},
          "candidate": {"kind": "launch", "command": "vllm serve /m --port {port}", "declare": {"dtype": "bf16", "tp": 4,
                                                                                               "labels": {"hw": "H100"}}},
          "seed": 3, "golden": ["golden_sets/core.yaml"]}
    jsonschema.validate(ok, load("run-config.schema.json"))


def test_a_live_summary_validates(tmp_path):
    """The summary of a real (if tiny) run, not only the gold ones."""
    pytest.importorskip("torch")
    from run_util import gk_run

    out = gk_run(tmp_path, "--gates", "startup", "--policy", "gates/smoke.yaml")
    jsonschema.validate(out.summary, load("summary.schema.json"))
