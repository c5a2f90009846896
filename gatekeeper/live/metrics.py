"""`GET /metrics` on a `gatekeeper shadow` admin address: the live verdict's figures and the
mirror's counters in Prometheus text, every sample labelled with the proxy's `replica` (its
`--replica` name, else host name and process id), so that N replicas scraped by one Prometheus
stay N series: sum them for the fleet (`sum by () (gatekeeper_shadow_stored_total)`), or read
one replica's lag.

The counters are this replica's own; the verdict figures are the shared store's, the same on
every replica sharing it. Pairs are counted where they are:

    gatekeeper_shadow_stored_total{replica="a"} 1200      committed to the store by this replica
    gatekeeper_shadow_pending_pairs{replica="a"} 32       buffered, not yet committed (a SIGKILL loses them)
    gatekeeper_shadow_store_dropped_total{replica="a"} 0  dropped unstored: the retry buffer was full
    gatekeeper_shadow_store_degraded{replica="a"} 0       1 while commits fail or the store cannot be read

When the store cannot be read (the server is down), the counters are still served with
`store_degraded` 1 and without the verdict's figures: a scrape never fails because the
database did.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest

_COUNTERS = (("forwarded", "client requests forwarded to the primary"),
             ("sampled", "requests sampled for mirroring"), ("dropped", "mirror copies dropped (queue full)"),
             ("stored", "pairs this replica committed to the store (not those pending)"),
             ("duplicate", "pairs whose id the store already held"),
             ("store_dropped", "pairs dropped unstored: the store's retry buffer was full while commits failed"),
             ("mirror_errors", "mirrored requests that failed"))


def prometheus_text(replica: str, mirror: dict[str, Any], data: dict[str, Any] | None) -> bytes:
    """The metrics of `replica`: its mirror counters (`Mirror.stats` and the proxy's), and the
    verdict JSON's figures (`data`; None: the store could not be read)."""
    reg = CollectorRegistry()

    def g(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
        return Gauge(f"gatekeeper_shadow_{name}", doc, ("replica", *labels), registry=reg)

    for name, doc in _COUNTERS:
        g(f"{name}_total", doc).labels(replica).set(mirror.get(name, 0))
    g("pending_pairs", "pairs buffered, not yet committed to the store").labels(replica).set(mirror.get("pending", 0))
    degraded = data is None or mirror.get("store_failing") is not None
    g("store_degraded", "1 while commits to the store fail or the store cannot be read").labels(replica).set(float(degraded))
    if data is not None:
        _verdict(g, replica, data)
    return generate_latest(reg)


def _verdict(g: Any, replica: str, data: dict[str, Any]) -> None:
    g("pairs_judged", "pairs that could be compared").labels(replica).set(data.get("judged", 0))
    g("score", "Kayenta-style score of all traffic (0-100)").labels(replica).set(data.get("score", 0) or 0)
    verdict = g("verdict", "1 for the current verdict", ("verdict",))
    for v in ("PROMOTE", "HOLD", "ROLLBACK"):
        verdict.labels(replica, v).set(1.0 if data.get("verdict") == v else 0.0)
    rate = g("rate", "share of eligible pairs where the measure is bad, candidate vs twin", ("measure", "target"))
    success = g("parse_success_ratio", "JSON / tool-call parse-and-validate success", ("kind", "target"))
    for measure, r in (data.get("rates") or {}).items():
        for target in ("candidate", "twin"):
            if r.get(target) is not None:
                rate.labels(replica, measure, target).set(r[target])
                if measure in ("json_parse", "tool_parse"):
                    success.labels(replica, measure.split("_")[0], target).set(1.0 - r[target])
    sessions = data.get("sessions")
    if sessions:
        g("sessions", "sessions seen (requests carrying the session header)").labels(replica).set(sessions["sessions"])
        decay = g("sqdr", "session quality decay rate per round (SQDR), candidate vs twin", ("target",))
        for target, value in sessions["sqdr"].items():
            if value is not None:
                decay.labels(replica, target).set(value)
