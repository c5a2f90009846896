"""The server's endpoints end to end: a real `gatekeeper serve` subprocess over a random checkpoint,
spoken to with httpx and the official openai client. Random models emit garbage, so these check
shapes, protocol and consistency (stream equals non-stream, stop strings, seeds), not content."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from server_util import running_server

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Reply with exactly: OK"}]


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with running_server(tiny_model_dir) as s:
        yield s


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.v1, api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def model(client):
    return client.models.list().data[0].id


def sse_events(response: httpx.Response) -> list[dict | str]:
    """Parsed `data:` payloads of an SSE response; `[DONE]` stays a string."""
    out: list[dict | str] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: "):]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def test_health_version_models(server):
    r = httpx.get(server.url + "/health")
    assert r.status_code == 200 and r.content == b""
    assert "version" in httpx.get(server.url + "/version").json()
    models = httpx.get(server.v1 + "/models").json()
    card = models["data"][0]
    assert models["object"] == "list" and card["object"] == "model"
    assert card["owned_by"] == "gatekeeper" and card["max_model_len"] == 512


def test_concurrent_requests_match_sequential_ones(server, client, model):
    from concurrent.futures import ThreadPoolExecutor

    prompts = [f"{word} " * (i + 1) for i, word in enumerate(["fox", "dog", "tool", "OK", "你好", "json", "def", "x"])]

    def ask(prompt: str) -> str:
        return client.completions.create(model=model, prompt=prompt, max_tokens=10, temperature=0).choices[0].text

    sequential = [ask(p) for p in prompts]
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        assert list(pool.map(ask, prompts)) == sequential


def test_ping_is_an_alias_of_health(server):
    assert httpx.get(server.url + "/ping").status_code == 200
    assert httpx.post(server.url + "/ping").status_code == 200


def test_startup_lines_are_logged(server):
    log = server.log()
    assert "profile=optimized" in log and "prefix_caching=on" in log


def test_chat_through_openai_client(client, model):
    r = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=8, temperature=0,
                                       logprobs=True, top_logprobs=3)
    choice = r.choices[0]
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.completion_tokens == len(choice.logprobs.content) <= 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    for entry in choice.logprobs.content:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        assert entry.bytes == list(entry.token.encode())
        assert entry.top_logprobs[0].logprob >= entry.top_logprobs[-1].logprob


def test_chat_stream_equals_non_stream_for_greedy(server, client, model):
    full = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=24, temperature=0,
                                          logprobs=True)
    with httpx.stream("POST", server.v1 + "/chat/completions", json={
        "model": model, "messages": MESSAGES, "max_tokens": 24, "temperature": 0, "logprobs": True,
        "stream": True, "stream_options": {"include_usage": True}}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if isinstance(e, dict)]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] == full.usage.completion_tokens
    deltas = [c["choices"][0] for c in chunks[:-1]]
    assert deltas[0]["delta"]["role"] == "assistant"
    assert "".join(d["delta"].get("content") or "" for d in deltas) == full.choices[0].message.content
    finishes = [d["finish_reason"] for d in deltas if d["finish_reason"]]
    assert finishes == [full.choices[0].finish_reason]
    streamed_tokens = [lp["token"] for d in deltas if d["logprobs"] for lp in d["logprobs"]["content"]]
    assert streamed_tokens == [lp.token for lp in full.choices[0].logprobs.content]


def test_chat_stream_through_openai_client(client, model):
    stream = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=6, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    assert sum(1 for c in chunks if c.choices and c.choices[0].finish_reason) == 1


def test_stop_string_is_cut_and_reported(client, model):
    base = client.completions.create(model=model, prompt="The quick brown", max_tokens=20, temperature=0)
    text = base.choices[0].text
    stop = text[4:7]
    if len(text) < 8 or not stop.strip():
        pytest.skip("the random model's greedy output is too short to carve a stop string from")
    cut = client.completions.create(model=model, prompt="The quick brown", max_tokens=20, temperature=0, stop=[stop])
    assert cut.choices[0].text == text[: text.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    assert cut.choices[0].model_extra["stop_reason"] == stop


def test_seed_reproduces_sampling(client, model):
    def run():
        return client.completions.create(model=model, prompt="hello", max_tokens=12, temperature=1.0, seed=7)
    assert run().choices[0].text == run().choices[0].text


def test_completions_echo_logprobs_shape(client, model):
    r = client.completions.create(model=model, prompt="Reply with exactly", max_tokens=4, temperature=0,
                                  echo=True, logprobs=2)
    choice = r.choices[0]
    lp = choice.logprobs
    n = r.usage.prompt_tokens + r.usage.completion_tokens
    assert choice.text.startswith("Reply with exactly")
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.text_offset) == len(lp.top_logprobs) == n
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(v <= 0 for v in lp.token_logprobs[1:])
    assert lp.text_offset == sorted(lp.text_offset)
    assert all(2 <= len(t) <= 3 for t in lp.top_logprobs[1:])  # top-2 plus the chosen token if not in it


def test_completions_prompt_logprobs_vllm_shape(server, model):
    r = httpx.post(server.v1 + "/completions", json={"model": model, "prompt": "hello world", "max_tokens": 1,
                                                    "temperature": 0, "prompt_logprobs": 2}).json()
    plps = r["choices"][0]["prompt_logprobs"]
    assert len(plps) == r["usage"]["prompt_tokens"] and plps[0] is None
    for position in plps[1:]:
        assert 2 <= len(position) <= 3
        for token_id, entry in position.items():
            assert int(token_id) >= 0 and set(entry) == {"logprob", "rank", "decoded_token"}
            assert entry["rank"] >= 1


def test_completions_token_ids_and_multiple_prompts(client, model):
    ids = client.post("/../tokenize", body={"prompt": "hello world"}, cast_to=object)["tokens"]
    r = client.completions.create(model=model, prompt=[ids, ids], max_tokens=5, temperature=0)
    assert [c.index for c in r.choices] == [0, 1]
    assert r.choices[0].text == r.choices[1].text
    assert r.usage.prompt_tokens == 2 * len(ids)
    text = client.completions.create(model=model, prompt="hello world", max_tokens=5, temperature=0)
    assert text.choices[0].text == r.choices[0].text


def test_completions_echo_without_generation(client, model):
    r = client.completions.create(model=model, prompt="hello world", max_tokens=0, echo=True, logprobs=0,
                                  temperature=0)
    assert r.choices[0].text == "hello world" and r.usage.completion_tokens == 0
    assert len(r.choices[0].logprobs.tokens) == r.usage.prompt_tokens


def test_completions_stream_equals_non_stream(server, client, model):
    full = client.completions.create(model=model, prompt="The quick brown", max_tokens=16, temperature=0,
                                     logprobs=1)
    with httpx.stream("POST", server.v1 + "/completions", json={
            "model": model, "prompt": "The quick brown", "max_tokens": 16, "temperature": 0, "logprobs": 1,
            "stream": True, "stream_options": {"include_usage": True}}) as r:
        events = sse_events(r)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if e["choices"]]
    assert "".join(c["choices"][0]["text"] for c in chunks) == full.choices[0].text
    tokens = [t for c in chunks if c["choices"][0]["logprobs"] for t in c["choices"][0]["logprobs"]["tokens"]]
    assert tokens == full.choices[0].logprobs.tokens
    offsets = [t for c in chunks if c["choices"][0]["logprobs"] for t in c["choices"][0]["logprobs"]["text_offset"]]
    assert offsets == full.choices[0].logprobs.text_offset
    assert events[-2]["usage"]["completion_tokens"] == full.usage.completion_tokens


def test_multi_prompt_echo_stream_equals_non_stream(server, model):
    body = {"model": model, "prompt": ["hello world", "the quick"], "max_tokens": 6, "temperature": 0,
            "echo": True, "logprobs": 1}
    full = httpx.post(server.v1 + "/completions", json=body).json()
    with httpx.stream("POST", server.v1 + "/completions",
                      json={**body, "stream": True, "stream_options": {"include_usage": True}}) as r:
        events = [e for e in sse_events(r) if isinstance(e, dict)]
    texts, tokens = ["", ""], [[], []]
    for event in events:
        for c in event["choices"]:
            texts[c["index"]] += c["text"]
            tokens[c["index"]] += (c["logprobs"] or {}).get("tokens", [])
    assert texts == [c["text"] for c in full["choices"]]
    assert tokens == [c["logprobs"]["tokens"] for c in full["choices"]]
    assert events[-1]["usage"] == full["usage"]


def test_tokenize_and_detokenize(server, client, model):
    r = httpx.post(server.url + "/tokenize", json={"prompt": "hello world"}).json()
    assert r["count"] == len(r["tokens"]) == len(r["token_strs"]) and r["max_model_len"] == 512
    assert httpx.post(server.url + "/detokenize", json={"tokens": r["tokens"]}).json() == {"prompt": "hello world"}
    chat = httpx.post(server.url + "/tokenize", json={"messages": MESSAGES}).json()
    used = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=1, temperature=0)
    assert chat["count"] == used.usage.prompt_tokens


def test_metrics_use_vllm_names(server, client, model):
    client.completions.create(model=model, prompt="hello", max_tokens=3, temperature=0)
    text = httpx.get(server.url + "/metrics").text
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                 "vllm:time_to_first_token_seconds_bucket", "vllm:e2e_request_latency_seconds_count",
                 "vllm:inter_token_latency_seconds_count", "vllm:request_success_total",
                 "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "gatekeeper:blocks_allocated_total", "gatekeeper:blocks_reused_total"):
        assert f"\n{name}{{" in text, name
    samples = {line.split("{")[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line and not line.startswith("#")}
    assert samples["vllm:generation_tokens_total"] >= 3 and samples["vllm:prompt_tokens_total"] > 0


def test_prefix_cache_hits_show_in_usage(client, model):
    prompt = "The quick brown fox jumps over the lazy dog. " * 4
    client.completions.create(model=model, prompt=prompt, max_tokens=4, temperature=0)
    again = client.completions.create(model=model, prompt=prompt, max_tokens=4, temperature=0)
    assert again.usage.prompt_tokens_details.cached_tokens >= 16


def test_reference_profile_serves_the_same_greedy_output(tiny_model_dir, client, model):
    prompts = ["The quick brown fox", "def add(a, b):", "你好"]
    with running_server(tiny_model_dir, "--profile", "reference") as ref_server:
        assert "profile=reference" in ref_server.log()
        ref = openai.OpenAI(base_url=ref_server.v1, api_key="unused", max_retries=0)
        for prompt in prompts:
            a = client.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=0, logprobs=0)
            b = ref.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=0, logprobs=0)
            assert a.choices[0].text == b.choices[0].text
            for x, y in zip(a.choices[0].logprobs.token_logprobs, b.choices[0].logprobs.token_logprobs):
                assert abs(x - y) < 1e-4
        a = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=12, temperature=0)
        b = ref.chat.completions.create(model=model, messages=MESSAGES, max_tokens=12, temperature=0)
        assert a.choices[0].message.content == b.choices[0].message.content
