"""Gate 4 end to end: `gatekeeper run` on the bundled engines with the trained gk-tiny, faults
injected through the candidate's fault switches (stale KV blocks, NaN residue, a RoPE theta drift:
docs/bug-classes.md). These need the shipped checkpoint, which the training script
writes; until it exists they skip. The whole runs are marked slow; gate 4's clean runs are the
default run's (test_run_gk_tiny) and the inert stale-KV run's at seed 3."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")

from paths import ROOT
from run_util import RunOutcome, gk_run

# GATEKEEPER_TEST_GK_TINY points these tests at another trained checkpoint (e.g. one mid-training).
GK_TINY = Path(os.environ.get("GATEKEEPER_TEST_GK_TINY")
               or ROOT / "gatekeeper" / "models" / "gk-tiny")
LONGCTX = ("--gates", "longctx")
# Gate 4's request features in full batches run on two fresh launches, last in the gate (~25 s alone,
# ~55 s beside another test): off where a test is about another check (tests/gates/longctx/test_batch_features.py
# and the clean default-seed run below keep them).
NO_BATCHES = {"batch_features": "false"}
# The session-decay check runs after the needle grid, the block sweep, the prefix cache and the tool
# cases, and is the gate's longest (12 sessions of 12 rounds): three short sessions where a test is
# about an earlier check (the decay's own tests keep the default).
FEW_SESSIONS = {"decay_sessions": 3, "decay_rounds": 2, "decay_alpha": 0.5, "decay_max_excess_slope": 0.9,
                "recall_max_drop": 0.9, **NO_BATCHES}  # limits so few cells can judge (the policy's check refuses others)
# The block sweep, the prefix cache and the tool and JSON cases at their smallest (about 40 s of CI
# time a run), where a test is about the needle grid or the NaN check (tests/gates/longctx keeps them).
FEW_OTHERS = {"boundary_tokens": "[256]", "prefix_tokens": 256, "prefix_suffixes": 1, "prefix_unrelated": 0,
              "tool_cases": 1, "json_cases": 1}


@pytest.fixture(scope="module")
def gk_tiny() -> Path:
    """The shipped, trained gk-tiny (skip with the reason when it has not been written yet)."""
    if not (GK_TINY / "model.safetensors").is_file():
        pytest.skip(f"gk-tiny is not trained yet: no {GK_TINY}/model.safetensors (run the training script "
                    "with --ship gatekeeper/models/gk-tiny)")
    return GK_TINY


def _failed(out: RunOutcome) -> dict[str, str]:
    assert out.summary is not None, out.stderr
    return {c["id"]: c["reason"] for g in out.summary["gates"] for c in g["checks"] if c["status"] == "FAIL"}


def _record(out: RunOutcome, check_id: str) -> dict:
    """A check's full record (evidence included) from records.jsonl; summary.json leaves evidence out."""
    assert out.run_dir is not None
    lines = (out.run_dir / "records.jsonl").read_text().splitlines()
    return next(r for r in map(json.loads, lines) if r.get("id") == check_id)


def _policy(tmp_path: Path, **settings: object) -> str:
    """The default policy with some `longctx` settings replaced."""
    text = (ROOT / "gates" / "default.yaml").read_text()
    lines = [ln for ln in text.splitlines() if not any(ln.strip().startswith(f"{k}:") for k in settings)]
    at = lines.index("  longctx:") + 1
    lines[at:at] = [f"    {k}: {v}" for k, v in settings.items()]
    path = tmp_path / "policy.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_gate_4_runs_every_check_on_a_small_random_checkpoint(tmp_path, tiny_model_dir):
    """No trained model needed: the whole gate runs on a 512-token random checkpoint (lengths are
    capped to its context) and every check reports, with no crash and no false alarm."""
    out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--policy", "gates/smoke.yaml", *LONGCTX)
    assert out.summary["verdict"] in ("PROMOTE", "HOLD") and not _failed(out), _failed(out)
    ids = {c["id"] for c in out.gate("longctx")["checks"]}
    assert {"longctx.needle_grid", "longctx.block_boundary", "longctx.prefix_cache.cold_warm",
            "longctx.prefix_cache.shared_prefix", "longctx.session_decay", "longctx.session_agreement",
            "longctx.session_recall", "longctx.trigger_conditions", "longctx.nan_inf", "longctx.metrics", "longctx.json_schema"} <= ids
    assert not [c for c in out.gate("longctx")["checks"] if c["status"] == "ERROR"]
    assert max(out.check("longctx.needle_grid")["metrics"]["lengths"]) <= 512
    # A random checkpoint recalls nothing, so decay cannot be measured: undecided, and the run HOLDs on it.
    decay = out.check("longctx.session_decay")
    assert decay["status"] == "WARN" and decay.get("undecided") is True and "recalls enough" in decay["reason"]
    assert out.summary["verdict"] == "HOLD" and "longctx.session_decay: UNDECIDED" in " ".join(out.summary["reasons"])


