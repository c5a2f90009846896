"""A run's tape: the endpoints it hands the gates, what they record, and where answers may come from.

Every run records its targets' answers in its directory (`Recorder`); with a cache directory
(`--reference-cache`) the reference's answers may come from, and go to, the `AnswerCache` for its
identity; a re-judged run (`gatekeeper rejudge`) takes every answer from the run it re-judges.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gatekeeper.json_types import JsonObject
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.targets.runtime import TargetRuntime
from gatekeeper.targets.interface import Started, TargetSpec
from gatekeeper.results import CacheUse
from gatekeeper.tape.cache import AnswerCache, Identity, version_of
from gatekeeper.tape.endpoint import Sink, Source, TapedEndpoint
from gatekeeper.tape.recording import Recorded, Recorder


class AnswerTape:
    """The endpoints of one run and their recording; `replay`: the recorded run that answers everything."""

    def __init__(self, run_dir: Path, run_id: str, cache_root: Path | None = None, replay: Recorded | None = None,
                 redact: Callable[[str], str] = lambda text: text) -> None:
        self.recorder = Recorder(run_dir, redact)
        self.run_id, self.cache_root, self.replay = run_id, cache_root, replay
        self.cache: AnswerCache | None = None
        self._targets: JsonObject = {}

    def open_cache(self, base_url: str, model: str, spec: TargetSpec, api_key: str | None) -> str | None:
        """Open the cache for the reference at `base_url`; why not (one line), or None."""
        if self.cache_root is None or self.replay is not None:
            return None
        probe = Endpoint("reference", base_url, model, api_key, timeout_s=10.0, transient_attempts=1)
        try:
            version = version_of(probe.get_json)
        finally:
            probe.close()
        if version is None:
            return ("reference answer cache not used: the reference reports no version at /version, so a changed "
                    "reference could not be told from this one")
        launch = None if spec.kind == "url" else _launch_identity(spec)
        self.cache = AnswerCache(self.cache_root, Identity(model, version, tuple(sorted(spec.assumed_path().items())),
                                                           launch), self.run_id)
        return None

    def cache_size(self) -> int:
        """Answers the cache holds for this reference."""
        return len(self.cache.entries) if self.cache is not None else 0

    @property
    def cache_stats(self) -> CacheUse | None:
        """How the cache served the run (None: no cache)."""
        return self.cache.stats.frozen() if self.cache is not None else None

    def endpoint(self, role: str, base_url: str, model: str, api_key: str | None, timeout_s: float,
                 key_source: str | None) -> TapedEndpoint:
        """A taped endpoint for `role`."""
        source: Source | None = self.replay
        sinks: list[Sink] = [self.recorder]
        if self.replay is None and self.cache is not None and role == "reference":
            source = self.cache
            sinks.append(self.cache)
        return TapedEndpoint(role, base_url, model, api_key, timeout_s, key_source=key_source, source=source, sinks=sinks)

    def started(self, role: str, s: Started, model: str, runtime: TargetRuntime | None) -> None:
        """Record how a target started (and, for the two targets, what the startup gate reads of it)."""
        entry: JsonObject = {"base_url": s.base_url, "model": model, "ready": s.ready, "startup_s": s.startup_s,
                                 "error": s.error, "log_path": s.log_path}
        if runtime is not None:
            entry.update({"log_lines": list(runtime.log_lines), "has_log": runtime.has_log,
                          "log_error": runtime.log_error})
        self._targets[role] = entry
        self.recorder.targets(self._targets)

    def liveness(self, gate: str, after: JsonObject) -> None:
        """Record each target's state after `gate` (gatekeeper/run/liveness.py's recorded form)."""
        self.recorder.liveness(gate, after)

    def close(self) -> None:
        """Close the recording and store the cache's new answers."""
        self.recorder.close()
        if self.cache is not None:
            self.cache.save()


def _launch_identity(spec: TargetSpec) -> str:
    """How a target gatekeeper starts is started: its description and, for the bundled engine, its weights."""
    from gatekeeper.tape.digest import files_digest

    weights = files_digest([Path(spec.model)]) if spec.kind == "bundled" and spec.model else ""
    return f"{spec.describe()} weights={weights}"
