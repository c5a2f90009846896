"""`--reference-cache DIR`: gating several candidates against one reference asks it each thing once.

Counted where the reference receives them — a real proxy in front of a real bundled server records
every request — not where gatekeeper sends them: the second candidate's run sends the reference
only what gate 1 asks of this launch, every other reference answer comes from the cache; a
reference reporting another version, or declared on another path, gets no hits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fault_proxy import fault_proxy
from gatekeeper.tape.cache import AnswerCache, Identity
from gatekeeper.tape.endpoint import Asked
from run_util import RunOutcome, gk_run
from server_util import running_server
from paths import ROOT

ANSWER_METHODS = {"chat", "completion", "tokenize", "post_json"}


def _run(out: Path, model: Path, url: str, cache: Path, *args: str) -> RunOutcome:
    result = gk_run(out, "--policy", str(ROOT / "gates/smoke.yaml"), "--gates", "startup,numerics,golden",
                    "--model", str(model), "--reference", url, "--reference-cache", str(cache), *args)
    assert result.summary is not None, result.stderr[-3000:]
    return result


def _answers(run: RunOutcome) -> list[dict]:
    return [json.loads(line) for line in (run.run_dir / "answers" / "reference.jsonl").read_text().splitlines()]


@pytest.mark.slow  # three runs behind a proxy (~35 s); the identity and refusal tests below stay in the default suite
def test_a_second_candidate_asks_the_reference_only_what_gate_1_asks(tmp_path, tiny_model_dir):
    cache = tmp_path / "cache"
    first_sent: list = []
    second_sent: list = []
    upgraded_sent: list = []
    with running_server(tiny_model_dir, "--profile", "reference") as reference:
        with fault_proxy(reference.url, "pass", record=first_sent) as url:
            first = _run(tmp_path / "a", tiny_model_dir, url, cache)
        with fault_proxy(reference.url, "pass", record=second_sent) as url:
            second = _run(tmp_path / "b", tiny_model_dir, url, cache, "--candidate-fault", "decode-slowdown=10")
        with fault_proxy(reference.url, "pass", record=upgraded_sent, version="99.0.0-upgraded") as url:
            upgraded = _run(tmp_path / "c", tiny_model_dir, url, cache)

    stored = first.summary["reference_cache"]
    assert stored["hits"] == 0 and stored["stored"] == stored["requests"] > 20, stored
    used = second.summary["reference_cache"]
    assert used["hits"] == used["requests"] == stored["stored"] and used["stored"] == 0, used
    assert "reference answer cache: " in second.stderr

    # what the reference received in the second run: gate 1's questions to this launch, nothing else
    posts = [(path, body) for method, path, body in second_sent if method == "POST"]
    startup = [a for a in _answers(second) if a["gate"] == "startup" and a["method"] in ANSWER_METHODS]
    assert len(posts) == len(startup) > 0, (len(posts), len(startup))
    # a gate's retry count is this run's own measurement (recorded beside the answers), never the cache's
    assert all(a["cached"] for a in _answers(second) if a["gate"] != "startup" and a["method"] != "measured")
    first_posts = [(path, body) for method, path, body in first_sent if method == "POST"]
    assert len(first_posts) == len(posts) + stored["stored"], (len(first_posts), len(posts), stored)

    assert second.check("golden.pass_rate")["status"] == first.check("golden.pass_rate")["status"]

    other = upgraded.summary["reference_cache"]
    assert other["hits"] == 0 and other["requests"] == stored["requests"], other
    assert "99.0.0-upgraded" in other["identity"]


def test_another_declared_path_or_version_is_another_cache(tmp_path):
    same = Identity("m", "0.30.0", (("dtype", "float32"),), None)
    asked = Asked("reference", "golden", "chat", "chat:abc", 0)
    writer = AnswerCache(tmp_path, same, "run-1")
    writer.keep(asked, {"type": "json", "value": {"ok": 1}}, from_source=False)
    writer.keep(Asked("candidate", "golden", "chat", "chat:abc", 0), {"type": "json", "value": {}}, from_source=False)
    writer.keep(Asked("reference", "startup", "chat", "chat:def", 0, cacheable=False), {"type": "json", "value": {}}, False)
    writer.save()
    assert writer.stats.stored == 1  # the candidate's answer and gate 1's are never cached

    assert AnswerCache(tmp_path, same, "run-2").answer(asked) == {"type": "json", "value": {"ok": 1}}
    assert AnswerCache(tmp_path, same, "run-2").answer(Asked("reference", "golden", "chat", "chat:abc", 1)) is None
    for other in (Identity("m", "0.31.0", (("dtype", "float32"),), None),
                  Identity("m", "0.30.0", (("dtype", "bfloat16"),), None),
                  Identity("other-model", "0.30.0", (("dtype", "float32"),), None)):
        cache = AnswerCache(tmp_path, other, "run-3")
        assert cache.answer(asked) is None and cache.stats.requests == 1 and cache.stats.hits == 0


@pytest.mark.parametrize("kind,status,kept", [("http", 500, False), ("http", 503, False), ("timeout", None, False),
                                              ("auth", 401, False), ("rate_limited", 429, False), ("http", 400, True),
                                              ("unsupported", 404, True)])
def test_failures_are_asked_again_refusals_are_answers(tmp_path, kind, status, kept):
    identity = Identity("m", "1", (), None)
    cache = AnswerCache(tmp_path, identity, "run-1")
    error = {"type": "error", "kind": kind, "url": "u", "detail": "x", "status": status}
    cache.keep(Asked("reference", "golden", "chat", "chat:abc", 0), error, from_source=False)
    cache.save()
    found = AnswerCache(tmp_path, identity, "run-2").answer(Asked("reference", "golden", "chat", "chat:abc", 0))
    assert found == (error if kept else None)