@pytest.mark.slow  # ~18 s: out of the default suite's 15 minutes (CI runs it)
def test_null_logprobs_leave_gate_4s_nan_check_undecided(tmp_path, tiny_model_dir):
    """A candidate whose chat logprobs come back null in places (NaN written as JSON null): gate 4
    cannot say there was no NaN — undecided, named in the reasons, never a pass."""
    from fault_proxy import fault_proxy
    from server_util import running_server

    def null_some(path: str, body: dict) -> dict:
        for choice in body.get("choices") or []:
            for i, item in enumerate((choice.get("logprobs") or {}).get("content") or []):
                if i % 5 == 3:
                    item["logprob"] = None
        return body

    with running_server(tiny_model_dir, "--profile", "optimized") as upstream:
        with fault_proxy(upstream.url, "pass", rewrite=null_some) as url:
            out = gk_run(tmp_path, "--model", str(tiny_model_dir), "--candidate", url, "--policy", "gates/smoke.yaml",
                         *LONGCTX)
    nan = out.check("longctx.nan_inf")
    assert nan["status"] == "WARN" and nan.get("undecided") is True and nan["metrics"]["missing"] > 0, nan
    assert out.summary["verdict"] == "HOLD" and "longctx.nan_inf: UNDECIDED" in " ".join(out.summary["reasons"])


@pytest.mark.slow  # ~60 s; the engine-level catch is test_engine_faults::test_kv_stale_reuse_corrupts_only_with_prefix_caching
def test_kv_stale_reuse_rolls_back_at_gate_4_while_gates_1_to_3_pass(tmp_path, gk_tiny):
    policy = Path(_policy(tmp_path, **NO_BATCHES))  # golden on the smoke subset: the claim is gate 4's, and gates 1-3 pass
    rules = yaml.safe_load(policy.read_text())
    rules["gates"]["golden"] = {"cases": yaml.safe_load((ROOT / "gates" / "smoke.yaml").read_text())["gates"]["golden"]["cases"]}
    policy.write_text(yaml.safe_dump(rules))
    out = gk_run(tmp_path, "--model", str(gk_tiny), "--candidate-fault", "kv-stale-reuse", "--policy", str(policy))
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK"
    for gate in ("startup", "numerics", "golden"):
        assert out.gate(gate)["status"] in ("PASS", "WARN"), (gate, _failed(out))
    failed = _failed(out)
    assert failed and all(c.startswith("longctx.") for c in failed), failed
    assert {"longctx.session_decay", "longctx.session_agreement"} & set(failed), failed
    series = _series(out)
    # The curve: the candidate keeps up in the first rounds and falls away after.
    assert sum(series["agreement"][:3]) / 3 > sum(series["agreement"][-3:]) / 3, series["agreement"]
    # How many cached blocks go stale depends on how the 12 concurrent sessions interleave, i.e. on
    # the machine's timing: one CI run lost 6 recalls (then: decay WARN, agreement FAIL) where this
    # machine loses 13-16. The decay's excess is over the limit either way; that it is beyond chance
    # (over sessions) is asserted under more eviction pressure below.
    m = out.check("longctx.session_decay")["metrics"]
    assert m["excess_slope"] > m["limit"], m


