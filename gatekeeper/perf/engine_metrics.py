"""The engine's own /metrics while it is under load: KV-cache usage, queue, preemptions, prefix hits.

A background thread reads the target's Prometheus text every `interval_s` during a block and
keeps the peaks of the gauges and the growth of the counters (vLLM's names; `gpu_cache_usage_perc`
is the older name of `kv_cache_usage_perc`). A server without /metrics gives an empty result.
"""

from __future__ import annotations

import threading
from types import TracebackType

import httpx

GAUGES = {"kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
          "num_requests_waiting": ("vllm:num_requests_waiting",),
          "num_requests_running": ("vllm:num_requests_running",)}
COUNTERS = {"num_preemptions": ("vllm:num_preemptions_total", "vllm:num_preemptions"),
            "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"),
            "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries")}


def parse(text: str) -> dict[str, float]:
    """Prometheus text → {metric name: value summed over label sets}."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, value = line.rpartition(" ")
        name = name_part.split("{", 1)[0].strip()
        try:
            out[name] = out.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return out


def _first(values: dict[str, float], names: tuple[str, ...]) -> float | None:
    return next((values[n] for n in names if n in values), None)


class EngineMetrics:
    """Polls `base_url`/metrics while open: `with EngineMetrics(url) as m: ...; m.summary()`."""

    def __init__(self, base_url: str, interval_s: float = 0.25) -> None:
        self.url = base_url.rstrip("/") + "/metrics"
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._first: dict[str, float] | None = None
        self._last: dict[str, float] | None = None
        self._peaks: dict[str, float] = {}
        self.available = False

    def _read(self, http: httpx.Client) -> None:
        try:
            r = http.get(self.url)
        except httpx.HTTPError:
            return
        if r.status_code != 200:
            return
        values = parse(r.text)
        self.available = True
        self._first = self._first if self._first is not None else values
        self._last = values
        for key, names in GAUGES.items():
            v = _first(values, names)
            if v is not None:
                self._peaks[key] = max(self._peaks.get(key, v), v)

    def _poll(self) -> None:
        with httpx.Client(timeout=2.0) as http:
            self._read(http)
            while not self._stop.wait(self.interval_s):
                self._read(http)
            self._read(http)

    def __enter__(self) -> EngineMetrics:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def summary(self) -> dict[str, float]:
        """Peak gauges (`*_max`), counter growth over the window, and the prefix-cache hit rate."""
        out = {f"{k}_max": v for k, v in self._peaks.items()}
        if self._first is not None and self._last is not None:
            for key, names in COUNTERS.items():
                a, b = _first(self._first, names), _first(self._last, names)
                if a is not None and b is not None:
                    out[key] = b - a
        if out.get("prefix_cache_queries"):
            out["prefix_cache_hit_rate"] = out.get("prefix_cache_hits", 0.0) / out["prefix_cache_queries"]
        return out
