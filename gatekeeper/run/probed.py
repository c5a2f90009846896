"""Each target's capabilities, probed once on first use and kept for the run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from gatekeeper.capabilities import Capabilities
from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.probe import probe


class ProbedCapabilities(Mapping[str, Capabilities]):
    """Capabilities by role, probed on first use and kept for the rest of the run.

    Gate 1 asks for them after its canary, so the canary is the first request a target sees;
    when gate 1 is not selected, the first gate that reads them triggers the probe. A target
    that did not start has `Capabilities.unavailable`."""

    def __init__(self, endpoints: Mapping[str, Endpoint], ready: Mapping[str, bool],
                 progress: Callable[[str], None] = lambda msg: None) -> None:
        self._endpoints, self._ready, self._progress = dict(endpoints), dict(ready), progress
        self._known: dict[str, Capabilities] = {}
        self._lock = threading.Lock()

    def __getitem__(self, role: str) -> Capabilities:
        with self._lock:
            if role not in self._known:
                if role not in self._endpoints:
                    raise KeyError(role)
                if not self._ready.get(role, False):
                    self._known[role] = Capabilities.unavailable("target did not start")
                else:
                    self._progress(f"probing {role} capabilities")
                    self._known[role] = probe(self._endpoints[role])
            return self._known[role]

    def __iter__(self) -> Iterator[str]:
        return iter(self._endpoints)

    def __len__(self) -> int:
        return len(self._endpoints)

    def probed(self) -> dict[str, Capabilities]:
        """The capabilities probed so far (the report shows these; nothing is probed here)."""
        with self._lock:
            return dict(self._known)
