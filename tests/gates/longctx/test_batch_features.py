"""`longctx.batch_features` through real servers: a candidate whose engine dies on a seeded request
batched with others (a real proxy doing what vLLM 0.31/0.32's CPU engine does) is rolled back with
the feature named and its death as the first reason. (The bundled pair's PASS is part of every
default run: tests/run/test_run_gk_tiny.py's PROMOTE.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")

from fault_proxy import fault_proxy  # noqa: E402
from run_util import gk_run  # noqa: E402
from server_util import running_server  # noqa: E402

SMOKE = Path(__file__).resolve().parents[3] / "gates" / "smoke.yaml"


def _policy(tmp_path: Path, on_urls: bool) -> tuple[str, ...]:
    """The smoke policy, with the check allowed on URL targets or not."""
    policy = yaml.safe_load(SMOKE.read_text())
    policy["gates"].setdefault("longctx", {})["batch_features_urls"] = on_urls
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return ("--gates", "startup,longctx", "--policy", str(path))


@pytest.fixture(scope="module")
def upstream(tiny_model_dir):
    with running_server(tiny_model_dir, "--profile", "optimized") as server:
        yield server


def test_a_candidate_that_dies_on_a_seeded_request_in_a_full_batch_is_rolled_back(tmp_path, tiny_model_dir, upstream):
    with fault_proxy(upstream.url, "seeded_batch_dies") as url:
        out = gk_run(tmp_path / "out", "--model", str(tiny_model_dir), "--candidate", url, *_policy(tmp_path, True))
    reasons = out.summary["reasons"]
    assert out.code == 1 and out.summary["verdict"] == "ROLLBACK", reasons
    assert reasons[0].startswith("longctx.candidate_crashed: FAIL — the candidate's engine died at "), reasons
    check = out.check("longctx.batch_features")
    assert check["status"] == "FAIL" and check["reason"].startswith("seeded sampling: the candidate answered it alone "
                                                                    "but failed in a full batch"), check
    assert "the candidate's engine died there" in check["reason"]
    assert "and in 10 more full batches of it" in check["reason"], check  # the reference, asked again, never failed
    assert check["metrics"]["broken"] == ["seeded sampling"]  # n=2 seeded after it: not judged, a dead engine



def test_on_a_url_target_it_runs_only_where_the_policy_allows(tmp_path, tiny_model_dir, upstream):
    """A URL target may be a server in use: the check, which may kill it, is an advisory SKIP saying why."""
    with fault_proxy(upstream.url, "seeded_batch_dies") as url:
        out = gk_run(tmp_path / "out", "--model", str(tiny_model_dir), "--candidate", url, *_policy(tmp_path, False))
    check = out.check("longctx.batch_features")
    assert check["status"] == "SKIP" and not check["blocking"] and "batch_features_urls" in check["reason"], check
    assert not any("candidate_crashed" in r for r in out.summary["reasons"]), out.summary["reasons"]
