"""Gate 5 live, on loopback with real servers: the recording proxy's output replays and holds no
secret or PII; streams pass through both proxies byte for byte, chunk by chunk; a dead or hung
shadow never changes what clients get, and the copies it cannot take are dropped and counted."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
import pytest

from live_util import live
from scripted_server import Reply, Request, chat_body, scripted_server
from server_util import free_port

from gatekeeper.traffic.format import load_traffic

EVENTS = [f'data: {{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{{"index":0,"delta":{{"content":"{w}"}},'
          '"finish_reason":null}]}\n\n' for w in ("Hello", " there", " friend")] + [
    'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    "data: [DONE]\n\n"]


def _gated_stream(gate: threading.Event):
    """The first event, then the rest only once `gate` is set (by a client that got the first)."""
    yield EVENTS[0].encode()
    gate.wait(timeout=30)
    for e in EVENTS[1:]:
        yield e.encode()


def _upstream(gate: threading.Event | None = None):
    def handler(req: Request) -> Reply:
        if req.path.startswith("/v1/models"):
            return Reply.json({"object": "list", "data": [{"id": "m", "object": "model"}]})
        if req.body and req.body.get("stream"):
            chunks = _gated_stream(gate) if gate is not None else [e.encode() for e in EVENTS]
            return Reply(200, {"content-type": "text/event-stream"}, chunks)
        text = (req.body or {}).get("messages", [{}])[-1].get("content", "")
        return Reply.json(chat_body(f"echo: {text}"))
    return scripted_server(handler)


def _stream_chunks(url: str, gate: threading.Event | None = None) -> tuple[int, str, bytes]:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    out = b""
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=60) as r:
        for chunk in r.iter_raw():
            out += chunk
            if gate is not None and b"Hello" in out:
                gate.set()  # the proxy passed the first event on before the upstream sent the rest
        return r.status_code, r.headers.get("content-type", ""), out


def test_streams_pass_through_both_proxies_byte_for_byte_and_chunk_by_chunk(tmp_path: Path):
    with _upstream() as (up, _):
        direct = _stream_chunks(up)
    gate = threading.Event()
    with _upstream(gate) as (up, _), \
            live("traffic", "record", "--upstream", up, "--listen", "127.0.0.1:0", "--out", str(tmp_path / "t.jsonl")) as rec:
        recorded = _stream_chunks(rec.url, gate)
    assert recorded == direct  # status, content type, every byte; and it did not wait for the whole stream
    gate = threading.Event()
    with _upstream(gate) as (up, _), _upstream() as (shadow, _), \
            live("shadow", "--primary", up, "--shadow", shadow, "--sample", "1", "--store", str(tmp_path / "s.db"),
                 "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0") as sh:
        proxied = _stream_chunks(sh.url, gate)
    assert proxied == direct
    [record] = load_traffic(tmp_path / "t.jsonl").records
    assert record.response["choices"][0]["message"]["content"] == "Hello there friend"  # the stream, assembled


def test_the_recording_replays_and_holds_no_secret_or_pii(tmp_path: Path):
    out = tmp_path / "traffic.jsonl"
    planted = ["sk-live-PLANTED-9f8e7d", "jane.doe@example.com", "+1 (415) 555-0172", "hunter2-PLANTED"]
    with _upstream() as (up, seen), live("traffic", "record", "--upstream", up, "--listen", "127.0.0.1:0", "--out",
                                         str(out), "--tenant-header", "X-Tenant", "--redact", r"hunter2-\w+") as rec:
        headers = {"Authorization": f"Bearer {planted[0]}", "X-Tenant": "acme"}
        for i in range(3):
            msg = f"request {i}: mail {planted[1]} or call {planted[2]}; my password is {planted[3]}"
            r = httpx.post(rec.url + "/v1/chat/completions", headers=headers, timeout=30,
                           json={"model": "m", "messages": [{"role": "user", "content": msg}], "max_tokens": 8,
                                 "temperature": 0, "api_key": planted[0]})
            assert r.status_code == 200 and planted[1] in r.json()["choices"][0]["message"]["content"]  # clients get it all
        assert httpx.get(rec.url + "/v1/models", timeout=30).json()["data"][0]["id"] == "m"  # not recorded
    assert seen[0].headers["authorization"] == f"Bearer {planted[0]}"  # the upstream got the request untouched
    text = out.read_text()
    for secret in planted:
        assert secret not in text, secret
    traffic = load_traffic(out)
    assert len(traffic.records) == 3 and {r.tenant for r in traffic.records} == {"acme"}
    assert "<redacted>" in traffic.records[0].request["messages"][0]["content"]
    assert traffic.records[0].request["api_key"] == "***"
    assert "<redacted>" in traffic.records[0].response["choices"][0]["message"]["content"]


@pytest.mark.slow  # waits out a hung shadow; the pass-through tests stay
def test_a_dead_or_hung_shadow_changes_no_answer_and_the_copies_it_cannot_take_are_counted(tmp_path: Path):
    hang = threading.Event()

    def hung(req: Request) -> Reply:
        hang.wait(timeout=60)
        return Reply.json(chat_body("late"))

    body = lambda i: {"model": "m", "messages": [{"role": "user", "content": f"n{i}"}], "temperature": 0}  # noqa: E731
    with _upstream() as (up, _), scripted_server(hung) as (shadow, _):
        direct = [httpx.post(up + "/v1/chat/completions", json=body(i), timeout=30).json() for i in range(20)]
        with live("shadow", "--primary", up, "--shadow", shadow, "--sample", "1", "--store", str(tmp_path / "s.db"),
                  "--queue", "2", "--workers", "1", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0") as sh:
            proxied = [httpx.post(sh.url + "/v1/chat/completions", json=body(i), timeout=30).json() for i in range(20)]
            mirror = sh.verdict()["mirror"]
            metrics = httpx.get(sh.admin + "/metrics", timeout=30).text
            ready = httpx.get(sh.admin + "/readyz", timeout=30)
            sh.proc.send_signal(signal.SIGTERM)  # the proxy stops accepting; the mirror, stuck on the hung shadow, lives on
            deadline = time.monotonic() + 8
            while (draining := httpx.get(sh.admin + "/readyz", timeout=30)).status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            _, stopped = sh.proc.communicate(timeout=60)  # the shadow still hung: the stop line says what is lost
            hang.set()
    assert (ready.status_code, ready.text) == (200, "ready\n")
    assert draining.status_code == 503 and draining.text.startswith("not ready: the proxy is not accepting"), draining.text
    assert proxied == direct
    assert "shadow: 20 forwarded, 20 sampled, 17 dropped; the mirror had not finished 10 s after the stop" in stopped, stopped
    assert "3 cop(ies) not mirrored" in stopped, stopped
    # one copy in flight at the hung shadow, two waiting: the other 17 were dropped, the clients' requests never
    assert mirror["sampled"] == 20 and mirror["dropped"] == 17 and mirror["forwarded"] == 20, mirror
    dropped = [smp.value for f in text_string_to_metric_families(metrics) for smp in f.samples
               if smp.name == "gatekeeper_shadow_dropped_total"]  # labelled with the replica's name
    assert dropped == [17.0], metrics
    dead = f"http://127.0.0.1:{free_port()}"
    with _upstream() as (up, _), live("shadow", "--primary", up, "--shadow", dead, "--sample", "1", "--store",
                                      str(tmp_path / "d.db"), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0") as sh:
        proxied = [httpx.post(sh.url + "/v1/chat/completions", json=body(i), timeout=30).json() for i in range(20)]
    assert proxied == direct


def test_an_unreachable_primary_is_a_gateway_error_in_openai_shape(tmp_path: Path):
    dead = f"http://127.0.0.1:{free_port()}"
    with live("traffic", "record", "--upstream", dead, "--listen", "127.0.0.1:0", "--out", str(tmp_path / "t.jsonl")) as rec:
        r = httpx.post(rec.url + "/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
    assert r.status_code == 502 and r.json()["error"]["type"] == "proxy_error"


def test_bad_options_are_one_line_errors(tmp_path: Path):
    import subprocess
    import sys

    for args, says in ((["shadow", "--shadow", "http://x", "--store", "s.db"], "--primary"),
                       (["shadow", "--primary", "localhost:1", "--shadow", "http://x", "--store", "s.db"], "http(s) URL"),
                       (["shadow", "--primary", "http://x", "--shadow", "http://y", "--store", "s.db", "--policy", "nope.yaml"],
                        "nope.yaml"),
                       (["traffic", "record", "--upstream", "http://x", "--out", "t", "--redact", "("], "regular expression")):
        p = subprocess.run([sys.executable, "-m", "gatekeeper.cli", *args], capture_output=True, text=True, timeout=60,
                           cwd=tmp_path)
        assert p.returncode == 3 and says in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert sorted(x.name for x in tmp_path.iterdir()) == [], args  # nothing written for a refused command
    (tmp_path / "not.db").write_text("hello, not sqlite\n" * 100)
    p = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "pairs", "export", str(tmp_path / "not.db"), "--out",
                        str(tmp_path / "x.jsonl")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and "not a pair store" in p.stderr and "Traceback" not in p.stderr, p.stderr
