"""The identity line: who was compared, named by what each engine says about itself."""

from __future__ import annotations

from gatekeeper.report.identity import identify
from gatekeeper.results import TargetInfo


def _vllm(role: str, version: str, **path: str) -> TargetInfo:
    observed = {"engine_version": version, "dtype": "float32", "prefix_caching": "true", **path}
    return TargetInfo(role=role, kind="launch", description=f"launch `bash scripts/vllm_cpu.sh {version} --port {{port}}`",
                      base_url="http://127.0.0.1:1", model="gk-tiny", version=version, observed=tuple(sorted(observed.items())))


def test_two_vllm_releases_are_named_with_the_path_keys_that_differ():
    who = identify([_vllm("reference", "0.31.0"), _vllm("candidate", "0.32.0", attention_backend="torch_sdpa")])
    assert who is not None
    assert who.line == ("reference vLLM 0.31.0 (launch) → candidate vLLM 0.32.0 (launch), model gk-tiny; stated path "
                        "differs in: engine_version 0.31.0 → 0.32.0; only the candidate states attention_backend")
    form = who.to_json()
    assert form["candidate"] == {"engine": "vLLM 0.32.0", "kind": "launch", "model": "gk-tiny"}
    assert form["path_differs"] == [{"key": "engine_version", "reference": "0.31.0", "candidate": "0.32.0"}]


def test_the_bundled_engine_and_a_url_without_a_version_are_named_as_such():
    ref = TargetInfo(role="reference", kind="bundled", description="bundled:reference", base_url="http://127.0.0.1:1", model="gk-tiny",
                     version="0.1.0", observed=(("dtype", "float32"),))
    cand = TargetInfo(role="candidate", kind="url", description="url http://127.0.0.1:2", base_url="http://127.0.0.1:2", model="my-model",
                      observed=(("dtype", "float32"),))
    who = identify([cand, ref])
    assert who is not None
    assert who.line == ("reference bundled engine 0.1.0 (reference) → candidate version unknown (url), models "
                        "gk-tiny → my-model; stated paths agree where both state them")
    assert identify([ref]) is None
