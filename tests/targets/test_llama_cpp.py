"""Real llama.cpp (llama-cpp-python's OpenAI-compatible server, built once into a cached venv by
scripts/llama_cpp.sh) gated by gatekeeper over HTTP.

Marked `llama_cpp`: not in the default run; `.ci/run` runs them after it. One server is shared by
the module's tests that only ask it questions (a few seconds to start).
"""

from __future__ import annotations

import shlex
import subprocess
import unicodedata
from pathlib import Path

import httpx
import pytest
import yaml

from llama_util import VERSION, launch_target, llama_command, running_llama
from paths import GK_TINY, ROOT
from run_util import gk_run
from tokenizer_corpus import CORPUS

from gatekeeper.endpoints.client import Endpoint
from gatekeeper.endpoints.probe import probe
from gatekeeper.engine.tokenizer import Tokenizer

pytestmark = pytest.mark.llama_cpp

SCRIPT = ROOT / "scripts" / "llama_cpp.sh"
# What llama-cpp-python's server does not do, as the probe finds it: no tool-call parser for the
# model's `<tool_call>` text, no prompt_logprobs, no vLLM-style /tokenize (it has /extras/tokenize).
LACKS = ["prompt_logprobs", "tool_parsing", "tokenize"]


@pytest.fixture(scope="module")
def llama():
    with running_llama(VERSION) as server:
        yield server


def test_the_server_answers_chat_on_gk_tiny_streamed_and_not(llama):
    ep = Endpoint("candidate", llama.url, "gk-tiny")
    messages = [{"role": "user", "content": "Reply with exactly: OK"}]
    plain = ep.chat(messages, max_tokens=8)
    streamed = ep.chat(messages, max_tokens=8, stream=True)
    ep.close()
    assert plain.text == streamed.text == "OK", (plain.text, streamed.text)
    assert plain.finish_reason == streamed.finish_reason == "stop"
    assert streamed.streamed and not streamed.protocol_warnings


def test_the_gguf_tokenizes_as_the_checkpoint_does_but_for_unicode_normalization(llama):
    """The converter does not know gk-tiny's tokenizer by its hash; scripts/llama_cpp.sh names it Qwen2's
    pre-tokenizer (its split regex is Qwen2's), and llama.cpp then tokenizes as tokenizers does, except
    that it does not apply tokenizer.json's NFC normalizer: text that is not NFC already (a decomposed
    "é") tokenizes differently, as it would with any llama.cpp build of this model."""
    tok = Tokenizer.from_dir(GK_TINY)
    for text in CORPUS:
        got = httpx.post(llama.url + "/extras/tokenize", json={"input": text}, timeout=30).json()["tokens"]
        if unicodedata.normalize("NFC", text) == text:
            assert got == tok.encode(text), text
        else:
            assert got != tok.encode(text), text


def test_the_probe_names_what_the_server_lacks_and_finds_the_rest(llama):
    caps = probe(Endpoint("candidate", llama.url, "gk-tiny"))
    assert not caps.errors, caps.errors
    assert caps.missing() == LACKS, caps.notes
    assert "returned it as content" in caps.notes["tool_parsing"]


def test_with_the_servers_interrupting_streams_the_cuts_are_judged_as_a_rate(tmp_path):
    """llama-cpp-python's default (`--interrupt_requests true`) ends the stream it serves whenever another
    request waits: both targets cut streams at random, which gate 3 judges against the reference's rate."""
    config = tmp_path / "llama.yaml"
    config.write_text(yaml.safe_dump({"reference": launch_target(VERSION, "--interrupt_requests", "true"),
                                      "candidate": launch_target(VERSION, "--interrupt_requests", "true")}))
    out = gk_run(tmp_path / "out", "-c", str(config), "--gates", "startup,golden", timeout=1800)
    assert out.summary is not None, out.stderr
    golden = next(g for g in out.summary["gates"] if g["id"] == "golden")
    failed = [(c["id"], c["reason"][:200]) for c in golden["checks"] if c["status"] == "FAIL" and c["blocking"]]
    assert failed == [], failed
    cuts = [c for c in golden["checks"] if c["id"] == "golden.stream_cuts"]
    assert all(c["status"] == "PASS" and c["judgement"] == "statistical" for c in cuts), cuts
    assert out.summary["verdict"] != "ROLLBACK", out.summary["reasons"]


def test_the_script_prints_the_launch_command_and_exits_3_with_one_line_on_errors(tmp_path):
    argv = shlex.split(llama_command(VERSION).format(port=1))
    assert argv[:2] == ["env", "OMP_NUM_THREADS=1"] and argv[3:5] == ["-m", "llama_cpp.server"] and argv[-2:] == ["--port", "1"]
    assert argv[argv.index("--n_threads") + 1] == "1" and argv[argv.index("--model_alias") + 1] == "gk-tiny"
    assert argv[argv.index("--model") + 1].endswith(".f32.gguf") and Path(argv[argv.index("--model") + 1]).is_file()
    for args, said in ((["0.3.x!"], "not a release"), ([VERSION, "--bogus"], "unknown option --bogus"),
                       ([VERSION, "--model", str(tmp_path)], "no checkpoint"), ([], "usage")):
        done = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 3 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
