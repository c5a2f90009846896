"""The traffic format: every bad line is one `file:line: problem`, skipping is counted, the
Batch API importer, and the shipped sample is what its generator writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatekeeper.errors import ConfigError
from gatekeeper.traffic.format import iter_records, load_traffic, parse_record, write_traffic
from gatekeeper.traffic.importers import import_openai_batch
from gatekeeper.traffic.sample import generate
from paths import ROOT

GOOD = {"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}}


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("line, problem", [
    ("{not json", "not JSON"),
    ("[1, 2]", "must be a JSON object"),
    (json.dumps({**GOOD, "tennant": "acme"}), "unknown key 'tennant' (did you mean 'tenant'?)"),
    (json.dumps({**GOOD, "endpoint": "embeddings"}), "endpoint must be one of chat, completions"),
    (json.dumps({"endpoint": "chat"}), "request must be an object"),
    (json.dumps({"endpoint": "chat", "request": {"messages": []}}), "request.messages must be a non-empty list"),
    (json.dumps({"endpoint": "chat", "request": {"messages": [{"content": "x"}]}}), "request.messages[0] must be"),
    (json.dumps({"endpoint": "completions", "request": {"prompt": [1, 2]}}), "request.prompt must be a string"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "n": 2}}), "request.n must be 1"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "max_tokens": True}}), "request.max_tokens must be int"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "stream": "yes"}}), "request.stream must be bool"),
    (json.dumps({**GOOD, "tags": "a"}), "tags must be a list of strings"),
    (json.dumps({**GOOD, "timestamp": "yesterday"}), "timestamp 'yesterday' is not ISO 8601"),
    (json.dumps({**GOOD, "format": 2}), "this gatekeeper reads traffic format 1"),
    (json.dumps({**GOOD, "timestamp": float("nan")}), "not JSON: NaN is not a JSON number"),
    (json.dumps({**GOOD, "request": {**GOOD["request"], "temperature": float("inf")}}), "Infinity is not a JSON number"),
    (json.dumps({**GOOD, "id": "line-2"}), "id 'line-2' is already used on line 2 (ids are unique)"),
    (json.dumps({**GOOD, "expected": 23}), "expected must be the exact answer, a non-empty string"),
    (json.dumps({**GOOD, "expected": "  "}), "expected must be the exact answer, a non-empty string"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path, line, problem):
    path = _write(tmp_path, "# a comment", json.dumps(GOOD), "", line)
    with pytest.raises(ConfigError) as e:
        load_traffic(path)
    assert str(e.value).startswith(f"{path}:4: ") and problem in str(e.value), str(e.value)


def test_bad_lines_can_be_skipped_and_are_counted(tmp_path):
    path = _write(tmp_path, json.dumps(GOOD), "{oops", json.dumps({**GOOD, "id": "b", "tenant": "acme"}))
    traffic = load_traffic(path, skip_bad=True)
    assert [r.id for r in traffic.records] == ["line-1", "b"] and traffic.records[1].tenant == "acme"
    assert len(traffic.skipped) == 1 and traffic.skipped[0].startswith(f"{path}:2: not JSON")
    with pytest.raises(ConfigError, match="no valid request"):
        load_traffic(_write(tmp_path, "{oops"), skip_bad=True)


def test_a_file_without_a_request_is_an_error_for_every_reader(tmp_path):
    """`traffic check` (iter_records) refuses what `run` (load_traffic) refuses: nothing to judge."""
    for lines in ((), ("# a comment", "")):
        path = tmp_path / "empty.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        with pytest.raises(ConfigError, match="empty.jsonl: no valid request in the traffic file"):
            list(iter_records(path))


def test_kinds_sampling_and_timestamps():
    def rec(**req) -> object:
        return parse_record({"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "x"}], **req},
                             "timestamp": "2026-01-01T00:00:00Z"}, 1)
    assert rec(tools=[{"type": "function", "function": {"name": "f"}}]).kind == "tool"
    assert rec(response_format={"type": "json_object"}).kind == "json"
    assert rec().kind == "chat" and rec().sampled and not rec(temperature=0).sampled
    assert rec().timestamp == 1767225600.0
    long_chat = parse_record({"endpoint": "chat", "request": {"messages": [{"role": "user", "content": "x"}] * 6}}, 1)
    assert long_chat.kind == "long_chat"


def test_records_round_trip_through_a_written_file(tmp_path):
    records = generate(20, seed=3)
    path = tmp_path / "t.jsonl"
    assert write_traffic(path, records) == 20
    again = list(iter_records(path))
    assert [r.to_json() for r in again] == [r.to_json() for r in records]


def test_the_shipped_sample_is_what_the_generator_writes():
    shipped = [json.loads(line) for line in (ROOT / "golden_sets" / "traffic" / "sample.jsonl").read_text().splitlines()]
    assert shipped == [json.loads(json.dumps(r.to_json())) for r in generate(1200, seed=0)]
    tenants = {r["tenant"] for r in shipped}
    assert tenants == {"internal", "support", "agents", "data", "assistant"}
    agents = [r for r in shipped if r["tenant"] == "agents"]
    assert all(len(r["request"]["tools"]) >= 5 for r in agents)  # the wide menus the tool-overflow fault hits
    exact = {r["tags"][0] for r in shipped if "expected" in r}  # gate 5 checks these answers for task success
    assert exact == {"echo", "arithmetic", "eos", "multilingual", "refusal", "multi_turn", "long_output", "tool_call"}
    assert all(r["expected"] == r["expected"].strip() != "" for r in shipped if "expected" in r)


def test_openai_batch_files_import_with_their_answers(tmp_path):
    body = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "user": "acme", "max_tokens": 5}
    inp = _write(tmp_path, json.dumps({"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", "body": body}),
                 json.dumps({"custom_id": "r2", "method": "POST", "url": "/v1/embeddings", "body": {"input": "x"}}),
                 json.dumps({"custom_id": "r3", "method": "POST", "url": "/v1/completions",
                             "body": {"model": "gpt-x", "prompt": "Once", "metadata": {"tenant": "beta"}}}))
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"custom_id": "r1", "response": {"status_code": 200, "body": {"choices": []}}}) + "\n")
    records, skipped = import_openai_batch(inp, out)
    assert [(r.id, r.endpoint, r.tenant, r.model_alias) for r in records] == [
        ("r1", "chat", "acme", "gpt-x"), ("r3", "completions", "beta", "gpt-x")]
    assert records[0].response == {"choices": []} and records[1].response is None
    assert "user" not in records[0].request and len(skipped) == 1 and ":2:" in skipped[0]
    bad = _write(tmp_path, json.dumps({"custom_id": "x", "url": "/v1/chat/completions", "body": {"messages": "no"}}))
    with pytest.raises(ConfigError, match=r":1: request.messages must be"):
        import_openai_batch(bad)


def test_stages_select_by_a_seeded_hash_and_timing_is_kept_as_recorded_offsets():
    from gatekeeper.gates.shadow.replay import offsets_of, stage_selection
    from gatekeeper.traffic.settings import Stage

    records = generate(200, seed=1)
    narrow = stage_selection(records, Stage("n", share=0.1, budget=1000), seed=5, done=set())
    wide = stage_selection(records, Stage("w", share=0.5, budget=1000), seed=5, done=set())
    assert {r.id for r in narrow} <= {r.id for r in wide} and 5 < len(narrow) < len(wide) < 200
    assert stage_selection(records, Stage("n", share=0.1, budget=1000), seed=6, done=set()) != narrow
    internal = stage_selection(records, Stage("i", tenants=("internal",), budget=7), seed=5, done=set())
    assert len(internal) == 7 and {r.tenant for r in internal} == {"internal"}
    rest = stage_selection(records, Stage("r", budget=1000), seed=5, done={r.id for r in internal})
    assert not {r.id for r in rest} & {r.id for r in internal}
    offsets = offsets_of(records[:5], time_scale=0.5)
    assert offsets is not None and offsets[0] == 0.0
    assert offsets[4] == pytest.approx((records[4].timestamp - records[0].timestamp) * 0.5)
    assert offsets_of([parse_record(GOOD, 1)], 1.0) is None  # no timestamps: nothing to preserve
