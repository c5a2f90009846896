"""A check that judged nothing did not pass: every check a correctness gate can record as PASS
either tells `ctx.check` what it judged (`judged=Items(...)`: none makes it undecided, and its
detection limit follows), states a limit (`limit=`), decides undecided itself (`undecided=`), or is
named below with the reason it is not a count of items — so a new check cannot PASS on nothing
unnoticed. The framework's rule itself is tested in tests/stats/test_detection.py."""

from __future__ import annotations

import ast

from paths import ROOT

GATES = ROOT / "gatekeeper" / "gates"

# check id (as written at the call) → why a PASS there is not a count that could be empty
NOT_COUNTS = {
    "startup/gate.py:checks.ready(role)": "the target answered its readiness probe: one observation, not items",
    "startup/gate.py:f'health.{role}'": "/health answered",
    "startup/gate.py:f'models.{role}'": "the model is listed by /v1/models",
    "startup/gate.py:f'version.{role}'": "advisory: the version the target states",
    "startup/gate.py:f'protocol.{role}'": "the probe's report of protocol deviations (ERROR when the probe could not run)",
    "startup/gate.py:checks.CAPABILITIES": "the capability lists compared, every feature probed (undetermined ones named)",
    "startup/gate.py:checks.canary('reference')": "the reference's own canary, about the reference",
    "startup/gate.py:checks.CANARY_CANDIDATE": "one canary answer; a reference that misses too makes it WARN",
    "startup/logs.py:LOG_RULES": "an empty or missing log SKIPs before the rules are read",
    "startup/path.py:EXECUTION_PATH": "advisory unless both state a path; SKIP when nothing is stated",
    "startup/path_change.py:PATH_CHANGE": "SKIP when neither a stated key nor a log line is there to compare",
    "numerics/gate.py:checks.SCORING": "reached only with at least one prompt scored on both (SKIP otherwise)",
    "numerics/gate.py:check": "a drift figure over the scored positions: SKIP when none were scored",
    "golden/gate.py:checks.STREAM_CUTS": "written only when both targets cut at least one stream: two rates compared",
    "golden/pass_rates.py:PASS_RATE": "undecided when the reference has no judged case or passes none (pass_rates.py)",
    "longctx/batch_features.py:NAME": "PASS only with judged > 0; nothing judged is an undecided SKIP",
    "longctx/gate.py:'metrics'": "advisory: the engine's own metrics shown",
    "longctx/prefix_cache.py:'prefix_cache.cold_warm'": "one cold and one warm answer; SKIP without a cache hit",
    "longctx/session_decay.py:'trigger_conditions'": "advisory: which trigger conditions the sessions met",
    "shadow/gate.py:'traffic'": "describes the traffic file read, not a judgement",
    "shadow/gate.py:checks.stage(stage.name)": "advisory; a stage that judged nothing SKIPs (stage_rule.py)",
}
DECLARES = {"judged", "limit", "undecided"}


def _sites() -> list[tuple[str, bool]]:
    """(site key, declares what it judged) for every `ctx.check` call whose status may be PASS."""
    sites = []
    for path in sorted(GATES.rglob("*.py")):
        if "performance" in path.parts:  # its checks are intervals and a sequential test, each stating its design
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ctx" and len(node.args) >= 2):
                continue
            status = ast.unparse(node.args[1])
            if "PASS" not in status and status not in ("status", "j.status", "worst", "outcome.status"):
                continue  # a site that can only ERROR, FAIL, WARN or SKIP
            key = f"{path.relative_to(GATES)}:{ast.unparse(node.args[0])}"
            sites.append((key, bool(DECLARES & {k.arg for k in node.keywords})))
    return sites


def test_every_check_that_can_pass_says_what_it_judged_or_why_it_is_not_a_count() -> None:
    sites = _sites()
    assert len(sites) > 30, "the walk found too few check sites: has the gates' layout changed?"
    silent = sorted({key for key, declares in sites if not declares and key not in NOT_COUNTS})
    assert not silent, ("these checks can PASS without saying what they judged: pass judged=Items(n, measure) "
                        f"(or limit= / undecided=), or name them in NOT_COUNTS with the reason: {silent}")


def test_the_list_of_non_counts_names_only_checks_that_exist() -> None:
    keys = {key for key, declares in _sites() if not declares}
    assert set(NOT_COUNTS) <= keys, sorted(set(NOT_COUNTS) - keys)


def test_the_named_suspects_now_declare_their_counts() -> None:
    """The checks a review found passing or warning on nothing (issue: detection power)."""
    declared = {key for key, declares in _sites() if declares}
    for key in ("longctx/block_sweep.py:'block_boundary'", "longctx/prefix_cache.py:'prefix_cache.shared_prefix'",
                "longctx/tool_checks.py:TOOL_CALLS", "longctx/tool_checks.py:TOOL_RESULT",
                "longctx/tool_checks.py:TOOL_STREAM", "longctx/tool_checks.py:JSON_SCHEMA",
                "golden/gate.py:checks.CANDIDATE_REPEAT", "longctx/session_decay.py:'session_recall'",
                "longctx/session_decay.py:'session_agreement'", "longctx/needle_grid.py:NEEDLE_GRID"):
        assert key in declared, key
