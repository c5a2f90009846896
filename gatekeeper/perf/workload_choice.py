"""The performance measurement's requests (the gate's and `gatekeeper perf calibrate`'s): the
configured source, then what both sides accept."""

from __future__ import annotations

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.config.run_config import find_file
from gatekeeper.traffic.settings import ShadowSettings
from gatekeeper.perf.loadgen import LoadProfile, LoadTarget, run_load
from gatekeeper.perf.workload import Workload, calibrated, from_traffic
from gatekeeper.traffic.format import load_traffic


def controlled_workload(workload: Workload, targets: dict[str, LoadTarget], seed: int, notes: list[str]) -> Workload:
    """The workload both sides answer, probed with one request each: synthetic prompts go to
    /v1/chat/completions where a side has no /v1/completions, and `ignore_eos` is dropped where
    a side refuses it (`notes` then say so: output lengths were not controlled)."""
    for _ in range(3):
        refusal = None
        for side, target in targets.items():
            rec = run_load(target, workload.requests(1, seed), LoadProfile("synchronous")).records[0]
            if rec.error and rec.error.startswith("HTTP 4"):
                refusal = (side, rec.error)
                break
        if refusal is None:
            return workload
        side, error = refusal
        if not workload.recorded and not workload.chat and error.startswith(("HTTP 404", "HTTP 405")):
            notes.append(f"performance: the {side} has no /v1/completions ({error[:60]}); synthetic prompts go to "
                             "/v1/chat/completions")
            workload = workload.as_chat()
        elif workload.ignore_eos:
            notes.append(f"performance: the {side} refused a request with ignore_eos ({error[:80]}); output lengths "
                             "are not controlled")
            workload = workload.uncontrolled()
        else:
            break
    return workload


def configured_workload(source: str, traffic: str, shape: Workload, baseline: Endpoint) -> Workload:
    """The configured request source (the performance settings' `source`, `traffic` and
    `workload()`): synthetic prompts of `shape` (calibrated by the baseline's /tokenize) or the
    traffic file's requests (gate 5's shipped sample when `traffic` is empty)."""
    if source == "traffic":
        records = load_traffic(find_file(traffic or ShadowSettings().traffic), skip_bad=True).records
        return from_traffic(shape, [(r.endpoint, r.request) for r in records])
    return calibrated(shape, baseline)
