"""A check that judged nothing did not pass, and every PASS says what it would have caught: every
check a correctness gate can record as PASS either tells `ctx.check` what it judged
(`judged=Items(...)`: none makes it undecided, and its detection limit follows) or states its limit
(`limit=`: exact items, a tolerance, a test's power), or is named below with the reason it states
none (advisory checks) — so a new check cannot PASS on nothing, or without a limit, unnoticed. The
framework's rule itself is tested in tests/stats/test_detection.py."""

from __future__ import annotations

import ast

from paths import ROOT

GATES = ROOT / "gatekeeper" / "gates"

# check id (as written at the call) → why a PASS there states no detection limit
NO_LIMIT = {
    "startup/gate.py:checks.ready(role)": "the failing call (FAIL or ERROR); the PASS call states its limit",
    "startup/gate.py:f'version.{role}'": "advisory: the version the target states",
    "longctx/gate.py:checks.METRICS": "advisory: the engine's own metrics shown",
    "longctx/session_decay.py:TRIGGER_CONDITIONS": "advisory: which trigger conditions the sessions met",
    "shadow/gate.py:'traffic'": "advisory: describes the traffic file read, not a judgement",
    "shadow/gate.py:checks.stage(stage.name)": "advisory; a stage that judged nothing SKIPs (stage_rule.py)",
    "performance/gate.py:checks.CAPACITY": "advisory: each side's sweep, knee and goodput",
    "performance/history_check.py:checks.HISTORY": "advisory: the figures against earlier runs' history",
}
DECLARES = {"judged", "limit"}


def _sites() -> list[tuple[str, bool]]:
    """(site key, declares what it judged) for every `ctx.check` call whose status may be PASS."""
    sites = []
    for path in sorted(GATES.rglob("*.py")):
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
    silent = sorted({key for key, declares in sites if not declares and key not in NO_LIMIT})
    assert not silent, ("these checks can PASS without saying what they judged or would have caught: pass "
                        f"judged=Items(n, measure) or limit=, or name them in NO_LIMIT with the reason: {silent}")


def test_the_list_of_non_counts_names_only_checks_that_exist() -> None:
    keys = {key for key, declares in _sites() if not declares}
    assert set(NO_LIMIT) <= keys, sorted(set(NO_LIMIT) - keys)


def test_the_named_suspects_now_declare_their_counts() -> None:
    """The checks a review found passing or warning on nothing (issue: detection power)."""
    declared = {key for key, declares in _sites() if declares}
    for key in ("longctx/block_sweep.py:BLOCK_BOUNDARY", "longctx/prefix_cache.py:SHARED_PREFIX",
                "longctx/tool_checks.py:TOOL_CALLS", "longctx/tool_checks.py:TOOL_RESULT",
                "longctx/tool_checks.py:TOOL_STREAM", "longctx/json_checks.py:JSON_SCHEMA",
                "golden/gate.py:checks.CANDIDATE_REPEAT", "longctx/session_decay.py:SESSION_RECALL",
                "longctx/session_decay.py:SESSION_AGREEMENT", "longctx/needle_grid.py:NEEDLE_GRID"):
        assert key in declared, key
