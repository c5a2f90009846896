"""The execution path a target itself reports: read from its startup log and its `/metrics`.

A declared path (`declare:`) is what the user says; tolerances follow it. What the engine says
can contradict it — a candidate declared fp32 whose log prints `dtype=torch.bfloat16` is judged
with tolerances that do not fit — so gate 1 reads both and compares them.

Sources, first match wins per key:
- log lines with `key=value` pairs: vLLM's engine config line (`dtype=torch.bfloat16,
  tensor_parallel_size=4, quantization=fp8, kv_cache_dtype=auto, enforce_eager=False`), the
  bundled engine's `execution path:` / `paged KV cache:` / `scheduler:` lines (`dtype=`,
  `kv_cache_dtype=`, `tp=`, `fused_norm=`);
- vLLM's engine version (`Initializing a V1 LLM engine (v0.32.0)`), prefix caching and chunked
  prefill (`enable_prefix_caching=True, enable_chunked_prefill=True`): shown, not judged;
- the attention backend: vLLM's `Using FlashAttention backend` (any `Using <name> backend`
  line) and the bundled engine's `attention: sdpa`;
- `/metrics`: vLLM's `vllm:cache_config_info` gauge, whose labels carry `cache_dtype`,
  `block_size` and `enable_prefix_caching`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

from gatekeeper.targets.interface import normalise_dtype

_PAIR = re.compile(r"\b(kv_cache_dtype|cache_dtype|dtype|quantization|tensor_parallel_size|tp|block_size|fused_norm"
                   r"|enforce_eager|enable_prefix_caching|enable_chunked_prefill)=['\"]?([\w.\-]+)")
_ENGINE_VERSION = re.compile(r"Initializing a V\d LLM engine \(v([\w.+\-]+)\)")
_BACKEND = re.compile(r"\bUsing ([\w\- ]{2,40}?) backend\b|\battention: ([\w\- ]+?)\s*$", re.I)
_ALIASES = {"cache_dtype": "kv_cache_dtype", "tensor_parallel_size": "tp", "enable_prefix_caching": "prefix_caching",
            "enable_chunked_prefill": "chunked_prefill"}
_CACHE_INFO = ("vllm:cache_config_info",)
_CACHE_LABELS = {"cache_dtype": "kv_cache_dtype", "block_size": "block_size", "enable_prefix_caching": "prefix_caching"}
COMPARED = ("dtype", "kv_cache_dtype", "quantization", "tp")  # what a declaration can be checked against
PATH_KEYS = (*COMPARED, "attention_backend", "fused_norm", "enforce_eager")  # what a path change is judged on


def canonical(key: str, raw: str) -> str:
    """One spelling per value: dtypes by their long names, `torch.` dropped, None → none."""
    raw = raw.strip().removeprefix("torch.")
    if key in ("dtype", "kv_cache_dtype"):
        return normalise_dtype(raw) or raw.lower()
    if key == "attention_backend":
        return re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")
    if key in ("fused_norm", "enforce_eager", "prefix_caching", "chunked_prefill") and raw.lower() in ("on", "true", "off", "false"):
        return "true" if raw.lower() in ("on", "true") else "false"
    return raw.lower() if raw.lower() in ("none", "true", "false", "auto") else raw


def from_log(lines: Iterable[str]) -> dict[str, str]:
    """`key=value` pairs an engine's log states about its path (first occurrence wins)."""
    found: dict[str, str] = {}
    for line in lines:
        for key, raw in _PAIR.findall(line):
            key = _ALIASES.get(key, key)
            found.setdefault(key, canonical(key, raw))
        version = _ENGINE_VERSION.search(line)
        if version:
            found.setdefault("engine_version", version.group(1))
        backend = _BACKEND.search(line)
        if backend:
            found.setdefault("attention_backend", canonical("attention_backend", backend.group(1) or backend.group(2)))
    return found


def from_metrics(text: str) -> dict[str, str]:
    """The cache configuration a Prometheus exposition states (vLLM's `cache_config_info`);
    {} for text that is not an exposition or lacks it."""
    found: dict[str, str] = {}
    try:
        for family in text_string_to_metric_families(text):
            if family.name not in _CACHE_INFO:
                continue
            for sample in family.samples:
                for label, key in _CACHE_LABELS.items():
                    if label in sample.labels:
                        found.setdefault(key, canonical(key, sample.labels[label]))
    except (ValueError, TypeError, IndexError):
        return {}
    return found


def resolve(observed: dict[str, str]) -> dict[str, str]:
    """`kv_cache_dtype=auto` means "the model's dtype" (vLLM's and the bundled engine's rule)."""
    out = dict(observed)
    if out.get("kv_cache_dtype") == "auto" and "dtype" in out:
        out["kv_cache_dtype"] = out["dtype"]
    return out


def disagreements(assumed: dict[str, str], observed: dict[str, str]) -> list[tuple[str, str, str]]:
    """(key, assumed, observed) for each compared key both sides state and state differently."""
    out = []
    for key in COMPARED:
        if key in assumed and key in observed:
            a = canonical(key, assumed[key])
            if a != observed[key] and not (key == "kv_cache_dtype" and "auto" in (a, observed[key])):
                out.append((key, a, observed[key]))
    return out
