"""Which model id a started target is sent."""

from __future__ import annotations

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.errors import EndpointError
from gatekeeper.targets.interface import TargetSpec


def served_model(ep_url: str, spec: TargetSpec, api_key: str | None = None) -> str:
    """The model id to send: the configured one, else the first the server lists."""
    if spec.kind != "bundled" and spec.model:
        return spec.model
    ep = Endpoint("probe", ep_url, "", api_key)
    try:
        data = ep.get_json("/v1/models").get("data") or []
        first = data[0] if isinstance(data, list) and data else None
        return str(first["id"]) if isinstance(first, dict) and "id" in first else (spec.model or "")
    except EndpointError:
        return spec.model or ""
    finally:
        ep.close()
