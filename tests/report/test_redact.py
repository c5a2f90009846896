"""Secrets by value and by shape are masked, and masking never breaks the JSON it runs over."""

from __future__ import annotations

import json

import pytest

from gatekeeper.redact import MASK, Redactor
from gatekeeper.report.jsonable import dumps
from gatekeeper.report.serialise import check_json
from report_runs import hold_run, promote_run, rollback_run


@pytest.mark.parametrize("text,secret", [
    ("http://user:hunter2@host:8000/v1", "hunter2"),
    ("vllm serve /m --api-key sk-abc123 --port 8000", "sk-abc123"),
    ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
    ('{"authorization": "Bearer tok123"}', "tok123"),
    ("http://h:8000/v1/models?token=tk-99&x=1", "tk-99"),
    ("OPENAI_API_KEY=sk-live-1 vllm serve", "sk-live-1"),
    ("the key sk-planted-777 leaked", "sk-planted-777"),
])
def test_secrets_are_masked(text, secret):
    out = Redactor(["sk-planted-777"]).text(text)
    assert secret not in out and MASK in out, out


@pytest.mark.parametrize("text", ["per-token |Δlogprob|", "mail bruno@example.com", "https://example.com/a@b",
                                  '"url": "http://h:1", "e": "a@b"', "the token count is 12"])
def test_ordinary_text_is_left_alone(text):
    assert Redactor().text(text) == text


def test_redacting_records_keeps_them_json():
    r = Redactor(["sk-never-in-these-reports-31337"])
    for run in (hold_run(), promote_run(), rollback_run()):
        for gate in run.gates:
            for check in gate.checks:
                line = dumps(check_json(check, standalone=True))
                assert json.loads(r.text(line)) == json.loads(line)


def test_a_secret_inside_a_json_string_is_masked_in_its_escaped_form():
    secret = 'p"q\\r-secret'
    line = json.dumps({"reason": f"key {secret} refused"})
    assert secret not in json.loads(Redactor([secret]).text(line))["reason"]


def test_a_url_password_is_masked_bare_and_as_a_basic_header():
    import base64

    from gatekeeper.targets.interface import TargetSpec

    spec = TargetSpec("url", url="http://alice:s3cr%40t-pw@10.0.0.5:8000")
    r = Redactor(spec.secrets())
    pair = base64.b64encode(b"alice:s3cr@t-pw").decode()
    for line in (f"auth {pair} accepted", "password was s3cr@t-pw", "raw s3cr%40t-pw", "user alice:s3cr@t-pw"):
        out = r.text(line)
        assert "s3cr" not in out and pair not in out, out
