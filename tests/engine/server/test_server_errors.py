"""Bad input never 500s: OpenAI-shaped 4xx errors over HTTP; `--api-key`; `--disable-logprobs`;
startup failures that exit with one clear line and no traceback; the CLI's exit codes."""

from __future__ import annotations

import socket
import subprocess
import sys

import httpx
import openai
import pytest

from server_util import run_serve, running_server, serve_command

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with running_server(tiny_model_dir, "--max-model-len", "64") as s:
        yield s


def assert_openai_error(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["code"] == status
    assert err["message"] and "Traceback" not in r.text
    return err


BAD_CHAT = [
    {"messages": "hello"},
    {"messages": []},
    {"messages": USER, "max_tokens": -5},
    {"messages": USER, "max_tokens": "many"},
    {"messages": USER, "temperature": "hot"},
    {"messages": USER, "top_logprobs": 2},
    {"messages": USER, "logprobs": True, "top_logprobs": 21},
    {"messages": USER, "n": 3},
    {"messages": USER, "stop": 5},
    {"messages": [{"role": "user", "content": "word " * 200}]},
    {"messages": USER, "tool_choice": "required"},
    {"messages": USER, "min_tokens": 100, "max_tokens": 2},
    {"messages": [{"role": "user"}], "tools": [{"type": "function", "function": {}}]},
]


@pytest.mark.parametrize("body", BAD_CHAT, ids=range(len(BAD_CHAT)))
def test_bad_chat_requests_are_400(server, body):
    assert_openai_error(httpx.post(server.v1 + "/chat/completions", json=body), 400)


BAD_COMPLETIONS = [
    {"prompt": "x", "max_tokens": -1},
    {"prompt": [99999]},
    {"prompt": "word " * 200},
    {"prompt": "x", "logprobs": 50},
    {"prompt": "x", "stream": True, "prompt_logprobs": 1},
    {"prompt": None},
    {},
]


@pytest.mark.parametrize("body", BAD_COMPLETIONS, ids=range(len(BAD_COMPLETIONS)))
def test_bad_completions_requests_are_400(server, body):
    assert_openai_error(httpx.post(server.v1 + "/completions", json=body), 400)


@pytest.mark.parametrize("raw", [b"{not json", b"", b"[1, 2]", b"\xff\xfe", b'"text"'])
def test_malformed_bodies_are_400(server, raw):
    r = httpx.post(server.v1 + "/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert_openai_error(r, 400)


@pytest.mark.parametrize("raw", [
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": NaN}',
    b'{"messages": [{"role": "user", "content": "hi"}], "temperature": Infinity}',
    b'{"messages": [{"role": "user", "content": "hi"}], "top_p": NaN}',
    b'{"messages": [{"role": "user", "content": "hi"}], "seed": 1180591620717411303424}',
])
def test_non_finite_and_out_of_range_numbers_are_400(server, raw):
    r = httpx.post(server.v1 + "/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert_openai_error(r, 400)


@pytest.mark.parametrize("extreme", [{"temperature": 1e-300}, {"top_p": 1e-300}, {"temperature": 1e308},
                                     {"temperature": 1e-4, "top_p": 1e-30}, {"top_k": 10**6}, {"seed": -5}])
def test_extreme_but_valid_sampling_values_are_served(server, extreme):
    r = httpx.post(server.v1 + "/chat/completions", json={"messages": USER, "max_tokens": 3, **extreme})
    assert r.status_code == 200, r.text
    assert httpx.get(server.url + "/health").status_code == 200


def test_unknown_model_is_404(server):
    err = assert_openai_error(httpx.post(server.v1 + "/chat/completions", json={"model": "gpt-9", "messages": USER}), 404)
    assert "gpt-9" in err["message"] and err["param"] == "model"


def test_unknown_route_and_method(server):
    assert_openai_error(httpx.get(server.v1 + "/nothing"), 404)
    assert_openai_error(httpx.get(server.v1 + "/chat/completions"), 405)


def test_bad_tokenize_requests(server):
    assert_openai_error(httpx.post(server.url + "/tokenize", json={}), 400)
    assert_openai_error(httpx.post(server.url + "/detokenize", json={"tokens": [10**9]}), 400)


def test_openai_client_sees_bad_request(server):
    client = openai.OpenAI(base_url=server.v1, api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=client.models.list().data[0].id, messages=USER, logprobs=True,
                                       top_logprobs=25)


def test_server_still_healthy_after_bad_input(server):
    assert httpx.get(server.url + "/health").status_code == 200
    assert "Traceback" not in server.log()


def test_api_key_guards_v1_only_and_served_model_name(tiny_model_dir):
    with running_server(tiny_model_dir, "--api-key", "sekret", "--served-model-name", "gk-test") as s:
        assert_openai_error(httpx.get(s.v1 + "/models"), 401)
        assert_openai_error(httpx.get(s.v1 + "/models", headers={"Authorization": "Bearer wrong"}), 401)
        assert httpx.get(s.v1 + "/models", headers={"Authorization": "Bearer sekret"}).status_code == 200
        for path in ("/health", "/metrics", "/version"):
            assert httpx.get(s.url + path).status_code == 200, path
        assert httpx.post(s.url + "/tokenize", json={"prompt": "hi"}).status_code == 200
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=s.v1, api_key="wrong", max_retries=0).models.list()
        client = openai.OpenAI(base_url=s.v1, api_key="sekret", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["gk-test"]
        r = client.chat.completions.create(model="gk-test", messages=USER, max_tokens=2)
        assert r.model == "gk-test" and r.usage.completion_tokens >= 1
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="tiny-qwen2", messages=USER, max_tokens=2)


def test_disable_logprobs_silently_returns_null(tiny_model_dir):
    with running_server(tiny_model_dir, "--disable-logprobs") as s:
        chat = httpx.post(s.v1 + "/chat/completions", json={
            "messages": USER, "max_tokens": 3, "logprobs": True, "top_logprobs": 5, "prompt_logprobs": 1}).json()
        assert chat["choices"][0]["logprobs"] is None and chat["prompt_logprobs"] is None
        comp = httpx.post(s.v1 + "/completions", json={
            "prompt": "hi", "max_tokens": 3, "logprobs": 5, "echo": True, "prompt_logprobs": 2}).json()
        assert comp["choices"][0]["logprobs"] is None and comp["choices"][0]["prompt_logprobs"] is None
        assert comp["choices"][0]["text"].startswith("hi")


def assert_one_line_failure(proc: subprocess.CompletedProcess, code: int, fragment: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gatekeeper: error:")]
    assert len(errors) == 1 and fragment in errors[0], proc.stderr


def test_missing_checkpoint_dir_fails_startup(tmp_path):
    assert_one_line_failure(run_serve(tmp_path / "absent"), 1, "no such model directory")


def test_checkpoint_without_weights_fails_startup(tmp_path, tiny_model_dir):
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tiny_model_dir / name).read_bytes())
    assert_one_line_failure(run_serve(tmp_path), 1, "model.safetensors")


def test_optional_import_fault_dies_with_one_line(tiny_model_dir):
    assert_one_line_failure(run_serve(tiny_model_dir, "--fault", "optional-import"), 1, "ImportError")


def test_port_in_use_fails_before_loading(tiny_model_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        proc = subprocess.run(serve_command(tiny_model_dir, busy.getsockname()[1]), capture_output=True, text=True,
                              timeout=120)
    assert_one_line_failure(proc, 1, "cannot bind")
    assert "profile=" not in proc.stderr  # the model was never loaded


@pytest.mark.parametrize("args, fragment", [
    (("--fault", "no-such-fault"), "unknown fault"),
    (("--block-size", "0"), "--block-size"),
    (("--dtype", "int3"), "--dtype"),
    (("--profile", "turbo"), "--profile"),
    (("--no-such-flag",), "--no-such-flag"),
    (("--max-model-len", "100000"), "max-model-len"),
])
def test_bad_options_exit_3(tiny_model_dir, args, fragment):
    assert_one_line_failure(run_serve(tiny_model_dir, *args), 3, fragment)


def test_faults_command_lists_every_fault():
    from gatekeeper.engine.faults import FAULTS

    out = subprocess.run([sys.executable, "-m", "gatekeeper.cli", "faults"], capture_output=True, text=True)
    assert out.returncode == 0
    for name, fault in FAULTS.items():
        assert name in out.stdout and fault.models in out.stdout


def test_nan_logprobs_from_a_broken_engine_are_served_not_500(tiny_model_dir):
    # nan-residue poisons freed KV blocks; the server must pass NaN on (Python's json reads it), not 500
    body = {"messages": USER, "max_tokens": 4, "temperature": 0, "logprobs": True}
    nan_seen = {"stream": False, "non-stream": False}
    with running_server(tiny_model_dir, "--fault", "nan-residue") as s:
        for i in range(6):
            # a longer request first, so the chat request lands on blocks it freed
            httpx.post(s.v1 + "/completions", json={"prompt": f"The quick brown fox {i}" * 3, "max_tokens": 8})
            r = httpx.post(s.v1 + "/chat/completions", json={**body, "stream": i % 2 == 0})
            assert r.status_code == 200, r.text
            if i % 2 == 0:
                assert r.text.rstrip().endswith("data: [DONE]")
                nan_seen["stream"] |= "NaN" in r.text
            else:
                content = r.json()["choices"][0]["logprobs"]["content"]
                nan_seen["non-stream"] |= any(e["logprob"] != e["logprob"] for e in content)
    assert nan_seen == {"stream": True, "non-stream": True}
