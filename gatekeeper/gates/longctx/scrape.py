"""Reading a target's Prometheus metrics (vLLM's names) around a phase of the gate.

Prefix caching is observed, not assumed: `vllm:prefix_cache_hits` / `vllm:prefix_cache_queries`
(tokens) rise only if the engine served part of a prompt from its cache. `vllm:kv_cache_usage_perc`
is sampled while a phase runs, and the KV pool's size is read from `vllm:cache_config_info`
(vLLM) or `gatekeeper:num_blocks_total` (the bundled engine) when exposed. A target without
`/metrics` gives empty snapshots, and the report says the conditions are unknown.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from typing import Self

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Snapshot:
    """Sample values by name, summed over label sets; `labels` keeps the first label set per name."""

    values: dict[str, float] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        """Whether the target exposed any metrics."""
        return bool(self.values)

    def get(self, *names: str) -> float | None:
        """The first of `names` present (counters are found with or without `_total`)."""
        for name in names:
            for key in (name, name + "_total"):
                if key in self.values:
                    return self.values[key]
        return None


def parse(text: str) -> Snapshot:
    """Parse the Prometheus text format (prometheus_client's parser when installed)."""
    values: dict[str, float] = {}
    labels: dict[str, dict[str, str]] = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families
        samples = [(s.name, dict(s.labels), float(s.value)) for fam in text_string_to_metric_families(text)
                   for s in fam.samples]
    except ImportError:  # the gate side does not require prometheus_client
        samples = []
        for line in text.splitlines():
            m = _LINE.match(line)
            if m and not line.startswith("#"):
                samples.append((m.group(1), dict(_LABEL.findall(m.group(3) or "")), float(m.group(4))))
    except ValueError:
        return Snapshot()
    for name, lab, value in samples:
        if math.isfinite(value):
            values[name] = values.get(name, 0.0) + value
        labels.setdefault(name, lab)
    return Snapshot(values, labels)


def scrape(ep: Endpoint) -> Snapshot:
    """One snapshot of `ep`'s /metrics (empty if it has none or the scrape fails)."""
    try:
        r = ep.get("/metrics")
    except EndpointError:
        return Snapshot()
    if r.status_code != 200:
        return Snapshot()
    return parse(r.text)


def pool_tokens(snap: Snapshot, block_size: int) -> int | None:
    """The KV pool's size in tokens, when the target says: vLLM's cache_config_info labels, or
    the bundled engine's block count times `block_size` (the policy's)."""
    info = snap.labels.get("vllm:cache_config_info") or {}
    try:
        if info.get("num_gpu_blocks") and info.get("block_size"):
            return int(info["num_gpu_blocks"]) * int(info["block_size"])
    except ValueError:
        pass
    blocks = snap.get("gatekeeper:num_blocks_total")
    return None if blocks is None else int(blocks) * block_size


def delta(before: Snapshot, after: Snapshot, *names: str) -> float | None:
    """How much a counter rose between two snapshots (None when either lacks it)."""
    a, b = before.get(*names), after.get(*names)
    return None if a is None or b is None else b - a


class UsageSampler:
    """Samples `vllm:kv_cache_usage_perc` (and running requests) in a thread while a phase runs."""

    def __init__(self, ep: Endpoint, interval_s: float = 0.5) -> None:
        self.ep, self.interval_s = ep, interval_s
        self.max_usage: float | None = None
        self.max_running: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self.ep.periodic():  # a replayed run: the samples the recorded run took, to the last
            while self.ep.recorded_ahead("get", "/metrics") and self._sample():
                pass

    def _loop(self) -> None:
        with self.ep.periodic():
            while not self._stop.wait(self.interval_s) and self._sample():
                pass

    def _sample(self) -> bool:
        """One sample; False when the target exposes no metrics (sampling stops)."""
        snap = scrape(self.ep)
        usage = snap.get("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
        running = snap.get("vllm:num_requests_running")
        if usage is not None:
            self.max_usage = max(self.max_usage or 0.0, usage)
        if running is not None:
            self.max_running = max(self.max_running or 0.0, running)
        return snap.available
