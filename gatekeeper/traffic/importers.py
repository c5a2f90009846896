"""Importers from request logs users already have into the traffic format.

OpenAI Batch API files (https://platform.openai.com/docs/guides/batch): an input file has one
`{"custom_id", "method": "POST", "url": "/v1/chat/completions" | "/v1/completions", "body"}` per
line; an output file one `{"custom_id", "response": {"status_code", "body"}, "error"}`. Every
imported record is checked exactly as a traffic line is (`format.parse_record`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gatekeeper.json_types import JsonObject
from gatekeeper.errors import ConfigError
from gatekeeper.traffic.format import TrafficLineError, TrafficRecord, parse_record

_URLS = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}


def _lines(path: str | Path):
    try:
        handle = open(path, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read: {e.strerror or e}", str(path)) from None
    with handle:
        for n, raw in enumerate(handle, 1):
            text = raw.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except ValueError as e:
                raise ConfigError(f"not JSON: {e.args[0].split(':')[0]}", str(path), n) from None
            if not isinstance(obj, dict):
                raise ConfigError("a batch line must be a JSON object", str(path), n)
            yield n, obj


def _responses(path: str | Path | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if path is None:
        return out
    for _, obj in _lines(path):
        resp = obj.get("response")
        if isinstance(resp, dict) and resp.get("status_code") == 200 and isinstance(resp.get("body"), dict):
            out[str(obj.get("custom_id"))] = resp["body"]
    return out


def _tenant(body: dict[str, Any]) -> str:
    meta = body.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("tenant"), str) and meta["tenant"]:
        return meta["tenant"]
    user = body.get("user")
    return user if isinstance(user, str) and user else "default"


def import_openai_batch(input_path: str | Path, responses_path: str | Path | None = None
                        ) -> tuple[list[TrafficRecord], list[str]]:
    """Records from a Batch API input file (and its output file's answers); the second value
    lists the lines skipped (other endpoints), as `file:line: why`. A malformed line is a
    ConfigError naming file and line."""
    answers = _responses(responses_path)
    records, skipped = [], []
    for n, obj in _lines(input_path):
        url = obj.get("url")
        if url not in _URLS:
            skipped.append(f"{input_path}:{n}: url {url!r} is not a chat or completions request")
            continue
        body = obj.get("body")
        if not isinstance(body, dict):
            raise ConfigError("body must be an object (the request)", str(input_path), n)
        custom_id = str(obj.get("custom_id") or f"line-{n}")
        line: JsonObject = {"id": custom_id, "endpoint": _URLS[url], "tenant": _tenant(body),
                                "request": {k: v for k, v in body.items() if k not in ("metadata", "user")}}
        if isinstance(body.get("model"), str):
            line["model_alias"] = body["model"]
        if custom_id in answers:
            line["response"] = answers[custom_id]
        try:
            records.append(parse_record(line, n))
        except TrafficLineError as e:
            raise ConfigError(str(e), str(input_path), n) from None
    return records, skipped
