"""Prometheus metrics under vLLM's names (vllm-notes §3e), plus the engine's own block counters.

Engine state (queues, cache usage, token and prefix-cache counters, block allocation) is read from
`engine.stats()` at scrape time by a custom collector, so it can never drift from the engine;
per-request latencies are histograms the serving code observes. Each app gets its own registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

disable_created_metrics()  # as vLLM does: `*_created` samples only confuse rate() readers

# stats() key -> (exported name, kind, help). Counters get `_total` appended on exposition.
_KNOWN: dict[str, tuple[str, str, str]] = {
    "num_requests_running": ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches."),
    "num_requests_waiting": ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."),
    "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage."),
    "prefix_cache_queries": ("vllm:prefix_cache_queries", "counter", "Prefix cache queries, in tokens."),
    "prefix_cache_hits": ("vllm:prefix_cache_hits", "counter", "Prefix cache hits, in tokens."),
    "prompt_tokens_total": ("vllm:prompt_tokens", "counter", "Number of prefill tokens processed."),
    "generation_tokens_total": ("vllm:generation_tokens", "counter", "Number of generation tokens processed."),
    "num_preemptions": ("vllm:num_preemptions", "counter", "Cumulative number of preemptions."),
    "num_preemptions_total": ("vllm:num_preemptions", "counter", "Cumulative number of preemptions."),
    "num_blocks_total": ("gatekeeper:num_blocks_total", "gauge", "KV blocks in the paged cache."),
    "num_blocks_free": ("gatekeeper:num_blocks_free", "gauge", "KV blocks not held by any live sequence."),
    "blocks_allocated_total": ("gatekeeper:blocks_allocated", "counter", "KV blocks handed out by the block manager."),
    "blocks_reused_total": ("gatekeeper:blocks_reused", "counter", "KV blocks served from the prefix cache."),
}

# vLLM's bucket edges for request latencies (seconds).
_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                    10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


def _name_for(key: str) -> tuple[str, str, str]:
    if key in _KNOWN:
        return _KNOWN[key]
    kind = "counter" if key.endswith("_total") else "gauge"
    base = key[: -len("_total")] if kind == "counter" else key
    return f"gatekeeper:{base}", kind, f"Engine statistic {key}."


class _EngineCollector(Collector):
    def __init__(self, stats: Callable[[], dict[str, float]], labels: dict[str, str]) -> None:
        self._stats = stats
        self._labels = labels

    def collect(self) -> Iterator[Metric]:
        seen: set[str] = set()
        for key, value in sorted(self._stats().items()):
            name, kind, doc = _name_for(key)
            if name in seen:
                continue
            seen.add(name)
            family_cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            family = family_cls(name, doc, labels=list(self._labels))
            family.add_metric(list(self._labels.values()), float(value))
            yield family


class ServerMetrics:
    """The app's registry: engine gauges/counters at scrape time and request histograms."""

    def __init__(self, model_name: str, stats: Callable[[], dict[str, float]],
                 cache_config: dict[str, str] | None = None) -> None:
        self.registry = CollectorRegistry()
        labels = {"model_name": model_name, "engine": "0"}
        self._labels = labels
        self.registry.register(_EngineCollector(stats, labels))
        names = list(labels)
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "Time to first token in seconds.", names,
                              buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.itl = Histogram("vllm:inter_token_latency_seconds", "Inter-token latency in seconds.", names,
                             buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.e2e = Histogram("vllm:e2e_request_latency_seconds", "End-to-end request latency in seconds.", names,
                             buckets=_LATENCY_BUCKETS, registry=self.registry)
        if cache_config:  # as vLLM: an info gauge (value 1) whose labels are the cache configuration
            Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", list(cache_config),
                  registry=self.registry).labels(**cache_config).set(1)
        self.success = Counter("vllm:request_success", "Count of successfully processed requests.",
                               names + ["finished_reason"], registry=self.registry)

    def observe_first_token(self, seconds: float) -> None:
        """Record one request's time to first token."""
        self.ttft.labels(**self._labels).observe(seconds)

    def observe_next_tokens(self, seconds: float, num_tokens: int) -> None:
        """Record the gap before `num_tokens` tokens that arrived together, spread evenly over them."""
        for _ in range(num_tokens):
            self.itl.labels(**self._labels).observe(seconds / num_tokens)

    def observe_finished(self, seconds: float, finish_reason: str | None) -> None:
        """Record one finished request's latency and finish reason."""
        self.e2e.labels(**self._labels).observe(seconds)
        self.success.labels(**self._labels, finished_reason=finish_reason or "abort").inc()

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