def _series(out: RunOutcome) -> dict[str, list[float]]:
    """The session-decay curves: reference and candidate recall and their agreement, by round."""
    evidence = _record(out, "longctx.session_decay")["evidence"]
    return next(e for e in evidence if e["kind"] == "series")["data"]["series"]


# Both slow (~45 s each) since the performance gate joined the default run: the default suite keeps
# gate 4's trigger conditions in test_gate_4_runs_every_check_on_a_small_random_checkpoint.
@pytest.mark.slow
def test_kv_stale_reuse_cannot_trigger_without_prefix_caching(tmp_path, gk_tiny):
    """No cache lookups, no stale block: nothing fails. The cold/warm comparison exercises no cache,
    so it is not judged, and that blocking SKIP holds the run (issue 13: no vacuous pass). With the
    fault inert this is also gate 4's clean run at another seed than the default run's (3: the
    false-alarm rate over many seeds is benchmarks/decay_false_alarms.py's), every session kept."""
    out = gk_run(tmp_path / "run", "--model", str(gk_tiny), "--candidate-fault", "kv-stale-reuse", *LONGCTX,
                 "--candidate-opt", "prefix_caching=false", "--seed", "3", "--policy", _policy(tmp_path, **NO_BATCHES))
    assert not _failed(out), _failed(out)
    cold_warm = out.check("longctx.prefix_cache.cold_warm")
    assert cold_warm["status"] == "SKIP" and cold_warm["metrics"]["warm_cached_tokens"] == 0
    assert out.summary["verdict"] == "HOLD" and [r.split(":")[0] for r in out.summary["reasons"]] == [
        "longctx.prefix_cache.cold_warm", "PARTIAL"]  # --gates longctx: the other five gates not run
    conditions = out.check("longctx.trigger_conditions")
    assert conditions["status"] == "WARN" and conditions["metrics"]["prefix caching"] == "absent"


@pytest.mark.slow
def test_kv_stale_reuse_at_concurrency_1_spares_the_sessions_but_not_later_prefix_hits(tmp_path, gk_tiny):
    """One request at a time: the twelve sessions' rounds agree with the reference (their decay
    needs sessions evicting each other's blocks between rounds), and the trigger-conditions check
    says concurrency was absent. The fault is still there: the engine skips the stale check on every
    lookup, so once sequential traffic has evicted a cached block (the session rounds evict over a
    thousand), a later prompt sharing its prefix gets another prompt's KV — the tool cases, which
    share one long system prompt, answer differently from the reference. That is a catch (the
    reference has no fault), not noise: the run is deterministic at concurrency 1."""
    out = gk_run(tmp_path / "run", "--model", str(gk_tiny), "--candidate-fault", "kv-stale-reuse", *LONGCTX,
                 "--policy", _policy(tmp_path, concurrency=1, decay_concurrency=1, **NO_BATCHES))
    for check in ("longctx.session_decay", "longctx.session_agreement", "longctx.session_recall"):
        assert out.check(check)["status"] == "PASS", out.check(check)["reason"]
    assert out.check("longctx.session_agreement")["metrics"]["disagreements"] == 0
    conditions = out.check("longctx.trigger_conditions")
    assert conditions["status"] == "WARN" and conditions["metrics"]["concurrency"] == "absent"
    assert "not exercised: concurrency" in conditions["reason"]
    assert conditions["metrics"]["prefix caching"] == "present"
    failed = _failed(out)
    assert failed and all(c.startswith("longctx.tool") for c in failed), failed
    assert out.summary["verdict"] == "ROLLBACK"


@pytest.mark.slow  # ~55 s; the engine-level catch is in test_engine_faults, gate 5's in test_shadow_gate::test_garbage_fires_its_own_rule
def test_nan_residue_is_caught_and_named(tmp_path, gk_tiny):
    own = gk_run(tmp_path, "--model", str(gk_tiny), "--candidate-fault", "nan-residue", *LONGCTX,
                 "--policy", _policy(tmp_path, **FEW_SESSIONS, **FEW_OTHERS))
    nan = own.check("longctx.nan_inf")
    assert nan["status"] == "FAIL" and "NaN" in nan["reason"] and nan["metrics"]["non_finite"] > 0


