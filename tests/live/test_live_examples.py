"""The Argo Rollouts and Flagger examples in docs/live/ read the fields gatekeeper serves, and
their conditions and webhook types do what their comments say for each verdict.

No validator for the Argo Rollouts or Flagger CRDs installs from the package registry here
(kubeconform is not on PyPI; kubernetes-validate knows the core kinds only; check-jsonschema's
vendored schemas do not include these CRDs), so the fields are checked by hand against the
CRDs' published field names, and the behaviour against gatekeeper's own status mapping."""

from __future__ import annotations

import re

import yaml
from paths import ROOT

from gatekeeper.live.admin import STATUS

DOCS = ROOT / "docs" / "live"
VERDICTS = ("PROMOTE", "HOLD", "ROLLBACK")
METRIC_KEYS = {"name", "interval", "count", "failureLimit", "inconclusiveLimit", "consecutiveErrorLimit",
               "consecutiveSuccessLimit", "successCondition", "failureCondition", "provider", "initialDelay"}


def _holds(condition: str, result: str) -> bool:
    """Argo's expression for the two forms the examples use: result == "X" / result != "X"."""
    m = re.fullmatch(r'result (==|!=) "(\w+)"', condition.strip())
    assert m, condition
    return (result == m.group(2)) == (m.group(1) == "==")


def _argo_outcome(metric: dict, verdict: str) -> str:
    """One measurement's outcome (Argo: failure wins; neither condition matching is inconclusive)."""
    if "failureCondition" in metric and _holds(metric["failureCondition"], verdict):
        return "Failed"
    if "successCondition" in metric:
        ok = _holds(metric["successCondition"], verdict)
        if ok:
            return "Successful"
        return "Inconclusive" if "failureCondition" in metric else "Failed"
    return "Inconclusive"


def test_the_argo_templates_read_the_verdict_and_abort_or_wait_as_documented():
    docs = list(yaml.safe_load_all((DOCS / "argo-analysis-template.yaml").read_text()))
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "AnalysisTemplate"}
    assert all(d["apiVersion"] == "argoproj.io/v1alpha1" for d in docs)
    for t in templates.values():
        for metric in t["spec"]["metrics"]:
            assert set(metric) <= METRIC_KEYS, set(metric) - METRIC_KEYS
            web = metric["provider"]["web"]
            assert web["jsonPath"] == "{$.verdict}" and web["url"] == "{{args.verdict-url}}"
    [guard] = templates["gatekeeper-shadow"]["spec"]["metrics"]
    assert [_argo_outcome(guard, v) for v in VERDICTS] == ["Successful", "Successful", "Failed"]
    [wait] = templates["gatekeeper-evidence-complete"]["spec"]["metrics"]
    assert [_argo_outcome(wait, v) for v in VERDICTS] == ["Successful", "Inconclusive", "Failed"]
    assert wait["inconclusiveLimit"] >= wait["count"]  # HOLD for the whole wait never pauses the rollout
    rollout = next(d for d in docs if d["kind"] == "Rollout")
    urls = [a["value"] for a in rollout["spec"]["strategy"]["canary"]["analysis"]["args"]]
    urls += [a["value"] for s in rollout["spec"]["strategy"]["canary"]["steps"] if "analysis" in s
             for a in s["analysis"]["args"]]
    assert urls and all(u.endswith(":8101/verdict") for u in urls)  # the admin address's default port


def test_the_flagger_webhooks_map_verdicts_to_the_statuses_flagger_acts_on():
    canary = yaml.safe_load((DOCS / "flagger-canary.yaml").read_text())
    assert canary["apiVersion"] == "flagger.app/v1beta1" and canary["kind"] == "Canary"
    hooks = {h["type"]: h["url"] for h in canary["spec"]["analysis"]["webhooks"]}
    ok = lambda code: 200 <= code <= 202  # noqa: E731 — Flagger advances on 200-202
    by_type = {t: STATUS[url.rsplit("/", 1)[1]] for t, url in hooks.items()}
    assert [ok(by_type["rollout"][v]) for v in VERDICTS] == [True, True, False]  # only a regression fails a check
    assert [ok(by_type["confirm-promotion"][v]) for v in VERDICTS] == [True, False, False]
    assert [ok(by_type["rollback"][v]) for v in VERDICTS] == [False, False, True]  # a 2xx triggers the rollback
