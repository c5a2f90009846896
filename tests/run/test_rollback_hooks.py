"""Rollback hooks run on ROLLBACK only — a command with the run in its environment, a webhook
POSTed to a real HTTP server — and each outcome, a failure too, is in the reports."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("torch")

from run_util import gk_run  # noqa: E402

STARTUP = ("--gates", "startup")


class _Receiver(BaseHTTPRequestHandler):
    got: list[dict] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).got.append(json.loads(body))
        self.send_response(204 if self.path == "/ok" else 500)
        self.end_headers()


@pytest.fixture
def receiver():
    _Receiver.got = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Receiver.got
    srv.shutdown()
    srv.server_close()


def _command(out_file) -> str:
    code = ("import os, sys; open(sys.argv[1], 'w').write(os.environ['GATEKEEPER_VERDICT'] + '|' "
            "+ os.environ['GATEKEEPER_RUN_ID'] + '|' + os.environ['GATEKEEPER_REASONS'])")
    return f"{sys.executable} -c \"{code}\" {out_file}"


def test_hooks_run_on_rollback_with_the_run_and_report_their_outcome(tmp_path, tiny_model_dir, receiver):
    url, got = receiver
    marker = tmp_path / "hook.txt"
    out = gk_run(tmp_path / "run", "--model", str(tiny_model_dir), "--candidate-fault", "optional-import", *STARTUP,
                 "--on-rollback", _command(marker), "--on-rollback", url + "/ok", "--on-rollback", url + "/broken",
                 "--on-rollback", "/nonexistent/kubectl argo rollouts abort app")
    assert out.summary["verdict"] == "ROLLBACK" and out.code == 1
    verdict, run_id, reasons = marker.read_text().split("|", 2)
    assert verdict == "ROLLBACK" and run_id == out.summary["run_id"] and "startup.ready.candidate" in reasons
    assert [g["verdict"] for g in got] == ["ROLLBACK", "ROLLBACK"] and got[0]["run_id"] == out.summary["run_id"]
    hooks = out.summary["hooks"]
    assert [(h["kind"], h["ok"]) for h in hooks] == [("command", True), ("webhook", True), ("webhook", False),
                                                     ("command", False)], hooks
    assert hooks[2]["detail"] == "HTTP 500" and "cannot run" in hooks[3]["detail"]
    assert "rollback hook webhook" in out.stderr and "FAILED" in out.stderr  # a failed hook is said, never hidden
    md = (out.run_dir / "summary.md").read_text()
    assert "### Rollback hooks" in md and "**failed**" in md
    assert "Rollback hooks:" in (out.run_dir / "correctness.html").read_text()


@pytest.mark.slow  # two real runs; the hooks-on-rollback test stays
def test_hooks_never_run_on_promote_or_hold(tmp_path, tiny_model_dir, receiver):
    url, got = receiver
    marker = tmp_path / "hook.txt"
    promote = gk_run(tmp_path / "p", "--model", str(tiny_model_dir), *STARTUP, "--on-rollback", _command(marker),
                     "--on-rollback", url + "/ok")
    assert promote.summary["verdict"] == "PROMOTE" and promote.summary["hooks"] == []
    hold = gk_run(tmp_path / "h", "--model", str(tiny_model_dir), "--reference", "http://127.0.0.1:9", *STARTUP,
                  "--on-rollback", _command(marker), "--on-rollback", url + "/ok")
    assert hold.summary["verdict"] == "HOLD" and hold.summary["hooks"] == []
    assert not marker.exists() and got == []


def test_a_hook_that_is_not_a_command_line_is_a_usage_error(tmp_path):
    out = gk_run(tmp_path, "--on-rollback", 'kubectl "unterminated', *STARTUP)
    assert out.code == 3 and "--on-rollback" in out.stderr, out.stderr