@pytest.mark.slow  # ~40 s; passes its main assertion since gk-tiny v2 (needle grid: short cells pass, long fail)
def test_rope_drift_fails_long_needles_while_short_ones_pass(tmp_path, gk_tiny):
    out = gk_run(tmp_path, "--model", str(gk_tiny), "--candidate-fault", "rope-drift", *LONGCTX,
                 "--policy", _policy(tmp_path, **FEW_SESSIONS, **FEW_OTHERS))
    assert out.summary["verdict"] == "ROLLBACK" and _failed(out)
    grid = out.check("longctx.needle_grid")
    m = grid["metrics"]
    if m["reference_pass"] == 0:
        pytest.skip(f"the model answers no needle cell, so drift cannot show as needle regressions "
                    f"(gate 4 failed on {sorted(_failed(out))})")
    assert grid["status"] == "FAIL", grid["reason"]
    by_length = m["regressions_by_length"]
    lengths = sorted(by_length, key=int)
    assert by_length[lengths[0]] == 0 and by_length[lengths[-1]] > 0, by_length


@pytest.mark.slow  # 40-90 s
@pytest.mark.parametrize("seed", [4])
def test_bf16_divergences_in_tool_cases_within_the_dtype_drift_are_not_regressions(tmp_path, gk_tiny, seed):
    """Under these seeds a bf16 candidate answers a tool case neither target gets right
    differently from the reference, parting where one side is nearly indifferent and the other
    prefers its token by 1.5-1.75 nats — beyond the 1-nat gap, but with each contested logprob
    within gate 2's bf16 tolerance of the other side's (`near_tie_drift`). Before the drift rule
    both runs ROLLBACKed on `longctx.tool_calls`; the divergence is now shown, not failed."""
    out = gk_run(tmp_path / "run", "--model", str(gk_tiny), "--candidate-opt", "dtype=bf16", "--seed", str(seed), *LONGCTX,
                 "--policy", _policy(tmp_path, **FEW_SESSIONS))
    assert not _failed(out), _failed(out)
    tools = out.record("longctx.tool_calls")
    reviewed = [e for e in tools["evidence"] if e["title"].startswith("cases asked again")]
    assert reviewed and all(row[1] == "yes" for row in reviewed[0]["data"]["rows"]), tools




@pytest.mark.slow  # ~70 s
def test_a_secret_missed_at_a_near_tie_is_forced_and_flips_beyond_the_limit_are_undecided(tmp_path, gk_tiny):
    """A declared bf16 candidate whose sampler favours every runner-up by 0.3 nats
    (close-call-shift) misses a needle the reference recalls; asked again with logprobs the two part
    at a near tie within bf16's gap (seed 1, measured 2026-12-05). The reference's answer is then
    forced on both (gates/forcing.py). The fault lives in the decode path, which forcing (a
    prefill) does not run, so the candidate follows the answer: a precision flip. With
    `needle_max_precision_flips: 0` that one flip leaves the grid undecided (HOLD), never PASS;
    the forcing is in the evidence, one row per missed cell."""
    out = gk_run(tmp_path / "run", "--model", str(gk_tiny), "--candidate-opt", "dtype=bf16",
                 "--candidate-fault", "close-call-shift=0.3", "--seed", "1", *LONGCTX,
                 "--policy", _policy(tmp_path, needle_max_precision_flips=0, **FEW_SESSIONS, **FEW_OTHERS))
    assert out.summary is not None, out.stderr
    grid = out.check("longctx.needle_grid")
    m = grid["metrics"]
    assert m["missed_at_near_tie"] >= 1 and m["precision_flips"] + m["forced_departures"] == m["missed_at_near_tie"], m
    forced = next(e for e in _record(out, "longctx.needle_grid")["evidence"] if e["title"].startswith("cells the candidate missed"))
    assert len(forced["data"]["rows"]) == m["missed_at_near_tie"], forced
    assert m["precision_flips"] >= 1, forced
    assert grid["status"] == "WARN" and grid["undecided"] and "precision flips" in grid["reason"], grid
    assert out.summary["verdict"] != "PROMOTE"
