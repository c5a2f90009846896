"""A request that fails carries its facts to the report: the recording endpoint notes the target,
the gate, what was asked, when, for how long, and the lines the server's log gained meanwhile; the
facts survive the recording (a rejudge shows the same evidence); a check's evidence leads with them.

Against the bundled server whose engine core dies on a seeded request prefilled beside another (the
`seeded-batch-dies` fault: vLLM 0.32's CPU engine), and a port nothing listens on (no log)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from gatekeeper.errors import EndpointError
from gatekeeper.evidence import Log, Table
from gatekeeper.gates.request_evidence import request_evidence
from gatekeeper.tape.codec import decode, encode
from gatekeeper.tape.endpoint import TapedEndpoint
from gatekeeper.tape.recording import Recorder
from fault_proxy import fault_proxy
from server_util import free_port, running_server

pytest.importorskip("torch")


def _ask(ep: TapedEndpoint, seed: int) -> EndpointError | None:
    try:
        ep.chat([{"role": "user", "content": "Write a few words about rivers."}], max_tokens=8, temperature=1.0, seed=seed)
    except EndpointError as e:
        return e
    return None


def test_a_request_the_engine_died_on_carries_its_facts_and_the_log_through_the_recording(tmp_path, tiny_model_dir):
    recorder = Recorder(tmp_path)
    with running_server(tiny_model_dir, "--profile", "optimized", "--fault", "seeded-batch-dies") as server:
        model = httpx.get(server.url + "/v1/models", timeout=10).json()["data"][0]["id"]
        ep = TapedEndpoint("candidate", server.url, model, sinks=[recorder], timeout_s=60)
        ep.gate, ep.log_path = "shadow", server.log_path
        errors: list[EndpointError] = []
        for _ in range(20):  # until a prefill step batches two seeded requests: the engine core dies
            with ThreadPoolExecutor(4) as pool:
                errors = [e for e in pool.map(lambda s: _ask(ep, s), (1, 2, 3, 4)) if e is not None]
            if errors:
                break
        ep.close()
    recorder.close()
    died = [e for e in errors if (e.status or 0) >= 500]  # a 500, or a 503 after the client's retries
    assert died, [str(e) for e in errors]
    facts = died[0].facts
    assert facts is not None and (facts.role, facts.gate) == ("candidate", "shadow")
    assert facts.request == "chat, 1 messages, max_tokens 8; last user: 'Write a few words about rivers.'"
    assert facts.started_at.endswith("+00:00") and facts.elapsed_s > 0
    said = re.search(r"after (\d+) retr", str(died[0]))  # the error says how often the client retried a 503
    assert facts.retries == (int(said.group(1)) if said else 0)
    assert any("CPU Generator does not use offset" in line for line in facts.log), facts.log  # the engine's last words
    lines = [json.loads(x) for x in (tmp_path / "answers" / "candidate.jsonl").read_text().splitlines()]
    assert any((x["key"], x["n"]) == (facts.key, facts.occurrence) and x["answer"]["type"] == "error" for x in lines)
    again = decode(json.loads(json.dumps(encode(died[0]))))
    assert again.facts == facts  # a rejudge replays the same facts
    table, log = request_evidence([again])
    assert isinstance(table, Table) and table.is_key and isinstance(log, Log) and log.lines == facts.log
    cells = dict(table.rows)
    assert cells["target"] == "candidate" and cells["recorded in"].startswith("answers/candidate.jsonl: key chat:")


def test_a_target_without_a_log_has_facts_but_no_log_evidence():
    ep = TapedEndpoint("reference", f"http://127.0.0.1:{free_port()}", "m", timeout_s=5)
    ep.gate = "startup"
    with pytest.raises(EndpointError) as raised:
        ep.completion("hello", max_tokens=2)
    ep.close()
    assert raised.value.kind == "connect" and raised.value.facts is not None
    assert raised.value.facts.request == "completion of 'hello', max_tokens 2" and raised.value.facts.log == ()
    assert [type(e) for e in request_evidence([raised.value])] == [Table]
    assert request_evidence([EndpointError("http", "u", "made by a gate", 500)]) == ()  # no facts, no evidence


def test_a_stream_cut_mid_answer_keeps_what_arrived_and_whether_the_target_was_alive(tiny_model_dir):
    """A proxy drops the connection after the answer's first events: the facts keep the text that
    had arrived (a prefix of the whole answer), that the target answered its previous request, and
    that its /health still answered just after."""
    messages = [{"role": "user", "content": "Write a few words about rivers."}]
    with running_server(tiny_model_dir) as server:
        model = httpx.get(server.url + "/v1/models", timeout=10).json()["data"][0]["id"]
        direct = TapedEndpoint("candidate", server.url, model, timeout_s=60)
        whole = direct.chat(messages, max_tokens=24, stream=True).text
        direct.close()
        with fault_proxy(server.url, "cut_stream", after=1, cut_after=4) as url:
            ep = TapedEndpoint("candidate", url, model, timeout_s=60)
            ep.gate = "longctx"
            ep.chat(messages, max_tokens=4)  # the first POST passes the proxy
            with pytest.raises(EndpointError) as raised:
                ep.chat(messages, max_tokens=24, stream=True)
            ep.close()
    facts = raised.value.facts
    assert raised.value.kind == "stream" and facts is not None
    assert facts.partial and whole.startswith(facts.partial) and facts.partial != whole, (facts.partial, whole)
    assert facts.before.startswith("answered its previous request ") and facts.before.endswith(" s before this one was sent")
    assert facts.after == "alive: /health answered below 500 just after"
    cells = dict(request_evidence([raised.value])[0].rows)
    assert (cells["delivered before it broke"], cells["alive before"], cells["alive after"]) == (
        facts.partial, facts.before, facts.after)
    assert decode(json.loads(json.dumps(encode(raised.value)))).facts == facts


def test_a_target_that_went_away_is_not_called_alive_after(tiny_model_dir):
    """The connection refused: the facts say there was no earlier answer, and /health did not answer."""
    ep = TapedEndpoint("reference", f"http://127.0.0.1:{free_port()}", "m", timeout_s=5)
    with pytest.raises(EndpointError) as raised:
        ep.chat([{"role": "user", "content": "hi"}], max_tokens=2)
    ep.close()
    facts = raised.value.facts
    assert facts is not None and facts.before == "no earlier answer in this run"
    assert facts.after.startswith("/health: no answer (ConnectError"), facts.after
