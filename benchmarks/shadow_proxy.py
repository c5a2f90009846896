"""Gate 5 against real faults on the wire: the bundled candidate behind a real HTTP proxy that
breaks a share of its JSON answers, changes a share of its answers or every answer of one tenant
(known by its requests' messages), or answers a share of its requests 503 (retried by the client),
and a bundled reference with its replica — the default policy's stages and extension,
`gatekeeper run --gates shadow`, a few seeds in a row.

    python benchmarks/shadow_proxy.py [--seeds 3] [--scenarios json:0.1 changed:0.03 503s:0.02 tenant:1 clean:0]

Printed per run: the verdict, the rule that decided it (FAIL or undecided), the pairs replayed and
the wall time. A fault must not PROMOTE; the clean proxy (`clean:0`, passing everything) must.
The proxy rewrites non-streamed answers only (~89% of the shipped traffic; 79 of its 87 JSON
requests), so its rates are scaled by 1/0.89 to hit the stated share of all answers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from fault_proxy import fault_proxy  # noqa: E402
from gatekeeper.gates.shadow.checks import STAGE_PREFIX, StageFinding  # noqa: E402
from run_util import gk_run  # noqa: E402
from server_util import running_server  # noqa: E402

NON_STREAMED = 0.89  # of the shipped traffic's answers (and of its JSON answers: 79 of 87)
TENANT = "assistant"  # `tenant:1`: every non-streamed answer of this tenant (~20% of the sample) changed


def rewriter(kind: str, rate: float, seed: int):
    """`rewrite(path, body, request)` for fault_proxy: break JSON (cut the answer in half where it
    is a JSON object) or change the answer (other, valid text) on a seeded share of answers; for
    `tenant`, change every answer to a request of tenant TENANT (known by its messages)."""
    rng, lock = random.Random(f"{seed}:{kind}"), threading.Lock()
    broken = tenant_requests(TENANT) if kind == "tenant" else set()

    def rewrite(path: str, body: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
        if kind == "tenant":
            if _messages_key(request) not in broken:
                return body
            for choice in body.get("choices") or []:
                msg = choice.get("message") or {}
                if isinstance(msg.get("content"), str):
                    msg["content"] = _changed(msg["content"])
            return body
        for choice in body.get("choices") or []:
            msg = choice.get("message") or {}
            text = msg.get("content")
            if not isinstance(text, str):
                continue
            is_json = text.strip().startswith("{")
            if kind == "json" and not is_json:
                continue
            with lock:
                hit = rng.random() < rate / NON_STREAMED
            if hit:
                msg["content"] = text[: len(text) // 2] if kind == "json" else _changed(text)
        return body
    return rewrite


def tenant_requests(tenant: str) -> set[str]:
    """The message lists of the shipped sample's requests from `tenant` (what the wire shows of it)."""
    records = (json.loads(line) for line in (ROOT / "golden_sets" / "traffic" / "sample.jsonl").read_text().splitlines())
    return {_messages_key(r["request"]) for r in records if r.get("tenant") == tenant}


def _messages_key(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages"), sort_keys=True)


def _changed(text: str) -> str:
    """Another answer of the same kind: JSON stays valid JSON, text stays text."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text.strip() + " Also, note this."
    return json.dumps({"changed": True, **obj} if isinstance(obj, dict) else {"changed": obj})


def one(seed: int, kind: str, rate: float, reference_url: str, candidate_url: str, out: Path) -> tuple[str, str, int, float]:
    """One gate-5 run through the proxy; (verdict, deciding rule, pairs replayed, seconds)."""
    mode = "unavailable_random" if kind == "503s" else "pass"
    rewrite = rewriter(kind, rate, seed) if kind in ("json", "changed", "tenant") else None
    t0 = time.perf_counter()
    with fault_proxy(candidate_url, mode, rewrite=rewrite, rate=rate if kind == "503s" else 0.0, seed=seed,
                     rewrite_sees_request=True) as proxy:
        res = gk_run(out, "--reference", reference_url, "--candidate", proxy + "/v1", "--gates", "shadow",
                     "--seed", str(seed), timeout=1800)
    wall = time.perf_counter() - t0
    if res.summary is None:
        return f"no summary (exit {res.code})", res.stderr[-200:], 0, wall
    checks = [c for g in res.summary["gates"] for c in g["checks"] if c["id"].startswith("shadow.")]
    deciding = [c["id"].removeprefix("shadow.") + (" undecided" if c.get("undecided") else f" {c['status']}")
                for c in checks if c["id"].startswith("shadow.rule.") and (c["status"] == "FAIL" or c.get("undecided"))]
    pairs = sum(StageFinding.from_metrics(c["metrics"]).requests for c in checks if c["id"].startswith(STAGE_PREFIX))
    return res.summary["verdict"], ", ".join(deciding) or "-", pairs, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--scenarios", nargs="+", default=["json:0.1", "changed:0.03", "503s:0.02", "clean:0"])
    args = ap.parse_args()
    model = ROOT / "gatekeeper" / "models" / "gk-tiny"
    with tempfile.TemporaryDirectory() as tmp, running_server(model, "--profile", "reference") as reference, \
            running_server(model, "--profile", "optimized") as candidate:
        print(f"{'scenario':14} {'seed':>4}  {'verdict':8} {'pairs':>5} {'time':>6}  deciding")
        for spec in args.scenarios:
            kind, value = spec.split(":")
            for seed in range(1, args.seeds + 1):
                verdict, why, pairs, wall = one(seed, kind, float(value), reference.url, candidate.url,
                                                Path(tmp) / f"{kind}-{seed}")
                print(f"{spec:14} {seed:4}  {verdict:8} {pairs:5} {wall:5.0f}s  {why}", flush=True)


if __name__ == "__main__":
    main()
