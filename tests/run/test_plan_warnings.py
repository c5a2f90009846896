"""The dry run's load warning (`run/plan_warnings.reference_load`): each gate's `reference_load`
sentence, with a duration estimate at the reference's measured speed (the dry run itself is
tested end to end in tests/targets/test_target_flags.py)."""

from __future__ import annotations

from gatekeeper.config.run_config import resolve
from gatekeeper.run.plan import build_plan
from gatekeeper.run.plan_probe import Speed
from gatekeeper.run.plan_warnings import reference_load

POLICY = """version: 1
gates:
  shadow:
    concurrency: 3
    stages:
      - {name: first, share: 1.0, budget: 5}
  performance:
    baseline: reference
    levels: [1, 3]
    pairs: 4
    block_requests: 2
    warmup_requests: 1
    sweep: [2, 6]
    output_tokens: [16, 32]
"""


def _plan(tmp_path, *flags: str):
    policy = tmp_path / "load.yaml"
    policy.write_text(POLICY)
    options, sources = resolve(None, {}, {"reference": "http://127.0.0.1:9/v1", "candidate": "http://127.0.0.1:8/v1",
                                          "model": "m", "policy": str(policy), **dict(zip(flags[::2], flags[1::2]))})
    return build_plan(options, sources)


def test_each_gate_that_loads_the_reference_has_a_line_with_its_estimate(tmp_path) -> None:
    speed = Speed(0.5, 0.01)
    shadow, performance = reference_load(_plan(tmp_path), speed)
    assert shadow.startswith("load on the reference: gate 5 (shadow) replays up to 5 recorded requests (first 5)")
    assert shadow.endswith(f"({speed.describe()}) (each answer at its max_tokens: a bound)")
    # the warm-up, 4 pairs of 2 requests at each level taken `level` at a time, one block per sweep level
    busy = speed.request_s(32) * (1 + (4 * 2 / 1 + 4 * 2 / 3) + (2 / 2 + 2 / 6))
    assert performance.startswith("load on the reference: the performance gate (run when correctness passes) measures "
                                  "the reference as its baseline: 1 warm-up and 16 measured requests at concurrency 1, 3")
    assert performance.endswith(f"peak concurrency 6; about {busy / 60:.1f} min at the reference's measured speed "
                                f"({speed.describe()})")
    assert [line.split("; about")[0] for line in reference_load(_plan(tmp_path))] == \
        [line.split("; about")[0] for line in (shadow, performance)]  # without a speed: no estimate
    assert reference_load(_plan(tmp_path, "gates", "startup,numerics")) == []
